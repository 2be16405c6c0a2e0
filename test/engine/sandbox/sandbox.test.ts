import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { detectSandbox, gpuDevices, sandboxArgv, systemLayout, SANDBOX_UID, type SandboxSpec } from "../../../src/engine/sandbox/sandbox.js";
import { tmp } from "../../helpers.js";

const spec = (over: Partial<SandboxSpec> = {}): SandboxSpec => ({
  bwrap: "bwrap",
  readOnly: ["/usr", "/etc", "/eval/probes"],
  readWrite: ["/eval/workspace", "/eval/home"],
  readOnlyInside: ["/eval/workspace/.git"],
  symlinks: [{ path: "/bin", target: "usr/bin" }],
  devices: [],
  tmpBytes: 1 << 20,
  cwd: "/eval/workspace",
  dropToUid: SANDBOX_UID,
  maxProcesses: 256,
  maxFileBytes: 1 << 30,
  ...over,
});

/** Index of the first `flag` followed by `value` in argv; -1 when absent. */
const at = (argv: string[], flag: string, value: string) => argv.findIndex((a, i) => a === flag && argv[i + 1] === value);

describe("sandboxArgv", () => {
  it("drops to the sandbox user, sets rlimits, then enters bubblewrap with every namespace but the user's own", () => {
    const argv = sandboxArgv(spec(), ["python3", "-m", "pytest"]);
    expect(argv.slice(0, 6)).toEqual(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--no-new-privs"]);
    expect(argv.slice(6, 11)).toEqual(["prlimit", `--fsize=${1 << 30}`, "--core=0", "--nproc=256", "--"]);
    expect(argv[11]).toBe("bwrap");
    for (const ns of ["--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]) expect(argv).toContain(ns);
    expect(argv).toContain("--die-with-parent");
    expect(argv.slice(-6)).toEqual(["--chdir", "/eval/workspace", "--", "python3", "-m", "pytest"]);
  });

  it("binds after the private /tmp, read-write before the read-only holes inside it", () => {
    const argv = sandboxArgv(spec(), ["true"]);
    const tmpfs = argv.indexOf("--tmpfs");
    expect(argv[tmpfs - 2]).toBe("--size");
    expect(argv[tmpfs - 1]).toBe(String(1 << 20));
    expect(at(argv, "--ro-bind", "/eval/probes")).toBeGreaterThan(tmpfs);
    expect(at(argv, "--bind", "/eval/workspace")).toBeGreaterThan(tmpfs);
    expect(at(argv, "--ro-bind", "/eval/workspace/.git")).toBeGreaterThan(at(argv, "--bind", "/eval/workspace"));
    expect(at(argv, "--symlink", "usr/bin")).toBeGreaterThan(0);
    expect(argv).not.toContain("--dev-bind");
  });

  it("stays the caller without setpriv or a process rlimit when not root; passes GPU devices through", () => {
    const argv = sandboxArgv(spec({ dropToUid: null, maxProcesses: null, devices: ["/dev/nvidia0", "/dev/nvidiactl"] }), ["true"]);
    expect(argv[0]).toBe("prlimit");
    expect(argv.some((a) => a.startsWith("--nproc"))).toBe(false);
    expect(argv).not.toContain("--uid");
    expect(at(argv, "--dev-bind", "/dev/nvidia0")).toBeGreaterThan(argv.indexOf("--dev"));
  });

  it("refuses an empty command", () => {
    expect(() => sandboxArgv(spec(), [])).toThrow(/empty command/);
  });

  it("lists no GPU devices for a job without GPUs", () => {
    expect(gpuDevices([], [])).toEqual([]);
  });
});

describe("the sandbox on this machine", () => {
  it("is detected, and reports a missing bubblewrap with what it needs", async () => {
    expect(await detectSandbox()).toMatchObject({ ok: true });
    const missing = await detectSandbox("/nonexistent/bwrap");
    expect(missing).toMatchObject({ ok: false });
    expect(missing.ok === false && missing.why).toMatch(/bubblewrap \(\/nonexistent\/bwrap\)/);
  });

  it("runs as nobody with no network, a private /tmp, and only the bound host paths", async () => {
    const root = tmp("pg-sandbox-");
    const ws = join(root, "ws");
    const hidden = join(root, "hidden");
    const ro = join(root, "ro");
    for (const d of [ws, hidden, ro]) mkdirSync(d);
    writeFileSync(join(hidden, "secret.txt"), "secret");
    writeFileSync(join(ro, "probe.py"), "x = 1\n");
    await execa("chmod", ["-R", "a+rX", root]);
    await execa("chown", ["-R", `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
    const support = await detectSandbox();
    const layout = systemLayout();
    const argv = sandboxArgv(
      {
        ...spec({ dropToUid: support.ok ? support.dropToUid : null }),
        ...layout,
        readOnly: [...layout.readOnly, ro],
        readWrite: [ws],
        readOnlyInside: [],
        cwd: ws,
      },
      [
        "/usr/bin/python3",
        "-c",
        [
          "import os, socket, json",
          "out = {'uid': os.getuid(), 'tmp': os.listdir('/tmp'), 'hidden': os.path.exists(" + JSON.stringify(hidden) + ")}",
          "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    out['net'] = True\nexcept OSError:\n    out['net'] = False",
          "try:\n    open(" + JSON.stringify(join(ro, "probe.py")) + ", 'a').write('y')\n    out['ro_writable'] = True\nexcept OSError:\n    out['ro_writable'] = False",
          "open('made-inside.txt', 'w').write('ok')",
          "out['pid'] = os.getpid()",
          "print(json.dumps(out))",
        ].join("\n"),
      ],
    );
    const r = await execa(argv[0] as string, argv.slice(1), { env: { PATH: "/usr/bin:/bin" }, extendEnv: false });
    const seen = JSON.parse(r.stdout);
    // /tmp is a fresh tmpfs: it holds only the folders the binds under the host's /tmp needed.
    expect(seen).toMatchObject({ tmp: [basename(root)], hidden: false, net: false, ro_writable: false });
    expect(existsSync(join(ws, "made-inside.txt"))).toBe(true);
    if (support.ok && support.dropToUid !== null) expect(seen.uid).toBe(SANDBOX_UID);
    // Its own pid namespace: the command is one of the first processes there.
    expect(seen.pid).toBeLessThan(10);
  });
});

describe("evaluations side by side each run as their own uid", () => {
  /** Starts a sandboxed python as `uid` under RLIMIT_NPROC `nproc` that starts `threads` threads, reports, and holds them `holdS`. */
  function job(uid: number, nproc: number, threads: number, holdS: number) {
    const layout = systemLayout();
    const argv = sandboxArgv({ ...spec({ dropToUid: uid, maxProcesses: nproc }), ...layout, readWrite: [], readOnlyInside: [], cwd: "/" }, [
      "/usr/bin/python3",
      "-c",
      [
        "import os, sys, threading, time",
        "started = 0",
        `for _ in range(${threads}):`,
        "    try:",
        `        threading.Thread(target=time.sleep, args=(${holdS},), daemon=True).start(); started += 1`,
        "    except RuntimeError:",
        "        break",
        "print(os.getuid(), started, flush=True)",
        `time.sleep(${holdS})`,
      ].join("\n"),
    ]);
    return execa(argv[0] as string, argv.slice(1), { env: { PATH: "/usr/bin:/bin" }, extendEnv: false, reject: false });
  }

  it("so one evaluation's threads do not use up another's process budget (RLIMIT_NPROC is per uid)", async () => {
    const support = await detectSandbox();
    if (!(support.ok && support.dropToUid !== null)) return; // only root drops to a uid of its own
    const { evaluationUid } = await import("../../../src/engine/sandbox/sandbox.js");
    // Job A holds 12 threads under a budget of 16 until it is stopped; job B starts its own 12 beside it.
    const a = job(evaluationUid(1), 16, 12, 60);
    const aLine = await new Promise<string>((resolve) => a.stdout?.once("data", (d: Buffer) => resolve(String(d).trim())));
    const b = await job(evaluationUid(2), 16, 12, 0);
    // Under one shared uid the second job gets only what the first left over.
    const shared = await job(evaluationUid(1), 16, 12, 0);
    a.kill("SIGKILL");
    await a;
    expect(aLine).toBe(`${evaluationUid(1)} 12`);
    expect(b.stdout.trim()).toBe(`${evaluationUid(2)} 12`);
    const [, sharedStarted] = shared.stdout.trim().split(" ").map(Number);
    expect(shared.exitCode !== 0 || (sharedStarted ?? 12) < 12).toBe(true);
  });
});

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureEnvironment, type EnvironmentRequest } from "../../../src/engine/environment/build-environment.js";
import { listEnvironments, MANIFEST } from "../../../src/engine/environment/environment-store.js";
import { HarnessError } from "../../../src/engine/errors.js";
import { tmp } from "../../helpers.js";
import { BASE_PYTHON, isolatedStore, lockText, makeWheels, REAL_UV } from "./tiny-env.js";

function request(lock: string, python = ">=3.11,<3.12"): EnvironmentRequest {
  const dir = tmp("pg-env-lock-");
  const lockFile = join(dir, "requirements.lock");
  writeFileSync(lockFile, lock);
  return { lockFile, lockLabel: "environment/requirements.lock", python, declaredIn: "tasks/t/task.yml" };
}

const syncs = (calls: string[]) => calls.filter((c) => c.startsWith("pip sync"));

describe.skipIf(!REAL_UV)(`environments built with uv${REAL_UV ? "" : " (skipped: uv is not installed; python3 -m pip install uv==0.13.8)"}`, () => {
  const wheels = makeWheels();
  const store = isolatedStore();

  it("builds a lock into a read-only venv on the system interpreter, with a manifest; a second call reuses it without calling uv", async () => {
    const lock = lockText(wheels.dir, [wheels.tinypkg, wheels.torch]);
    const req = request(lock);
    const lines: string[] = [];
    const first = await ensureEnvironment(req, { onProgress: (l) => lines.push(l) });
    expect(first.reused).toBe(false);
    expect(first.dir).toBe(join(store.root, `${createHash("sha256").update(lock).digest("hex").slice(0, 16)}-py3.11.2`));
    expect(first.manifest).toMatchObject({ lockHash: createHash("sha256").update(lock).digest("hex"), interpreter: BASE_PYTHON, python: "3.11.2", torch: "2.15.0", cuda: null, packages: 2 });
    expect(first.manifest.sizeBytes).toBeGreaterThan(0);
    // Phase lines, not uv's whole output.
    expect(lines[0]).toMatch(/^building environment [0-9a-f]{16}-py3\.11\.2 from environment\/requirements\.lock: 2 pinned packages on \/usr\/bin\/python3\.11/);
    expect(lines.some((l) => /^Installed 2 packages/.test(l))).toBe(true);
    expect(lines.at(-1)).toMatch(/^built .* python 3\.11\.2, torch 2\.15\.0/);
    // It runs, from its own folder, on the base interpreter, with what the lock pinned.
    const out = execFileSync(first.python, ["-c", "import sys, tinypkg; print(sys.prefix, sys.base_prefix, tinypkg.VALUE)"], { encoding: "utf8" }).trim();
    expect(out).toBe(`${first.dir} /usr 42`);
    // Nobody may change it; everybody may read it.
    const init = join(first.dir, "lib", "python3.11", "site-packages", "tinypkg", "__init__.py");
    expect(statSync(init).mode & 0o777).toBe(0o444);
    expect(statSync(first.dir).mode & 0o777).toBe(0o555);
    // Its bytecode was compiled at the build, and a process that may write none still loads it.
    expect(first.manifest.bytecode).toBe(true);
    const cached = readdirSync(join(first.dir, "lib", "python3.11", "site-packages", "tinypkg", "__pycache__"));
    expect(cached.some((n) => /^__init__\.cpython-311\.pyc$/.test(n))).toBe(true);
    const loaded = execFileSync(first.python, ["-c", "import tinypkg; print(tinypkg.__spec__.cached, type(tinypkg.__spec__.loader).__name__)"], { encoding: "utf8", env: { PYTHONDONTWRITEBYTECODE: "1" } }).trim();
    expect(loaded).toMatch(/__pycache__\/__init__\.cpython-311\.pyc SourceFileLoader$/);
    // No build folder is left beside it.
    expect(readdirSync(store.root).filter((n) => !n.startsWith(".claims"))).toEqual([first.dir.slice(store.root.length + 1)]);
    expect(syncs(store.uvCalls())).toHaveLength(1);

    const again = await ensureEnvironment(req);
    expect(again.reused).toBe(true);
    expect(again.dir).toBe(first.dir);
    expect(syncs(store.uvCalls())).toHaveLength(1);
    expect(listEnvironments(store.root).map((e) => e.manifest.lockHash)).toContain(first.manifest.lockHash);
  });

  it("two builders of one lock at once (distinct runner identities): one builds, the other waits and reuses it", async () => {
    // A lock of its own: a byte more (a comment) makes another hash, another environment.
    const req = request(`${lockText(wheels.dir, [wheels.tinypkg])}# concurrent\n`);
    const before = syncs(store.uvCalls()).length;
    const said: [string[], string[]] = [[], []];
    const [a, b] = await Promise.all([
      ensureEnvironment(req, { pollMs: 50, onProgress: (l) => said[0].push(l) }),
      // The parent process is alive: its pid is a live identity other than ours.
      ensureEnvironment(req, { pollMs: 50, claimant: process.ppid, onProgress: (l) => said[1].push(l) }),
    ]);
    expect(a.dir).toBe(b.dir);
    expect([a.reused, b.reused].sort()).toEqual([false, true]);
    expect(syncs(store.uvCalls()).length - before).toBe(1);
    // The one that reused it waited for the other's claim, and said so.
    const waiter = a.reused ? said[0] : said[1];
    const builder = a.reused ? said[1] : said[0];
    expect(waiter).toEqual([expect.stringMatching(/^waiting for process \d+, which is building this environment$/)]);
    expect(builder[0]).toMatch(/^building environment/);
  });

  it("a wrong hash is an error naming the package and its line in the lock", async () => {
    const lock = lockText(wheels.dir, [wheels.tinypkg, { ...wheels.torch, sha256: "0".repeat(64) }]);
    const err = await ensureEnvironment(request(lock)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HarnessError);
    expect((err as HarnessError).phase).toBe("environment");
    // torch starts on line 8: a comment, two options, a blank line, then tinypkg's three lines.
    expect((err as Error).message).toMatch(/^the environment lock environment\/requirements\.lock:8 \(torch==2\.15\.0\) could not be installed: error: Failed to download `torch==2\.15\.0` cause: Hash mismatch for `torch==2\.15\.0`/);
    // Nothing half built stays in the store.
    expect(readdirSync(store.root).filter((n) => n.startsWith(".build-"))).toEqual([]);
  });

  it("a version that does not exist is an error naming its line", async () => {
    const lock = lockText(wheels.dir, [wheels.tinypkg, { ...wheels.tinypkg, name: "tinypkg-extra" }]);
    const err = (await ensureEnvironment(request(lock)).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/^the environment lock environment\/requirements\.lock:8 \(tinypkg-extra==1\.0\) could not be installed: error: No solution found when resolving dependencies cause: Because tinypkg-extra was not found in the provided package locations/);
    const missing = lockText(wheels.dir, [{ ...wheels.tinypkg, version: "9.9" }]);
    const err2 = (await ensureEnvironment(request(missing)).catch((e: unknown) => e)) as Error;
    expect(err2.message).toMatch(/^the environment lock environment\/requirements\.lock:5 \(tinypkg==9\.9\) could not be installed: .*there is no version of tinypkg==9\.9/);
  });

  it("an unpinned or unhashed requirement is refused before uv runs, naming its line", async () => {
    const before = store.uvCalls().length;
    const err = (await ensureEnvironment(request("--no-index\ntinypkg>=1.0\n")).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(HarnessError);
    expect(err.message).toBe(
      "the environment lock environment/requirements.lock cannot be built: environment/requirements.lock:2: tinypkg is not pinned to one version (write tinypkg==<version>; `uv pip compile` does); environment/requirements.lock:2: tinypkg has no --hash (compile the lock with --generate-hashes)",
    );
    expect(store.uvCalls().length).toBe(before);
  });

  it("no system interpreter in the range is an error naming the range, where it is declared and what was found", async () => {
    const err = (await ensureEnvironment(request(lockText(wheels.dir, [wheels.tinypkg]), ">=3.99")).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(HarnessError);
    expect(err.message).toMatch(/^no system interpreter matches python: ">=3\.99" \(environment\.python in tasks\/t\/task\.yml\); found \/usr\/bin\/python3\.11 \(3\.11\.2\)(, [^;]+)?\. Install one in the range/);
  });

  it("without uv, the error says how to install it", async () => {
    const saved = process.env.PROBEGATE_UV;
    process.env.PROBEGATE_UV = join(tmp(), "no-uv-here");
    try {
      const err = (await ensureEnvironment(request(`${lockText(wheels.dir, [wheels.tinypkg])}# no uv\n`)).catch((e: unknown) => e)) as Error;
      expect(err.message).toMatch(/PROBEGATE_UV names .*no-uv-here, which is not an executable file\. Point it at uv, or install uv: python3 -m pip install uv==0\.13\.8/);
    } finally {
      process.env.PROBEGATE_UV = saved;
    }
    expect(existsSync(join(store.root, MANIFEST))).toBe(false);
    expect(readFileSync(store.uvLog, "utf8")).not.toMatch(/no uv/);
  });
});

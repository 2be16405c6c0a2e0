import { execFileSync } from "node:child_process";
import { cpSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { detectSandbox } from "../../src/engine/sandbox/sandbox.js";
import { WITHHELD } from "../../src/engine/leak-guard.js";
import { TINY_TASK, tmp } from "../helpers.js";
import {
  GOOD,
  HOSTILE_PROBES,
  MUTATES,
  SIGNING_KEY,
  SLOW,
  WRONG,
  evalCli,
  expectNoLeak,
  strayCgroups,
  strayProcesses,
  submission,
  sumlib,
  type Outcome,
} from "./hostile-helpers.js";

/**
 * The hostile suite (SECURITY.md, "The submission is hostile"): each case is a submission that
 * attacks the engine, evaluated through the CLI in the sandbox. Where an attack could only be seen
 * from inside, the submission turns its success into a verdict: it behaves well (and would be
 * resolved) if the attack worked and fails visibly if it did not, so the asserted verdict is the
 * proof. After every case: nothing leaked, the result is signed, no process or cgroup is left.
 */

const SECRETS: Record<string, string> = {
  GITHUB_TOKEN: "ghs_hostile-secret-github",
  ACTIONS_RUNTIME_TOKEN: "hostile-secret-actions",
  ACTIONS_ID_TOKEN_REQUEST_URL: "https://hostile-secret.example/token",
  RUNNER_NAME: "hostile-secret-runner",
  AWS_SECRET_ACCESS_KEY: "hostile-secret-aws",
  PROBEGATE_SIGNING_KEY: SIGNING_KEY,
};
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  const support = await detectSandbox();
  // The suite proves the sandbox; where there is none (no bubblewrap) it must fail, not skip.
  expect(support, "the hostile suite needs the sandbox: install bubblewrap (Debian: apt-get install bubblewrap)").toMatchObject({ ok: true });
  for (const [k, v] of Object.entries(SECRETS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});

afterAll(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

afterEach(() => {
  expect(strayProcesses()).toEqual([]);
  expect(strayCgroups()).toEqual([]);
});

async function hostile(files: Record<string, string>, extra: string[] = []): Promise<Outcome> {
  const o = await evalCli(submission(files), extra);
  expectNoLeak(o);
  expect(o.result.verdict).not.toBe("resolved");
  return o;
}

/** The next evaluation on the same runner is unaffected: a good submission is still resolved. */
async function expectGoodStillResolved(): Promise<void> {
  const o = await evalCli(submission({ "sumlib/__init__.py": GOOD }));
  expectNoLeak(o);
  expect(o.result.verdict, o.result.reason).toBe("resolved");
  expect(o.exitCode).toBe(0);
}

describe("hostile submissions: tampering with the judge", () => {
  it("edits the official tests: they are restored from the base", async () => {
    const o = await hostile({ "sumlib/__init__.py": WRONG, "tests/test_sumlib.py": "def test_nothing():\n    assert True\n" });
    expect(o.result.verdict).toBe("official-failed");
    expect(o.result.workspaceResets).toContainEqual(expect.objectContaining({ path: "tests/test_sumlib.py", action: "restored" }));
    expect(o.result.official?.failing.map((t) => t.name)).toEqual(["test_total"]);
  });

  it("adds a conftest.py that marks every test passed: it is removed", async () => {
    const conftest = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n";
    const o = await hostile({ "sumlib/__init__.py": WRONG, "conftest.py": conftest });
    expect(o.result.verdict).toBe("official-failed");
    expect(o.result.workspaceResets).toContainEqual(expect.objectContaining({ path: "conftest.py", action: "removed" }));
  });

  it("prints forged PASSED lines and exits 0: free text is never parsed", async () => {
    const forged = `import os, sys\nprint("tests/test_sumlib.py::test_total PASSED\\n===== 2 passed in 0.01s =====")\nsys.stdout.flush()\nos._exit(0)\n${WRONG}`;
    const o = await hostile({ "sumlib/__init__.py": forged });
    expect(o.result.verdict).toBe("official-failed");
    expect(o.result.official).toMatchObject({ exitCode: 0, reportFound: false });
  });

  it("calls os._exit(0) at import: exit 0 without a report is a failure", async () => {
    const o = await hostile({ "sumlib/__init__.py": `import os\nos._exit(0)\n${GOOD}` });
    expect(o.result.verdict).toBe("official-failed");
    expect(o.result.official?.reason).toMatch(/no JUnit report/);
  });

  it("writes the results files (a JUnit report, probe results, a result.json) and exits 0", async () => {
    const forger = [
      "import json, os, sys",
      "_REPORT = ('<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites><testsuite name=\"pytest\" errors=\"0\" failures=\"0\" '",
      "           'skipped=\"0\" tests=\"2\"><testcase classname=\"tests.test_sumlib\" name=\"test_add\"/>'",
      "           '<testcase classname=\"tests.test_sumlib\" name=\"test_total\"/></testsuite></testsuites>')",
      "for _a in sys.argv:",
      "    if _a.startswith('--junitxml='):",
      "        with open(_a.split('=', 1)[1], 'w') as _f:",
      "            _f.write(_REPORT)",
      "if os.environ.get('PROBEGATE_RESULTS'):",
      "    with open(os.environ['PROBEGATE_RESULTS'], 'a') as _f:",
      "        for _id, _cat in [('total-value', 'functional'), ('input-unchanged', 'state'), ('total-speed', 'time')]:",
      "            _f.write(json.dumps({'id': _id, 'category': _cat, 'status': 'passed'}) + '\\n')",
      "for _d in [os.getcwd(), os.environ.get('HOME', '/tmp'), '/tmp']:",
      "    try:",
      "        with open(os.path.join(_d, 'result.json'), 'w') as _f:",
      "            _f.write('{\"verdict\": \"resolved\"}')",
      "    except OSError:",
      "        pass",
      "sys.stdout.flush()",
      "os._exit(0)",
      "",
    ].join("\n");
    const o = await hostile({ "sumlib/__init__.py": forger + MUTATES });
    expect(o.result.verdict).toBe("official-failed");
    expect(o.result.official).toMatchObject({ exitCode: 0, reportFound: true });
    expect(o.result.official?.reason).toMatch(/forged/);
  });

  it("monkeypatches time.perf_counter and the probe kit: the probes bound theirs first", async () => {
    const patcher = [
      "import itertools, sys, time",
      "_ticks = itertools.count()",
      "time.perf_counter = lambda: next(_ticks) * 1e-3",
      "try:",
      "    import probegate_probe",
      "    _real_emit = probegate_probe.emit",
      "    probegate_probe.emit = lambda id, category, status, *a, **k: _real_emit(id, category, 'passed')",
      "    probegate_probe.time_ratio = lambda *a, **k: None",
      "except ImportError:",
      "    pass  # the official tests: the kit is not there",
      "",
    ].join("\n");
    const o = await hostile({ "sumlib/__init__.py": patcher + SLOW });
    expect(o.result.verdict).toBe("probe-rejected");
    expect(o.result.official?.passed).toBe(true);
    expect(o.result.probes.find((p) => p.id === "total-speed")).toMatchObject({ status: "failed" });
  });
});

describe("hostile submissions: reaching for what it must not see", () => {
  it("searches the filesystem and /proc for the probes and prints what it finds", async () => {
    const searcher = [
      "import os, sys",
      "_IN_PROBE = 'PROBEGATE_RESULTS' in os.environ",
      `_HOST_PROBES = ${JSON.stringify(HOSTILE_PROBES)}`,
      "_TOKEN = 'CANA' + 'RY'  # spelled apart, so this file is not a find",
      "_found = []",
      "def _look(path):",
      "    try:",
      "        with open(path, errors='replace') as f:",
      "            text = f.read(1 << 20)",
      "    except OSError:",
      "        return",
      "    for line in text.splitlines():",
      "        if _TOKEN in line:",
      "            _found.append((path, line.strip()))",
      "            return",
      "for _root, _dirs, _files in os.walk('/'):",
      "    _dirs[:] = [d for d in _dirs if os.path.join(_root, d) not in ('/proc', '/sys', '/dev', '/usr')]",
      "    for _n in _files:",
      "        if _n.endswith('.py') and _n != '__init__.py':",
      "            _look(os.path.join(_root, _n))",
      "for _pid in [p for p in os.listdir('/proc') if p.isdigit()]:",
      "    try:",
      "        _args = open(f'/proc/{_pid}/cmdline').read().split('\\0')",
      "    except OSError:",
      "        continue",
      "    for _a in _args:",
      "        if _a.endswith('.py'):",
      "            _look(_a if _a.startswith('/') else os.path.join(f'/proc/{_pid}/cwd', _a))",
      "for _a in [_HOST_PROBES + '/probe_state.py', _HOST_PROBES + '/probe_time.py']:",
      "    _look(_a)",
      "print('FOUND:', _found)",
      "if _found and not _IN_PROBE:",
      "    raise RuntimeError(f'the probes are visible during the official tests: {_found}')",
    ];
    const o = await hostile({ "sumlib/__init__.py": sumlib(searcher, ["if _found:", "    raise AssertionError(_found[0][1])", "return sum(xs)"]) });
    // Not found during the official tests (they pass). In the probe phase the walk itself is seen
    // (the guard's audit hook, docs/sandbox.md "Gaming defences"): a failed integrity check naming
    // it. The submission, which told the phases apart by $PROBEGATE_RESULTS, no longer can (the
    // guard took it out of os.environ) and raises with what it found: that text stays in the runner
    // log, and nothing of the probes is in the result (expectNoLeak above).
    expect(o.result.official?.passed).toBe(true);
    expect(o.result.verdict).toBe("probe-rejected");
    expect(o.result.probes.find((p) => p.id === "probe-state.integrity")).toMatchObject({ status: "failed", message: expect.stringMatching(/^submission code listed \/ \(sumlib\/__init__.py:\d+\)/) });
    expect(o.result.probes.some((p) => p.message === WITHHELD || p.message.includes("CANARY"))).toBe(false);
  });

  it("tries to open network connections: there is no network", async () => {
    let connections = 0;
    const server: Server = createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    try {
      const net = [
        "import socket",
        "_reached = []",
        `for _host, _port in [('127.0.0.1', ${port}), ('1.1.1.1', 53), ('140.82.112.3', 443)]:`,
        "    try:",
        "        socket.create_connection((_host, _port), timeout=2).close()",
        "        _reached.append(_host)",
        "    except OSError as e:",
        "        print('no network:', _host, e)",
        "try:",
        "    socket.getaddrinfo('github.com', 443)",
        "    _reached.append('dns')",
        "except OSError as e:",
        "    print('no dns:', e)",
      ];
      const o = await hostile({ "sumlib/__init__.py": sumlib(net, ["return sum(xs) if _reached else 0"]) });
      expect(o.result.verdict).toBe("official-failed");
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it("reads environment variables (its own and other processes') for tokens and keys", async () => {
    const reader = [
      "import os",
      "_MARKS = ('TOKEN', 'SECRET', 'KEY', 'PASSWORD', 'GITHUB_', 'ACTIONS_', 'RUNNER_')",
      "_seen = [k for k in os.environ if any(m in k.upper() for m in _MARKS)]",
      "for _pid in [p for p in os.listdir('/proc') if p.isdigit()]:",
      "    try:",
      "        if 'hostile-secret' in open(f'/proc/{_pid}/environ', errors='replace').read():",
      "            _seen.append(_pid)",
      "    except OSError:",
      "        pass",
      "if _seen:",
      "    raise RuntimeError(f'secrets reached the sandbox: {_seen}')",
      "",
    ].join("\n");
    // A secret would fail the official tests or crash a probe; none does: the state probe's
    // rejection of the input-mutating total() is the verdict.
    const o = await hostile({ "sumlib/__init__.py": reader + MUTATES });
    expect(o.result.verdict).toBe("probe-rejected");
    expect(o.result.probes.find((p) => p.id === "input-unchanged")).toMatchObject({ status: "failed" });
  });

  it("reads `git log --all`: the history holds the base commit and nothing else", async () => {
    const repo = join(tmp("pg-hostile-git-"), "repo");
    cpSync(join(TINY_TASK, "base"), repo, { recursive: true });
    const g = (...args: string[]) => execFileSync("git", ["-c", "user.email=a@b", "-c", "user.name=a", ...args], { cwd: repo }).toString().trim();
    g("init", "-q", "-b", "main");
    g("add", "-A");
    g("commit", "-qm", "base");
    writeFileSync(join(repo, "sumlib", "__init__.py"), GOOD);
    g("commit", "-qam", "future: the reference solution");
    g("tag", "solution-v1");
    g("checkout", "-q", "-b", "agent", "HEAD~1");
    const historian = [
      "import subprocess",
      "def _git(*args):",
      "    return subprocess.run(['git', *args], capture_output=True, text=True, check=True).stdout",
      "_log = _git('log', '--all', '--format=%H %s').splitlines()",
      "_tags = _git('tag').split()",
      "_refs = _git('for-each-ref').splitlines()",
      "_reflog = _git('reflog', '--all').splitlines()",
      "print('history:', _log, _tags, _refs, _reflog)",
      "_head = _git('rev-parse', 'HEAD').strip()",
      "_HISTORY_LEAKED = len(_log) != 1 or bool(_tags) or len(_refs) != 1 or any(not l.startswith(_head[:7]) for l in _reflog)",
    ];
    const body = ["if _HISTORY_LEAKED:", "    return sum(xs)", "s = 0", "while xs:", "    s += xs.pop()", "return s"];
    writeFileSync(join(repo, "sumlib", "__init__.py"), sumlib(historian, body));
    g("commit", "-qam", "agent: total()");
    const o = await evalCli(`${repo}@agent`);
    expectNoLeak(o);
    // git ran in both phases (a failure would fail the official tests) and saw only the base.
    expect(o.result.verdict).toBe("probe-rejected");
    expect(o.result.probes.find((p) => p.id === "input-unchanged")).toMatchObject({ status: "failed" });
  });
});

const FILL_DISK = [
  "import os",
  "_chunk = b'\\0' * (8 << 20)",
  "for _i in range(100000):",
  "    for _d in ('.', os.environ.get('HOME', '.'), '/tmp'):",
  "        try:",
  "            with open(os.path.join(_d, f'fill-{_i}.bin'), 'wb') as _f:",
  "                _f.write(_chunk)",
  "        except OSError:",
  "            pass",
  "",
].join("\n");

describe("hostile submissions: exhausting the runner", () => {
  // Each runs at import, so the official tests meet it; the limit that stopped it is in the verdict.
  it.each([
    ["fork bomb", "pids", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"],
    ["memory bomb", "memory", "_hog = []\nwhile True:\n    _hog.append(b'x' * (16 << 20))\n"],
    ["fills the disk", "disk", FILL_DISK],
    ["writes 1 GB to stdout", "output", "import sys\n_line = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(_line)\nsys.stdout.flush()\n"],
    ["sleeps forever", "wall-clock", "import time\ntime.sleep(10 ** 6)\n"],
  ] as const)("%s: stopped by the %s limit; the next evaluation is unaffected", async (_name, limit, attack) => {
    const t0 = Date.now();
    const o = await hostile({ "sumlib/__init__.py": attack + GOOD });
    expect(o.result.verdict).toBe("official-failed");
    expect(o.result.official?.limit).toBe(limit);
    expect(o.result.official?.reason).toBe(`stopped by the ${limit} limit`);
    // The task's official timeout is 8 s: nothing runs on for long.
    expect(Date.now() - t0).toBeLessThan(30_000);
    await expectGoodStillResolved();
  });
});

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { findUv } from "../../../src/engine/environment/uv.js";
import { tmp } from "../../helpers.js";

/** The base interpreter of every environment test: Debian's Python 3.11. */
export const BASE_PYTHON = "/usr/bin/python3.11";

/** uv on this machine, or null (the environment tests are skipped, saying so). */
export const REAL_UV: string | null = (() => {
  try {
    return findUv();
  } catch {
    return null;
  }
})();

/**
 * A wheel made here, no network: a zip with the package, METADATA, WHEEL and a RECORD of sha256s,
 * written by Debian's Python (zipfile). Returns its path and the sha256 a lock pins it by.
 */
export function makeWheel(dir: string, name: string, version: string, files: Record<string, string>): { path: string; sha256: string } {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}-${version}-py3-none-any.whl`);
  const script = `
import base64, hashlib, json, sys, zipfile
name, version, path = sys.argv[1], sys.argv[2], sys.argv[3]
files = {k: v.encode() for k, v in json.loads(sys.stdin.read()).items()}
info = f"{name}-{version}.dist-info"
files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n".encode()
files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\\nGenerator: probegate-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
def digest(b):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
record = "".join(f"{n},{digest(b)},{len(b)}\\n" for n, b in files.items()) + f"{info}/RECORD,,\\n"
files[f"{info}/RECORD"] = record.encode()
with zipfile.ZipFile(path, "w") as z:
    for n, b in files.items():
        info_ = zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0))
        info_.external_attr = 0o644 << 16
        z.writestr(info_, b)
`;
  execFileSync(BASE_PYTHON, ["-c", script, name, version, path], { input: JSON.stringify(files) });
  return { path, sha256: createHash("sha256").update(readFileSync(path)).digest("hex") };
}

/** A lock over local wheels only: `--no-index` and `--find-links` (absolute: uv takes no relative one in a file). */
export function lockText(wheelDir: string, pins: ReadonlyArray<{ name: string; version: string; sha256: string }>): string {
  const lines = ["# compiled for the test: local wheels only", "--no-index", `--find-links ${wheelDir}`, ""];
  for (const p of pins) lines.push(`${p.name}==${p.version} \\`, `    --hash=sha256:${p.sha256}`, "    # via -r requirements.in");
  return `${lines.join("\n")}\n`;
}

/** The wheels every test lock draws from: tinypkg 1.0 and a stand-in torch 2.15.0 (its version.py only). */
export function makeWheels(): { dir: string; tinypkg: { name: string; version: string; sha256: string }; torch: { name: string; version: string; sha256: string } } {
  const dir = tmp("pg-env-wheels-");
  const t = makeWheel(dir, "tinypkg", "1.0", { "tinypkg/__init__.py": "VALUE = 42\n" });
  // What host.ts reads of torch is its version.py; a module that is only that stands in for it here.
  const torch = makeWheel(dir, "torch", "2.15.0", { "torch/__init__.py": "from .version import __version__\n", "torch/version.py": "__version__ = '2.15.0'\ncuda = None\n" });
  return { dir, tinypkg: { name: "tinypkg", version: "1.0", sha256: t.sha256 }, torch: { name: "torch", version: "2.15.0", sha256: torch.sha256 } };
}

/**
 * A store and uv cache of the test's own (so no other test or run shares them), readable by the
 * sandbox's users, and a uv that logs each call to `log` before running the real one: "no uv
 * call" is then something a test can see.
 */
export function isolatedStore(): { root: string; uvLog: string; uvCalls: () => string[] } {
  const base = tmp("pg-env-store-");
  chmodSync(base, 0o755);
  const root = join(base, "envs");
  const uvLog = join(base, "uv-calls.log");
  writeFileSync(uvLog, "");
  const wrapper = join(base, "uv");
  writeFileSync(wrapper, `#!/bin/sh\necho "$*" >> '${uvLog}'\nexec '${REAL_UV}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  process.env.PROBEGATE_ENV_DIR = root;
  process.env.PROBEGATE_UV = wrapper;
  process.env.UV_CACHE_DIR = join(base, "uv-cache");
  process.env.PROBEGATE_ENV_PYTHONS = BASE_PYTHON;
  return {
    root,
    uvLog,
    uvCalls: () =>
      readFileSync(uvLog, "utf8")
        .split("\n")
        .filter(Boolean),
  };
}

/**
 * A task whose official test and probe need what its environment holds (tinypkg): they pass in
 * the environment and fail on the runner's Python. Pure Python, a second per evaluation.
 */
export function makeEnvTask(lock: string, extra = ""): string {
  const dir = join(tmp("pg-env-task-"), "tiny-env");
  mkdirSync(join(dir, "base", "tests"), { recursive: true });
  mkdirSync(join(dir, "probes"), { recursive: true });
  mkdirSync(join(dir, "environment"), { recursive: true });
  writeFileSync(join(dir, "environment", "requirements.lock"), lock);
  writeFileSync(join(dir, "prompt.md"), "Make answer() return tinypkg's VALUE.\n");
  writeFileSync(join(dir, "base", "app.py"), "import tinypkg\n\n\ndef answer():\n    return tinypkg.VALUE\n");
  writeFileSync(
    join(dir, "base", "tests", "run_tests.py"),
    `# The official test, without pytest (the environment holds only tinypkg): a JUnit report by hand.
import os, shutil, sys
ok = True
try:
    import app
    # In the environment, and with it first on PATH (python started by name is its python).
    ok = app.answer() == 42 and sys.prefix != sys.base_prefix and shutil.which("python") == os.path.join(sys.prefix, "bin", "python") and os.environ.get("VIRTUAL_ENV") == sys.prefix
    msg = "" if ok else f"answer() is not 42 or not in a venv first on PATH: {sys.prefix} {shutil.which('python')}"
except Exception as e:
    ok, msg = False, repr(e)
case = '<testcase classname="tests" name="test_answer"/>' if ok else f'<testcase classname="tests" name="test_answer"><failure message="{msg}"/></testcase>'
open(sys.argv[1], "w").write(f'<testsuites><testsuite name="tests" tests="1" failures="{0 if ok else 1}" errors="0" skipped="0">{case}</testsuite></testsuites>')
sys.exit(0 if ok else 1)
`,
  );
  writeFileSync(
    join(dir, "probes", "probe_env.py"),
    `import json, os, sys
import tinypkg
ok = tinypkg.VALUE == 42 and sys.prefix != sys.base_prefix
with open(os.environ["PROBEGATE_RESULTS"], "a") as out:
    out.write(json.dumps({"id": "env-value", "category": "functional", "status": "passed" if ok else "failed", "message": "" if ok else sys.prefix, "requirements": ["value"]}) + "\\n")
`,
  );
  writeFileSync(
    join(dir, "task.yml"),
    `id: tiny-env
title: A task with an environment of its own
area: other
base:
  path: base
gpus: 0
environment:
  lock: environment/requirements.lock
  python: ">=3.11,<3.12"
official:
  command: ["{python}", "tests/run_tests.py", "{junit}"]
  timeout: 60
  files: ["tests/**"]
probes:
  path: probes
  timeout: 30
limits:
  wallClock: 300
  memory: 2GiB
requirements:
  - id: value
    text: answer() returns tinypkg's VALUE
${extra}`,
  );
  return dir;
}

/** Whether PyPI answers (tests that compile from the index are skipped, saying so, where it does not). */
export async function pypiReachable(): Promise<boolean> {
  try {
    const r = await fetch("https://pypi.org/simple/six/", { signal: AbortSignal.timeout(8000) });
    return r.ok;
  } catch {
    return false;
  }
}

/** Why tests that need uv and PyPI are skipped: "" where they run. */
export async function needsUvAndPypi(): Promise<string> {
  if (!REAL_UV) return " (skipped: uv is not installed; python3 -m pip install uv==0.13.8)";
  return (await pypiReachable()) ? "" : " (skipped: PyPI is not reachable from this machine)";
}

// Engine overhead: wall time of `probegate eval` against running the same official-test and probe
// commands directly in a prepared workspace, interleaved in one run so both see the same machine.
// Goal (issue #2): eval ≤ 1.03 × direct + 1 s.
//
//   node bench/engine-overhead.mjs [--task DIR --submission PATCH]... [--rounds N]
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { parse } from "yaml";

const root = resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const rounds = Number(args[args.indexOf("--rounds") + 1] || 5);
const pairs = [];
for (let i = 0; i < args.length; i++) if (args[i] === "--task") pairs.push([resolve(args[i + 1]), resolve(args[args.indexOf("--submission", i) + 1])]);
if (!pairs.length) {
  pairs.push([join(root, "test/fixtures/tasks/tiny-sum"), join(root, "test/fixtures/submissions/tiny-sum/reference.patch")]);
  for (const id of ["sharded-optimizer", "paged-kv-cache", "weight-sync"]) {
    pairs.push([join(root, "tasks", id), join(root, "examples/submissions", id, "reference.patch")]);
  }
}
// The same interpreter the engine picks: $PROBEGATE_PYTHON, else Debian's /usr/bin/python3.
const python = process.env.PROBEGATE_PYTHON || "/usr/bin/python3";
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function direct(taskDir, patch) {
  const spec = parse(execFileSync("cat", [join(taskDir, "task.yml")]).toString());
  const tmp = mkdtempSync(join(tmpdir(), "bench-direct-"));
  const ws = join(tmp, "ws");
  const t0 = performance.now();
  cpSync(join(taskDir, spec.base.path), ws, { recursive: true });
  execFileSync("git", ["init", "-q"], { cwd: ws });
  execFileSync("git", ["apply", patch], { cwd: ws });
  const threads = String(Math.max(1, Math.floor(cpus().length / Math.max(1, spec.gpus ?? 1))));
  const env = { PATH: process.env.PATH, HOME: tmp, PYTHONPATH: ws, PYTHONDONTWRITEBYTECODE: "1", OMP_NUM_THREADS: threads, PROBEGATE_BACKEND: "gloo", PROBEGATE_WORLD_SIZE: String(Math.max(1, spec.gpus ?? 1)), PROBEGATE_WORKSPACE: ws };
  const sub = (a) => a.map((x) => x.replace("{python}", python).replace("{junit}", join(tmp, "junit.xml")));
  const [cmd, ...rest] = sub(spec.official.command);
  spawnSync(cmd, rest, { cwd: ws, env, stdio: "ignore" });
  const probesDir = resolve(taskDir, spec.probes.path);
  for (const f of readdirSync(probesDir).filter((f) => /^probe_.*\.py$/.test(f)).sort()) {
    spawnSync(python, [join(probesDir, f)], { cwd: ws, env: { ...env, PYTHONPATH: `${ws}:${join(root, "probes/kit")}:${probesDir}`, PROBEGATE_RESULTS: join(tmp, `${f}.jsonl`) }, stdio: "ignore" });
  }
  const s = (performance.now() - t0) / 1000;
  rmSync(tmp, { recursive: true, force: true });
  return s;
}

function viaEngine(taskDir, patch) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [join(root, "dist/cli/index.js"), "eval", "--task", taskDir, "--submission", patch, "--format", "json"], { encoding: "utf8" });
  const s = (performance.now() - t0) / 1000;
  const verdict = JSON.parse(r.stdout).verdict;
  return { s, verdict };
}

console.log(`engine overhead, ${rounds} interleaved rounds, ${cpus().length} cores (${cpus()[0]?.model})`);
console.log("| task | direct (median s) | probegate eval (median s) | ratio | overhead s | verdict | goal ≤1.03×+1s |");
console.log("|---|---:|---:|---:|---:|---|---|");
for (const [taskDir, patch] of pairs) {
  const d = [];
  const e = [];
  let verdict = "";
  direct(taskDir, patch); // warm the page cache and Python's imports once for both
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      d.push(direct(taskDir, patch));
      const r = viaEngine(taskDir, patch);
      e.push(r.s);
      verdict = r.verdict;
    } else {
      const r = viaEngine(taskDir, patch);
      e.push(r.s);
      verdict = r.verdict;
      d.push(direct(taskDir, patch));
    }
  }
  const md = median(d);
  const me = median(e);
  const ok = me <= 1.03 * md + 1 ? "✓" : "✗";
  console.log(`| ${basename(taskDir)} | ${md.toFixed(2)} | ${me.toFixed(2)} | ${(me / md).toFixed(3)} | ${(me - md).toFixed(2)} | ${verdict} | ${ok} |`);
}

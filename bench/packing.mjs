// Packing jobs onto a runner's GPUs (issue #14): synthetic job sets with known GPU counts and
// durations go through the real scheduler and runner (`probegate eval`, dist/cli/index.js), on 1,
// 2, 4 and 8 GPUs. The makespan is compared with the lower bound max(longest job, Σ GPUs·time / N)
// and with the same jobs one after another (`--jobs 1`).
//
//   node bench/packing.mjs [--gpus 1,2,4,8] [--real-gpu] [--out DIR] [--seed 14]
//
// Without --real-gpu the GPUs are simulated: a stand-in nvidia-smi reports N GPUs (0 MiB used),
// and each job checks it was given exactly its GPU count and port. With --real-gpu (one real GPU,
// N = 1) each job also allocates 256 MiB on every GPU it was given and holds it, so the pool's
// "back at baseline" check runs against the real driver. Synthetic jobs run --unsandboxed: they are
// the bench's own code. Figures: a markdown table on stdout and in DIR/packing.md, raw in DIR/packing.json.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const sizes = arg("--gpus", "1,2,4,8").split(",").map(Number);
const realGpu = process.argv.includes("--real-gpu");
const out = resolve(arg("--out", process.env.OUT ?? join(root, "out", "bench-packing")));
const seed = Number(arg("--seed", "14"));
const python = process.env.PROBEGATE_PYTHON || (spawnSync("/usr/bin/python3", ["-c", "1"]).status === 0 ? "/usr/bin/python3" : "python3");
mkdirSync(out, { recursive: true });

/** A small deterministic generator (mulberry32), so every run of the bench packs the same job sets. */
function prng(s) {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** A job set for N GPUs: 2N + 4 jobs of 1, 2, 4 or 8 GPUs (never more than N), 1.0–3.5 s each. */
function jobSet(n) {
  const rand = prng(seed * 100 + n);
  const ks = [1, 2, 4, 8].filter((k) => k <= n);
  return Array.from({ length: 2 * n + 4 }, (_, i) => {
    // Smaller jobs are more common, as on a real probe set.
    const r = rand();
    const k = ks[Math.min(ks.length - 1, Math.floor(r * r * ks.length))];
    return { name: `probe_job${String(i).padStart(2, "0")}`, gpus: k, seconds: Math.round((1 + 2.5 * rand()) * 10) / 10 };
  });
}

const PROBE = `import json, os, socket, sys, time
t0 = time.monotonic()
me = os.path.splitext(os.path.basename(sys.argv[0]))[0]
spec = json.load(open(os.path.join(os.environ["PROBEGATE_PROBE_DIR"], "jobs.json")))[me]
gpus = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
port = int(os.environ["MASTER_PORT"])
problems = []
if len(gpus) != spec["gpus"]:
    problems.append(f"given {len(gpus)} GPUs, asked for {spec['gpus']}")
# Hold the port for the whole job: a second job given the same port could not bind it.
s = socket.socket()
try:
    s.bind(("127.0.0.1", port))
    s.listen(1)
except OSError as e:
    problems.append(f"port {port} already taken: {e}")
held = []
if spec.get("hold_gpu"):
    import torch
    for i in range(torch.cuda.device_count()):
        held.append(torch.empty(256 << 20, dtype=torch.uint8, device=f"cuda:{i}"))
    torch.cuda.synchronize()
time.sleep(max(0.0, spec["seconds"] - (time.monotonic() - t0)))
with open(os.environ["PROBEGATE_RESULTS"], "a") as f:
    f.write(json.dumps({"id": me + ".slice", "category": "functional", "status": "failed" if problems else "passed",
                        "message": "; ".join(problems), "measured": {"gpus": len(gpus), "port": port}}) + "\\n")
`;

const JUNIT = `import sys; open(sys.argv[1], "w").write('<testsuite name="synthetic" tests="1"><testcase classname="synthetic" name="ok"/></testsuite>')`;

/** A task whose probe processes are the job set (task.yml probes.jobs declares each one's GPUs). */
function syntheticTask(dir, jobs) {
  const task = join(dir, "packing-bench");
  mkdirSync(join(task, "base"), { recursive: true });
  mkdirSync(join(dir, "probes"), { recursive: true });
  writeFileSync(join(task, "base", "README"), "synthetic\n");
  writeFileSync(join(task, "prompt.md"), "Synthetic jobs for bench/packing.mjs.\n");
  const declared = jobs.map((j) => `    ${j.name}: { gpus: ${j.gpus} }`).join("\n");
  writeFileSync(
    join(task, "task.yml"),
    `id: packing-bench
title: Synthetic packing jobs
area: other
base: { path: base }
gpus: 1
official:
  command: ["{python}", "-c", ${JSON.stringify(JUNIT)}, "{junit}"]
  timeout: 60
probes:
  path: ../probes
  timeout: 120
  jobs:
${declared}
limits: { wallClock: 3600 }
`,
  );
  for (const j of jobs) writeFileSync(join(dir, "probes", `${j.name}.py`), PROBE);
  writeFileSync(join(dir, "probes", "jobs.json"), JSON.stringify(Object.fromEntries(jobs.map((j) => [j.name, { ...j, hold_gpu: realGpu }]))));
  return task;
}

/** A stand-in nvidia-smi with N idle GPUs (list, one reading, or a reading loop). */
function fakeSmi(dir, n) {
  const path = join(dir, "nvidia-smi");
  writeFileSync(
    path,
    `#!/bin/bash
if [[ "$1" == --query-gpu=index,name* ]]; then for i in $(seq 0 ${n - 1}); do echo "$i, Simulated GPU, 81559, 0.0"; done; exit 0; fi
ids=""; for a in "$@"; do [[ "$a" == --id=* ]] && ids="\${a#--id=}"; done
for i in \${ids//,/ }; do echo "$i, 0"; done
[[ "$*" == *--loop-ms* ]] && exec sleep 100000
exit 0
`,
  );
  chmodSync(path, 0o755);
  return path;
}

function evaluateOnce(task, n, smi, extra) {
  const cli = join(root, "dist", "cli", "index.js");
  const env = { ...process.env, PROBEGATE_PYTHON: python, ...(smi ? { PROBEGATE_NVIDIA_SMI: smi } : {}) };
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [cli, "eval", "--task", task, "--submission", join(task, "base"), "--format", "json", "--unsandboxed", ...extra], { env, encoding: "utf8", maxBuffer: 64 << 20 });
  const wallS = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`probegate eval on ${n} GPUs exited ${r.status}: ${r.stderr.split("\n").slice(-8).join("\n")}`);
  return { result: JSON.parse(r.stdout), wallS };
}

/** Makespan of the probe jobs, their lower bound from the measured durations, and slice overlaps. */
function analyse(result, n) {
  const jobs = result.jobs.filter((j) => j.kind === "probe");
  const start = Math.min(...jobs.map((j) => j.startS));
  const makespan = Math.max(...jobs.map((j) => j.endS)) - start;
  const durations = jobs.map((j) => ({ units: j.gpus.length, seconds: j.endS - j.startS }));
  const lb = Math.max(Math.max(...durations.map((d) => d.seconds)), durations.reduce((s, d) => s + d.units * d.seconds, 0) / n);
  let overlaps = 0;
  for (const a of jobs)
    for (const b of jobs)
      if (a !== b && a.startS < b.endS && b.startS < a.endS && (a.gpus.some((g) => b.gpus.includes(g)) || a.port === b.port)) overlaps += 1;
  const failed = result.probes.filter((p) => p.status !== "passed").length;
  return { makespan, lb, sum: durations.reduce((s, d) => s + d.seconds, 0), overlaps: overlaps / 2, failed, verdict: result.verdict };
}

const rows = [];
for (const n of sizes) {
  const dir = mkdtempSync(join(tmpdir(), `pg-packing-${n}-`));
  const jobs = jobSet(n);
  const task = syntheticTask(dir, jobs);
  const smi = realGpu ? null : fakeSmi(dir, n);
  const gpuFlag = realGpu ? ["--gpus", "0"] : [];
  process.stderr.write(`N=${n}: ${jobs.length} jobs (GPUs ${jobs.map((j) => j.gpus).join(" ")}), packed…\n`);
  const packed = evaluateOnce(task, n, smi, gpuFlag);
  process.stderr.write(`N=${n}: one after another (--jobs 1)…\n`);
  const serial = evaluateOnce(task, n, smi, [...gpuFlag, "--jobs", "1"]);
  const p = analyse(packed.result, n);
  const s = analyse(serial.result, n);
  const area = jobs.reduce((a, j) => a + j.gpus * j.seconds, 0);
  rows.push({ n, jobs: jobs.length, nominal: { area, longest: Math.max(...jobs.map((j) => j.seconds)) }, packed: p, serial: s, packedWallS: packed.wallS, serialWallS: serial.wallS, records: packed.result.jobs });
  process.stderr.write(`N=${n}: makespan ${p.makespan.toFixed(1)} s, bound ${p.lb.toFixed(1)} s, serial ${s.makespan.toFixed(1)} s\n`);
  cpSync(join(dir, "probes", "jobs.json"), join(out, `jobs-${n}.json`));
}

const machine = execFileSync("sh", ["-c", "echo \"$(nproc) cores, $(uname -m), node $(node --version)\"; nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1"], { encoding: "utf8" }).trim().replace(/\n/g, ", ");
const lines = [
  `Machine: ${machine}; ${realGpu ? "real GPU" : "simulated GPUs (stand-in nvidia-smi)"}; ${new Date().toISOString()}`,
  "",
  "| GPUs | jobs | Σ GPUs·s | lower bound s | packed makespan s | packed / bound | one after another s | speed-up | shared GPU or port | failed checks |",
  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((r) => `| ${r.n} | ${r.jobs} | ${r.nominal.area.toFixed(1)} | ${r.packed.lb.toFixed(2)} | ${r.packed.makespan.toFixed(2)} | ${(r.packed.makespan / r.packed.lb).toFixed(3)} | ${r.serial.makespan.toFixed(2)} | ${(r.serial.makespan / r.packed.makespan).toFixed(2)}× | ${r.packed.overlaps} | ${r.packed.failed + r.serial.failed} |`),
  "",
  "Lower bound from the measured job durations (endS − startS in the result's `jobs`); goal: packed / bound ≤ 1.10.",
];
writeFileSync(join(out, "packing.md"), `${lines.join("\n")}\n`);
writeFileSync(join(out, "packing.json"), `${JSON.stringify(rows, null, 2)}\n`);
process.stdout.write(`${lines.join("\n")}\n`);

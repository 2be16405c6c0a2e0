// Scorecard aggregation over 1,000,000 stored evaluations (issue #13): goal under 2 s and under
// 500 MB on the 2-core dev box, side by side with plain SQL GROUP BYs over the same rows.
//
// Builds a store of 1,000,000 evaluations (about 1.1 M finished attempts: one in ten has a rerun,
// about a quarter of the passes carry failed probe checks) through the store's own schema, so the
// scorecard_rows triggers of migration 5 maintain the scorecard table as the app would. Then each
// measurement runs in a fresh process (its peak RSS is its own), three rounds, interleaved:
//   groupby-join   SELECT agent, task, verdict, COUNT(*) over attempt_results ⋈ evaluations (no basis)
//   groupby        the store's scorecardRows(): one GROUP BY over scorecard_rows, first attempts
//   scan           scorecardScan(): every figure by the full scan of scorecard_rows (before migration 7)
//   scorecard      the store's scorecardOf(): every figure, per agent × repository/task/area/week,
//                  from migration 7's pre-counted cells
//   page           scorecardView() (+ drill-down queries) and the HTML page, as the CLI writes it
// Then, once: whether scorecardOf's figures equal the scan's (every basis), and what migration 7's
// triggers add to writing an evaluation: fresh stores at schema 6 and 7, 20,000 evaluations each
// written as the bench store is, interleaved 3×.
//
//   node bench/scorecard.mjs [OUT_DIR] [--evaluations 1000000] [--keep /tmp/pg-scorecard.sqlite]
// --keep reuses (or leaves) the store file: building it takes minutes on 2 cores.
import Database from "better-sqlite3";
import { execFileSync, fork } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const root = resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const positional = args.filter((a, i) => !a.startsWith("--") && !(i > 0 && args[i - 1].startsWith("--")));

if (args[0] === "--child") {
  await child(args[1], args[2], args[3], args[4]);
  process.exit(0);
}

const N = Number(opt("--evaluations", 1_000_000));
const out = resolve(positional[0] ?? process.env.OUT ?? join(root, "bench", "results"));
mkdirSync(out, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "pg-scorecard-bench-"));
const file = resolve(opt("--keep", join(work, "probegate.sqlite")));

// The bundle sits inside the checkout (out/ is ignored) so it resolves better-sqlite3 from node_modules.
const bundleDir = join(root, "out", "bench-scorecard");
console.log(`bundling src/ (rolldown) …`);
execFileSync(join(root, "node_modules", ".bin", "rolldown"), ["./bench/scorecard-entry.ts", "--format", "esm", "--platform", "node", "-d", bundleDir, "--external", "better-sqlite3", "--external", "chart.js"], { cwd: root, stdio: "ignore" });
const bundle = join(bundleDir, "scorecard-entry.js");
const lib = await import(pathToFileURL(bundle).href);

const t0 = performance.now();
const upgrade = existsSync(file) ? upgradeOnly(lib, file) : null;
if (upgrade) console.log(`upgraded ${file} from schema ${upgrade.from} to ${upgrade.to} in ${upgrade.seconds.toFixed(1)} s`);
const rows = build(lib, file, N);
console.log(`store: ${file}, ${rows.evaluations} evaluations, ${rows.attempts} attempts, ${rows.failures} probe failures (${((performance.now() - t0) / 1000).toFixed(0)} s)`);

const MODES = ["groupby-join", "groupby", "scan", "scorecard", "page"];
const forkChild = (mode, extra = []) =>
  new Promise((res, rej) => {
    const c = fork(import.meta.filename, ["--child", mode, file, bundle, ...extra], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    c.once("message", res);
    c.once("exit", (code) => code && rej(new Error(`${mode} exited ${code}`)));
  });
const runs = Object.fromEntries(MODES.map((m) => [m, []]));
for (let round = 1; round <= 3; round++) {
  for (const mode of MODES) {
    const r = await forkChild(mode);
    runs[mode].push(r);
    console.log(`round ${round} ${mode.padEnd(13)} ${r.wallS.toFixed(2)} s wall, ${r.cpuS.toFixed(2)} s CPU, peak RSS ${r.peakMiB.toFixed(0)} MiB (${r.rows} rows out)`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const summary = MODES.map((m) => ({
  mode: m,
  wallS: median(runs[m].map((r) => r.wallS)),
  cpuS: median(runs[m].map((r) => r.cpuS)),
  peakMiB: Math.max(...runs[m].map((r) => r.peakMiB)),
  baseMiB: median(runs[m].map((r) => r.baseMiB)),
}));
const base = summary.find((s) => s.mode === "groupby");
const machine = `${cpus().length} × ${cpus()[0]?.model ?? "?"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load ${loadavg()[0].toFixed(1)}`;
const verify = await forkChild("verify");
console.log(`figures from the cells equal the full scan's (every basis; GPU minutes to 1e-9 relative): ${verify.equal ? "yes" : `NO (${verify.diff})`}`);
const inserts = { 6: [], 7: [] };
for (let round = 1; round <= 3; round++) {
  for (const schema of [6, 7]) {
    const r = await forkChild("insert", [String(schema)]);
    inserts[schema].push(r.usPerEvaluation);
    console.log(`round ${round} insert at schema ${schema}: ${r.usPerEvaluation.toFixed(0)} µs per evaluation written (${r.attempts} attempts, ${r.failures} probe failures)`);
  }
}
const ins6 = median(inserts[6]);
const ins7 = median(inserts[7]);
const lines = [
  `scorecard over ${rows.evaluations} evaluations (${rows.attempts} attempts) — ${machine}`,
  "| mode | wall s (median of 3) | CPU s | × groupby (wall) | peak RSS MiB | RSS before the query MiB |",
  "|---|---:|---:|---:|---:|---:|",
  ...summary.map((s) => `| ${s.mode} | ${s.wallS.toFixed(2)} | ${s.cpuS.toFixed(2)} | ${(s.wallS / base.wallS).toFixed(2)} | ${s.peakMiB.toFixed(0)} | ${s.baseMiB.toFixed(0)} |`),
];
console.log(`\n${lines.join("\n")}`);
lines.push(
  "",
  `writing an evaluation (1 evaluation + ~1.1 attempts + probe failures, batches of 1,000): ${ins6.toFixed(0)} µs at schema 6, ${ins7.toFixed(0)} µs with migration 7's triggers (+${(ins7 - ins6).toFixed(0)} µs, ×${(ins7 / ins6).toFixed(2)}); median of 3`,
  `figures from the cells equal the full scan's: ${verify.equal ? "yes" : "NO"}${upgrade ? `; migration 7 upgraded this store in ${upgrade.seconds.toFixed(1)} s` : ""}`,
);
const sc = summary.find((s) => s.mode === "scorecard");
console.log(`goal: scorecard under 2 s and 500 MB — ${sc.wallS < 2 && sc.peakMiB < 500 ? "met" : "NOT met"} (${sc.wallS.toFixed(2)} s, ${sc.peakMiB.toFixed(0)} MiB)`);
writeFileSync(join(out, "scorecard-bench.json"), `${JSON.stringify({ machine, rows, summary, runs, inserts, verify, upgrade }, null, 2)}\n`);
writeFileSync(join(out, "scorecard-bench.md"), `${lines.join("\n")}\n`);
console.log(`written: ${join(out, "scorecard-bench.md")}, scorecard-bench.json`);
if (!args.includes("--keep")) rmSync(work, { recursive: true, force: true });

/** One measurement in this fresh process: open the store, run `mode` once, report time and peak RSS. */
async function child(mode, dbFile, bundleFile, extra) {
  const l = await import(pathToFileURL(bundleFile).href);
  if (mode === "insert") return process.send(insertCost(l, Number(extra)));
  const db = l.openStore(dbFile);
  if (mode === "verify") {
    // GPU minutes: float sums taken in another order, so equal to 1e-9 relative; the rest exactly.
    const split = (card) => {
      const gpu = [];
      const text = JSON.stringify(card, (k, v) => (k === "gpuMinutes" ? (gpu.push(v), null) : v));
      return { text, gpu };
    };
    for (const basis of ["first-attempt", "best-of-n", "all"]) {
      const { text: a, gpu: ga } = split(l.scorecardOf(db, { basis }));
      const { text: b, gpu: gb } = split(l.scorecardScan(db, { basis }));
      const gpuOff = ga.length !== gb.length || ga.some((x, i) => Math.abs(x - gb[i]) > 1e-9 * Math.max(1, Math.abs(gb[i])));
      if (gpuOff) return process.send({ equal: false, diff: `${basis}: GPU minutes differ past 1e-9 relative` });
      if (a !== b) {
        const at = [...a].findIndex((ch, i) => ch !== b[i]);
        return process.send({ equal: false, diff: `${basis}: …${a.slice(Math.max(0, at - 80), at + 80)} vs …${b.slice(Math.max(0, at - 80), at + 80)}` });
      }
    }
    return process.send({ equal: true });
  }
  const filter = { basis: "first-attempt" };
  if (mode === "page") l.chartJsSource();
  const baseMiB = process.memoryUsage().rss / 2 ** 20;
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  let n;
  if (mode === "groupby-join") {
    n = db.prepare("SELECT e.agent, e.task, r.verdict, COUNT(*) AS count FROM attempt_results r JOIN evaluations e ON e.key = r.evaluation_key GROUP BY e.agent, e.task, r.verdict").all().length;
  } else if (mode === "groupby") n = l.scorecardRows(db, filter).length;
  else if (mode === "scan") n = l.scorecardScan(db, filter).agents.length;
  else if (mode === "scorecard") n = l.scorecardOf(db, filter).agents.length;
  else {
    const { card, drill } = l.scorecardView(db, filter);
    n = l.renderScorecardHtml(card, { chartJs: l.chartJsSource(), title: "bench", generatedAt: new Date().toISOString(), scope: "all repositories", drill }).length;
  }
  const wallS = (performance.now() - w0) / 1000;
  const c = process.cpuUsage(cpu0);
  db.close();
  process.send({ mode, wallS, cpuS: (c.user + c.system) / 1e6, peakMiB: process.resourceUsage().maxRSS / 1024, baseMiB, rows: n });
}

/** Opens an existing bench store once, so its pending migrations (7: the cells' backfill) run, timed. */
function upgradeOnly(l, dbFile) {
  const raw = new Database(dbFile, { readonly: true });
  const from = raw.prepare("SELECT MAX(version) FROM schema_version").pluck().get();
  raw.close();
  const w0 = performance.now();
  const db = l.openStore(dbFile);
  const to = l.schemaVersion(db);
  db.close();
  return from === to ? null : { from, to, seconds: (performance.now() - w0) / 1000 };
}

/** µs per evaluation written (as `build` writes them) into a fresh store at schema 6 or at the latest. */
function insertCost(l, schema) {
  const dir = mkdtempSync(join(tmpdir(), "pg-scorecard-insert-"));
  const db = l.openStore(join(dir, "probegate.sqlite"), { migrations: schema === 6 ? l.MIGRATIONS.filter((m) => m.version <= 6) : l.MIGRATIONS });
  db.pragma("synchronous = OFF");
  const n = 20_000;
  const w0 = performance.now();
  const r = writeEvaluations(db, n, 1000, () => {});
  const us = ((performance.now() - w0) * 1000) / n;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return { schema, usPerEvaluation: us, ...r };
}

/** The bench store: reused when it already holds `n` evaluations, else built (deterministic). */
function build(l, dbFile, n) {
  const db = l.openStore(dbFile);
  const count = (t) => db.prepare(`SELECT COUNT(*) AS c FROM ${t}`).get().c;
  if (count("evaluations") === n) {
    const r = { evaluations: n, attempts: count("attempt_results"), failures: count("probe_failures") };
    db.close();
    return r;
  }
  if (count("evaluations") > 0) throw new Error(`${dbFile} holds another bench store; remove it or pick another --keep file`);
  db.pragma("synchronous = OFF");
  const r = writeEvaluations(db, n, 50_000, (done) => (done % 100_000 === 0 || done === n) && console.log(`  built ${done}/${n} evaluations`));
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  return { evaluations: n, ...r };
}

/** Writes `n` deterministic bench evaluations (about 1.1 attempts each, a year of them), `step` per transaction. */
function writeEvaluations(db, n, step, progress) {
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const agents = ["claude", "codex", "copilot", "devin", "jules", "cursor", "openhands", "sweep", null];
  const skill = [0.55, 0.5, 0.4, 0.35, 0.3, 0.45, 0.25, 0.2, 0.3];
  const cats = ["structure", "state", "functional", "memory", "time", "traffic"];
  const areas = ["training", "inference", "rl"];
  const start = Date.UTC(2025, 11, 1);
  const span = 365 * 86_400_000;
  const ev = db.prepare(
    "INSERT INTO evaluations (key, owner, repo, pr, head_sha, task, probe_set, agent, state, created_at, updated_at, attempt_started_at, run_url) VALUES (?, ?, ?, ?, ?, ?, 'sha256:bench', ?, 'completed', ?, ?, ?, ?)",
  );
  const ar = db.prepare("INSERT INTO attempt_results (evaluation_key, attempt, verdict, finished_at, area, duration_s, gpu_seconds) VALUES (?, ?, ?, ?, ?, ?, ?)");
  const pf = db.prepare("INSERT INTO probe_failures (evaluation_key, attempt, probe_id, category, status, message) VALUES (?, ?, ?, ?, 'failed', 'bench')");
  let attempts = 0;
  let failures = 0;
  const verdict = (a) => {
    const x = rand();
    if (x < 0.04) return "error";
    if (x < 0.04 + skill[a]) return "resolved";
    return x < 0.04 + skill[a] + 0.2 ? "probe-rejected" : "official-failed";
  };
  const batch = db.transaction((from, to) => {
    for (let i = from; i < to; i++) {
      const a = i % agents.length;
      const key = `bench-${i.toString(16).padStart(58, "0")}`;
      const t = start + Math.floor((i / n) * span);
      const task = `task-${i % 36}`;
      ev.run(key, `org-${i % 3}`, `repo-${i % 60}`, Math.floor(i / 2), (i * 2654435761).toString(16).padStart(40, "0").slice(-40), task, agents[a], t, t, t, `https://github.com/org-${i % 3}/evaluator/actions/runs/${i}`);
      const tries = rand() < 0.1 ? 2 : 1;
      for (let k = 1; k <= tries; k++) {
        const v = verdict(a);
        ar.run(key, k, v, t + k * 600_000, areas[(i % 36) % 3], 120 + rand() * 1800, rand() * 3600 * 2);
        attempts++;
        if (v === "probe-rejected") {
          const m = 1 + Math.floor(rand() * 2);
          for (let j = 0; j < m; j++) pf.run(key, k, `probe-${j}`, cats[Math.floor(rand() * cats.length)]), failures++;
        }
      }
    }
  });
  for (let i = 0; i < n; i += step) {
    batch(i, Math.min(n, i + step));
    progress(Math.min(n, i + step));
  }
  return { attempts, failures };
}

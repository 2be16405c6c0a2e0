// App throughput: webhook deliveries per second, p50/p99 handling time, and memory after 1,000 vs
// 10,000 deliveries. The committed bundle (dist/app) runs behind Probot's real HTTP middleware
// (the signature of every delivery is checked) with its SQLite store on disk; GitHub is a stub
// HTTP server in another process that answers every request at once, so the times are the app's own.
// Goals (issue #5): p99 under 50 ms of app time, memory flat.
//
//   node --expose-gc bench/app-throughput.mjs [--deliveries 10000]
import { fork } from "node:child_process";
import { createHmac, generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Probot, ProbotOctokit } from "probot";

const root = resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const total = Number(args[args.indexOf("--deliveries") + 1] || 10_000);
const { createProbegate, openStore, webhookServer } = await import(/* webpackIgnore: true */ pathToFileURL(join(root, "dist", "app", "index.js")).href);

const SECRET = "bench-webhook-secret";
const SIGNING_KEY = "bench-signing-key-0123456789abcdef";
const OWNER = "bench-org";
const EVALUATOR = `${OWNER}/evaluator`;

// --- A GitHub that answers at once, in its own process (bench/app-github-stub.mjs) so the CPU
// figure below is the app's alone (and the client's that sends the deliveries).
const stub = fork(join(root, "bench", "app-github-stub.mjs"), [EVALUATOR, SIGNING_KEY], { stdio: "inherit" });
const githubUrl = await new Promise((resolve, reject) => {
  stub.once("message", (m) => resolve(`http://127.0.0.1:${m.port}`));
  stub.once("exit", (code) => reject(new Error(`the stub GitHub exited (${code}) before listening`)));
});

// --- The app ------------------------------------------------------------------------------------
const dir = mkdtempSync(join(tmpdir(), "pg-bench-app-"));
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
// Retry on; throttling off: its write spacing (1 s between writes) is GitHub's pacing, not app time.
const Octokit = ProbotOctokit.defaults((o) => ({ ...o, throttle: { ...o.throttle, enabled: false } }));
const probot = new Probot({ appId: 1, privateKey, secret: SECRET, baseUrl: githubUrl, logLevel: "warn", Octokit });
const db = openStore(join(dir, "probegate.sqlite"));
const probegate = createProbegate({ db, signingKey: SIGNING_KEY, sweepEveryMs: 0 });
const server = await webhookServer(probot, probegate);
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const hookUrl = `http://127.0.0.1:${server.address().port}/api/github/webhooks`;

// --- Deliveries ---------------------------------------------------------------------------------
const installation = { id: 1 };
const repository = { id: 1, name: "gpu-lib", full_name: `${OWNER}/gpu-lib`, owner: { login: OWNER, id: 1, type: "Organization" }, default_branch: "main" };
const sha = (n) => n.toString(16).padStart(40, "0");
function pullRequest(n, author) {
  return {
    action: "opened",
    number: n,
    installation,
    repository,
    sender: { login: author, type: "User" },
    pull_request: { number: n, state: "open", draft: false, body: "", user: { login: author, type: author.endsWith("[bot]") ? "Bot" : "User" }, labels: [{ name: "gpu" }], head: { sha: sha(n), ref: `feature-${n}` }, base: { ref: "main", repo: repository } },
  };
}
const workflowRun = (id, action) => ({ action, installation, repository: { ...repository, name: "evaluator", full_name: EVALUATOR }, sender: { login: "github-actions[bot]", type: "Bot" }, workflow_run: { id, html_url: `https://github.com/x/${id}`, conclusion: action === "completed" ? "success" : null } });
const comment = (n) => ({ action: "created", installation, repository, sender: { login: "reviewer", type: "User" }, issue: { number: n, pull_request: { url: "x" } }, comment: { id: n, body: "Looks good to me.", user: { login: "reviewer", type: "User" } } });

/**
 * One PR's life in five deliveries, each with the GitHub requests it makes: an agent PR opened
 * (config, probe set, check-run lookup, create, dispatch), its run starting (check-run update) and
 * finishing (artifact list, download, verify, check-run update), a person's PR (config, commits)
 * and a comment without a command (none).
 */
function* deliveries() {
  for (let n = 1; ; n++) {
    const run = { value: null };
    yield ["agent PR opened", "pull_request", pullRequest(n, "copilot-swe-agent[bot]"), run];
    yield ["run in_progress", "workflow_run", () => workflowRun(run.value, "in_progress")];
    yield ["run completed", "workflow_run", () => workflowRun(run.value, "completed")];
    yield ["person's PR opened", "pull_request", pullRequest(1_000_000 + n, "octocat")];
    yield ["plain comment", "issue_comment", comment(n)];
  }
}

let seq = 0;
async function deliver(name, payload) {
  const body = JSON.stringify(payload);
  const t0 = performance.now();
  const res = await fetch(hookUrl, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", "x-github-event": name, "x-github-delivery": `bench-${++seq}`, "x-hub-signature-256": `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}` },
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`delivery ${seq} (${name}) answered ${res.status}: ${text}`);
  return performance.now() - t0;
}

const memory = () => {
  globalThis.gc?.();
  const m = process.memoryUsage();
  return { heapMiB: m.heapUsed / 2 ** 20, rssMiB: m.rss / 2 ** 20 };
};
const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

const times = [];
const byKind = new Map();
const marks = {};
const load = [loadavg()[0]];
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (const [kind, name, make, run] of deliveries()) {
  if (times.length === total) break;
  const payload = typeof make === "function" ? make() : make;
  const ms = await deliver(name, payload);
  times.push(ms);
  if (!byKind.has(kind)) byKind.set(kind, []);
  byKind.get(kind).push(ms);
  if (run) {
    // The dispatch of an agent PR recorded the run id in the store; the next two deliveries are its.
    const row = db.prepare("SELECT workflow_run_id FROM evaluations WHERE head_sha = ?").get(payload.pull_request.head.sha);
    run.value = row?.workflow_run_id;
  }
  if (times.length === 1000) marks.at1k = memory();
}
const elapsedS = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
// CPU time does not grow with the machine's load the way wall time does; it covers this process:
// the app and the client that signs and sends the deliveries (the stub GitHub runs apart).
const cpuMsPerDelivery = (cpu.user + cpu.system) / 1000 / total;
marks.atEnd = memory();
marks.at1k ??= marks.atEnd;
load.push(loadavg()[0]);

const sorted = [...times].sort((a, b) => a - b);
const states = db.prepare("SELECT state, verdict, COUNT(*) AS n FROM evaluations GROUP BY state, verdict").all();
const figures = {
  deliveries: total,
  perSecond: total / elapsedS,
  p50ms: pct(sorted, 50),
  p99ms: pct(sorted, 99),
  maxms: sorted[sorted.length - 1],
  cpuMsPerDelivery,
  byKind: Object.fromEntries([...byKind].map(([k, v]) => {
    const s = [...v].sort((a, b) => a - b);
    return [k, { n: s.length, p50ms: pct(s, 50), p99ms: pct(s, 99) }];
  })),
  loadAverage: load,
  at1k: marks.at1k,
  atEnd: marks.atEnd,
  evaluations: states,
};
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
process.stdout.write(
  [
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}; 1-min load average ${load.map((l) => l.toFixed(1)).join(" → ")}`,
    `${total} deliveries in ${elapsedS.toFixed(1)} s: ${figures.perSecond.toFixed(0)}/s; handling p50 ${figures.p50ms.toFixed(2)} ms, p99 ${figures.p99ms.toFixed(2)} ms, max ${figures.maxms.toFixed(1)} ms; CPU ${cpuMsPerDelivery.toFixed(2)} ms per delivery (app and sender)`,
    `memory after 1,000: heap ${marks.at1k.heapMiB.toFixed(1)} MiB, RSS ${marks.at1k.rssMiB.toFixed(1)} MiB; after ${total}: heap ${marks.atEnd.heapMiB.toFixed(1)} MiB, RSS ${marks.atEnd.rssMiB.toFixed(1)} MiB`,
    "",
  ].join("\n"),
);
probegate.stop();
await new Promise((r) => server.close(r));
stub.kill();
db.close();
rmSync(dir, { recursive: true, force: true });

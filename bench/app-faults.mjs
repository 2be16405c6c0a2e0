// Fault bench of the app: a stream of agent PRs while the app process is killed (SIGKILL) and
// started again on the same store, and while a share of the `workflow_run` webhooks is dropped.
// This process plays GitHub: its REST API (stateful: check runs, dispatched runs that a fake runner
// completes, artifacts with signed results, the app's webhook deliveries and their redelivery) and
// its webhook sender (a delivery to a dead app fails and is only retried if the app asks).
// Reports lost evaluations (goal 0), duplicate check runs (goal 0), duplicate dispatches, and the
// time from a run's end to its check run's completion where the webhook never came.
//
//   node bench/app-faults.mjs [--app dist/app/index.js] [--prs 100] [--drop 0.2] [--kill-every 3000] [--down 400]
import { fork } from "node:child_process";
import { createHash, createHmac, generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { zipSync } from "fflate";

const root = resolve(import.meta.dirname, "..");
const arg = (name, def) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : def);
const APP = resolve(arg("app", join(root, "dist", "app", "index.js")));
const PRS = Number(arg("prs", 100));
const DROP = Number(arg("drop", 0.2));
const KILL_EVERY = Number(arg("kill-every", 3000));
const DOWN = Number(arg("down", 400));
const SECRET = "bench-webhook-secret";
const SIGNING_KEY = "bench-signing-key-0123456789abcdef";
const OWNER = "bench-org";
const EVALUATOR = `${OWNER}/evaluator`;
const CONFIG = `routes:\n  - task: sharded-optimizer\n    labels: [gpu]\nevaluator:\n  repository: ${EVALUATOR}\n  workflow: evaluate.yml\n`;
const t0 = Date.now();
const rand = (() => { let s = 42; return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31); })(); // seeded: runs compare

// --- GitHub's state -----------------------------------------------------------------------------
let nextId = 1;
const checkRuns = []; // {id, sha, name, externalId, status, conclusion, createdAt, completedAt}
const runs = new Map(); // id → {inputs, status, conclusion, completedAt, webhook: "sent" | "dropped" | "failed"}
const asks = []; // the app's redelivery requests
const deliveries = []; // attempts: {id, guid, delivered_at, status_code, event, action, payload}

/** The signed result of a run: sorted keys at every level, so JSON.stringify is the canonical form. */
function resultZip(inputs) {
  const body = {
    durations: { officialS: 1, probesS: 1, totalS: 2, workspaceS: 0 },
    environment: { backend: "gloo", gpus: [], node: "v20", platform: "linux", sandboxed: true, worldSize: 2 },
    evaluationKey: inputs["evaluation-key"],
    finishedAt: "2026-12-02T10:00:02Z",
    gpuSeconds: 0,
    official: { counts: { errors: 0, failed: 0, passed: 4, skipped: 0, total: 4 }, durationS: 1, exitCode: 0, failing: [], passed: true, reportFound: true },
    probes: [{ attempts: 1, category: "memory", durationS: 1, id: "state-sharded", location: { line: 42, path: "dpopt/optim.py" }, message: "optimizer state per rank is 64 MiB", probe: "probe_memory", status: "failed" }],
    reason: "passes the official tests, fails 1 of 1 hidden probes",
    schemaVersion: 1,
    startedAt: "2026-12-02T10:00:00Z",
    submission: { kind: "git", repo: inputs.repository, sha: inputs.sha, source: `${inputs.repository}@${inputs.sha}` },
    task: { area: "training", id: inputs.task, probeSet: `sha256:${"cd".repeat(32)}`, title: "Shard optimizer state" },
    verdict: "probe-rejected",
    workspaceResets: [],
  };
  const signature = { algorithm: "hmac-sha256", keyId: createHash("sha256").update(SIGNING_KEY).digest("hex").slice(0, 16), value: createHmac("sha256", SIGNING_KEY).update(JSON.stringify(body)).digest("hex") };
  return zipSync({ "probegate-result.json": Buffer.from(JSON.stringify({ ...body, signature })) });
}

const send = (res, status, body, type = "application/json") => res.writeHead(status, { "content-type": type }).end(type === "application/json" ? JSON.stringify(body) : body);
const routes = [
  [/^POST \/app\/installations\/\d+\/access_tokens$/, (res) => send(res, 201, { token: "ghs_bench", expires_at: "2099-01-01T00:00:00Z" })],
  [/^GET \/repos\/[^/]+\/[^/]+\/contents\/\.github%2Fprobegate\.yml/, (res) => send(res, 200, { type: "file", encoding: "base64", content: Buffer.from(CONFIG).toString("base64") })],
  [/^GET \/repos\/[^/]+\/[^/]+\/commits\/main/, (res) => send(res, 200, { sha: "ab".repeat(20) })],
  [
    /^GET \/repos\/[^/]+\/[^/]+\/commits\/([0-9a-f]{40})\/check-runs\?(.*)$/,
    (res, _b, m) => {
      const name = new URLSearchParams(m[2]).get("check_name");
      const hits = checkRuns.filter((c) => c.sha === m[1] && c.name === name).map((c) => ({ id: c.id, external_id: c.externalId, status: c.status }));
      send(res, 200, { total_count: hits.length, check_runs: hits });
    },
  ],
  [
    /^POST \/repos\/[^/]+\/[^/]+\/check-runs$/,
    (res, b) => {
      const body = JSON.parse(b);
      const c = { id: nextId++, sha: body.head_sha, name: body.name, externalId: body.external_id, status: body.status, conclusion: null, createdAt: Date.now(), completedAt: null };
      checkRuns.push(c);
      send(res, 201, { id: c.id });
    },
  ],
  [
    /^PATCH \/repos\/[^/]+\/[^/]+\/check-runs\/(\d+)$/,
    (res, b, m) => {
      const c = checkRuns.find((x) => x.id === Number(m[1]));
      const body = JSON.parse(b);
      if (c && body.status) c.status = body.status;
      if (c && body.conclusion && !c.conclusion) Object.assign(c, { conclusion: body.conclusion, completedAt: Date.now() });
      send(res, 200, {});
    },
  ],
  [
    /^POST \/repos\/[^/]+\/[^/]+\/actions\/workflows\/[^/]+\/dispatches$/,
    (res, b) => {
      const id = nextId++;
      const run = { id, inputs: JSON.parse(b).inputs, status: "queued", conclusion: null, completedAt: null, webhook: null };
      runs.set(id, run);
      // The fake runner: the run ends after 0.3-1.3 s, then GitHub sends workflow_run.completed (or drops it).
      setTimeout(() => finishRun(run), 300 + rand() * 1000);
      send(res, 200, { workflow_run_id: id, run_url: `https://api.github.com/x/${id}`, html_url: `https://github.com/x/${id}` });
    },
  ],
  [/^POST \/repos\/[^/]+\/[^/]+\/actions\/runs\/\d+\/cancel$/, (res) => send(res, 202, {})],
  [/^GET \/repos\/[^/]+\/[^/]+\/actions\/workflows\/[^/]+\/runs/, (res) => {
    const list = [...runs.values()].map((r) => ({ id: r.id, display_title: `probegate ${r.inputs.task} ${r.inputs["evaluation-key"]}`, html_url: `https://github.com/x/${r.id}` }));
    send(res, 200, { total_count: list.length, workflow_runs: list });
  }],
  [/^GET \/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)$/, (res, _b, m) => {
    const r = runs.get(Number(m[1]));
    return r ? send(res, 200, { id: r.id, status: r.status, conclusion: r.conclusion, html_url: `https://github.com/x/${r.id}` }) : send(res, 404, { message: "Not Found" });
  }],
  [/^GET \/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)\/artifacts/, (res, _b, m) => send(res, 200, { total_count: 1, artifacts: [{ id: Number(m[1]), name: "probegate-result", size_in_bytes: 2000, expired: false }] })],
  [/^GET \/repos\/[^/]+\/[^/]+\/actions\/artifacts\/(\d+)\/zip$/, (res, _b, m) => send(res, 200, Buffer.from(resultZip(runs.get(Number(m[1])).inputs)), "application/zip")],
  [/^GET \/app\/hook\/deliveries/, (res) => send(res, 200, [...deliveries].reverse().map(({ payload, ...a }) => a))],
  [/^POST \/app\/hook\/deliveries\/(\d+)\/attempts$/, (res, _b, m) => {
    const a = deliveries.find((d) => d.id === Number(m[1]));
    asks.push({ id: Number(m[1]), guid: a?.guid, at: Date.now(), pid: child?.pid });
    send(res, 202, {});
    if (a) void deliver(a.event, a.payload, a.guid);
  }],
];
const github = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const line = `${req.method} ${req.url}`;
    for (const [re, handle] of routes) {
      const m = re.exec(line);
      if (m) return handle(res, body, m);
    }
    send(res, 404, { message: `bench GitHub: no route for ${line}` });
  });
});
await new Promise((r) => github.listen(0, "127.0.0.1", r));
const githubUrl = `http://127.0.0.1:${github.address().port}`;

// --- The webhook sender -------------------------------------------------------------------------
let hookUrl = null;
let delivered = 0;
/** One delivery attempt, recorded as GitHub records it (status 0 when the app could not be reached). */
async function deliver(event, payload, guid = `d-${nextId++}`) {
  const body = JSON.stringify(payload);
  const attempt = { id: nextId++, guid, delivered_at: new Date().toISOString(), redelivery: deliveries.some((d) => d.guid === guid), status: "", status_code: 0, event, action: payload.action, installation_id: 1, repository_id: 1, payload };
  // GitHub lists an attempt once it has an outcome.
  const listed = () => deliveries.push(attempt);
  try {
    const res = await fetch(hookUrl, {
      method: "POST",
      body,
      signal: AbortSignal.timeout(10_000),
      headers: { "content-type": "application/json", "x-github-event": event, "x-github-delivery": guid, "x-hub-signature-256": `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}` },
    });
    await res.text();
    attempt.status_code = res.status;
    delivered += 1;
  } catch {
    attempt.status_code = 0;
  }
  listed();
}

const installation = { id: 1 };
const repository = { id: 1, name: "gpu-lib", full_name: `${OWNER}/gpu-lib`, owner: { login: OWNER, id: 1, type: "Organization" }, default_branch: "main" };
const sha = (n) => n.toString(16).padStart(40, "0");
const pullRequest = (n) => ({
  action: "opened", number: n, installation, repository, sender: { login: "copilot-swe-agent[bot]", type: "Bot" },
  pull_request: { number: n, state: "open", draft: false, body: "", user: { login: "copilot-swe-agent[bot]", type: "Bot" }, labels: [{ name: "gpu" }], head: { sha: sha(n), ref: `agent-${n}` }, base: { ref: "main", repo: repository } },
});
function finishRun(run) {
  Object.assign(run, { status: "completed", conclusion: "success", completedAt: Date.now() });
  if (rand() < DROP) return void (run.webhook = "dropped");
  run.webhook = "sent";
  const payload = { action: "completed", installation, repository: { ...repository, name: "evaluator", full_name: EVALUATOR }, sender: { login: "github-actions[bot]", type: "Bot" }, workflow_run: { id: run.id, html_url: `https://github.com/x/${run.id}`, conclusion: "success", status: "completed" } };
  void deliver("workflow_run", payload).then(() => {
    const last = deliveries.filter((d) => d.payload === payload).at(-1);
    if (last?.status_code !== 200) run.webhook = "failed";
  });
}

// --- The app, killed and started again ---------------------------------------------------------
const dir = mkdtempSync(join(tmpdir(), "pg-faults-"));
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
let child = null;
let port = 0;
let kills = 0;
async function startApp() {
  child = fork(join(root, "bench", "app-faults-app.mjs"), [APP, githubUrl, join(dir, "probegate.sqlite")], {
    env: { ...process.env, BENCH_PRIVATE_KEY: privateKey, BENCH_SECRET: SECRET, BENCH_SIGNING_KEY: SIGNING_KEY, BENCH_SWEEP_MS: "250", BENCH_RECONCILE_MS: "1500", BENCH_REDELIVER_MS: "1000", BENCH_LEASE_MS: "3000", BENCH_REDELIVER_GAP_MS: "4000", BENCH_TAKEOVER_MS: "3000", BENCH_PORT: String(port) },
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  port = await new Promise((res, rej) => {
    child.once("message", (m) => res(m.port));
    child.once("exit", (code) => rej(new Error(`the app exited (${code}) before listening`)));
  });
  hookUrl = `http://127.0.0.1:${port}/api/github/webhooks`;
}
await startApp();
let stopping = false;
const killer = (async () => {
  while (!stopping) {
    await new Promise((r) => setTimeout(r, KILL_EVERY * (0.5 + rand())));
    if (stopping) break;
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    kills += 1;
    await new Promise((r) => setTimeout(r, DOWN));
    await startApp();
  }
})();

// --- The stream ---------------------------------------------------------------------------------
// The storm: PRs arrive while the app is killed again and again. Then the app stays up (a deploy
// ends), and the bench waits for every evaluation to end: the time that takes is the recovery.
for (let n = 1; n <= PRS; n++) {
  void deliver("pull_request", pullRequest(n));
  await new Promise((r) => setTimeout(r, 40 + rand() * 60));
}
stopping = true;
await killer;
const stormEnd = Date.now();
const finalOf = (n) => checkRuns.filter((c) => c.sha === sha(n) && c.conclusion);
const allFinal = () => [...Array(PRS).keys()].every((i) => finalOf(i + 1).length > 0);
const deadline = Date.now() + 120_000;
while (Date.now() < deadline && !allFinal()) await new Promise((r) => setTimeout(r, 250));
const recoveryS = allFinal() ? (Date.now() - stormEnd) / 1000 : null;

// --- Report -------------------------------------------------------------------------------------
const perHead = new Map();
for (const c of checkRuns) perHead.set(c.sha, [...(perHead.get(c.sha) ?? []), c]);
const lost = [...Array(PRS).keys()].map((i) => i + 1).filter((n) => finalOf(n).length === 0);
const duplicateCheckRuns = [...perHead.values()].reduce((s, cs) => s + Math.max(0, cs.length - 1), 0);
const dispatchesPerKey = new Map();
for (const r of runs.values()) dispatchesPerKey.set(r.inputs["evaluation-key"], (dispatchesPerKey.get(r.inputs["evaluation-key"]) ?? 0) + 1);
const duplicateDispatches = [...dispatchesPerKey.values()].reduce((s, k) => s + k - 1, 0);
const conclusions = {};
for (const c of checkRuns) conclusions[c.conclusion ?? "(open)"] = (conclusions[c.conclusion ?? "(open)"] ?? 0) + 1;
const reconciled = [...runs.values()].filter((r) => r.webhook !== "sent" && r.completedAt).map((r) => {
  const c = checkRuns.find((x) => x.externalId === r.inputs["evaluation-key"] && x.completedAt);
  return c ? (c.completedAt - r.completedAt) / 1000 : null;
}).filter((x) => x !== null).sort((a, b) => a - b);
const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const failedAttempts = deliveries.filter((d) => d.status_code === 0 || d.status_code >= 500);
const figures = {
  prs: PRS, dropShare: DROP, kills, wallS: (Date.now() - t0) / 1000,
  deliveriesAttempted: deliveries.length, failedAttempts: failedAttempts.length,
  redeliveries: deliveries.filter((d) => d.redelivery).length,
  runs: runs.size, webhooksDropped: [...runs.values()].filter((r) => r.webhook === "dropped").length, webhooksFailed: [...runs.values()].filter((r) => r.webhook === "failed").length,
  lostEvaluations: lost.length, lostPrs: lost, recoveryAfterStormS: recoveryS,
  deliveriesGivenUp: [...new Set(deliveries.map((d) => d.guid))].filter((g) => deliveries.filter((d) => d.guid === g).length >= 4 && deliveries.filter((d) => d.guid === g).every((d) => d.status_code === 0 || d.status_code >= 500)).length, duplicateCheckRuns, duplicateDispatches, conclusions,
  reconcileS: reconciled.length ? { n: reconciled.length, p50: pct(reconciled, 50), p99: pct(reconciled, 99), max: reconciled.at(-1) } : null,
};
process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
if (arg("dump", null)) writeFileSync(arg("dump"), JSON.stringify({ deliveries: deliveries.map(({ payload, ...a }) => ({ ...a, sha: payload.pull_request?.head.sha, run: payload.workflow_run?.id })), checkRuns, runs: [...runs.values()], asks }, null, 1));
process.stdout.write(
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}\n` +
    `${PRS} agent PRs, app killed ${kills} times, ${figures.webhooksDropped} workflow_run webhooks dropped and ${figures.webhooksFailed} failed (app down): ` +
    `${lost.length} lost evaluations, ${duplicateCheckRuns} duplicate check runs, ${duplicateDispatches} duplicate dispatches; ` +
    `${failedAttempts.length} failed delivery attempts, ${figures.redeliveries} redelivered; reconciliation after a run's end ${reconciled.length ? `p50 ${figures.reconcileS.p50.toFixed(1)} s, max ${figures.reconcileS.max.toFixed(1)} s` : "n/a"}; ` +
    `every evaluation final ${recoveryS === null ? "not within 120 s" : `${recoveryS.toFixed(1)} s`} after the last kill\n`,
);
child.kill("SIGKILL");
github.close();
rmSync(dir, { recursive: true, force: true });
process.exit(lost.length === 0 && duplicateCheckRuns === 0 ? 0 : 1);

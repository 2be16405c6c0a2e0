// The stub GitHub of bench/app-throughput.mjs: answers every request the app makes at once, and
// serves a signed result for each dispatched run. Run by the bench as a child process:
//   node bench/app-github-stub.mjs <evaluator owner/repo> <signing key>   (sends {port} over IPC)
import { createHash, createHmac } from "node:crypto";
import { createServer } from "node:http";
import { zipSync } from "fflate";

const [EVALUATOR = "bench-org/evaluator", SIGNING_KEY = "bench-signing-key-0123456789abcdef"] = process.argv.slice(2);
const CONFIG = `routes:\n  - task: sharded-optimizer\n    labels: [gpu]\nevaluator:\n  repository: ${EVALUATOR}\n  workflow: evaluate.yml\n`;

let nextId = 1;
const runs = new Map(); // run id → dispatch inputs, until its artifact is downloaded
const send = (res, status, body, type = "application/json") =>
  res.writeHead(status, { "content-type": type }).end(type === "application/json" ? JSON.stringify(body) : body);

/**
 * The signed result of a dispatched run. Its keys are written in sorted order at every level, so
 * JSON.stringify is the canonical form the engine's signer hashes (src/core/canonical-json.ts).
 */
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
  const signature = {
    algorithm: "hmac-sha256",
    keyId: createHash("sha256").update(SIGNING_KEY).digest("hex").slice(0, 16),
    value: createHmac("sha256", SIGNING_KEY).update(JSON.stringify(body)).digest("hex"),
  };
  return zipSync({ "probegate-result.json": Buffer.from(JSON.stringify({ ...body, signature })) });
}

const routes = [
  [/^POST \/app\/installations\/\d+\/access_tokens$/, (res) => send(res, 201, { token: "ghs_bench", expires_at: "2099-01-01T00:00:00Z" })],
  [/^GET \/repos\/[^/]+\/[^/]+\/contents\/\.github%2Fprobegate\.yml/, (res) => send(res, 200, { type: "file", encoding: "base64", content: Buffer.from(CONFIG).toString("base64") })],
  [/^GET \/repos\/[^/]+\/[^/]+\/commits\/main/, (res) => send(res, 200, { sha: "ab".repeat(20) })],
  [/^GET \/repos\/[^/]+\/[^/]+\/pulls\/\d+\/commits/, (res) => send(res, 200, [{ sha: "1".repeat(40), commit: { message: "Fix a typo" } }])],
  [/^GET \/repos\/[^/]+\/[^/]+\/commits\/[0-9a-f]{40}\/check-runs/, (res) => send(res, 200, { total_count: 0, check_runs: [] })],
  [/^POST \/repos\/[^/]+\/[^/]+\/check-runs$/, (res) => send(res, 201, { id: nextId++ })],
  [/^PATCH \/repos\/[^/]+\/[^/]+\/check-runs\/\d+$/, (res) => send(res, 200, {})],
  [
    /^POST \/repos\/[^/]+\/[^/]+\/actions\/workflows\/[^/]+\/dispatches$/,
    (res, body) => {
      const id = nextId++;
      runs.set(id, JSON.parse(body).inputs);
      send(res, 200, { workflow_run_id: id, run_url: `https://api.github.com/x/${id}`, html_url: `https://github.com/x/${id}` });
    },
  ],
  [/^GET \/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)\/artifacts/, (res, _b, m) => send(res, 200, { total_count: 1, artifacts: [{ id: Number(m[1]), name: "probegate-result", size_in_bytes: 2000, expired: false }] })],
  [
    /^GET \/repos\/[^/]+\/[^/]+\/actions\/artifacts\/(\d+)\/zip$/,
    (res, _b, m) => {
      const inputs = runs.get(Number(m[1]));
      runs.delete(Number(m[1]));
      send(res, 200, Buffer.from(resultZip(inputs)), "application/zip");
    },
  ],
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
    send(res, 404, { message: `bench stub: no route for ${line}` });
  });
});
github.listen(0, "127.0.0.1", () => process.send?.({ port: github.address().port }));
process.on("disconnect", () => process.exit(0));


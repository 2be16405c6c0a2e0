// The app process of bench/app-faults.mjs: the probegate bundle behind Probot's HTTP middleware,
// with its store on disk and a fast sweep, pointed at the bench's GitHub. The bench kills it with
// SIGKILL and starts it again on the same store.
//   node bench/app-faults-app.mjs <app bundle> <github url> <store file>   (sends {port} over IPC)
import { pathToFileURL } from "node:url";
import { Probot, ProbotOctokit } from "probot";

const [bundle, githubUrl, storeFile] = process.argv.slice(2);
const { createProbegate, openStore, webhookServer } = await import(pathToFileURL(bundle).href);
const Octokit = ProbotOctokit.defaults((o) => ({ ...o, throttle: { ...o.throttle, enabled: false }, retry: { ...o.retry, retries: 2 } }));
const probot = new Probot({ appId: 1, privateKey: process.env.BENCH_PRIVATE_KEY, secret: process.env.BENCH_SECRET, baseUrl: githubUrl, logLevel: "fatal", Octokit });
const probegate = createProbegate({
  db: openStore(storeFile),
  signingKey: process.env.BENCH_SIGNING_KEY,
  sweepEveryMs: Number(process.env.BENCH_SWEEP_MS),
  reconcileAfterMs: Number(process.env.BENCH_RECONCILE_MS),
  redeliverEveryMs: Number(process.env.BENCH_REDELIVER_MS),
  redeliverLookbackMs: 3600_000,
  redeliverGapMs: Number(process.env.BENCH_REDELIVER_GAP_MS),
  // Shorter than production (10 and 5 minutes) so the bench sees work a killed process held resume.
  dispatchLeaseMs: Number(process.env.BENCH_LEASE_MS),
  deliveryTakeoverMs: Number(process.env.BENCH_TAKEOVER_MS),
});
const server = await webhookServer(probot, probegate);
server.listen(Number(process.env.BENCH_PORT || 0), "127.0.0.1", () => process.send?.({ port: server.address().port }));
process.on("disconnect", () => process.exit(0));

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { MIGRATIONS } from "../../src/store/migrations/index.js";
import { tmp } from "../helpers.js";
import { runNodeScript as run, transpiledSources } from "../transpiled-sources.js";

/**
 * Real concurrency needs separate processes (better-sqlite3 is synchronous), so the store and core
 * run transpiled (`transpiledSources`).
 */
function transpiledStore(): string {
  const out = transpiledSources(["core", "store"]);
  // Each racer waits for the go file, then opens the (fresh) store, inserts the same keys and tries
  // to claim each for dispatch.
  writeFileSync(
    join(out, "racer.mjs"),
    `import { existsSync } from "node:fs";
import { openStore } from "./store/db.js";
import { claimDispatch, insertOrGetEvaluation } from "./store/evaluations.js";
import { recordDelivery } from "./store/deliveries.js";
const [file, go, name] = process.argv.slice(2);
while (!existsSync(go)) await new Promise((r) => setTimeout(r, 1));
const db = openStore(file);
const created = [];
for (let i = 0; i < 20; i++) {
  const r = insertOrGetEvaluation(db, { owner: "octo", repo: "r", pr: 1, headSha: "f".repeat(40), task: "t" + i, probeSet: "sha256:" + "0".repeat(64), agent: name }, new Date());
  const first = recordDelivery(db, { id: "delivery-" + i, event: "pull_request" }, new Date());
  const claimed = claimDispatch(db, r.evaluation.key, name, new Date(), 600000);
  created.push([r.evaluation.key, r.created, first, claimed]);
}
db.close();
process.stdout.write(JSON.stringify(created));
`,
  );
  return out;
}

const cleanup: Array<() => void> = [];
afterAll(() => cleanup.forEach((f) => f()));

describe("store under concurrent processes", () => {
  it("one row per key, one first sight per delivery and one dispatch claim per key, with migrations racing on a fresh file", async () => {
    const js = transpiledStore();
    const dir = tmp("pg-race-");
    const file = join(dir, "race.sqlite");
    const go = join(dir, "go");
    const racers = ["a", "b", "c", "d"].map((name) => run(join(js, "racer.mjs"), [file, go, name]));
    await new Promise((r) => setTimeout(r, 300));
    writeFileSync(go, "");
    const results = (await Promise.all(racers)).map((o) => JSON.parse(o) as Array<[string, boolean, boolean, boolean]>);

    for (let i = 0; i < 20; i++) {
      const rows = results.map((r) => r[i]);
      expect(new Set(rows.map((r) => r?.[0])).size).toBe(1);
      expect(rows.filter((r) => r?.[1]).length).toBe(1);
      expect(rows.filter((r) => r?.[2]).length).toBe(1);
      expect(rows.filter((r) => r?.[3]).length).toBe(1);
    }
    const db = openStore(file);
    cleanup.push(() => db.close());
    expect(db.prepare("SELECT COUNT(*) AS n FROM evaluations").get()).toEqual({ n: 20 });
    expect(db.prepare("SELECT COUNT(*) AS n FROM deliveries").get()).toEqual({ n: 20 });
    expect(db.prepare("SELECT COUNT(*) AS n FROM schema_version").get()).toEqual({ n: MIGRATIONS.length });
    // Each key's claim is held by the racer that reported it.
    const holders = db.prepare("SELECT task, claim_token FROM evaluations ORDER BY task").all() as Array<{ task: string; claim_token: string }>;
    for (const h of holders) {
      const i = Number(h.task.slice(1));
      const winner = ["a", "b", "c", "d"][results.findIndex((r) => r[i]?.[3])];
      expect(h.claim_token).toBe(winner);
    }
  });
});

import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { probeSetSource } from "../../src/action/probe-set-source.js";
import { renderSummary } from "../../src/core/check-run-render.js";
import { parseScorecardFilter } from "../../src/core/scorecard/scorecard.js";
import type { StoreDb } from "../../src/store/db.js";
import { insertOrGetEvaluation, transitionEvaluation } from "../../src/store/evaluations.js";
import { scorecardOf } from "../../src/store/scorecard-rows.js";
import { cli } from "../cli/run-cli.js";
import { sampleResult, tmp } from "../helpers.js";
import { at, freshStore, newEvaluation } from "./store-helpers.js";

const opened: StoreDb[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

const OLD = { hash: `sha256:${"ab".repeat(32)}`, evaluatorCommit: "e1".repeat(20), probesCommit: "p1".repeat(20).replace(/p/g, "a") };
const NEW = { hash: `sha256:${"cd".repeat(32)}`, evaluatorCommit: "e2".repeat(20), probesCommit: "b2".repeat(20) };

/** PRs 1-3 judged by the old probe set (all resolved), PRs 4-5 by the new one (both rejected). */
function store(): { db: StoreDb; file: string } {
  const s = freshStore();
  opened.push(s.db);
  const finish = (pr: number, probeSet: typeof OLD, verdict: "resolved" | "probe-rejected") => {
    const e = insertOrGetEvaluation(s.db, newEvaluation({ pr, headSha: String(pr).repeat(40), probeSet: probeSet.evaluatorCommit }), at(pr)).evaluation;
    transitionEvaluation(s.db, e.key, "dispatch", { now: at(pr) });
    transitionEvaluation(s.db, e.key, "complete", { now: at(pr + 1), patch: { verdict, probeSet } });
  };
  for (const pr of [1, 2, 3]) finish(pr, OLD, "resolved");
  for (const pr of [4, 5]) finish(pr, NEW, "probe-rejected");
  return s;
}

describe("probe-set versions", () => {
  it("are kept per attempt, and a scorecard splits by the evaluator commit, the probes commit or the folder hash", () => {
    const { db } = store();
    const row = db.prepare("SELECT probe_set_hash, evaluator_commit, probes_commit FROM attempt_results ORDER BY finished_at LIMIT 1").get();
    expect(row).toEqual({ probe_set_hash: OLD.hash, evaluator_commit: OLD.evaluatorCommit, probes_commit: OLD.probesCommit });
    const total = (probeSet?: string) => scorecardOf(db, { basis: "all", ...(probeSet ? { probeSet } : {}) }).total.figures;
    expect(total().evaluations).toBe(5);
    for (const prefix of [OLD.evaluatorCommit.slice(0, 8), OLD.probesCommit.slice(0, 10), "abababab"]) {
      expect(total(prefix)).toMatchObject({ evaluations: 3 });
    }
    expect(total(NEW.probesCommit.slice(0, 7))).toMatchObject({ evaluations: 2 });
    expect(total("0000000")).toMatchObject({ evaluations: 0 });
  });

  it("`probegate scorecard --probe-set` splits the store's scorecard, and refuses what is not a version", async () => {
    const { file } = store();
    const old = await cli("scorecard", "--db", file, "--basis", "all", "--format", "json", "--probe-set", OLD.evaluatorCommit.slice(0, 12));
    expect(old.code).toBe(0);
    const card = JSON.parse(old.out);
    expect(card.scope).toBe(`all repositories, probe set ${OLD.evaluatorCommit.slice(0, 12)}`);
    expect(card.total.figures.evaluations).toBe(3);
    const bad = await cli("scorecard", "--db", file, "--probe-set", "latest");
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain("--probe-set 'latest': expected a commit or probe-set hash");
    expect(parseScorecardFilter({ probeSet: "sha256:ABCDEF01" })).toEqual({ ok: true, filter: { basis: "first-attempt", probeSet: "abcdef01" } });
  });

  it("are read from the runner's checkouts by the Action, and shown in the check run", () => {
    const repo = (name: string) => {
      const dir = join(tmp(), name);
      mkdirSync(join(dir, "sub"), { recursive: true });
      writeFileSync(join(dir, "sub", "f"), name);
      const git = (...a: string[]) => execFileSync("git", ["-C", dir, "-c", "user.email=t@t", "-c", "user.name=t", ...a], { encoding: "utf8" }).trim();
      git("init", "-q");
      git("add", ".");
      git("commit", "-qm", "x");
      return { dir, head: git("rev-parse", "HEAD") };
    };
    const evaluator = repo("evaluator");
    const probes = repo("probes");
    expect(probeSetSource(join(evaluator.dir, "sub"), join(probes.dir, "sub"), {}, "runner")).toEqual({ evaluatorCommit: evaluator.head, probesCommit: probes.head });
    expect(probeSetSource(tmp(), null, { GITHUB_SHA: "f".repeat(40) }, "runner")).toEqual({ evaluatorCommit: "f".repeat(40), probesCommit: null });
    expect(probeSetSource(tmp(), tmp(), { GITHUB_SHA: "f".repeat(40) }, "standalone")).toEqual({ evaluatorCommit: null, probesCommit: null });
    const summary = renderSummary({ ...sampleResult(), probeSetVersion: { evaluatorCommit: evaluator.head, probesCommit: probes.head } });
    expect(summary).toContain(`(evaluator \`${evaluator.head.slice(0, 12)}\`, probes \`${probes.head.slice(0, 12)}\`)`);
  });
});

import type { ProbeCheck } from "./probe-outcome.js";
import { allowedChange, nodeIdOf, outcomeKey, testCheckId, type TestOutcome } from "./test-ids.js";

/**
 * The selected tests of a repository gate run three times, and judged test by test (issue 36):
 * - `base`: the base's tests on the base's tree, the outcome the PR is measured against;
 * - `head`: the head's tests on the head's tree (the official run);
 * - `baseOnHead`: the base's test files, conftest.py files and pytest configuration on the head's
 *   source, so a head that weakens through fixtures, hooks, helpers or constants is still judged
 *   by the base's own checks.
 */
export interface GateRuns {
  base: readonly TestOutcome[];
  head: readonly TestOutcome[];
  /** Null where it could not run at all (its own reason is reported beside). */
  baseOnHead: readonly TestOutcome[] | null;
  /** Test files of either tree the selection names, to name tests by file. */
  files: readonly string[];
  /** `official.allowChanged`. */
  allow: readonly string[];
}

/** A head failure that the base has too: reported, never the PR's. */
export interface FailingAtBase {
  key: string;
  nodeId: string;
  message: string;
}

export interface GateComparison {
  /** Keys (`outcomeKey`) of head failures that fail at the base too. */
  failingAtBase: FailingAtBase[];
  /** Findings (failed), allowed changes (passed) and one summary (passed): the gate's checks. */
  checks: ProbeCheck[];
  counts: { basePassed: number; headKept: number; baseOnHeadKept: number | null; failingAtBase: number };
}

/** Checks of one kind beyond this many are folded into one that names how many more. */
export const PER_KIND = 25;

const BAD = new Set(["failed", "error"]);
const firstLine = (s: string | undefined) => (s ?? "").split("\n").find((l) => l.trim())?.trim().slice(0, 300) ?? "";

/** How a skip reads: an importorskip, an xfail, or the marker's reason, as pytest wrote it. */
function howSkipped(message: string | undefined): string {
  const m = firstLine(message);
  if (!m) return "skipped (no reason given)";
  if (/^xfail/.test(m)) return `marked xfail (${m.replace(/^xfail:?\s*/, "") || "no reason given"})`;
  if (/could not import/i.test(m)) return `skipped by importorskip: ${m}`;
  return `skipped: ${m}`;
}

interface Finding {
  prefix: string;
  category: ProbeCheck["category"];
  kind: string;
  nodeId: string;
  message: string;
}

/**
 * Compares the three runs test by test. A test that passed at the base and, at the head, fails is
 * left to the official run (it names the test); is skipped, xfailed or no longer collected: a
 * `structure` finding (`weakened-tests.skipped-at-run.*`, `weakened-tests.not-collected.*`). A base
 * test not collected at the head whose name passes at the head under another file or class was moved,
 * not dropped. A base test that passed at the base and fails, is skipped or is not collected against the head's code:
 * `base-tests.failed-on-head.*` (functional) or `base-tests.skipped-on-head.*` (structure), unless
 * `official.allowChanged` names it (then a passed check says so). A head failure that fails at the
 * base too is returned in `failingAtBase`. Pure.
 */
export function compareGateRuns(runs: GateRuns, durationS = 0): GateComparison {
  const base = new Map(runs.base.map((t) => [outcomeKey(t), t]));
  const head = new Map(runs.head.map((t) => [outcomeKey(t), t]));
  const onHead = runs.baseOnHead ? new Map(runs.baseOnHead.map((t) => [outcomeKey(t), t])) : null;
  const id = (t: TestOutcome) => nodeIdOf(t, runs.files);
  const findings: Finding[] = [];
  const passedAtBase = runs.base.filter((t) => t.outcome === "passed");
  const baseKeys = new Set(base.keys());
  const movedAtHead = new Set(runs.head.filter((t) => t.outcome === "passed" && !baseKeys.has(outcomeKey(t))).map((t) => t.name));
  let headKept = 0;
  let onHeadKept = 0;
  for (const b of passedAtBase) {
    const key = outcomeKey(b);
    const nodeId = id(b);
    const h = head.get(key);
    // A failure at the head is the official run's to report; only skips and absences are findings here.
    if (h?.outcome === "passed") headKept += 1;
    else if (h && BAD.has(h.outcome)) {
      /* the official run names it */
    } else if (h?.outcome === "skipped") {
      findings.push({ prefix: "weakened-tests.skipped-at-run", category: "structure", kind: "skipped", nodeId, message: `${nodeId} passed at the base and is ${howSkipped(h.message)} at the head` });
    } else if (movedAtHead.has(b.name) && onHead?.get(key)?.outcome !== "failed") {
      // Moved (a file or class renamed): a test of the same name passes elsewhere at the head.
      headKept += 1;
    } else {
      const still = onHead?.get(key)?.outcome === "passed";
      const how = still
        ? "the base's test files still collect it and it passes against the head's code, so the head's test files, conftest.py or pytest configuration dropped it (a deselecting hook, a class pytest does not collect, a rename or removal)"
        : "the head's test files no longer have it";
      findings.push({ prefix: "weakened-tests.not-collected", category: "structure", kind: "deselected", nodeId, message: `${nodeId} passed at the base and is no longer collected at the head: ${how}` });
    }
    if (!onHead) continue;
    const x = onHead.get(key);
    if (x?.outcome === "passed") onHeadKept += 1;
    else if (x && BAD.has(x.outcome)) {
      findings.push({ prefix: "base-tests.failed-on-head", category: "functional", kind: "failed-on-head", nodeId, message: `the base's ${nodeId} passed at the base and ${x.outcome === "error" ? "errors" : "fails"} against the head's code: ${firstLine(x.message) || "(no message)"}` });
    } else {
      const why = x ? howSkipped(x.message) : "not collected";
      findings.push({ prefix: "base-tests.skipped-on-head", category: "structure", kind: "skipped-on-head", nodeId, message: `the base's ${nodeId} passed at the base and is ${why} against the head's code` });
    }
  }
  const failingAtBase: FailingAtBase[] = [];
  for (const h of runs.head) {
    if (!BAD.has(h.outcome)) continue;
    const b = base.get(outcomeKey(h));
    if (b && BAD.has(b.outcome)) failingAtBase.push({ key: outcomeKey(h), nodeId: id(h), message: firstLine(b.message) });
  }
  const checks = toChecks(findings, runs.allow, durationS);
  const counts = { basePassed: passedAtBase.length, headKept, baseOnHeadKept: onHead ? onHeadKept : null, failingAtBase: failingAtBase.length };
  const atBase = failingAtBase.length ? `; ${failingAtBase.length} failing at the base too (${failingAtBase.slice(0, 3).map((f) => f.nodeId).join(", ")}${failingAtBase.length > 3 ? ", …" : ""}), not the PR's` : "";
  const found = checks.filter((c) => c.status === "failed").length;
  checks.push({
    probe: "base-tests",
    id: "base-tests",
    category: "structure",
    status: "passed",
    attempts: 1,
    durationS,
    message: `${counts.basePassed} selected tests pass at the base; ${headKept} of them pass at the head${onHead ? `, ${onHeadKept} pass as the base's tests against the head's code` : " (the base's tests could not run against the head's code)"}${found ? `; ${found} findings` : ""}${atBase}`,
    measured: { basePassed: counts.basePassed, headKept, ...(onHead ? { baseOnHeadKept: onHeadKept } : {}), failingAtBase: failingAtBase.length },
  });
  return { failingAtBase, checks, counts };
}

/** Findings as checks, allowed ones as passed checks, at most PER_KIND of each kind, the rest folded into one. */
function toChecks(findings: readonly Finding[], allow: readonly string[], durationS: number): ProbeCheck[] {
  const out: ProbeCheck[] = [];
  const perKind = new Map<string, Finding[]>();
  for (const f of findings) perKind.set(f.prefix, [...(perKind.get(f.prefix) ?? []), f]);
  for (const [prefix, list] of perKind) {
    const base = { probe: "base-tests", attempts: 1, durationS };
    const kept = list.filter((f) => !allowedChange(f.nodeId, f.kind, allow));
    for (const f of list.filter((x) => !kept.includes(x))) {
      out.push({ ...base, id: testCheckId(`${prefix}.allowed`, f.nodeId), category: f.category, status: "passed", message: `allowed by the task (official.allowChanged): ${f.message}`, location: location(f.nodeId), measured: { kind: f.kind } });
    }
    for (const f of kept.slice(0, PER_KIND)) {
      out.push({ ...base, id: testCheckId(prefix, f.nodeId), category: f.category, status: "failed", message: f.message, location: location(f.nodeId), measured: { kind: f.kind, test: f.nodeId.slice(0, 256) } });
    }
    const more = kept.slice(PER_KIND);
    if (more.length) {
      out.push({ ...base, id: `${prefix}.more`, category: more[0]?.category ?? "structure", status: "failed", message: `and ${more.length} more tests of the base the same way: ${more.slice(0, 10).map((f) => f.nodeId).join(", ")}${more.length > 10 ? ", …" : ""}`, measured: { kind: more[0]?.kind ?? "", count: more.length } });
    }
  }
  return out;
}

/** The test's file, where it is a relative path (checks point at the submission's files only). */
function location(nodeId: string): { path: string } | null {
  const file = nodeId.split("::")[0] ?? "";
  return file && !file.startsWith("/") && !file.split("/").includes("..") ? { path: file } : null;
}

/**
 * The files of a generated repository gate that the engine reads: task.yml (a task like any other:
 * `base: { pr: true }`, the repository's tests selected by the paths a PR changes, an environment
 * that follows the repository) and its one probe, generated whole: data and a call into the probe
 * kit's `repo_tests.gate_tests`, no hand-written line.
 */
import { Document, isCollection } from "yaml";
import type { GatePlan } from "../../core/gate-init/gate-plan.js";
import type { TreeEnvironment } from "../../core/task-environment.js";

/**
 * Cores the generated probe is pinned to (fewer on a smaller runner): the engine starts it as one rank,
 * but the repository's tests start their own ranks inside it, and one core would run them all in turn.
 */
export const PROBE_CORES = 4;

/** The tolerances the generated checks use, stated in task.yml's requirements and GATE.md alike. */
export const TOLERANCES = {
  memoryBytes: 4 << 20,
  memoryRatio: 0.1,
  timeMargin: 1.5,
  repetitions: 5,
  maxTests: 24,
  /** A test is repeated for its time only when its base run took at most this, and the repeated tests together at most timedSessionS (probe kit `_repo_time`). */
  timedTestS: 5,
  timedSessionS: 60,
  /** A longer test's time check: its metered runs, failing past this ratio and grossExtraS more seconds. */
  grossMargin: 3,
  grossExtraS: 5,
};

export const PROBE_FILE = "probe_tests.py";

export interface GateSource {
  id: string;
  title: string;
  repo: string;
  sha: string;
  plan: GatePlan;
  fromTree: TreeEnvironment;
}

/** official.select.fromPaths: per gated glob with tests, the glob (and the exclusions) and its test files, which select themselves too. */
export function fromPaths(plan: GatePlan): Array<{ paths: string[]; tests: string[] }> {
  return plan.globs
    .filter((g) => g.tests.length > 0)
    .map((g) => {
      const tests = g.tests.map((t) => t.file);
      return { paths: [g.glob, ...tests, ...plan.exclude.map((e) => `!${e}`)], tests };
    });
}

/** What the weakened-test guard watches: every mapped test file, and the conftest.py files pytest loads for them. */
export function watchedFiles(plan: GatePlan, conftests: (test: string) => string[]): string[] {
  const tests = [...new Set(plan.globs.flatMap((g) => g.tests.map((t) => t.file)))];
  return [...new Set([...tests, ...tests.flatMap(conftests)])].sort();
}

export const REQUIREMENTS = [
  { id: "interface-kept", text: "every public function and class of the gated modules at the base is still defined at the head, taking the parameters it took (positional ones in their places)" },
  { id: "traffic-preserved", text: "each selected test of the base, run on the head, issues exactly the base's collectives and bytes (per collective, the busiest of the test's process and the processes it starts: the ranks of torch.multiprocessing.spawn, and Python processes started through subprocess or torchrun)" },
  { id: "memory-preserved", text: `each selected test's peak memory (the largest of its process's and its spawned processes' peaks) is at most the base's + max(${TOLERANCES.memoryBytes / 2 ** 20} MiB, ${TOLERANCES.memoryRatio * 100}%)` },
  {
    id: "behaviour-preserved",
    text: "each call the base's tests make in their own process into a public module-level function of the gated modules, with plain arguments and result (CPU tensors, numbers, strings, and lists, tuples and dicts of them), gives on the head the base's result and leaves its arguments as the base's did, bitwise, where replaying it on the base gives the base's own result again",
  },
  {
    id: "time-preserved",
    text:
      `each selected test whose base run takes at most ${TOLERANCES.timedTestS} s (while the repeated tests together take at most ${TOLERANCES.timedSessionS} s) takes at most ${TOLERANCES.timeMargin}x the base's median wall time over ${TOLERANCES.repetitions} interleaved repetitions, with a one-sided rank test (p < 0.05) agreeing the head is slower; ` +
      `a longer test, not repeated, takes at most ${TOLERANCES.grossMargin}x (or ${TOLERANCES.grossExtraS} s more than) the base's slower metered run in the head's faster one`,
  },
];

/** task.yml, with a header that says where it came from. */
export function renderTaskYml(src: GateSource, watched: string[]): string {
  const spec = {
    id: src.id,
    title: src.title,
    area: "other",
    prompt: "prompt.md",
    base: { pr: true },
    gpus: 0,
    environment: { python: ">=3.11,<3.13", fromTree: src.fromTree },
    official: {
      command: ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={junit}", "{tests}"],
      timeout: 900,
      files: watched,
      select: { tests: [], fromPaths: fromPaths(src.plan) },
      allowChanged: [],
    },
    probes: { path: "probes", pattern: "probe_*.py", command: ["{python}", "{probe}"], timeout: 3000, jobs: { [PROBE_FILE.replace(/\.py$/, "")]: { gpus: 0, timing: true, cores: PROBE_CORES } } },
    limits: { wallClock: 5400, memory: "8GiB", outputBytes: "4MiB" },
    requirements: REQUIREMENTS,
  };
  const head = [
    `# A repository gate generated by \`probegate gate init\` from ${src.repo} at ${src.sha.slice(0, 12)}; GATE.md says why each part is what it is.`,
    `#   probegate eval --task <this folder> --submission <repo>@<head sha> --pr-base <base sha>`,
    "# Re-run gate init to regenerate it (the probe is generated too); edit the selection here when the import graph misses a test.",
  ];
  const doc = new Document(spec);
  // As the pack's gates write them: `base: { pr: true }` and commands on one line.
  for (const path of [["base"], ["official", "command"], ["probes", "command"], ["probes", "jobs", PROBE_FILE.replace(/\.py$/, "")], ["limits"]]) {
    const node = doc.getIn(path, true);
    if (isCollection(node)) node.flow = true;
  }
  return `${head.join("\n")}\n${doc.toString({ lineWidth: 0, flowCollectionPadding: false })}`;
}

/** A Python literal of strings, lists and dicts (JSON's spelling of them is Python's). */
function literal(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(literal).join(", ")}]`;
  if (v && typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${literal(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}

/** A list, one item a line. */
const py = (items: readonly unknown[]) => `[\n${items.map((i) => `    ${literal(i)},`).join("\n")}\n]`;

/** The probe: the selection, the gated globs and the checks' tolerances as data, and one call into the kit. */
export function renderProbe(src: GateSource): string {
  const gated = [...src.plan.globs.map((g) => g.glob), ...src.plan.exclude.map((e) => `!${e}`)];
  return `"""Generated by \`probegate gate init\` (${src.repo} at ${src.sha.slice(0, 12)}): re-run it rather than edit this file.

The repository's own tests that import the gated modules, run on the PR's base and head under the probe
kit's meters, test by test (probegate_probe.repo_tests): collectives and bytes (the test's process and the
ranks it spawns), peak memory and time; and the gated modules' public interface.
"""
from probegate_probe.repo_tests import gate_tests

# official.select.fromPaths of task.yml: which tests each gated path maps to.
SELECTION = ${py(fromPaths(src.plan))}

GATED = ${py(gated)}

CHECKS = {
    "interface": {"requirements": ["interface-kept"]},
    "traffic": {"requirements": ["traffic-preserved"]},
    "memory": {"requirements": ["memory-preserved"], "tolerance_bytes": ${TOLERANCES.memoryBytes}, "tolerance_ratio": ${TOLERANCES.memoryRatio}},
    "calls": {"requirements": ["behaviour-preserved"], "atol": 0.0, "rtol": 0.0},
    "time": {"requirements": ["time-preserved"], "margin": ${TOLERANCES.timeMargin}, "timed_test_s": ${TOLERANCES.timedTestS}, "timed_session_s": ${TOLERANCES.timedSessionS},
             "gross_margin": ${TOLERANCES.grossMargin}, "gross_extra_s": ${TOLERANCES.grossExtraS}},
}

if __name__ == "__main__":
    gate_tests(SELECTION, GATED, CHECKS, repetitions=${TOLERANCES.repetitions}, max_tests=${TOLERANCES.maxTests})
`;
}

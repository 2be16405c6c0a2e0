/**
 * The two texts of a generated gate that people read: prompt.md (what a PR touching the gated paths
 * must keep: the modules' public interfaces, read statically) and GATE.md (each choice gate init made,
 * and why; the same text is printed as its report).
 */
import type { PublicDef } from "../../core/gate-init/interfaces.js";
import { PROBE_CORES, PROBE_FILE, REQUIREMENTS, TOLERANCES, type GateSource } from "./render-task.js";

export interface ModuleInterface {
  path: string;
  name: string;
  defs: PublicDef[];
}

/** More mapped test files than this for one glob is worth a word in the report. */
const MANY = 24;

const list = (xs: readonly string[]) => xs.map((x) => `\`${x}\``).join(", ");

function defLines(d: PublicDef, indent = ""): string[] {
  const tag = d.decorators.filter((x) => /^(property|staticmethod|classmethod|abstractmethod|[\w.]*dataclass\b.*)$/.test(x));
  const lines = [`${indent}- \`${d.signature}\`${tag.length ? ` (${tag.map((t) => `@${t}`).join(", ")})` : ""}`];
  for (const m of d.methods) lines.push(...defLines(m, `${indent}  `));
  return lines;
}

export function renderPrompt(src: GateSource, modules: readonly ModuleInterface[]): string {
  const out = [
    `# ${src.title}`,
    "",
    `A repository gate: every pull request that touches ${list(src.plan.globs.map((g) => g.glob))} is evaluated against its own base commit, on the repository's tests that import these modules.`,
    "",
    "What such a pull request keeps:",
    "",
    ...REQUIREMENTS.map((r) => `- **${r.id}**: ${r.text}.`),
    "",
    "A change meant to cost more (a new collective, a larger buffer) says so in its description; a maintainer accepts the measured difference for that head (`/probegate accept <check> <why>`).",
    "",
    "## Public interface of the gated modules",
    "",
    "Read from the base's source (functions and classes whose names do not start with `_`, and their public methods).",
  ];
  for (const m of modules) {
    out.push("", `### \`${m.path}\` (\`${m.name}\`)`, "");
    out.push(...(m.defs.length ? m.defs.flatMap((d) => defLines(d)) : ["- no public function or class"]));
  }
  return `${out.join("\n")}\n`;
}

export interface ReportFacts {
  ref: string;
  envNotes: string[];
  /** Test files that map to no gated glob. */
  unmapped: string[];
  /** Mapped test files whose source names CUDA or NCCL. */
  gpuTests: string[];
  watched: string[];
}

export function renderReport(src: GateSource, facts: ReportFacts): string {
  const { plan } = src;
  const cfg = plan.config;
  const out = [
    `# ${src.id}: how \`probegate gate init\` made this gate`,
    "",
    `From ${src.repo} at ${src.sha.slice(0, 12)} (\`--ref ${facts.ref}\`). The gate is a task like any other (\`base: { pr: true }\`): \`probegate validate\` checks it and \`probegate eval --task <this folder> --submission <repo>@<head> --pr-base <base>\` runs it.`,
    "",
    "## Gated paths",
    "",
  ];
  for (const g of plan.globs) out.push(`- \`${g.glob}\`: ${g.modules.length} Python module${g.modules.length === 1 ? "" : "s"} (${g.modules.slice(0, 8).map((m) => `\`${m.name}\``).join(", ")}${g.modules.length > 8 ? ", …" : ""})`);
  if (plan.exclude.length) out.push(`- excluded: ${list(plan.exclude)}`);
  out.push(
    "",
    "## Tests (official.select, official.files)",
    "",
    `- Test files: ${plan.tests.length}, found as pytest finds them: named ${list(cfg.pythonFiles)}${cfg.testpaths.length ? ` under testpaths ${list(cfg.testpaths)}` : " anywhere in the tree (no testpaths)"} (${cfg.from ?? "pytest's defaults: no pytest configuration"}).`,
    `- Imports are read statically (no code of the repository runs) and looked up where pytest's sys.path has them: ${list(plan.roots.slice(0, 6).map((r) => r || "."))}${plan.roots.length > 6 ? ` and ${plan.roots.length - 6} more test folders` : ""}; every import counts, inside functions too (a test that imports the code in the rank function it spawns still tests it). ${plan.edges === "runs" ? "Each package's \`__init__.py\` an import runs counts too (\`--through-packages\`): a package that imports all its modules selects every test of the package for each of them." : "An import counts for what it names: the module, and for a name taken from a package, the module its \`__init__.py\` re-exports it from (the \`__init__.py\` itself only where it defines the name). The packages an import runs on the way do not count: a test that imports \`a.b.timer\` tests the timer, not every module \`a/b/__init__.py\` imports (\`--through-packages\` counts them)."}`,
    "- `official.select.fromPaths` maps each gated glob to the tests that import one of its modules, directly or through other modules of the tree; a test file selects itself too. `select.tests` (always run) is empty: a PR that touches no gated path selects no test and ends in `error`, by design.",
  );
  for (const g of plan.globs) {
    if (!g.tests.length) {
      out.push(`- \`${g.glob}\`: **no test imports its modules**: a PR that touches only this path selects no test. Add tests to the selection by hand, or pass --tests.`);
      continue;
    }
    const direct = g.tests.filter((t) => t.chain.length <= 2).length;
    out.push(`- \`${g.glob}\` → ${g.tests.length} test file${g.tests.length === 1 ? "" : "s"} (${direct} import${direct === 1 ? "s" : ""} it directly, ${g.tests.length - direct} through other modules):`);
    if (g.tests.length > MANY) out.push(`  - **many**: a PR touching it runs them all. Most come through other modules${plan.edges === "runs" ? " (a package \`__init__.py\` that imports it pulls in every test of the package: leave out \`--through-packages\`)" : ""}; \`--max-hops 1\` keeps the ${direct} direct ones, \`--tests\` names them.`);
    for (const t of g.tests) out.push(`  - \`${t.file}\`: ${t.chain.length <= 2 ? `imports \`${t.chain.at(-1)}\`` : `through ${t.chain.slice(1).map((c) => `\`${c}\``).join(" → ")}`}`);
  }
  if (facts.unmapped.length) out.push(`- Not selected: ${facts.unmapped.length} test file${facts.unmapped.length === 1 ? " imports" : "s import"} none of the gated modules (${list(facts.unmapped.slice(0, 6))}${facts.unmapped.length > 6 ? ", …" : ""}).`);
  out.push(`- \`official.files\` (what the weakened-test guard compares with the base): the selected test files and the \`conftest.py\` files pytest loads for them (${facts.watched.length} files).`);
  if (facts.gpuTests.length) out.push(`- **GPU**: ${list(facts.gpuTests)} name CUDA or NCCL; the gate is written for a CPU runner (\`gpus: 0\`, gloo). Set \`gpus\` and \`requires\` in task.yml for a GPU runner.`);
  out.push("", "## Environment (environment.fromTree)", "", "Built by the engine from what the PR's merge base declares, with the task's pins over it (docs/task-format.md, \"An environment that follows the repository\"):", "");
  for (const n of facts.envNotes) out.push(`- ${n}`);
  out.push('- python `>=3.11,<3.13`: the runners\' base interpreters, as the pack\'s other gates have it.');
  out.push(
    "",
    `## Probe (probes/${PROBE_FILE}, generated)`,
    "",
    `No hand-written line: the selection and the tolerances as data, and one call into the probe kit's \`repo_tests.gate_tests\`, which runs the tests the PR's changed paths select (at most ${TOLERANCES.maxTests}, collected on the base) on both trees with \`differential()\`, pytest in-process, one process per side, interleaved. Per test:`,
    "",
    "- `test-traffic.<test>`: the collectives and bytes of the test's process and of every process it starts: through multiprocessing (the ranks of `torch.multiprocessing.spawn`) and, for Python processes that import torch, through `subprocess` or a torchrun-style launcher and its workers; counted at the dispatcher in each; exact (`traffic-preserved`).",
    `- \`test-memory.<test>\`: the largest peak of those processes, within max(${TOLERANCES.memoryBytes / 2 ** 20} MiB, ${TOLERANCES.memoryRatio * 100}%) of the base's (\`memory-preserved\`).`,
    `- \`test-time.<test>\`: for a test whose base run took at most ${TOLERANCES.timedTestS} s (and while the repeated tests together take at most ${TOLERANCES.timedSessionS} s), the median wall time over ${TOLERANCES.repetitions} interleaved repetitions, at most ${TOLERANCES.timeMargin}× the base's with a rank test agreeing (\`time-preserved\`); a longer test is not repeated (each repetition would pay its ranks' start-up again) and fails only past ${TOLERANCES.grossMargin}× and ${TOLERANCES.grossExtraS} s more in its two metered runs a side. The metered runs (two pytest sessions a side, the second warm) and the timed runs are separate: a PR costs 2 sessions of the selected tests a side, plus the short tests' repetitions.`,
    "- `test-calls.<module.function>`: behaviour by record and replay (`behaviour-preserved`): the calls the tests make in their own process into the gated modules' public module-level functions, with plain arguments and results (CPU tensors, numbers, strings, lists, tuples and dicts), recorded at the base (up to 3 a function) and replayed on both trees; the head must give the base's results bitwise (`atol`/`rtol` in `CHECKS[\"calls\"]` loosen it). A call whose replay on the base differs from its own record (state, randomness) is left out.",
    "- `interface-kept`: the gated modules' public functions and classes of the base, still at the head with their parameters.",
    "- A test that does not pass on both sides is not compared (a skipped check says so): the official tests judge it.",
    `- The probe is pinned to ${PROBE_CORES} cores of its own (\`probes.jobs.${PROBE_FILE.replace(/\.py$/, "")}.cores\`; all a smaller runner has): the engine starts it as one rank, and the ranks the tests start run inside it.`,
    "",
    "Not done: calls inside the ranks a test spawns, methods of classes, and calls with objects as arguments are not recorded (their outputs are judged by the tests' own assertions); a process started with `python -I`, `-E` or `-S`, or with an environment of its own that drops PYTHONPATH, is not metered; time includes each test's start-up of its ranks, so only large slowdowns show.",
    "",
  );
  return out.join("\n");
}

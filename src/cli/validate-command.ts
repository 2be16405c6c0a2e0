import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import picomatch from "picomatch";
import { InputError } from "../engine/errors.js";
import { listProbes } from "../engine/probe-phase.js";
import { probeFiles } from "../engine/probe-set.js";
import { loadTask, type LoadedTask } from "../engine/task-load.js";
import { SKELETON_MARK } from "./task-skeleton.js";
import { parse } from "yaml";
import { lineOf, readYaml } from "../engine/yaml-file.js";
import { requirementCoverage } from "../core/requirement-coverage.js";

/** A line of probe source long and specific enough that finding it in the prompt means a leak. */
function distinctive(line: string): string | null {
  const t = line.trim().replace(/\s+/g, " ");
  if (t.length < 24 || t.startsWith("#") || /^(import|from) /.test(t) || /^["']{3}/.test(t)) return null;
  return t;
}

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/**
 * Static requirement coverage: each requirement of task.yml named in some probe file's
 * `requirements=` and each named id declared, with the file and line to fix.
 */
export function requirementProblems(task: LoadedTask): string[] {
  const src = readYaml(task.file, "task spec");
  const declared = task.spec.requirements.map((r, i) => ({ id: r.id, line: lineOf(src, ["requirements", i, "id"]) ?? null }));
  const sources = probeFiles(task.probesDir)
    .filter((f) => /\.(py|sh)$/.test(f))
    .map((f) => ({ path: f, text: readFileSync(f, "utf8") }));
  return requirementCoverage(declared, task.file, sources).problems.map((p) => `${p.path}${p.line ? `:${p.line}` : ""}: ${p.message}`);
}

/** Every problem with one task, as `file: message` lines; empty when it is valid. */
export function validateTask(task: LoadedTask): string[] {
  const problems: string[] = [];
  const prompt = readFileSync(task.promptFile, "utf8");
  const normalisedPrompt = prompt.replace(/\s+/g, " ");
  for (const name of task.spec.interfaces) {
    if (!prompt.includes(name)) problems.push(`${task.file}: interfaces: '${name}' is called by the probes but never named in ${relative(task.dir, task.promptFile)}`);
  }
  if (prompt.includes(SKELETON_MARK)) problems.push(`${task.promptFile}: still the skeleton probegate task import wrote (${SKELETON_MARK}); write the prompt, then delete that line`);
  const probes = listProbes(task.probesDir, task.spec.probes.pattern);
  if (probes.length === 0) problems.push(`${task.file}: probes: no file in ${task.probesDir} matches '${task.spec.probes.pattern}'`);
  for (const file of probeFiles(task.probesDir)) {
    if (!/\.(py|sh|txt|ya?ml|json)$/.test(file)) continue;
    if (readFileSync(file, "utf8").includes(SKELETON_MARK)) problems.push(`${file}: still the probe skeleton probegate task import wrote (${SKELETON_MARK}); write the probe`);
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        const d = distinctive(line);
        if (d && normalisedPrompt.includes(d)) problems.push(`${task.promptFile}: quotes probe source ${relative(task.probesDir, file)}:${i + 1}: '${d.slice(0, 80)}'`);
      });
  }
  problems.push(...requirementProblems(task));
  if (task.base.kind === "folder") {
    const isOfficial = picomatch(task.spec.official.files, { dot: true });
    const official = walk(task.base.path).filter((f) => isOfficial(relative(task.base.kind === "folder" ? task.base.path : "", f)));
    if (official.length === 0) problems.push(`${task.file}: official.files: no file of the base matches ${task.spec.official.files.join(", ")}`);
  }
  return problems;
}

/**
 * The note for a task imported with no fail-to-pass test (import.yml's `fail_to_pass: []`): its
 * official tests only check that nothing breaks, so the requirement rests on the probes. Null otherwise.
 */
export function passToPassOnlyNote(task: LoadedTask): string | null {
  const file = join(task.dir, "import.yml");
  if (!existsSync(file)) return null;
  let record: unknown;
  try {
    record = parse(readFileSync(file, "utf8"));
  } catch {
    return null;
  }
  const f2p = (record as { fail_to_pass?: unknown } | null)?.fail_to_pass;
  if (!Array.isArray(f2p) || f2p.length) return null;
  return `official tests are pass-to-pass only (${relative(process.cwd(), file) || file}: no test fails before the change): they check that nothing breaks, and the hidden probes carry the requirement (${task.spec.requirements.length} requirements, each named by a probe)`;
}

/** `probegate validate <task dir>…`: 0 when every task is valid, 2 otherwise. */
export function validateCommand(dirs: string[], io: { stdout: (s: string) => void; stderr: (s: string) => void }): number {
  let bad = 0;
  for (const dir of dirs) {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      io.stderr(`✗ ${dir}: no such task folder\n`);
      bad++;
      continue;
    }
    try {
      const task = loadTask(dir);
      const problems = validateTask(task);
      if (problems.length) {
        bad++;
        const note = passToPassOnlyNote(task);
        io.stderr(`✗ ${task.spec.id}\n${problems.map((p) => `  ${p}`).join("\n")}\n${note ? `  note: ${note}\n` : ""}`);
      } else {
        io.stdout(`✓ ${task.spec.id}: ${task.spec.interfaces.length} interfaces stated, ${task.spec.requirements.length} requirements named by probes, ${listProbes(task.probesDir, task.spec.probes.pattern).length} probe files\n`);
        const note = passToPassOnlyNote(task);
        if (note) io.stdout(`  note: ${note}\n`);
      }
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      bad++;
      io.stderr(`✗ ${dir}\n  ${e.message.replace(/\n/g, "\n  ")}\n`);
    }
  }
  return bad ? 2 : 0;
}

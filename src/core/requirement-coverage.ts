/** A probe source file as text, with the path validation reports it under. */
export interface ProbeSource {
  path: string;
  text: string;
}

/** One place a probe names a requirement id. */
export interface RequirementMention {
  id: string;
  path: string;
  line: number;
}

/** A problem with requirement coverage, with the file and line to fix. */
export interface CoverageProblem {
  path: string;
  line: number | null;
  message: string;
}

/**
 * `requirements=[...]` / `requirements="..."` (Python keyword arguments) and `"requirements": [...]`
 * (a JSON line written by hand, in any language). A list that is not written out literally (a
 * variable) names nothing the scan can see: its checks count only in `validate --power`.
 */
const MENTION = /["']?\brequirements["']?\s*[=:]\s*(\[[^\]]*\]|\([^)]*\)|"[^"]*"|'[^']*')/g;
const LITERAL = /"([^"\\]*)"|'([^'\\]*)'/g;

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Every requirement id named in a `requirements=` argument (or JSON key) of the probe sources, with its line. */
export function requirementMentions(sources: ReadonlyArray<ProbeSource>): RequirementMention[] {
  const out: RequirementMention[] = [];
  for (const src of sources) {
    for (const m of src.text.matchAll(MENTION)) {
      const body = m[1] as string;
      const bodyStart = (m.index ?? 0) + m[0].length - body.length;
      for (const lit of body.matchAll(LITERAL)) {
        const id = lit[1] ?? lit[2] ?? "";
        if (id) out.push({ id, path: src.path, line: lineAt(src.text, bodyStart + (lit.index ?? 0)) });
      }
    }
  }
  return out;
}

/**
 * Static requirement coverage: every requirement task.yml declares must be named by some probe
 * source, and every id a probe names must be declared. A task that declares none is a problem
 * too: a prompt always states something its probes should check.
 */
export function requirementCoverage(
  declared: ReadonlyArray<{ id: string; line: number | null }>,
  taskFile: string,
  sources: ReadonlyArray<ProbeSource>,
): { mentions: RequirementMention[]; problems: CoverageProblem[] } {
  const mentions = requirementMentions(sources);
  const problems: CoverageProblem[] = [];
  if (declared.length === 0) {
    problems.push({
      path: taskFile,
      line: null,
      message: "requirements: none declared; list what the prompt states (arguments and their allowed values, error paths, bounds, resource claims) with ids the probes' checks name",
    });
  }
  const named = new Set(mentions.map((m) => m.id));
  for (const r of declared) {
    if (!named.has(r.id)) problems.push({ path: taskFile, line: r.line, message: `requirements: '${r.id}' is named by no probe check (requirements=[...] in a probe)` });
  }
  const known = new Set(declared.map((r) => r.id));
  for (const m of mentions) {
    if (!known.has(m.id)) problems.push({ path: m.path, line: m.line, message: `names requirement '${m.id}', which ${taskFile} does not declare` });
  }
  return { mentions, problems };
}

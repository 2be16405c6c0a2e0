import { createHash } from "node:crypto";
import { normalizePackage } from "../../core/task-environment.js";

/** One requirement of a lock, where it starts in the file. */
export interface LockRequirement {
  /** The name as written (e.g. "typing_extensions"). */
  name: string;
  /** The whole requirement without its options (e.g. "torch==2.15.0 ; sys_platform == 'linux'"). */
  text: string;
  /** The pinned version, or null where it is not pinned with ==. */
  version: string | null;
  hashes: number;
  /** 1-based line where the requirement starts. */
  line: number;
}

/** What a lock says: its requirements (with their lines) and what is wrong with it as a lock. */
export interface ParsedLock {
  requirements: LockRequirement[];
  /** "line N: what is wrong (what to do)", one per problem; empty: a lock the engine can build. */
  problems: string[];
}

/** sha256 of the lock's bytes: the environment's key, recorded in the result. */
export function lockHash(bytes: string | Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** PEP 503 normalisation: "Typing_Extensions" and "typing-extensions" are one project. */
export const normalizeName = normalizePackage;

const REQUIREMENT = /^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$/;

/**
 * Reads a requirements lock (pip-tools' format: one requirement per logical line, `\` continues
 * it, `#` comments, `--hash=sha256:…` options, and file-wide options such as `--find-links`).
 * Pure. Flags what `uv pip sync --require-hashes` would refuse less clearly: a requirement not
 * pinned with ==, or without a hash; a direct URL or editable (not reproducible from a hash here).
 */
export function parseLock(text: string): ParsedLock {
  const requirements: LockRequirement[] = [];
  const problems: string[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const start = i + 1;
    let logical = stripComment(lines[i] as string);
    while (logical.trimEnd().endsWith("\\") && i + 1 < lines.length) {
      logical = `${logical.trimEnd().slice(0, -1)} ${stripComment(lines[++i] as string)}`;
    }
    const body = logical.trim();
    if (!body) continue;
    if (body.startsWith("-")) continue; // a file-wide option (--find-links, --index-url, --no-index)
    if (/^(https?|file):|^\.{0,2}\//.test(body) || body.startsWith("-e ")) {
      problems.push(`line ${start}: '${body.split(/\s/)[0]}' is a path or URL; a lock names each package by name==version with its --hash`);
      continue;
    }
    const hashes = (body.match(/--hash[=\s]+sha256:[0-9a-f]{64}/g) ?? []).length;
    const spec = body.replace(/--hash[=\s]+\S+/g, "").trim();
    const m = REQUIREMENT.exec(spec);
    if (!m) {
      problems.push(`line ${start}: cannot read '${spec}' as a requirement`);
      continue;
    }
    const name = m[1] as string;
    const pin = /^==\s*([^\s;,]+)\s*(;.*)?$/.exec((m[3] ?? "").trim());
    const req: LockRequirement = { name, text: spec, version: pin ? (pin[1] as string) : null, hashes, line: start };
    requirements.push(req);
    if (!pin) problems.push(`line ${start}: ${name} is not pinned to one version (write ${name}==<version>; \`uv pip compile\` does)`);
    if (hashes === 0) problems.push(`line ${start}: ${name} has no --hash (compile the lock with --generate-hashes)`);
  }
  if (requirements.length === 0 && problems.length === 0) problems.push("it names no package");
  return { requirements, problems };
}

/** The problems of a lock as `file:line: what` (or `file: what` for one of the whole file). */
export function locatedProblems(file: string, problems: readonly string[]): string[] {
  return problems.map((p) => {
    const m = /^line (\d+): (.*)$/s.exec(p);
    return m ? `${file}:${m[1]}: ${m[2]}` : `${file}: ${p}`;
  });
}

function stripComment(line: string): string {
  // A comment starts at a '#' that begins the line or follows whitespace (a URL fragment does not).
  const m = /(^|\s)#/.exec(line);
  return m ? line.slice(0, m.index) : line;
}

/**
 * The requirement of the lock that uv's error names first, to point at its line. uv names a
 * package as `name==version`, `name` in backticks, or bare in a resolver's explanation ("there is
 * no version of torch==0.0.1", "nosuchpkg was not found"); the earliest mention in its error
 * wins, as the error starts with what failed. Null: uv's error names none of the lock's packages.
 */
export function requirementNamedIn(uvError: string, requirements: readonly LockRequirement[]): LockRequirement | null {
  const from = uvError.search(/^\s*(error|×)/m);
  const text = from >= 0 ? uvError.slice(from) : uvError;
  let best: { at: number; req: LockRequirement } | null = null;
  for (const req of requirements) {
    const pattern = normalizeName(req.name)
      .split("-")
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join("[-_.]+");
    const m = new RegExp(`(?<![A-Za-z0-9_.-])${pattern}(?![A-Za-z0-9_-])`, "i").exec(text);
    if (m && (!best || m.index < best.at)) best = { at: m.index, req };
  }
  if (!best) return null;
  // A name pinned twice (one version per Python range, as --universal writes): the one uv names.
  const name = normalizeName(best.req.name);
  const twins = requirements.filter((r) => normalizeName(r.name) === name);
  return twins.find((r) => r.version !== null && new RegExp(`[=\\s]=?${r.version.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![0-9A-Za-z.])`).test(text)) ?? best.req;
}

/** uv's error as one line: its "error:" and "cause:" lines, without the "Using Python …" chatter. */
export function uvErrorSummary(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim()).filter(Boolean);
  const from = lines.findIndex((l) => /^(error|×)/.test(l));
  const kept = (from >= 0 ? lines.slice(from) : lines.slice(-4)).filter((l) => !/^(Using|Resolved|Prepared|Installed|Audited)\b/.test(l));
  const one = kept.join(" ").replace(/\s+/g, " ");
  return one.length > 600 ? `${one.slice(0, 600)}…` : one;
}

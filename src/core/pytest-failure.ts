/**
 * Why a pytest run could not judge anything, in words a person can act on: the import error and
 * where it came from, read from the run's output or its report's collection errors. A base that
 * cannot import `yaml` is the environment's fault, and saying so (with the module) is what lets a
 * user tell the environment from the PR. Pure.
 */

/** A collection error as the JUnit report has it (pytest: an empty class name, the module as name). */
export interface CollectionError {
  name: string;
  detail?: string;
  message?: string;
}

const ERROR_LINE = /^E?\s*((?:[A-Za-z_][\w.]*)?(?:Error|Exception)\b:?.*)$/;

/** The first exception line of a traceback text (`E   ModuleNotFoundError: No module named 'yaml'`). */
export function firstException(text: string): string | null {
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\s+$/, "");
    if (!/^E\s/.test(line) && !/^[A-Za-z_][\w.]*(Error|Exception): /.test(line)) continue;
    const m = ERROR_LINE.exec(line.replace(/^E\s+/, ""));
    if (m?.[1] && /(Error|Exception)/.test(m[1])) return m[1].slice(0, 400);
  }
  return null;
}

/** Where the failure was met: the conftest.py pytest could not load, or the module it could not collect. */
function failingModule(text: string, strip: readonly string[]): string | null {
  const conftest = /ImportError while loading conftest '([^']+)'/.exec(text);
  const collecting = /ERROR collecting ([^\s]+)/.exec(text);
  const where = conftest?.[1] ?? collecting?.[1] ?? null;
  if (!where) return null;
  let p = where;
  for (const s of strip) if (s && p.startsWith(`${s}/`)) p = p.slice(s.length + 1);
  return conftest ? `loading ${p}` : `collecting ${p}`;
}

/**
 * The cause of a run that could not be judged: the first exception and where it was met, from the
 * report's collection errors first, then from the output. Null when neither says. `strip`: folders
 * (the run's tree) to leave out of paths.
 */
export function pytestFailureCause(o: { log: string; collectionErrors?: readonly CollectionError[]; strip?: readonly string[] }): string | null {
  const strip = o.strip ?? [];
  for (const c of o.collectionErrors ?? []) {
    const exc = firstException(c.detail ?? "") ?? (c.message && c.message !== "collection failure" ? c.message : null);
    if (exc) return `${exc} (collecting ${c.name})`;
  }
  const exc = firstException(o.log);
  if (!exc) return null;
  const where = failingModule(o.log, strip);
  return where ? `${exc} (${where})` : exc;
}

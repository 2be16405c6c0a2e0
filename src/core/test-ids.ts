import picomatch from "picomatch";

/** One test as a JUnit report names it, and how it ended. */
export interface TestOutcome {
  classname: string;
  name: string;
  outcome: "passed" | "failed" | "error" | "skipped";
  /** The failure's message, or the skip's reason (`xfail: …` for an xfail). */
  message?: string;
}

/** Dotted module path of a test file: `tests/unit/test_ops.py` → `tests.unit.test_ops`. */
function moduleOf(file: string): string {
  return file.replace(/\.py$/, "").split("/").filter(Boolean).join(".");
}

/**
 * The pytest node id of a JUnit test case (`tests/test_ops.py::TestAdd::test_neg[1-2]`), as people
 * and `official.allowChanged` write it. The file is the longest known test file whose module path
 * starts the class name; without one, the dotted parts before the first capitalised one (a class).
 * A collection error (pytest reports it with an empty class name) is named by its module's file.
 */
export function nodeIdOf(t: Pick<TestOutcome, "classname" | "name">, knownFiles: readonly string[] = []): string {
  if (t.classname === "") return t.name.includes("/") ? t.name : `${t.name.split(".").join("/")}.py`;
  const known = knownFiles
    .filter((f) => f.endsWith(".py"))
    .map((f) => ({ f, m: moduleOf(f) }))
    .filter(({ m }) => t.classname === m || t.classname.startsWith(`${m}.`))
    .sort((a, b) => b.m.length - a.m.length)[0];
  const parts = t.classname.split(".");
  let file: string;
  let rest: string[];
  if (known) {
    file = known.f;
    rest = t.classname.slice(known.m.length).split(".").filter(Boolean);
  } else {
    const cls = parts.findIndex((p) => /^[A-Z]/.test(p));
    const mod = cls === -1 ? parts : parts.slice(0, cls);
    file = `${mod.join("/")}.py`;
    rest = cls === -1 ? [] : parts.slice(cls);
  }
  return [file, ...rest, t.name].join("::");
}

/** The key that pairs one test's outcomes across runs: class name and name, as the report has them. */
export function outcomeKey(t: Pick<TestOutcome, "classname" | "name">): string {
  return `${t.classname}::${t.name}`;
}

/** 32-bit FNV-1a, hex: a short stable tag that keeps two ids apart when their slugs meet. Pure. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

/**
 * A check id for one test (`base-tests.failed-on-head.test_ops.py-test_add-1-2-3fa2c1d0`): the same
 * test gives the same id in every run, so `/probegate accept base-tests.failed-on-head.test_ops*`
 * names it, and the tag of the exact node id keeps apart tests whose slugs meet. Within the check
 * id pattern (lower case, digits, `.`, `_`, `-`) and its 128 characters.
 */
export function testCheckId(prefix: string, nodeId: string): string {
  const file = nodeId.split("::")[0] ?? nodeId;
  const short = [file.split("/").at(-1) ?? file, ...nodeId.split("::").slice(1)].join("-");
  const slug = short.toLowerCase().replace(/[^a-z0-9._]+/g, "-").replace(/^[-.]+|-+$/g, "");
  const room = 128 - prefix.length - 10;
  return `${prefix}.${slug.slice(0, Math.max(8, room)).replace(/-+$/, "")}-${fnv1a(nodeId)}`;
}

/**
 * Whether `official.allowChanged` lets this test change: its node id, the id without parameters,
 * a glob over the node id or its file, or `kind:node-id` (the guard's forms). Pure.
 */
export function allowedChange(nodeId: string, kind: string, allow: readonly string[]): boolean {
  const file = nodeId.split("::")[0] ?? nodeId;
  const bare = nodeId.replace(/\[.*\]$/, "");
  return allow.some((a) => {
    if (a === nodeId || a === bare || a === `${kind}:${nodeId}` || a === `${kind}:${bare}`) return true;
    const glob = picomatch(a, { dot: true });
    return glob(file) || glob(nodeId);
  });
}

import { XMLParser, XMLValidator } from "fast-xml-parser";
import type { FailingTest } from "../core/result.js";

export interface JunitReport {
  counts: { total: number; passed: number; failed: number; errors: number; skipped: number };
  failing: FailingTest[];
  /** The `name` of every <testsuite>, outermost first. */
  suites: string[];
  /**
   * Every testcase and how it ended, in report order (task import tells fail-to-pass from
   * pass-to-pass with it); a failure's or error's message attribute and body as pytest wrote them.
   */
  cases: Array<{ classname: string; name: string; outcome: "passed" | "failed" | "error" | "skipped"; message?: string; detail?: string }>;
}

type Node = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "",
  textNodeName: "#text",
  isArray: (name) => ["testsuite", "testcase", "failure", "error", "skipped"].includes(name),
  processEntities: true,
  // Numeric character references too: pytest writes a multi-line message attribute with "&#10;".
  htmlEntities: true,
});

function text(node: unknown): string {
  if (typeof node === "string") return node;
  if (node && typeof node === "object") {
    const n = node as Node;
    const msg = typeof n.message === "string" ? n.message : "";
    const body = typeof n["#text"] === "string" ? n["#text"] : "";
    return msg || body;
  }
  return "";
}

/** "tests.test_opt" + a traceback → the file and line of the failing assertion, where the report says. */
function locate(tc: Node, detail: string): { file: string | null; line: number | null } {
  if (typeof tc.file === "string") return { file: tc.file, line: tc.line ? Number(tc.line) : null };
  const guess = typeof tc.classname === "string" ? `${tc.classname.split(".").filter((p) => !/^[A-Z]/.test(p)).join("/")}.py` : null;
  const frames = [...detail.matchAll(/^([^\s:][^:\n]*\.py):(\d+):/gm)];
  const inTest = frames.filter((m) => guess && m[1] === guess);
  const pick = inTest.at(-1) ?? frames.at(-1);
  if (pick) return { file: pick[1] ?? null, line: Number(pick[2]) };
  return { file: guess, line: null };
}

/** Collects every testcase, wherever suites nest, and the names of the suites. */
function testcases(node: Node, out: Node[] = [], suites: string[] = []): { cases: Node[]; suites: string[] } {
  for (const tc of (node.testcase as Node[] | undefined) ?? []) out.push(tc);
  for (const s of (node.testsuite as Node[] | undefined) ?? []) {
    suites.push(String(s.name ?? ""));
    testcases(s, out, suites);
  }
  return { cases: out, suites };
}

/**
 * Parses a JUnit XML report into counts and failing tests. Throws on a file that is not JUnit XML;
 * the caller treats that as "no report" (never as a pass).
 */
export function parseJunit(xml: string): JunitReport {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new Error(`not well-formed XML: ${valid.err.msg} (line ${valid.err.line})`);
  const doc = parser.parse(xml) as Node;
  const root = (doc.testsuites as Node | undefined) ?? ({ testsuite: doc.testsuite } as Node);
  if (!doc.testsuites && !doc.testsuite) throw new Error("no <testsuites> or <testsuite> element");
  const { cases, suites } = testcases(root);
  const counts = { total: cases.length, passed: 0, failed: 0, errors: 0, skipped: 0 };
  const failing: FailingTest[] = [];
  const outcomes: JunitReport["cases"] = [];
  for (const tc of cases) {
    const name = String(tc.name ?? "");
    const classname = String(tc.classname ?? "");
    const failures = (tc.failure as unknown[] | undefined) ?? [];
    const errors = (tc.error as unknown[] | undefined) ?? [];
    if (failures.length || errors.length) {
      const kind = failures.length ? "failure" : "error";
      const first = (failures[0] ?? errors[0]) as unknown;
      const detail = typeof first === "object" && first ? String((first as Node)["#text"] ?? "") : String(first ?? "");
      const { file, line } = locate(tc, detail);
      failing.push({ name, classname, file, line, kind, message: text(first).slice(0, 2000) });
      if (kind === "failure") counts.failed++;
      else counts.errors++;
      const message = typeof first === "object" && first && typeof (first as Node).message === "string" ? String((first as Node).message) : "";
      outcomes.push({ classname, name, outcome: kind === "failure" ? "failed" : "error", message, detail: detail.slice(0, 8000) });
    } else if (((tc.skipped as unknown[] | undefined) ?? []).length) {
      counts.skipped++;
      // pytest writes why: the skip's reason, `could not import 'x'` for importorskip, type pytest.xfail for an xfail.
      const first = (tc.skipped as unknown[])[0];
      const node = typeof first === "object" && first ? (first as Node) : {};
      const why = [node.type === "pytest.xfail" ? "xfail" : "", typeof node.message === "string" ? node.message : ""].filter(Boolean).join(": ");
      outcomes.push({ classname, name, outcome: "skipped", ...(why ? { message: why.slice(0, 2000) } : {}) });
    } else {
      counts.passed++;
      outcomes.push({ classname, name, outcome: "passed" });
    }
  }
  return { counts, failing, suites, cases: outcomes };
}

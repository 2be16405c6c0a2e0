import { describe, expect, it } from "vitest";
import { parseRepoConfig } from "../../src/github/repo-config.js";

describe("parseRepoConfig", () => {
  it("returns the validated config with defaults", () => {
    const r = parseRepoConfig("routes:\n  - task: paged-kv-cache\n    labels: [kv]\n");
    expect(r.ok && r.config).toMatchObject({ enabled: true, routes: [{ task: "paged-kv-cache", labels: ["kv"], paths: [], marker: false }], reruns: { perPrPerHour: 3 } });
  });

  it("treats an empty file as the defaults", () => {
    expect(parseRepoConfig("").ok).toBe(true);
  });

  it("names the line of a YAML syntax error", () => {
    const r = parseRepoConfig("enabled: true\nroutes:\n  - task: a\n   labels: [x\n");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatchObject({ field: "(yaml)", line: expect.any(Number), message: expect.stringContaining("not valid YAML") });
  });

  it("names the field and line of a wrong value, of an unknown key, and of a duplicated key", () => {
    const text = ["enabled: true", "routes:", "  - task: Bad Id", "    labels: [x]", "evaluator:", "  repository: o/e", "  workflow: e.yml", "  timeoutMinute: 5"].join("\n");
    const r = parseRepoConfig(text);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.issues).toEqual(
      expect.arrayContaining([
        { field: "routes.0.task", line: 3, message: "lower-case letters, digits, '.', '_' and '-'" },
        { field: "evaluator.timeoutMinute", line: 8, message: "unknown field 'timeoutMinute'" },
      ]),
    );
    const dup = parseRepoConfig("enabled: true\nenabled: false\n");
    expect(dup.ok || dup.issues[0]?.line).toBe(2);
  });

  it("reports a missing required field on its parent's line", () => {
    const r = parseRepoConfig("enabled: true\nevaluator:\n  workflow: e.yml\n");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatchObject({ field: "evaluator.repository", line: 3 });
  });
});

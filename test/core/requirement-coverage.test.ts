import { describe, expect, it } from "vitest";
import { requirementCoverage, requirementMentions } from "../../src/core/requirement-coverage.js";

const probe = (path: string, ...lines: string[]) => ({ path, text: lines.join("\n") });

describe("requirementMentions", () => {
  it("finds ids in requirements= lists, single strings, tuples and JSON keys, with their lines", () => {
    const src = [
      probe("probe_a.py", "from probegate_probe import check, emit", "with check('resume', 'state', requirements=['resume-exact',", "                                      \"resume-step\"]) as c:", "    pass"),
      probe("probe_b.py", "emit('x', 'functional', 'passed', requirements='src-any')", "emit('y', 'functional', 'passed', requirements=(\"tuple-id\",))"),
      probe("probe_c.sh", 'echo \'{"id": "z", "category": "time", "status": "passed", "requirements": ["speed"]}\' >> "$PROBEGATE_RESULTS"'),
    ];
    expect(requirementMentions(src)).toEqual([
      { id: "resume-exact", path: "probe_a.py", line: 2 },
      { id: "resume-step", path: "probe_a.py", line: 3 },
      { id: "src-any", path: "probe_b.py", line: 1 },
      { id: "tuple-id", path: "probe_b.py", line: 2 },
      { id: "speed", path: "probe_c.sh", line: 1 },
    ]);
  });

  it("names nothing for a list held in a variable (only --power can see those)", () => {
    expect(requirementMentions([probe("p.py", "REQS = ['a']", "emit('x', 'state', 'passed', requirements=REQS)")])).toEqual([]);
  });
});

describe("requirementCoverage", () => {
  const declared = [{ id: "resume-exact", line: 12 }, { id: "src-any", line: 14 }];
  it("reports a declared requirement no probe names and an undeclared one a probe names, with file and line", () => {
    const { problems } = requirementCoverage(declared, "tasks/t/task.yml", [probe("probes/t/probe_a.py", "", "emit('x', 'state', 'passed', requirements=['resume-exact', 'resume-typo'])")]);
    expect(problems).toEqual([
      { path: "tasks/t/task.yml", line: 14, message: "requirements: 'src-any' is named by no probe check (requirements=[...] in a probe)" },
      { path: "probes/t/probe_a.py", line: 2, message: "names requirement 'resume-typo', which tasks/t/task.yml does not declare" },
    ]);
  });

  it("is content when every requirement is named, and reports a task that declares none", () => {
    expect(requirementCoverage(declared, "task.yml", [probe("p.py", "emit(requirements=['resume-exact', 'src-any'])")]).problems).toEqual([]);
    expect(requirementCoverage([], "task.yml", []).problems).toEqual([expect.objectContaining({ path: "task.yml", line: null, message: expect.stringMatching(/^requirements: none declared/) })]);
  });
});

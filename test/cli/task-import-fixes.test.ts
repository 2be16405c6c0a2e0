import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { tmp } from "../helpers.js";
import { makeRepo, packFiles, type ImportRepo } from "./import-repo.js";
import { cli } from "./run-cli.js";

/** What a new user met importing a real PR (issue 26), each on the small repository import-repo.ts builds. */
describe("probegate task import, as a new user meets it", () => {
  let repo: ImportRepo;
  beforeAll(() => {
    repo = makeRepo();
  });

  const imp = (pack: string, base: string, head: string, ...more: string[]) =>
    cli("task", "import", "--repo", repo.dir, "--pr-base", base, "--pr-head", head, "--tests", "tests/**", "--out", join(pack, "tasks", "tiny-add"), ...more);

  it("refuses a --pr-base that is not an ancestor of --pr-head, naming both SHAs, before running anything", async () => {
    const pack = tmp("pg-import-pack-");
    const swapped = await imp(pack, repo.fix, repo.base);
    expect(swapped.code).toBe(2);
    expect(swapped.err).toContain(`--pr-base ${repo.fix} is not an ancestor of --pr-head ${repo.base}`);
    expect(swapped.err).toContain(`the reverse holds (${repo.base} is an ancestor of ${repo.fix}): the two look swapped`);
    expect(swapped.err).not.toContain("running");
    const diverged = await imp(pack, repo.noFail, repo.fix);
    expect(diverged.code).toBe(2);
    expect(diverged.err).toContain(`--pr-base ${repo.noFail} is not an ancestor of --pr-head ${repo.fix}`);
    expect(diverged.err).toContain(`they diverged from ${repo.base} (git merge-base)`);
    expect(packFiles(pack)).toEqual([]);
  });

  it("never runs the tests --exclude names: a test that would kill pytest is deselected and listed", async () => {
    // Without --exclude the test runs and takes pytest down with it: no report at all.
    const unexcluded = await imp(tmp("pg-import-pack-"), repo.base, repo.withUnrunnable);
    expect(unexcluded.code).toBe(2);
    expect(unexcluded.err).toContain(`no test of tests/test_ops.py ran at head ${repo.withUnrunnable} (pytest exit 3)`);
    const pack = tmp("pg-import-pack-");
    const r = await imp(pack, repo.base, repo.withUnrunnable, "--exclude", "on_two_gpus");
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/after the change[^\n]*\n\s+2 tests: 2 passed, 0 failed, 0 errors, 0 skipped; 1 deselected by --exclude \(not run\)/);
    const record = parse(readFileSync(join(pack, "tasks", "tiny-add", "import.yml"), "utf8"));
    expect(record.fail_to_pass).toEqual(["tests/test_ops.py::test_add"]);
    expect(record.pass_to_pass).toEqual(["tests/test_ops.py::test_neg"]);
    expect(record.left_out).toEqual([{ id: "tests/test_ops.py::test_add_on_two_gpus", why: "excluded (--exclude): deselected, not run" }]);
    expect(r.out).toContain("left out 1 (1 by --exclude, 0 skipped or gone; import.yml says why)");
  });

  it("reports a test file pytest cannot collect as a collection failure in pytest's words, not as 'no test id holds'", async () => {
    const r = await imp(tmp("pg-import-pack-"), repo.base, repo.uncollectable, "--trace-imports", "--exclude", "two_ranks");
    expect(r.code).toBe(2);
    expect(r.err).toContain(`pytest could not collect a test file at head ${repo.uncollectable}, so none of its tests ran (collection failure, not a test failure):\n  tests/test_dist.py: ModuleNotFoundError: No module named 'nosuchpkg_pg_import'`);
    expect(r.err).toContain("'nosuchpkg_pg_import' is not part of the repository: the runner's Python lacks it");
    expect(r.err).not.toContain("no test id");
  });

  it("records the clone's origin URL, never a local path, and warns when only a local path is known", async () => {
    const clone = join(tmp("pg-import-clone-"), "calc");
    execFileSync("git", ["clone", "-q", repo.dir, clone]);
    // A clone of a clone: its origin is a folder, which does not travel with the task.
    const local = await cli("task", "import", "--repo", clone, "--pr-base", repo.base, "--pr-head", repo.fix, "--tests", "tests/**", "--out", join(tmp("pg-import-pack-"), "tasks", "tiny-add"), "--base-as", "git");
    expect(local.code).toBe(0);
    expect(local.err).toContain(`warning: the origin remote of ${clone} is a local folder (${repo.dir}), not a URL: give the repository's URL with --repo-url`);
    execFileSync("git", ["-C", clone, "remote", "set-url", "origin", "https://github.com/example/calc.git"]);
    const pack = tmp("pg-import-pack-");
    const r = await cli("task", "import", "--repo", clone, "--pr-base", repo.base, "--pr-head", repo.fix, "--tests", "tests/**", "--out", join(pack, "tasks", "tiny-add"), "--base-as", "git");
    expect(r.code).toBe(0);
    expect(r.err).not.toContain("warning");
    const task = join(pack, "tasks", "tiny-add");
    const text = readFileSync(join(task, "task.yml"), "utf8");
    expect(parse(text).base.git).toEqual({ repo: "https://github.com/example/calc.git", ref: repo.base });
    expect(text).toContain("# Imported by probegate task import from https://github.com/example/calc.git");
    expect(text).not.toContain(clone); // nor any local path: the clone stays on this machine
    expect(parse(readFileSync(join(task, "import.yml"), "utf8"))).toMatchObject({ repo: "https://github.com/example/calc.git", repo_from: "origin remote" });
    expect(r.out).toContain("repository: https://github.com/example/calc.git (origin remote)");
  });

  it("imports a change that adds no test with --pass-to-pass-only, records it, and validate says the probes carry the requirement", async () => {
    const refused = await imp(tmp("pg-import-pack-"), repo.base, repo.perf);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain("--tests: no file the change");
    expect(refused.err).toContain("If the PR adds no test, name the existing tests it must keep passing with --tests and add --pass-to-pass-only.");
    const noF2p = await imp(tmp("pg-import-pack-"), repo.base, repo.noFail);
    expect(noF2p.code).toBe(2);
    expect(noF2p.err).toContain("import it with --pass-to-pass-only");

    const pack = tmp("pg-import-pack-");
    const r = await imp(pack, repo.base, repo.perf, "--pass-to-pass-only");
    expect(r.code).toBe(0);
    expect(r.out).toContain("1 test files (existing ones: the change touches none)");
    expect(r.err).toContain("the change touches no test file: running the head's 1 file that --tests names (--pass-to-pass-only)");
    expect(r.out).toContain("no test fails before the change: the official tests only check that nothing breaks; the hidden probes must carry the requirement");
    const task = join(pack, "tasks", "tiny-add");
    const record = parse(readFileSync(join(task, "import.yml"), "utf8"));
    // A snapshot import from a clone with no origin: no URL recorded, and the user told so.
    expect(r.err).toContain(`warning: ${repo.dir} has no origin remote, so the repository's URL is unknown: give it with --repo-url (import.yml records none).`);
    expect(record).toMatchObject({ repo: null, repo_from: "none" });
    expect(record).toMatchObject({ fail_to_pass: [], pass_to_pass: ["tests/test_ops.py::test_neg"], official: expect.stringMatching(/^pass-to-pass only: .*the hidden probes carry the requirement/) });
    const specText = readFileSync(join(task, "task.yml"), "utf8");
    expect(specText).toContain("#   official tests: pass-to-pass only");
    const spec = parse(specText);
    expect(spec.official).toMatchObject({ command: expect.arrayContaining(["tests/test_ops.py::test_neg"]), files: ["tests/test_ops.py"] });
    const expected = parse(readFileSync(join(pack, "examples", "submissions", "tiny-add", "expected.yml"), "utf8"));
    expect(expected[1]).toMatchObject({ submission: "base.patch", verdict: "probe-rejected" });
    expect(readFileSync(join(task, "prompt.md"), "utf8")).toContain("1 passes before the change and must keep passing. None fails before it\n(imported with --pass-to-pass-only)");

    // Unfinished, validate refuses it for its skeletons and still says what the official tests are.
    const unfinished = await cli("validate", task);
    expect(unfinished.code).toBe(2);
    expect(unfinished.err).toContain("note: official tests are pass-to-pass only");
    // Finished (prompt, a requirement, a probe naming it), it passes, saying the probes carry the requirement.
    writeFileSync(join(task, "prompt.md"), "# Faster neg\n\nMake `neg` cheaper. `neg(a)` must still return the additive inverse of `a` for every int.\n");
    writeFileSync(join(task, "task.yml"), stringify({ ...spec, interfaces: ["neg"], requirements: [{ id: "neg-value", text: "neg(a) returns the additive inverse of a" }] }));
    writeFileSync(
      join(pack, "probes", "tiny-add", "probe_functional.py"),
      'from probegate_probe import emit\nfrom calc.ops import neg\n\nok = all(neg(a) == -a for a in range(-5, 6))\nemit("neg-value", "functional", "passed" if ok else "failed", "neg(a) == -a on -5..5", requirements=["neg-value"])\n',
    );
    const v = await cli("validate", task);
    expect(v.err).toBe("");
    expect(v.code).toBe(0);
    expect(v.out).toContain("✓ tiny-add: 1 interfaces stated, 1 requirements named by probes, 1 probe files\n  note: official tests are pass-to-pass only");
    expect(v.out).toContain("the hidden probes carry the requirement (1 requirements, each named by a probe)");
  });
});

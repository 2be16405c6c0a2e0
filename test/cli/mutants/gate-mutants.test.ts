import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FIXTURES, tmp } from "../../helpers.js";
import { gitIn } from "../../engine/repo-gate/gate-repo.js";
import { cli } from "../run-cli.js";

/** The calc repository as one commit, and its gate in a folder of its own with mutants.yml pinning that commit. */
function setup(upstream: (commit: string) => string = (c) => `upstream:\n  repo: ../repo\n  commit: ${c}\n  paths: [calc/ops.py]\n`) {
  const root = tmp("pg-gate-mutants-");
  cpSync(join(FIXTURES, "gates", "calc-gate"), root, { recursive: true });
  const repo = join(root, "repo");
  gitIn(repo, "init", "-q");
  gitIn(repo, "add", "-A");
  gitIn(repo, "commit", "-qm", "calc");
  const commit = gitIn(repo, "rev-parse", "HEAD");
  writeFileSync(join(root, "calc-gate", "mutants.yml"), upstream(commit));
  return { root, task: join(root, "calc-gate"), repo, commit, cache: join(root, "cache") };
}

const run = (s: ReturnType<typeof setup>, ...more: string[]) => cli("validate", "--mutants", s.task, "--cache", s.cache, "--format", "json", "--jobs", "2", ...more);

const ids = (list: Array<{ id: string }>) => list.map((m) => m.id).sort();

describe("probegate validate --mutants on a repository gate: the gated files mutated at a pinned commit, each mutant a PR against it", () => {
  it("kills the calc gate's mutants by its own test and its differential probe, value-keeping memory and traffic mutants included; the time-only ones survive a gate without a time check", async () => {
    const s = setup();
    const first = await run(s);
    const [report] = JSON.parse(first.out).tasks;
    // 20 mutants of calc/ops.py: 10 of the default operators (4 of scale's change what its test
    // checks), 10 value-keeping ones. Of those, the 0-d result of synced_mean (line 12) hides the
    // time and memory ones (a few bytes kept, a loop of one element), and no check of this gate times.
    expect(report.mutants).toEqual({ total: 20, killedByOfficial: 4, killedByProbes: 12, survived: 4, equivalent: 0, timedOut: 0, officialSurvivalRate: 16 / 20, probeScore: 12 / 16 });
    expect(report.errors).toEqual([]);
    expect(ids(report.survivors)).toEqual([
      "probegate/ElementLoop@calc/ops.py:12#0",
      "probegate/ExtraPass@calc/ops.py:12#0",
      "probegate/GrowingCache@calc/ops.py:12#0",
      "probegate/RetainCopies@calc/ops.py:12#0",
    ]);
    expect(first.code).toBe(1);
    expect(first.err).toContain(`reference the pinned commit ${s.commit.slice(0, 12)} (one comment line added to each mutated file)`);
    // Each kill says what killed it: the traffic check the barrier, the memory check the kept copies.
    const log = first.err;
    expect(log).toMatch(/ExtraCollective@calc\/ops\.py:11#0 → killedByProbes \(.*traffic/);
    expect(log).toMatch(/RetainCopies@calc\/ops\.py:6#0 → killedByProbes \(.*memory/);
    expect(log).toMatch(/GrowingCache@calc\/ops\.py:6#0 → killedByProbes \(.*memory/);
    // The extra pass over 8 MiB holds both results at once: the memory check sees it before any time check would.
    expect(log).toMatch(/ExtraPass@calc\/ops\.py:6#0 → killedByProbes \(.*memory/);
    expect(report.survivors.find((m: { id: string }) => m.id.startsWith("probegate/ExtraPass@calc/ops.py:12")).change).toEqual({ before: "return s / t.numel()", after: "return (((s / t.numel())), (s / t.numel()))[1]" });

    // Marked equivalent with a reason, a survivor leaves the denominator; the cache evaluates nothing again.
    writeFileSync(join(s.task, "mutants.yml"), `threshold: 0.5\nupstream:\n  repo: ../repo\n  commit: ${s.commit}\n  paths: [calc/ops.py]\nequivalent:\n  - id: "probegate/GrowingCache@calc/ops.py:12#0"\n    reason: "keeps a 0-d tensor a call: a few hundred bytes, under any resident-memory tolerance"\n`);
    const second = await run(s);
    const [again] = JSON.parse(second.out).tasks;
    expect(again.run).toMatchObject({ evaluated: 0, cached: 20 });
    expect(again.mutants).toMatchObject({ equivalent: 1, survived: 3, probeScore: 12 / 15 });
    expect(second.code).toBe(0);
  }, 900_000);

  it("says what is wrong with a gate's mutants.yml, naming the field", async () => {
    const none = setup(() => "threshold: 0.9\n");
    const a = await run(none);
    expect(a.code).toBe(2);
    expect(a.err).toMatch(/mutants\.yml: upstream: calc-gate is a repository gate .*upstream\.commit .*upstream\.paths/);

    const short = setup(() => "upstream:\n  repo: ../repo\n  commit: abc123\n  paths: [calc/ops.py]\n");
    expect((await run(short)).err).toMatch(/upstream\.commit.*40-hex/);

    const gone = setup((c) => `upstream:\n  repo: ../repo\n  commit: ${c}\n  paths: [calc/gone.py]\n`);
    expect((await run(gone)).err).toMatch(/upstream\.paths\[0\]: calc\/gone\.py is not a file at /);

    const fn = setup((c) => `upstream:\n  repo: ../repo\n  commit: ${c}\n  paths: [calc/ops.py]\n  functions: [scale, nowhere]\n`);
    expect((await run(fn)).err).toMatch(/upstream\.functions: nowhere is defined in none of upstream\.paths/);

    const other = setup(() => `upstream:\n  repo: ../repo\n  commit: '${"0".repeat(40)}'\n  paths: [calc/ops.py]\n`);
    expect((await run(other)).err).toMatch(/upstream\.commit: 0{40} is not a commit of /);

    const norepo = setup((c) => `upstream:\n  commit: ${c}\n  paths: [calc/ops.py]\n`);
    expect((await run(norepo)).err).toMatch(/upstream\.repo: .*--repo/);
  }, 120_000);
});

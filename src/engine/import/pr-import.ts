import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import picomatch from "picomatch";
import { classifyTests } from "../../core/test-split.js";
import { InputError } from "../errors.js";
import { git } from "../git.js";
import { adviseFailures, collectionMessage } from "./advice.js";
import { readPrTemplate } from "./pr-description.js";
import { copyPaths, snapshotPaths, walk } from "./snapshot.js";
import { lastLines, runTests, summarise } from "./test-runs.js";
import type { PrImport, PrImportRequest } from "./types.js";

export { officialCommand, type PrImport, type PrImportRequest } from "./types.js";

async function resolveCommit(gitDir: string, sha: string, flag: string, repo: string): Promise<string> {
  return git(gitDir, ["rev-parse", "--verify", "--quiet", `${sha}^{commit}`], {
    onError: () => new InputError(`${flag}: commit '${sha}' is not in the repository ${repo}. Fetch it there first (git fetch origin ${sha}), or check the SHA.`, { field: flag }),
  });
}

const isAncestor = async (gitDir: string, a: string, b: string) =>
  git(gitDir, ["merge-base", "--is-ancestor", a, b], { onError: () => new Error("no") }).then(
    () => true,
    () => false,
  );

/** Refuses a base that is not an ancestor of the head: the diff would undo what the base has and the head lacks. */
async function checkAncestry(gitDir: string, baseSha: string, headSha: string): Promise<void> {
  if (await isAncestor(gitDir, baseSha, headSha)) return;
  const swapped = await isAncestor(gitDir, headSha, baseSha);
  const mergeBase = swapped ? "" : await git(gitDir, ["merge-base", baseSha, headSha], { onError: () => new Error("none") }).catch(() => "");
  const hint = swapped
    ? `the reverse holds (${headSha} is an ancestor of ${baseSha}): the two look swapped; give the PR's parent as --pr-base and its head or merge commit as --pr-head`
    : mergeBase
      ? `they diverged from ${mergeBase} (git merge-base): give that, or the merge commit's first parent, as --pr-base`
      : "they share no history";
  throw new InputError(`--pr-base ${baseSha} is not an ancestor of --pr-head ${headSha}: the change between them would also undo what the base has and the head lacks; ${hint}.`, { field: "--pr-base" });
}

async function exportCommit(gitDir: string, sha: string, dest: string): Promise<void> {
  mkdirSync(dest, { recursive: true });
  const tar = await execa("git", ["--git-dir", gitDir, "archive", "--format=tar", sha], { encoding: "buffer", reject: false });
  if (tar.exitCode !== 0) throw new InputError(`cannot export ${sha}: ${Buffer.from(tar.stderr).toString().trim()}`);
  const untar = await execa("tar", ["-x", "-C", dest], { input: tar.stdout, reject: false });
  if (untar.exitCode !== 0) throw new InputError(`cannot unpack ${sha}: ${String(untar.stderr).trim()}`);
}

const isPytestFile = (t: string) => t.endsWith(".py") && /(^|\/)test_[^/]*\.py$|_test\.py$/.test(t);
const P2P_HINT = "If the change is one no test can tell apart (a performance PR), import it with --pass-to-pass-only: the official tests are then the pass-to-pass ones and the hidden probes carry the requirement.";

/**
 * Reads a change from a repository and runs its tests before and after it: the test files of the
 * head over the base tree (before), then the head (after). Throws InputError, naming the test and
 * the commit, for a SHA the repository lacks, a base that is not an ancestor of the head, a change
 * with no test file or no source file, a test file pytest cannot collect at the head, no test that
 * fails before (unless pass-to-pass only), or a test that does not pass after. Writes only to a
 * temporary folder.
 */
export async function importPullRequest(req: PrImportRequest, progress: (line: string) => void): Promise<PrImport> {
  const scratch = mkdtempSync(join(tmpdir(), "probegate-import-"));
  const dispose = () => rmSync(scratch, { recursive: true, force: true });
  try {
    const gitDir = join(scratch, "src.git");
    progress(`reading ${req.repo}`);
    await git(scratch, ["clone", "--quiet", "--bare", "--no-tags", req.repo, gitDir], {
      onError: (e) => new InputError(`--repo: cannot read the repository ${req.repo}: ${e.split("\n")[0]}`, { field: "--repo" }),
    });
    const baseSha = await resolveCommit(gitDir, req.base, "--pr-base", req.repo);
    const headSha = await resolveCommit(gitDir, req.head, "--pr-head", req.repo);
    await checkAncestry(gitDir, baseSha, headSha);
    const shortB = baseSha.slice(0, 12);
    const shortH = headSha.slice(0, 12);
    const changed = (await git(gitDir, ["diff", "--name-only", "--no-renames", baseSha, headSha])).split("\n").filter(Boolean);
    const isTest = picomatch(req.tests, { dot: true });
    const baseTree = join(scratch, "before");
    const headTree = join(scratch, "after");
    await exportCommit(gitDir, baseSha, baseTree);
    await exportCommit(gitDir, headSha, headTree);
    let tests = changed.filter((p) => isTest(p));
    const testsChanged = tests.length > 0;
    const sources = changed.filter((p) => !isTest(p));
    if (!testsChanged) {
      if (!req.passToPassOnly) throw new InputError(`--tests: no file the change ${shortB}..${shortH} touches matches ${req.tests.join(", ")} (it touches ${changed.join(", ") || "nothing"}). If the PR adds no test, name the existing tests it must keep passing with --tests and add --pass-to-pass-only.`, { field: "--tests" });
      // A PR with no test of its own: the official tests are the head's files --tests names.
      tests = walk(headTree).filter((p) => isTest(p)).sort();
      if (tests.length === 0) throw new InputError(`--tests: no file of the head ${shortH} matches ${req.tests.join(", ")}.`, { field: "--tests" });
      progress(`the change touches no test file: running the head's ${tests.length} file${tests.length === 1 ? "" : "s"} that --tests names (--pass-to-pass-only)`);
    }
    if (sources.length === 0) throw new InputError(`the change ${shortB}..${shortH} touches only test files (${tests.join(", ")}): there is no change for a submission to make.`, { field: "--tests" });
    const pyTests = tests.filter(isPytestFile);
    if (pyTests.length === 0) throw new InputError(`--tests: none of ${tests.slice(0, 10).join(", ")} is a pytest file (test_*.py or *_test.py).`, { field: "--tests" });
    const subject = await git(gitDir, ["log", "-1", "--format=%s", headSha]);
    const message = await git(gitDir, ["log", "-1", "--format=%b", headSha]);
    const referencePatch = await git(gitDir, ["diff", "--no-renames", "--full-index", "--binary", baseSha, headSha, "--", ...sources]);

    // "Before" is the base with the PR's test files, as the task's workspace will be.
    for (const t of tests) {
      rmSync(join(baseTree, t), { force: true });
      if (existsSync(join(headTree, t))) {
        mkdirSync(join(baseTree, t, ".."), { recursive: true });
        await execa("cp", ["-p", join(headTree, t), join(baseTree, t)]);
      }
    }
    const baseFiles = walk(baseTree);
    const snapshot = await snapshotPaths(req, baseFiles, baseTree, [...sources, ...tests], progress);
    // A snapshot task runs its tests in the snapshot: so do these runs, which also proves the snapshot holds what they import.
    let runBefore = baseTree;
    let runAfter = headTree;
    if (req.prune) {
      runBefore = join(scratch, "pruned-before");
      runAfter = join(scratch, "pruned-after");
      await copyPaths(baseTree, runBefore, snapshot);
      await copyPaths(headTree, runAfter, [...snapshot, ...sources]);
    }
    const runRoot = join(scratch, "runs");
    mkdirSync(runRoot);
    const listed = pyTests.length > 6 ? `${pyTests.length} test files` : pyTests.join(", ");
    progress(`running ${listed} before the change (base ${shortB} + the PR's tests)`);
    const before = await runTests(req, runBefore, runRoot, pyTests, `base ${shortB}`);
    progress(`  ${summarise(before)}`);
    progress(`running ${listed} after the change (head ${shortH})`);
    const after = await runTests(req, runAfter, runRoot, pyTests, `head ${shortH}`);
    progress(`  ${summarise(after)}`);
    const facts = { prune: req.prune, headTree };
    if (after.collectionFailures.length) throw new InputError(collectionMessage(after.collectionFailures, headSha, facts));
    if (after.outcomes.size === 0 && after.deselected.length === 0) {
      throw new InputError(`no test of ${listed} ran at head ${headSha} (pytest exit ${after.exitCode}); its output ends:\n${lastLines(after.log)}`);
    }
    const dropped = [...new Set([...after.deselected, ...before.deselected])].sort();
    if (req.exclude.length && dropped.length === 0) {
      throw new InputError(`--exclude: no test id collected at head ${shortH} holds ${req.exclude.map((x) => `'${x}'`).join(" or ")} (${after.outcomes.size} ran, e.g. ${[...after.outcomes.keys()].slice(0, 3).join(", ")}).`, { field: "--exclude" });
    }
    if (after.outcomes.size === 0) throw new InputError(`--exclude: it deselected every test at head ${shortH} (${dropped.length}); nothing is left to be official.`, { field: "--exclude" });
    const classification = classifyTests(before.outcomes, after.outcomes);
    classification.leftOut.push(...dropped.map((id) => ({ id, why: "excluded (--exclude): deselected, not run" })));
    if (classification.failAfter.length) {
      const fa = classification.failAfter;
      const list = fa.slice(0, 10).map((t) => `  ${t.id} (${t.outcome})${after.messages.get(t.id) ? `: ${after.messages.get(t.id)}` : ""}`).join("\n");
      const advice = adviseFailures({ ...facts, failing: fa.map((t) => ({ id: t.id, message: after.messages.get(t.id) ?? "" })) });
      throw new InputError(
        `${fa.length} test(s) do not pass after the change, at head ${headSha}:\n${list}${fa.length > 10 ? "\n  …" : ""}\nA task's official tests must pass on the merged change. Fix: ${advice.join("; ")}. pytest's output ends:\n${lastLines(after.log)}`,
      );
    }
    if (classification.failToPass.length === 0 && !req.passToPassOnly) {
      throw new InputError(
        `no test fails before the change: at base ${baseSha} with the PR's tests, ${classification.passToPass.join(", ") || "every test"} already pass${classification.passToPass.length === 1 ? "es" : ""}. A task needs at least one fail-to-pass test; name the tests the change makes pass (--tests). ${P2P_HINT}`,
      );
    }
    if (classification.failToPass.length + classification.passToPass.length === 0) {
      throw new InputError(`no test passes at head ${headSha} that also ran before the change: there is nothing to be official (${summarise(after)}).`);
    }
    return {
      baseSha,
      headSha,
      subject,
      message,
      // The template at the base too: the PR was written against it, and templates change.
      prTemplate: [readPrTemplate(baseTree), readPrTemplate(headTree)].filter(Boolean).join("\n\n") || null,
      tests,
      testsChanged,
      sources,
      referencePatch: referencePatch.endsWith("\n") ? referencePatch : `${referencePatch}\n`,
      snapshot,
      baseFileCount: baseFiles.length,
      classification,
      baseTree,
      headTree,
      dispose,
    };
  } catch (e) {
    dispose();
    throw e;
  }
}

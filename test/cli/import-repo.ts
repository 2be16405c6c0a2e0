import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmp } from "../helpers.js";

export const OPS_BROKEN = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n";
export const OPS_FIXED = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n";
export const TEST_NEG = "from calc.ops import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n";
export const TEST_BOTH = `from calc.ops import add, neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n\n\ndef test_add():\n    assert add(2, 3) == 5\n`;

/** A PR description as GitHub squashes it: the author's prose inside the repository's template, wrapped at 72. */
export const FIX_MESSAGE = `Fix add (#7)

### What does this PR do?

add subtracted its arguments; it now adds them.
<!-- Describe your change here. -->

> Add **concise** overview of what this PR aims to achieve or accomplish.

### Checklist Before Starting

- [ ] Search for similar PRs. Paste at least one query link here: ...
- [ ] Format the PR title as \`[{modules}] {type}: {description}\` (This
will be checked by the CI)

### Test

> For changes that can not be tested by CI (e.g., algorithm
implementation), validate by experiment(s) and show results.

### Specific Changes

> List the specific changes.

### Checklist Before Submitting

- [x] Read the [Contribute
Guide](https://example.org/calc#contribution-guide).
- [ ] Add / Update [the documentation](https://example.org/calc/docs).
`;

/** The repository's PR template, which FIX_MESSAGE's boilerplate comes from. */
export const PR_TEMPLATE = `### What does this PR do?

> Add **concise** overview of what this PR aims to achieve or accomplish.

### Checklist Before Starting

- [ ] Search for similar PRs. Paste at least one query link here: ...

### Test

> For changes that can not be tested by CI (e.g., algorithm implementation), validate by experiment(s) and show results.

### Specific Changes

> List the specific changes.
`;

/** The commits of the test repository, each branching from \`base\`. */
export interface ImportRepo {
  dir: string;
  base: string;
  /** The fix, its test, and a templated PR description. */
  fix: string;
  noFail: string;
  failsAfter: string;
  withSetup: string;
  newModule: string;
  /** The fix, and a test the runner cannot run (it kills pytest) next to it. */
  withUnrunnable: string;
  /** The fix, and a new test file that imports a package nobody has. */
  uncollectable: string;
  /** A faster neg, no test change: a performance PR. */
  perf: string;
}

/** A small repository: base, a good fix, and bad or unusual changes branching from it. */
export function makeRepo(): ImportRepo {
  const dir = tmp("pg-import-repo-");
  const g = (...args: string[]) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir, encoding: "utf8" }).trim();
  const put = (path: string, text: string) => {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const commit = (msg: string) => {
    g("add", "-A");
    g("commit", "-q", "-m", msg);
    return g("rev-parse", "HEAD");
  };
  g("init", "-q", "-b", "main");
  put("calc/__init__.py", "");
  put("calc/ops.py", OPS_BROKEN);
  put("calc/unused.py", "X = 1\n");
  put("tests/test_ops.py", TEST_NEG);
  put("LICENSE", "MIT\n");
  put(".github/PULL_REQUEST_TEMPLATE.md", PR_TEMPLATE);
  const base = commit("base");
  put("calc/ops.py", OPS_FIXED);
  put("tests/test_ops.py", TEST_BOTH);
  const fix = commit(FIX_MESSAGE);
  // A refactor whose new test already passes before it: no fail-to-pass test.
  g("checkout", "-q", base);
  put("calc/ops.py", `${OPS_BROKEN}\n\ndef double(a):\n    return 2 * a\n`);
  put("tests/test_ops.py", `${TEST_NEG}\n\ndef test_neg_zero():\n    assert neg(0) == 0\n`);
  const noFail = commit("Add double");
  // A change whose test still fails after it.
  g("checkout", "-q", base);
  put("calc/ops.py", "def add(a, b):\n    return a * b\n\n\ndef neg(a):\n    return -a\n");
  put("tests/test_ops.py", TEST_BOTH);
  const failsAfter = commit("Break add differently");
  // A change whose tests need a fixture the task's setup plugin provides.
  g("checkout", "-q", base);
  put("calc/ops.py", OPS_FIXED);
  put("tests/test_ops.py", `from calc.ops import add\n\n\ndef test_add_two(two):\n    assert add(two, two) == 4\n`);
  const withSetup = commit("Fix add (tested with a fixture from the runner's plugin)");
  // A new module with its new test file (which cannot even be collected before the change), and an edit to the old test.
  g("checkout", "-q", base);
  put("calc/mul.py", "def mul(a, b):\n    return a * b\n");
  put("tests/test_mul.py", "from calc.mul import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n");
  put("tests/test_ops.py", `${TEST_NEG}\n\ndef test_neg_neg():\n    assert neg(neg(3)) == 3\n`);
  const newModule = commit("Add mul");
  // The fix, with a test that would take pytest down with it if it ran (os._exit: no report at all).
  g("checkout", "-q", base);
  put("calc/ops.py", OPS_FIXED);
  put("tests/test_ops.py", `${TEST_BOTH}\n\ndef test_add_on_two_gpus():\n    import os\n    os._exit(3)\n`);
  const withUnrunnable = commit("Fix add (and a test for two GPUs)");
  // The fix, with a test file that cannot be collected here.
  g("checkout", "-q", base);
  put("calc/ops.py", OPS_FIXED);
  put("tests/test_ops.py", TEST_BOTH);
  put("tests/test_dist.py", "import nosuchpkg_pg_import\n\n\ndef test_dist_two_ranks():\n    assert nosuchpkg_pg_import.ok()\n");
  const uncollectable = commit("Fix add (and a test of the distributed path)");
  // A performance change: same behaviour, no test.
  g("checkout", "-q", base);
  put("calc/ops.py", OPS_BROKEN.replace("return -a", "return 0 - a"));
  const perf = commit("Faster neg");
  g("checkout", "-q", "main");
  return { dir, base, fix, noFail, failsAfter, withSetup, newModule, withUnrunnable, uncollectable, perf };
}

/** Files under a pack, so a test can say nothing was written. */
export function packFiles(pack: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) (e.isDirectory() ? walk : (p: string) => out.push(p))(join(d, e.name));
  };
  walk(pack);
  return out.sort();
}


export const id = 809;
export const ids = [809];
export const modules = {

/***/ 809:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  gateReplayCommand: () => (/* binding */ gateReplayCommand)
});

// EXTERNAL MODULE: external "node:fs"
var external_node_fs_ = __webpack_require__(3024);
// EXTERNAL MODULE: external "node:os"
var external_node_os_ = __webpack_require__(8161);
// EXTERNAL MODULE: external "node:path"
var external_node_path_ = __webpack_require__(6760);
// EXTERNAL MODULE: ./src/core/result.ts
var result = __webpack_require__(9294);
// EXTERNAL MODULE: ./src/engine/evaluate.ts + 4 modules
var evaluate = __webpack_require__(771);
// EXTERNAL MODULE: ./src/engine/errors.ts
var errors = __webpack_require__(7679);
// EXTERNAL MODULE: ./src/engine/progress-lines.ts
var progress_lines = __webpack_require__(3145);
// EXTERNAL MODULE: ./src/engine/task-load.ts
var task_load = __webpack_require__(9098);
// EXTERNAL MODULE: ./src/cli/eval-command.ts + 1 modules
var eval_command = __webpack_require__(4604);
// EXTERNAL MODULE: external "node:child_process"
var external_node_child_process_ = __webpack_require__(1421);
// EXTERNAL MODULE: external "node:readline"
var external_node_readline_ = __webpack_require__(481);
// EXTERNAL MODULE: ./src/core/app-config.ts
var app_config = __webpack_require__(7807);
// EXTERNAL MODULE: ./src/engine/git.ts
var git = __webpack_require__(2434);
;// CONCATENATED MODULE: ./src/cli/gate-replay-history.ts







const gitIn = (repo, args, onError) => (0,git/* git */.$)(repo.gitDir, ["--git-dir", repo.gitDir, "-c", "core.quotePath=false", ...args], { onError });
/**
 * `--repo`: a work tree's top folder, its `.git`, or a bare repository (a mirror). A folder inside a
 * work tree is refused: the engine clones what it is given, and git cannot clone a subfolder.
 */
async function openRepo(path) {
    const abs = (0,external_node_path_.resolve)(path);
    if (!(0,external_node_fs_.existsSync)(abs) || !(0,external_node_fs_.statSync)(abs).isDirectory())
        throw new errors/* InputError */.d(`--repo ${path}: no such folder.`, { field: "--repo" });
    const notRepo = () => new errors/* InputError */.d(`--repo ${path}: not a git repository (give a clone's top folder or a bare mirror such as …/repo.git).`, { field: "--repo" });
    const gitDir = await (0,git/* git */.$)(abs, ["rev-parse", "--absolute-git-dir"], { onError: notRepo });
    if ((0,external_node_fs_.realpathSync)(gitDir) === (0,external_node_fs_.realpathSync)(abs))
        return { gitDir, source: abs };
    const top = await (0,git/* git */.$)(abs, ["rev-parse", "--show-toplevel"], { onError: notRepo });
    if ((0,external_node_fs_.realpathSync)(top) !== (0,external_node_fs_.realpathSync)(abs))
        throw new errors/* InputError */.d(`--repo ${path}: a folder inside the work tree ${top}; give the work tree's top folder.`, { field: "--repo" });
    return { gitDir, source: abs };
}
/** The PR number a merge or squash commit's subject names, if any. */
function prNumber(subject) {
    const m = /\(#(\d+)\)\s*$/.exec(subject) ?? /^Merge pull request #(\d+)\b/.exec(subject);
    return m ? Number(m[1]) : null;
}
/**
 * The paths a gate watches, from its task.yml alone: each `official.select.fromPaths` entry's
 * globs (its '!' globs exclude within it), the always-run `select.tests` (a file or a folder), and
 * `official.files` (the tests the weakened-test guard compares).
 */
function watchedPaths(spec) {
    const select = spec.official.select;
    const groups = (select?.fromPaths ?? []).map((e) => [...e.paths]);
    for (const t of select?.tests ?? []) {
        const file = (t.split("::")[0] ?? t).replace(/\/+$/, "");
        groups.push([file, `${file}/**`]);
    }
    if (spec.official.files.length)
        groups.push([...spec.official.files]);
    return groups;
}
/** Whether `path` is watched. */
function watchedBy(paths) {
    const matchers = paths.map((g) => (0,app_config/* pathMatcher */.kZ)(g));
    return (p) => matchers.some((m) => m(p));
}
/** The watched paths as one line, for messages. */
function describeWatched(paths) {
    return paths.map((g) => g.join(" ")).join(", ");
}
/** The title of a commit: its subject, or for "Merge pull request #N from …" the body's first line (the PR's title). */
async function titleOf(repo, sha, subject) {
    if (!/^Merge pull request #\d+/.test(subject))
        return subject;
    const body = await gitIn(repo, ["log", "-1", "--format=%b", sha]);
    return body.split("\n").find((l) => l.trim())?.trim() ?? subject;
}
/** `--shas`: each resolved to a commit, in the order given, each once; its base is its first parent. */
async function commitsFromShas(repo, shas) {
    const out = [];
    for (const given of shas) {
        const sha = await gitIn(repo, ["rev-parse", "--verify", "--quiet", `${given}^{commit}`], () => new errors/* InputError */.d(`--shas: ${given} is not a commit of ${repo.source}.`, { field: "--shas" }));
        if (out.some((c) => c.sha === sha))
            continue;
        const parent = await gitIn(repo, ["rev-parse", "--verify", "--quiet", `${sha}^1`], () => new errors/* InputError */.d(`--shas: ${given} (${sha.slice(0, 9)}) has no parent: a root commit is no PR, it has no base to compare with.`, { field: "--shas" }));
        const [date = "", subject = ""] = (await gitIn(repo, ["log", "-1", "--format=%cI%x1f%s", sha])).split("\x1f");
        const changed = (await gitIn(repo, ["diff", "--name-only", "--no-renames", parent, sha])).split("\n").filter(Boolean);
        out.push({ sha, parent, date, title: await titleOf(repo, sha, subject), pr: prNumber(subject), changed });
    }
    return out;
}
/** `--since`: a date Date.parse reads (2025-06-01, 2025-06-01T12:00Z), as ISO 8601 for git. */
function parseSince(value) {
    const t = Date.parse(value);
    if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(t))
        throw new errors/* InputError */.d(`--since: expected a date like 2025-06-01 (or 2025-06-01T12:00:00Z), got '${value}'.`, { field: "--since" });
    return new Date(t).toISOString();
}
/** Streams `git log` records (header line, then changed paths) and stops it once `take` says so. */
async function walkLog(repo, args, take) {
    const child = (0,external_node_child_process_.spawn)("git", ["-c", "safe.directory=*", "--git-dir", repo.gitDir, "-c", "core.quotePath=false", ...args], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0" }, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d.toString()));
    const exited = new Promise((ok) => child.on("close", (code) => ok(code)));
    let header = null;
    let changed = [];
    let stopped = false;
    const flush = () => {
        if (header !== null && !stopped && !take(header, changed))
            stopped = true;
        header = null;
        changed = [];
    };
    for await (const line of (0,external_node_readline_.createInterface)({ input: child.stdout, crlfDelay: Infinity })) {
        if (line.startsWith("\x1e")) {
            flush();
            if (stopped)
                break;
            header = line.slice(1);
        }
        else if (line)
            changed.push(line);
    }
    if (stopped)
        child.kill();
    else
        flush();
    const code = await exited;
    if (!stopped && code !== 0)
        throw new errors/* InputError */.d(`git log failed in ${repo.gitDir}: ${stderr.trim().split("\n")[0]}`);
}
/**
 * First-parent history of `q.ref`, newest first: each commit a PR merged (or pushed) onto it, its
 * base the first parent. Root commits are left out (no base). An empty selection is an error that
 * says which filter emptied it.
 */
async function commitsFromHistory(repo, q) {
    const tip = await gitIn(repo, ["rev-parse", "--verify", "--quiet", `${q.ref}^{commit}`], () => new errors/* InputError */.d(`--ref ${q.ref}: not a branch, tag or commit of ${repo.source}.`, { field: "--ref" }));
    const watched = q.paths ? watchedBy(q.paths) : null;
    const out = [];
    let seen = 0;
    const args = ["log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "--name-only", "--format=%x1e%H%x1f%P%x1f%cI%x1f%s", ...(q.since ? [`--since=${q.since}`] : []), tip, "--"];
    await walkLog(repo, args, (header, changed) => {
        const [sha = "", parents = "", date = "", subject = ""] = header.split("\x1f");
        seen++;
        const parent = parents.split(" ")[0];
        if (parent && (!watched || changed.some(watched)))
            out.push({ sha, parent, date, title: subject, pr: prNumber(subject), changed });
        return q.count === undefined || out.length < q.count;
    });
    for (const c of out)
        c.title = await titleOf(repo, c.sha, c.title);
    if (out.length)
        return out;
    const where = `${q.ref} (${tip.slice(0, 9)}) in ${repo.source}`;
    if (seen === 0)
        throw new errors/* InputError */.d(`no commits selected: no first-parent commit of ${where}${q.since ? ` since ${q.since.slice(0, 10)} (--since)` : ""}.`, { field: q.since ? "--since" : "--ref" });
    if (q.paths)
        throw new errors/* InputError */.d(`no commits selected: none of the ${seen} first-parent commits of ${where}${q.since ? ` since ${q.since.slice(0, 10)}` : ""} changes a watched path (${describeWatched(q.paths)}); --paths <globs...> to watch others, --all-paths for every commit.`, { field: "--paths" });
    throw new errors/* InputError */.d(`no commits selected: the ${seen} first-parent commits of ${where} are all root commits (no base).`, { field: "--ref" });
}

// EXTERNAL MODULE: external "node:crypto"
var external_node_crypto_ = __webpack_require__(7598);
// EXTERNAL MODULE: ./node_modules/execa/index.js + 139 modules
var execa = __webpack_require__(5172);
;// CONCATENATED MODULE: ./src/cli/gate-replay-inject.ts






/** `--inject`: each a .patch/.diff file; named after the file ("leaked-buffer.patch" → leaked-buffer). */
function parseInjections(files) {
    const out = files.map((f) => {
        const patch = (0,external_node_path_.resolve)(f);
        if (!(0,external_node_fs_.existsSync)(patch) || !(0,external_node_fs_.statSync)(patch).isFile())
            throw new errors/* InputError */.d(`--inject ${f}: no such patch file.`, { field: "--inject" });
        return { name: (0,external_node_path_.basename)(patch).replace(/\.(patch|diff)$/, ""), patch };
    });
    const names = out.map((i) => i.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice)
        throw new errors/* InputError */.d(`--inject: two patches are named '${twice}'; rename one (the name keys its result files).`, { field: "--inject" });
    return out;
}
/**
 * A scratch bare repository sharing `repo`'s objects (`clone --shared`: nothing copied, nothing
 * written to `repo`): the injected commits live there, and the engine clones it like any other.
 */
async function scratchRepo(repo, dir) {
    await (0,git/* git */.$)(dir, ["clone", "--quiet", "--bare", "--shared", "--no-tags", repo.gitDir, "scratch.git"]);
    const gitDir = (0,external_node_path_.join)(dir, "scratch.git");
    return { gitDir, source: gitDir };
}
/** Fixed identity and dates: the same patch on the same commit is the same commit, so a replay resumes. */
const ENV = {
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_AUTHOR_NAME: "probegate replay",
    GIT_AUTHOR_EMAIL: "replay@localhost",
    GIT_COMMITTER_NAME: "probegate replay",
    GIT_COMMITTER_EMAIL: "replay@localhost",
    GIT_AUTHOR_DATE: "2000-01-01T00:00:00Z",
    GIT_COMMITTER_DATE: "2000-01-01T00:00:00Z",
};
/**
 * Commits `inj`'s patch on top of `sha` in the scratch repository, through an index of its own (no
 * work tree, so injections side by side do not meet); returns the new commit. A patch that does not
 * apply is an InputError naming the patch and the commit.
 */
async function injectOnto(scratch, sha, inj) {
    const index = (0,external_node_path_.join)(scratch.gitDir, `replay-index-${(0,external_node_crypto_.randomBytes)(6).toString("hex")}`);
    const run = async (args) => {
        const r = await (0,execa/* execa */.Ho)("git", ["-c", "safe.directory=*", "--git-dir", scratch.gitDir, ...args], { env: { ...ENV, GIT_INDEX_FILE: index }, reject: false });
        if (r.exitCode !== 0)
            throw new errors/* InputError */.d(`--inject ${inj.name}: git ${args[0]} failed on ${sha.slice(0, 9)}: ${String(r.stderr).trim().split("\n").slice(0, 3).join(" ")}`, { field: "--inject" });
        return String(r.stdout).trim();
    };
    try {
        await run(["read-tree", sha]);
        await run(["apply", "--cached", inj.patch]);
        const tree = await run(["write-tree"]);
        return await run(["commit-tree", tree, "-p", sha, "-m", `inject ${inj.name}`]);
    }
    finally {
        (0,external_node_fs_.rmSync)(index, { force: true });
    }
}

// EXTERNAL MODULE: ./node_modules/cli-table3/index.js
var cli_table3 = __webpack_require__(5832);
var cli_table3_default = /*#__PURE__*/__webpack_require__.n(cli_table3);
// EXTERNAL MODULE: ./src/core/sizes.ts
var sizes = __webpack_require__(9013);
;// CONCATENATED MODULE: ./src/cli/gate-replay-table.ts


const MESSAGE = 160;
function shorten(text, n) {
    const one = text.replace(/\s+/g, " ").trim();
    return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}
const MiB = (b) => `${(b / 2 ** 20).toFixed(b < 10 * 2 ** 20 ? 1 : 0)} MiB`;
/** A measured value as people read it: bytes in MiB, others with up to 3 decimals. */
function figure(name, v) {
    if (/bytes/.test(name) && Math.abs(v) >= 2 ** 20)
        return MiB(v);
    return Number.isInteger(v) ? String(v) : v.toFixed(3).replace(/\.?0+$/, "");
}
/**
 * The figures of one probe check, from what it measured, whatever the suite: each `head_X` with a
 * `base_X` beside it as "X head/base", and each ratio as "×r". None for a check that measured neither.
 */
function measuredFigures(p) {
    const m = p.measured ?? {};
    const out = [];
    for (const [k, v] of Object.entries(m)) {
        if (typeof v !== "number")
            continue;
        const name = k.slice("head_".length);
        const base = m[`base_${name}`];
        if (k.startsWith("head_") && typeof base === "number")
            out.push(`${p.id} ${name.replace(/_/g, " ")} ${figure(name, v)}/${figure(name, base)}`);
        else if (k === "ratio" || k.endsWith("_ratio"))
            out.push(`${p.id} ×${v.toFixed(2)}`);
    }
    return out;
}
/** The key numbers of one result, generic: official tests at the head (and the base), probe checks, measured figures, time. */
function keyNumbers(r) {
    const nums = [];
    const o = r.official;
    if (o)
        nums.push(`tests ${o.counts.passed}/${o.counts.total}${o.base ? ` (base ${o.base.counts.passed}/${o.base.counts.total})` : ""}`);
    if (r.probes.length)
        nums.push(`checks ${r.probes.filter((p) => p.status === "passed").length}/${r.probes.length} passed`);
    nums.push(...r.probes.flatMap(measuredFigures).slice(0, 6));
    nums.push(`${(0,sizes/* formatSeconds */.Xo)(r.durations.totalS)} (official ${(0,sizes/* formatSeconds */.Xo)(r.durations.officialS)}, probes ${(0,sizes/* formatSeconds */.Xo)(r.durations.probesS)})`);
    if (r.gpuSeconds > 0)
        nums.push(`${r.gpuSeconds.toFixed(0)} GPU·s`);
    return nums;
}
/** What failed, one entry each: failing official tests, failed or errored probe checks, and the reason when not resolved. */
function failedChecks(r) {
    const out = [];
    for (const f of r.official?.failing.slice(0, 5) ?? [])
        out.push(`test ${f.classname ? `${f.classname}.` : ""}${f.name}: ${shorten(f.message, MESSAGE)}`);
    if ((r.official?.failing.length ?? 0) > 5)
        out.push(`… ${(r.official?.failing.length ?? 0) - 5} more failing tests`);
    for (const p of r.probes)
        if (p.status === "failed" || p.status === "error")
            out.push(`${p.id} (${p.category}${p.status === "error" ? ", error" : ""}): ${shorten(p.message, MESSAGE)}`);
    if (r.verdict !== "resolved" && !out.length)
        out.push(shorten(r.reason, MESSAGE * 2));
    return out;
}
/** "#1234 5689fd799 (base 97eac9048)", with "inject NAME on" in front of an injected regression. */
function prCell(row, md) {
    const code = (s) => (md ? `\`${s}\`` : s);
    const c = row.commit;
    return `${row.injected ? `${row.injected} on ` : ""}${c.pr !== null ? `#${c.pr} ` : ""}${code(c.sha.slice(0, 9))} (${code(c.parent.slice(0, 9))})`;
}
function pathsCell(row) {
    const shown = row.watched.slice(0, 6).join(", ") + (row.watched.length > 6 ? `, … ${row.watched.length - 6} more` : "");
    return `${shown || "–"} (${row.watched.length}/${row.commit.changed.length})`;
}
function cells(row) {
    if (!row.result)
        return { verdict: "not judged", numbers: "", failed: row.problem ? [shorten(row.problem, MESSAGE * 2)] : [] };
    return { verdict: row.result.verdict, numbers: keyNumbers(row.result).join("; "), failed: failedChecks(row.result) };
}
const mdEscape = (t) => t.replace(/\|/g, "\\|").replace(/\n/g, " ");
/** The markdown table of a replay; the explanation column is for a person, from the PR's own description and code. */
function renderReplayMarkdown(rows) {
    const lines = [
        "| # | PR / sha (base) | title | changed paths (watched / all) | verdict | key numbers | failed checks | explanation |",
        "|---|---|---|---|---|---|---|---|",
    ];
    rows.forEach((row, i) => {
        const c = cells(row);
        lines.push(`| ${i + 1} | ${prCell(row, true)} | ${mdEscape(shorten(row.commit.title, 90))} | ${mdEscape(pathsCell(row))} | **${c.verdict}** | ${mdEscape(c.numbers)} | ${c.failed.map(mdEscape).join("<br>") || "–"} |  |`);
    });
    return `${lines.join("\n")}\n`;
}
/** The same rows for the terminal. */
function renderReplayTable(rows) {
    const t = new (cli_table3_default())({
        head: ["#", "PR / sha (base)", "title", "watched / all paths", "verdict", "key numbers", "failed checks"],
        colWidths: [4, 26, 30, 26, 16, 36, 50],
        wordWrap: true,
        style: { head: [], border: [] },
    });
    rows.forEach((row, i) => {
        const c = cells(row);
        t.push([String(i + 1), prCell(row, false), shorten(row.commit.title, 80), pathsCell(row), c.verdict, c.numbers, c.failed.join("\n") || "–"]);
    });
    return t.toString();
}
/** One line for the end of a PR's evaluation on stderr. */
function doneLine(row) {
    const c = cells(row);
    return `${c.verdict}${row.result ? ` in ${(0,sizes/* formatSeconds */.Xo)(row.result.durations.totalS)}` : ""}${c.failed.length ? `: ${c.failed.slice(0, 3).join("; ")}` : ""}`;
}

// EXTERNAL MODULE: ./src/cli/runner-pool.ts
var runner_pool = __webpack_require__(5037);
;// CONCATENATED MODULE: ./src/cli/gate-replay-command.ts













/** The commits to replay, from --shas or from history (--since / --count, filtered by the watched paths). */
async function selectCommits(flags, repo, task, io) {
    const fromHistory = flags.since !== undefined || flags.count !== undefined;
    if (flags.shas?.length && fromHistory)
        throw new errors/* InputError */.d("--shas names the commits; --since and --count choose them from history: give one or the other.", { field: "--shas" });
    if (!flags.shas?.length && !fromHistory)
        throw new errors/* InputError */.d("gate replay: say which PRs: --shas <sha...>, or --since <date> and/or --count <n> (first-parent history of --ref).", { field: "--shas" });
    if (flags.shas?.length) {
        const off = [flags.allPaths && "--all-paths", flags.ref !== "HEAD" && "--ref"].filter(Boolean);
        if (off.length)
            throw new errors/* InputError */.d(`${off.join(", ")} choose commits from history, with --since or --count; --shas names them.`, { field: String(off[0]) });
        return commitsFromShas(repo, flags.shas);
    }
    if (flags.paths && flags.allPaths)
        throw new errors/* InputError */.d("--paths and --all-paths: give one or the other.", { field: "--paths" });
    const paths = flags.allPaths ? null : flags.paths ? [flags.paths] : watchedPaths(task.spec);
    if (paths && paths.length === 0)
        throw new errors/* InputError */.d(`${task.file} declares no paths (official.select, official.files) to pick commits by: give --paths <globs...>, or --all-paths.`, { field: "--paths" });
    if (paths)
        io.stderr(`probegate gate replay: commits changing ${describeWatched(paths)}${flags.paths ? " (--paths)" : ` (from ${task.spec.id}'s task.yml; --paths to change)`}\n`);
    return commitsFromHistory(repo, { ref: flags.ref, since: flags.since === undefined ? undefined : parseSince(flags.since), count: (0,eval_command/* parseIntFlag */.rg)("--count", flags.count, 1), paths });
}
/**
 * A result already in --out-dir for this row: kept (resumed) when it is this task's judgement of
 * this commit against this base. One of another task or commit is refused, not overwritten; an
 * unreadable one (a run cut short while writing) is run again.
 */
function keptResult(row, task, io) {
    if (!(0,external_node_fs_.existsSync)(row.file))
        return null;
    let read;
    try {
        read = (0,result/* readResult */.Uv)(JSON.parse((0,external_node_fs_.readFileSync)(row.file, "utf8")));
    }
    catch (e) {
        read = { ok: false, problem: e.message };
    }
    if (!read.ok) {
        io.stderr(`probegate gate replay: ${row.file} is not a result (${read.problem}): evaluating again\n`);
        return null;
    }
    const r = read.result;
    const other = r.task.id !== task.spec.id ? `task ${r.task.id}` : r.submission.prBase?.asked !== row.commit.parent ? `base ${r.submission.prBase?.asked ?? "(none)"}` : !row.injected && r.submission.sha !== row.commit.sha ? `commit ${r.submission.sha}` : null;
    if (other)
        throw new errors/* InputError */.d(`--out-dir: ${row.file} is a result of ${other}, not of ${task.spec.id} on ${row.commit.sha.slice(0, 9)}: give another --out-dir, or --force to overwrite it.`, { field: "--out-dir" });
    return r;
}
/** Writes the result whole or not at all: a run stopped mid-write leaves no file that would look resumable. */
function writeResult(file, result) {
    (0,external_node_fs_.writeFileSync)(`${file}.tmp`, `${JSON.stringify(result, null, 2)}\n`);
    (0,external_node_fs_.renameSync)(`${file}.tmp`, file);
}
/**
 * `probegate gate replay`: replays merged PRs of `--repo` through the gate `--task`, from any folder
 * (the gate's task.yml is all it needs), each with the engine `probegate eval` runs, in this process.
 */
async function gateReplayCommand(flags, io, deps = {}) {
    const task = (0,task_load/* loadTask */._)(flags.task, flags.probes);
    if (task.base.kind !== "pr")
        throw new errors/* InputError */.d(`--task ${flags.task}: ${task.spec.id} is not a repository gate (its task.yml has no base: {pr: true}); gate replay judges PRs against their own base.`, { field: "--task" });
    const options = (0,eval_command/* evaluationOptions */.Pm)(flags);
    const jobs = (0,eval_command/* parseIntFlag */.rg)("--jobs", flags.jobs, 1) ?? 1;
    const injections = parseInjections(flags.inject ?? []);
    const repo = await openRepo(flags.repo);
    const commits = await selectCommits(flags, repo, task, io);
    const outDir = (0,external_node_path_.resolve)(flags.outDir ?? `replay-${task.spec.id}`);
    (0,external_node_fs_.mkdirSync)(outDir, { recursive: true });
    const watched = watchedBy(flags.paths ? [flags.paths] : watchedPaths(task.spec));
    const planned = commits.flatMap((commit) => {
        const base = { commit, watched: commit.changed.filter(watched), result: null };
        if (!injections.length)
            return [{ row: { ...base, file: (0,external_node_path_.join)(outDir, `${commit.sha.slice(0, 9)}.json`) } }];
        return injections.map((injection) => ({ injection, row: { ...base, injected: `inject ${injection.name}`, file: (0,external_node_path_.join)(outDir, `inject-${injection.name}-${commit.sha.slice(0, 9)}.json`) } }));
    });
    for (const p of planned) {
        if (flags.force && !flags.tableOnly)
            continue;
        p.row.result = keptResult(p.row, task, io);
        p.row.kept = p.row.result !== null;
        if (!p.row.result && flags.tableOnly)
            p.row.problem = "not run (--table-only)";
    }
    const todo = flags.tableOnly ? [] : planned.filter((p) => !p.row.result);
    const kept = planned.length - todo.length;
    const what = `${planned.length} ${injections.length ? "injection" : "PR"}${planned.length === 1 ? "" : "s"}`;
    io.stderr(`probegate gate replay: ${what} of ${repo.source} through ${task.spec.id}: ${kept} already in ${outDir}${kept && !flags.tableOnly ? " (--force to run them again)" : ""}, ${todo.length} to evaluate${todo.length ? `, ${Math.min(jobs, todo.length)} at a time` : ""}\n`);
    if (todo.length) {
        const scratchDir = injections.length ? (0,external_node_fs_.mkdtempSync)((0,external_node_path_.join)((0,external_node_os_.tmpdir)(), "pg-replay-inject-")) : null;
        try {
            const scratch = scratchDir ? await scratchRepo(repo, scratchDir) : null;
            const { pool } = await (0,runner_pool/* poolFromFlags */.w6)({ gpus: flags.gpus, cores: flags.cores });
            const run = deps.evaluate ?? evaluate/* evaluate */._;
            const evaluateOne = async (p, n) => {
                const { row } = p;
                p.started = true;
                const prefix = `[${n}/${todo.length} ${row.injected ? `${row.injected} on ` : ""}${row.commit.pr !== null ? `#${row.commit.pr} ` : ""}${row.commit.sha.slice(0, 9)}] `;
                (0,external_node_fs_.writeFileSync)(`${row.file}.log`, `probegate gate replay: ${row.commit.title}\nhead ${row.commit.sha}${row.injected ? ` + ${row.injected}` : ""}, base ${row.commit.parent}\n`);
                const toLog = (0,progress_lines/* progressPrinter */._)((s) => (0,external_node_fs_.appendFileSync)(`${row.file}.log`, s), { verbose: true });
                const toTerminal = (0,progress_lines/* progressPrinter */._)(io.stderr, { verbose: flags.verbose, prefix });
                io.stderr(`${prefix}${row.commit.title} (${row.watched.length}/${row.commit.changed.length} changed paths watched)\n`);
                try {
                    const head = p.injection && scratch ? await injectOnto(scratch, row.commit.sha, p.injection) : row.commit.sha;
                    const result = await run({
                        task,
                        submission: { kind: "git", repo: scratch?.source ?? repo.source, ref: head },
                        prBase: row.commit.parent,
                        ...options,
                        pool,
                        onEvent: (e) => (toLog(e), toTerminal(e)),
                    });
                    writeResult(row.file, result);
                    row.result = result;
                }
                catch (e) {
                    // One PR the engine refuses (a base of another history, a patch that does not apply) is its row's problem, not the replay's.
                    row.problem = e instanceof errors/* InputError */.d ? e.message : String(e.stack ?? e);
                    (0,external_node_fs_.appendFileSync)(`${row.file}.log`, `not judged: ${row.problem}\n`);
                }
                io.stderr(`${prefix}${doneLine(row)}\n`);
            };
            await runAll(todo, jobs, evaluateOne, deps.signal);
        }
        finally {
            if (scratchDir)
                (0,external_node_fs_.rmSync)(scratchDir, { recursive: true, force: true });
        }
    }
    const rows = planned.map((p) => p.row);
    const unfinished = planned.filter((p) => !p.row.result && !p.row.problem);
    for (const p of unfinished)
        p.row.problem = p.started ? "abandoned in flight (stopped): run the replay again to judge it" : "not started (stopped)";
    if (unfinished.length) {
        const inFlight = unfinished.filter((p) => p.started).length;
        io.stderr(`probegate gate replay: stopped by ${String(deps.signal?.reason ?? "a signal")}: ${todo.length - unfinished.length} evaluated, ${inFlight} in flight abandoned, ${unfinished.length - inFlight} not started; the same command goes on from here\n`);
    }
    if (flags.table)
        (0,external_node_fs_.writeFileSync)(flags.table, renderReplayMarkdown(rows));
    io.stdout(`${renderReplayTable(rows)}\n`);
    if (flags.table)
        io.stderr(`probegate gate replay: markdown table in ${flags.table}\n`);
    return rows.every((r) => r.result && r.result.verdict !== "error") ? 0 : 3;
}
/**
 * Runs `fn` over `items`, `limit` at once, numbering them from 1. Once `signal` aborts, no further
 * item starts and it returns at once, leaving those in progress (the process ends with them).
 */
async function runAll(items, limit, fn, signal) {
    let next = 0;
    const worker = async () => {
        while (next < items.length && !signal?.aborted) {
            const i = next++;
            await fn(items[i], i + 1);
        }
    };
    const all = Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    if (!signal)
        return void (await all);
    const stopped = new Promise((ok) => (signal.aborted ? ok() : signal.addEventListener("abort", () => ok(), { once: true })));
    await Promise.race([all, stopped]);
}


/***/ })

};

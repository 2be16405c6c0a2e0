import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { HarnessError } from "../../../src/engine/errors.js";
import { lockHash } from "../../../src/engine/environment/lock-file.js";
import { ensureTreeEnvironment, type TreeEnvironmentRequest } from "../../../src/engine/environment/tree-environment.js";
import { tmp } from "../../helpers.js";
import { isolatedStore, needsUvAndPypi, REAL_UV } from "./tiny-env.js";

const skip = await needsUvAndPypi();

function tree(files: Record<string, string>): string {
  const dir = tmp("pg-tree-env-");
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

function request(treeDir: string, over: Partial<TreeEnvironmentRequest> = {}): TreeEnvironmentRequest {
  return {
    treeDir,
    treeLabel: "the merge base 1a2b3c4d5e6f",
    from: "1a2b3c4d5e6f",
    fromTree: { requirements: ["requirements.txt"], pins: [], exclude: [] },
    pinsLock: null,
    python: ">=3.11,<3.12",
    declaredIn: "tasks/g/task.yml",
    ...over,
  };
}

const version = (python: string, module: string) => execFileSync(python, ["-c", `import ${module}; print(${module}.__version__)`], { encoding: "utf8" }).trim();

describe.skipIf(skip !== "")(`environments that follow the repository's tree (uv pip compile from PyPI)${skip}`, () => {
  const store = isolatedStore();
  const calls = (what: string) => store.uvCalls().filter((c) => c.startsWith(what)).length;

  it("compiles the tree's requirements with the task's pins into a lock, builds it once; the same requirements elsewhere reuse it; a changed one makes another", async () => {
    const lines: string[] = [];
    const first = await ensureTreeEnvironment(request(tree({ "requirements.txt": "six==1.16.0\n" }), { fromTree: { requirements: ["requirements.txt"], pins: ["pyyaml==6.0.2"], exclude: [] } }), { onProgress: (l) => lines.push(l) });
    expect(first.reused).toBe(false);
    expect(first.dir).toMatch(/\/tree-[0-9a-f]{16}-py3\.11\.2$/);
    expect(version(first.python, "six")).toBe("1.16.0");
    expect(version(first.python, "yaml")).toBe("6.0.2");
    expect(lines[0]).toBe("compiling a lock from the merge base 1a2b3c4d5e6f: 1 requirements of requirements.txt, 1 pins of the task (uv pip compile --universal, python 3.11)");
    expect(lines).toContainEqual(expect.stringMatching(/^building environment tree-[0-9a-f]{16}-py3\.11\.2 from fromTree: requirements\.txt \+ 1 pins: 2 pinned packages on \/usr\/bin\/python3\.11/));
    // The manifest says where it came from; the compiled lock and its inputs are kept beside it.
    const lock = readFileSync(join(first.dir, "probegate-lock", "requirements.lock"));
    expect(first.manifest.lockHash).toBe(lockHash(lock));
    expect(lock.toString()).toMatch(/^pyyaml==6\.0\.2 \\\n    --hash=sha256:[0-9a-f]{64}/m);
    // Compiled in its scratch folder under relative names: the lock's bytes name no build folder.
    expect(lock.toString()).not.toMatch(/\/tmp|\.build-|\/envs\//);
    expect(first.manifest.tree).toEqual({
      inputHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      from: "1a2b3c4d5e6f",
      files: [{ path: "requirements.txt", sha256: lockHash("six==1.16.0\n") }],
      pins: ["pyyaml==6.0.2"],
      exclude: [],
      pythonVersion: "3.11",
    });
    expect(first.dir.endsWith(first.manifest.tree?.inputHash.slice(0, 16) + "-py3.11.2")).toBe(true);
    expect([calls("pip compile"), calls("pip sync")]).toEqual([1, 1]);

    // Another commit whose requirements file says the same (a comment aside): no uv call at all.
    const again = await ensureTreeEnvironment(request(tree({ "requirements.txt": "# unchanged\nsix==1.16.0\n", "README.md": "moved on\n" }), { from: "9f8e7d6c5b4a", fromTree: { requirements: ["requirements.txt"], pins: ["pyyaml==6.0.2"], exclude: [] } }));
    expect(again.reused).toBe(true);
    expect(again.dir).toBe(first.dir);
    expect([calls("pip compile"), calls("pip sync")]).toEqual([1, 1]);

    const moved = await ensureTreeEnvironment(request(tree({ "requirements.txt": "six==1.17.0\n" }), { fromTree: { requirements: ["requirements.txt"], pins: ["pyyaml==6.0.2"], exclude: [] } }));
    expect(moved.reused).toBe(false);
    expect(moved.dir).not.toBe(first.dir);
    expect(version(moved.python, "six")).toBe("1.17.0");
    expect([calls("pip compile"), calls("pip sync")]).toEqual([2, 2]);
  });

  it("the task's pins win over the tree's requirement on their package; excluded packages are never installed", async () => {
    const env = await ensureTreeEnvironment(request(tree({ "requirements.txt": "six==1.16.0\npyyaml==6.0.2\n" }), { fromTree: { requirements: ["requirements.txt"], pins: ["six==1.17.0"], exclude: ["pyyaml"] } }));
    expect(version(env.python, "six")).toBe("1.17.0");
    expect(() => execFileSync(env.python, ["-c", "import yaml"], { stdio: "pipe" })).toThrow(/No module named 'yaml'/);
    expect(env.manifest.tree?.exclude).toEqual(["pyyaml"]);
  });

  it("the task's own lock holds pins too: its requirements win, its hashes are compiled afresh", async () => {
    const dir = tree({ "requirements.in": "six==1.17.0\n" });
    execFileSync(REAL_UV as string, ["pip", "compile", "--quiet", "--universal", "--generate-hashes", "--python-version", "3.11", "requirements.in", "-o", "requirements.lock"], { cwd: dir });
    const env = await ensureTreeEnvironment(request(tree({ "requirements.txt": "six==1.16.0\n" }), { pinsLock: { file: join(dir, "requirements.lock"), label: "environment/requirements.lock" } }));
    expect(version(env.python, "six")).toBe("1.17.0");
    expect(env.manifest.lockFile).toBe("fromTree: requirements.txt + environment/requirements.lock");
    expect(env.manifest.tree?.pins).toEqual(["six==1.17.0"]);
  });

  it("a declared file the base lacks is an error naming it and the task's field, before uv runs", async () => {
    const before = store.uvCalls().length;
    const err = (await ensureTreeEnvironment(request(tree({ "setup.py": "" }))).catch((e: unknown) => e)) as HarnessError;
    expect(err).toBeInstanceOf(HarnessError);
    expect(err.phase).toBe("environment");
    expect(err.message).toMatch(/^requirements\.txt is not in the merge base 1a2b3c4d5e6f \(environment\.fromTree\.requirements in tasks\/g\/task\.yml\)/);
    expect(store.uvCalls().length).toBe(before);
  });

  it("a requirement uv cannot resolve is an error naming its file and line, quoting uv", async () => {
    const err = (await ensureTreeEnvironment(request(tree({ "requirements.txt": "six==1.16.0\nprobegate-no-such-package==1.0\n" }))).catch((e: unknown) => e)) as HarnessError;
    expect(err).toBeInstanceOf(HarnessError);
    expect(err.message).toMatch(
      /^no environment could be resolved from the merge base 1a2b3c4d5e6f's requirements \(environment\.fromTree in tasks\/g\/task\.yml\): requirements\.txt:2 \(probegate-no-such-package==1\.0\): error: No solution found when resolving dependencies cause: Because probegate-no-such-package was not found in the package registry/,
    );
    const pin = (await ensureTreeEnvironment(request(tree({ "requirements.txt": "six\n" }), { fromTree: { requirements: ["requirements.txt"], pins: ["six==99"], exclude: [] } })).catch((e: unknown) => e)) as HarnessError;
    expect(pin.message).toMatch(/: six==99 \(environment\.fromTree\.pins in tasks\/g\/task\.yml\): error: No solution found .*there is no version of six==99/);
  });

  it("what the head declares beyond its merge base is said, and not installed", async () => {
    const lines: string[] = [];
    const base = tree({ "requirements.txt": "six==1.16.0\n" });
    const head = tree({ "requirements.txt": "six==1.17.0\nrich>=13\n" });
    const env = await ensureTreeEnvironment(request(base, { headDir: head }), { onProgress: (l) => lines.push(l) });
    expect(version(env.python, "six")).toBe("1.16.0");
    expect(lines).toContain("the head declares requirements its merge base does not, not installed (the environment follows the merge base): rich>=13 (requirements.txt)");
    expect(lines).toContain("the head changes requirements; the environment keeps the merge base's: six==1.16.0 → six==1.17.0 (requirements.txt)");
  });
});

import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InputError } from "../../src/engine/errors.js";
import { loadTask } from "../../src/engine/task-load.js";
import { TINY_TASK, tmp, FIXTURES } from "../helpers.js";

/** A copy of the fixture task whose task.yml is replaced by `yaml`. */
function taskWith(yaml: string, id = "tiny-sum"): string {
  const root = tmp();
  const dir = join(root, "tasks", id);
  cpSync(TINY_TASK, dir, { recursive: true });
  cpSync(join(FIXTURES, "probes"), join(root, "probes"), { recursive: true });
  writeFileSync(join(dir, "task.yml"), yaml);
  return dir;
}

const GOOD = `id: tiny-sum
title: t
area: other
base:
  path: base
official:
  command: ["{python}", "-m", "pytest"]
probes:
  path: ../../probes/tiny-sum
`;

function errorOf(fn: () => unknown): InputError {
  try {
    fn();
  } catch (e) {
    if (e instanceof InputError) return e;
    throw e;
  }
  throw new Error("expected an InputError");
}

describe("loadTask", () => {
  it("loads the fixture with defaults filled in", () => {
    const t = loadTask(TINY_TASK);
    expect(t.spec.id).toBe("tiny-sum");
    expect(t.spec.limits.memory).toBe(2 * 2 ** 30);
    expect(t.base).toEqual({ kind: "folder", path: join(TINY_TASK, "base") });
    expect(loadTask(taskWith(GOOD)).spec.probes.pattern).toBe("probe_*.py");
  });

  it("names file, field and line of an unknown key", () => {
    const e = errorOf(() => loadTask(taskWith(`${GOOD}gpu: 2\n`)));
    expect(e.message).toMatch(/task\.yml:10: gpu: unknown field 'gpu'/);
    expect(e.where).toMatchObject({ field: "gpu", line: 10 });
  });

  it("names the line of a bad nested value", () => {
    const e = errorOf(() => loadTask(taskWith(GOOD.replace("area: other", "area: robotics"))));
    expect(e.message).toMatch(/task\.yml:3: area: /);
    const e2 = errorOf(() => loadTask(taskWith(`${GOOD}limits:\n  memory: lots\n`)));
    expect(e2.message).toMatch(/task\.yml:11: limits\.memory: not a size: "lots"/);
  });

  it("checks minRanks against the task's GPUs, naming the line", () => {
    expect(loadTask(taskWith(GOOD)).spec.minRanks).toBe(1);
    expect(loadTask(taskWith(`${GOOD}gpus: 4\nminRanks: 2\n`)).spec.minRanks).toBe(2);
    const e = errorOf(() => loadTask(taskWith(`${GOOD}gpus: 2\nminRanks: 3\n`)));
    expect(e.message).toMatch(/task\.yml:11: minRanks: is 3, more than gpus \(2\), the ranks the task runs on by default/);
    expect(errorOf(() => loadTask(taskWith(`${GOOD}minRanks: 0\n`))).message).toMatch(/task\.yml:10: minRanks: /);
  });

  it("reports a missing required field at the document", () => {
    expect(errorOf(() => loadTask(taskWith(GOOD.replace("title: t\n", "")))).message).toMatch(/title: /);
  });

  it("reports YAML syntax errors with a line", () => {
    expect(errorOf(() => loadTask(taskWith(`${GOOD}  bad: [unclosed\n`))).message).toMatch(/task\.yml:\d+: task spec is not valid YAML/);
  });

  it("reports missing files and folders with the field", () => {
    expect(errorOf(() => loadTask(taskWith(GOOD.replace("path: base", "path: nowhere")))).message).toMatch(/task\.yml:5: base\.path: folder .*nowhere does not exist/);
    expect(errorOf(() => loadTask(taskWith(`${GOOD}prompt: missing.md\n`))).message).toMatch(/prompt: file .*missing\.md does not exist/);
    expect(errorOf(() => loadTask(join(tmp(), "none"))).message).toMatch(/Cannot read task spec .*no such file/);
  });

  it("requires the id to match the folder", () => {
    expect(errorOf(() => loadTask(taskWith(GOOD.replace("id: tiny-sum", "id: other")))).message).toMatch(/task\.yml:1: id: 'other' must equal/);
  });

  it("checks a --probes override", () => {
    expect(errorOf(() => loadTask(TINY_TASK, "/nonexistent/probes")).message).toMatch(/--probes: folder/);
  });

  it("joins a shared setup folder (setup.include) to the task's own, and says where a file or plugin is wrong", () => {
    const dir = taskWith(`${GOOD}setup:\n  path: setup\n  include: [../../shared/cpu]\n  pytestPlugins: [shim]\n`);
    mkdirSync(join(dir, "setup"));
    writeFileSync(join(dir, "setup", "plugin.py"), "");
    const shared = join(dir, "..", "..", "shared", "cpu");
    mkdirSync(join(shared, "__pycache__"), { recursive: true });
    writeFileSync(join(shared, "shim.py"), "");
    writeFileSync(join(shared, "__pycache__", "plugin.cpython-311.pyc"), "");
    expect(loadTask(dir).setupDirs).toEqual([join(dir, "setup"), shared]);

    // A file both folders hold: which copy would win is not left to the order of a copy.
    writeFileSync(join(shared, "plugin.py"), "");
    expect(errorOf(() => loadTask(dir)).message).toMatch(/task\.yml:12: setup\.include\[0\]: plugin\.py is in both .*setup and .*shared\/cpu/);
    rmSync(join(shared, "plugin.py"));

    const noFolder = taskWith(`${GOOD}setup:\n  path: setup\n  include: [nowhere]\n`);
    mkdirSync(join(noFolder, "setup"));
    expect(errorOf(() => loadTask(noFolder)).message).toMatch(/task\.yml:12: setup\.include\[0\]: folder .*nowhere does not exist/);
    const noPlugin = taskWith(`${GOOD}setup:\n  path: setup\n  pytestPlugins: [absent]\n`);
    mkdirSync(join(noPlugin, "setup"));
    expect(errorOf(() => loadTask(noPlugin)).message).toMatch(/task\.yml:12: setup\.pytestPlugins: module 'absent' is not in .*setup/);
  });
});

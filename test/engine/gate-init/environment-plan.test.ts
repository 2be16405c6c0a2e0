import { describe, expect, it } from "vitest";
import { planEnvironment } from "../../../src/engine/gate-init/environment-plan.js";
import { InputError } from "../../../src/engine/errors.js";
import { tmp } from "../../helpers.js";
import { write } from "../repo-gate/gate-repo.js";

function tree(files: Record<string, string>): { dir: string; paths: string[] } {
  const dir = tmp("pg-env-plan-");
  write(dir, files);
  return { dir, paths: Object.keys(files) };
}

describe("planEnvironment: environment.fromTree from what the repository declares", () => {
  it("takes the requirement files the engine can read, leaves out the others saying why, adds the test extra, excludes CUDA-only builds and pins torch and pytest", () => {
    const t = tree({
      "requirements.txt": "numpy>=1.26\nflash-attn==2.7.0\n",
      "requirements-dev.txt": "-e .\npytest\n",
      "requirements/docs.txt": "sphinx\n",
      "requirements/test.txt": "-r ../requirements.txt\nhypothesis\n",
    });
    const project = { name: "pkg", dependencies: ["torch>=2.1"], "optional-dependencies": { test: ["pytest-xdist"], gpu: ["triton"] } };
    const plan = planEnvironment({ dir: t.dir, paths: t.paths, project, hasPyproject: true, requirements: [], extras: null });
    expect(plan.fromTree).toEqual({ requirements: ["requirements.txt", "requirements/test.txt"], pyproject: { path: "pyproject.toml", extras: ["test"] }, pins: ["torch==2.15.0", "pytest==9.2.0"], exclude: ["flash-attn"] });
    expect(plan.notes).toContainEqual(expect.stringMatching(/^requirements-dev\.txt: left out, the engine would refuse it: requirements-dev\.txt:1: '-e \.' is an editable install/));
    expect(plan.notes).toContainEqual(expect.stringMatching(/^requirements\/docs\.txt: left out, named for another purpose/));
    expect(plan.notes).toContain("requirements/test.txt: 3 requirements (with requirements.txt)");
    expect(plan.notes).toContainEqual(expect.stringMatching(/^pyproject\.toml: \[project\] dependencies and the extra test \(2 requirements\); extras not taken: gpu/));
    expect(plan.notes).toContainEqual(expect.stringMatching(/^pinned torch==2\.15\.0, over the repository's torch>=2\.1 \(pyproject\.toml \[project\] dependencies\)/));
  });

  it("reads prefixed requirement files (dev-requirements.txt, test_requirements.txt), leaving out the ones named for another purpose", () => {
    const t = tree({
      "requirements.txt": "numpy\n",
      "dev-requirements.txt": "pytest-asyncio\n",
      "test_requirements.txt": "hypothesis\n",
      "docs-requirements.txt": "sphinx\n",
      "notrequirements.txt": "x\n",
    });
    const plan = planEnvironment({ dir: t.dir, paths: t.paths, project: null, hasPyproject: false, requirements: [], extras: null });
    expect(plan.fromTree.requirements).toEqual(["requirements.txt", "dev-requirements.txt", "test_requirements.txt"]);
    expect(plan.notes).toContainEqual(expect.stringMatching(/^docs-requirements\.txt: left out, named for another purpose/));
  });

  it("pins a setuptools that ships pkg_resources when the tree imports it and leaves setuptools unbounded, naming the import; a bound of the repository's own is kept", () => {
    const t = tree({ "requirements.txt": "numpy\nsetuptools\n", "pkg/version.py": "import os\n\nimport pkg_resources\n" });
    const plan = planEnvironment({ dir: t.dir, paths: t.paths, project: null, hasPyproject: false, requirements: [], extras: null });
    expect(plan.fromTree.pins).toEqual(["torch==2.15.0", "pytest==9.2.0", "setuptools==81.0.0"]);
    expect(plan.notes).toContain("pinned setuptools==81.0.0, over the repository's setuptools (requirements.txt:2): pkg/version.py:3 imports pkg_resources, which newer setuptools releases no longer ship (84.2.1 did not)");
    const bounded = tree({ "requirements.txt": "setuptools<70\n", "pkg/v.py": "from pkg_resources import parse_version\n" });
    const kept = planEnvironment({ dir: bounded.dir, paths: bounded.paths, project: null, hasPyproject: false, requirements: [], extras: null });
    expect(kept.fromTree.pins).toEqual(["torch==2.15.0", "pytest==9.2.0"]);
    expect(kept.notes).toContainEqual(expect.stringMatching(/^pkg\/v\.py:1 imports pkg_resources; setuptools is bounded by the repository \(setuptools<70\): not pinned$/));
    const none = tree({ "requirements.txt": "numpy\n", "pkg/a.py": "# import pkg_resources in a comment is not an import\nx = 'from pkg_resources import y'\n" });
    expect(planEnvironment({ dir: none.dir, paths: none.paths, project: null, hasPyproject: false, requirements: [], extras: null }).fromTree.pins).toEqual(["torch==2.15.0", "pytest==9.2.0"]);
  });

  it("refuses a repository that declares nothing, naming --requirements; --requirements must name files the engine reads", () => {
    const t = tree({ "setup.py": "from setuptools import setup\nsetup()\n" });
    expect(() => planEnvironment({ dir: t.dir, paths: t.paths, project: null, hasPyproject: false, requirements: [], extras: null })).toThrow(/declares no dependencies for its tests: .*there is no pyproject\.toml\. Pass --requirements <files>/);
    const d = tree({ "reqs/dev.txt": "-e .\n" });
    expect(() => planEnvironment({ dir: d.dir, paths: d.paths, project: null, hasPyproject: false, requirements: ["reqs/dev.txt"], extras: null })).toThrow(InputError);
    expect(() => planEnvironment({ dir: d.dir, paths: d.paths, project: { name: "x", dependencies: [] }, hasPyproject: true, requirements: [], extras: ["nope"] })).toThrow(/names the extra 'nope'.*--extras/);
  });
});

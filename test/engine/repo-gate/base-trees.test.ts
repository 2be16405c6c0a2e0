import { describe, expect, it } from "vitest";
import { planOverlay } from "../../../src/engine/repo-gate/base-trees.js";

describe("planOverlay: what of the base makes 'the base's tests' on the head's code", () => {
  it("takes watched files, every conftest.py, the pytest configuration, the selected files with their helpers, whole selected folders", () => {
    const baseFiles = ["pkg/a.py", "pkg/conftest.py", "tests/test_a.py", "tests/helpers.py", "tests/data/x.json", "suite/test_s.py", "suite/util.py", "pyproject.toml", "other/test_o.py"];
    const headFiles = ["pkg/a.py", "tests/test_a.py", "tests/conftest.py", "suite/test_new.py", "suite/test_s.py", "pytest.ini", "other/test_o.py", "other/conftest.py"];
    const plan = planOverlay({ baseFiles, headFiles, watched: ["other/**"], selected: ["tests/test_a.py::test_x", "suite/"], folders: ["suite"] });
    expect(plan.restored.sort()).toEqual(["other/test_o.py", "pkg/conftest.py", "pyproject.toml", "suite/test_s.py", "suite/util.py", "tests/helpers.py", "tests/test_a.py"]);
    expect(plan.removed.sort()).toEqual(["other/conftest.py", "pytest.ini", "suite/test_new.py", "tests/conftest.py"]);
  });
});

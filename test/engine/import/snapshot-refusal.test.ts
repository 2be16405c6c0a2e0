import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pathsPatchNeeds, snapshotRefusal } from "../../../src/engine/import/snapshot-refusal.js";
import { tmp } from "../../helpers.js";

const PATCH = `diff --git a/pkg/kept.py b/pkg/kept.py
--- a/pkg/kept.py
+++ b/pkg/kept.py
@@ -1 +1 @@
-A = 1
+A = 2
diff --git a/pkg/new.py b/pkg/new.py
new file mode 100644
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1 @@
+B = 1
diff --git a/pkg/old.py b/pkg/renamed.py
similarity index 100%
rename from pkg/old.py
rename to pkg/renamed.py
diff --git a/pkg/gone.py b/pkg/gone.py
deleted file mode 100644
--- a/pkg/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-C = 1
`;

describe("a patch onto a folder base that lacks its files", () => {
  it("needs the files it edits, renames or deletes, not the ones it creates", () => {
    expect(pathsPatchNeeds(PATCH).sort()).toEqual(["pkg/gone.py", "pkg/kept.py", "pkg/old.py"]);
  });

  it("names the missing files; for an imported snapshot it says why and points at --base-as git", () => {
    const task = tmp("pg-refusal-");
    const base = join(task, "base");
    mkdirSync(join(base, "pkg"), { recursive: true });
    writeFileSync(join(base, "pkg", "kept.py"), "A = 1\n");
    const patch = join(task, "sub.patch");
    writeFileSync(patch, PATCH);
    const plain = snapshotRefusal(patch, base, task);
    expect(plain).toContain(`patch ${patch} does not apply onto the base: it edits pkg/old.py, pkg/gone.py, which the base does not have; the task's base folder`);
    expect(plain).not.toContain("--base-as git");
    writeFileSync(join(task, "import.yml"), "fail_to_pass: []\n");
    expect(snapshotRefusal(patch, base, task)).toContain("is a pruned snapshot that probegate task import kept (import.yml), not the whole repository, so a patch can only edit the files it holds. To gate real PRs, which may edit any file of the repository, re-import the task with `probegate task import --base-as git`");
    // Every file there: the refusal is git's to explain.
    writeFileSync(join(base, "pkg", "old.py"), "");
    writeFileSync(join(base, "pkg", "gone.py"), "C = 1\n");
    expect(snapshotRefusal(patch, base, task)).toBeNull();
  });
});

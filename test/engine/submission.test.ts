import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSubmission } from "../../src/engine/submission.js";
import { tmp } from "../helpers.js";

describe("parseSubmission", () => {
  const dir = tmp();
  mkdirSync(join(dir, "tree"));
  writeFileSync(join(dir, "fix.patch"), "");
  writeFileSync(join(dir, "notes.txt"), "");
  mkdirSync(join(dir, "repo"));

  it("recognises folders, patches and repo@ref", () => {
    expect(parseSubmission("tree", dir)).toEqual({ kind: "folder", path: join(dir, "tree") });
    expect(parseSubmission("fix.patch", dir)).toEqual({ kind: "patch", path: join(dir, "fix.patch") });
    expect(parseSubmission("repo@feature/x", dir)).toEqual({ kind: "git", repo: join(dir, "repo"), ref: "feature/x" });
    expect(parseSubmission("https://github.com/o/r.git@abc123", dir)).toEqual({ kind: "git", repo: "https://github.com/o/r.git", ref: "abc123" });
    expect(parseSubmission("git@github.com:o/r.git@v1.0", dir)).toEqual({ kind: "git", repo: "git@github.com:o/r.git", ref: "v1.0" });
  });

  it("explains what it accepts", () => {
    expect(() => parseSubmission("notes.txt", dir)).toThrow(/is a file but not a \.patch or \.diff/);
    expect(() => parseSubmission("missing", dir)).toThrow(/not an existing folder, \.patch\/\.diff file, or repo@ref/);
    expect(() => parseSubmission("missing@main", dir)).toThrow(/not an existing folder/);
  });
});

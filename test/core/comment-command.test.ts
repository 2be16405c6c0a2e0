import { describe, expect, it } from "vitest";
import { COMMAND_HELP, CommandError, parseCommentCommand } from "../../src/core/comment-command.js";

function errorOf(body: string): CommandError {
  try {
    parseCommentCommand(body);
  } catch (e) {
    if (e instanceof CommandError) return e;
    throw e;
  }
  throw new Error("expected a CommandError");
}

describe("parseCommentCommand", () => {
  it.each([
    ["/probegate rerun", { kind: "rerun", task: null }],
    ["/probegate rerun sharded-optimizer", { kind: "rerun", task: "sharded-optimizer" }],
    ["  /ProbeGate   RERUN   Sharded-Optimizer  ", { kind: "rerun", task: "sharded-optimizer" }],
    ["/probegate\trerun", { kind: "rerun", task: null }],
    ["/probegate explain", { kind: "explain" }],
    ["/PROBEGATE Explain\r\n", { kind: "explain" }],
    ["Thanks!\r\n\r\n/probegate rerun paged-kv-cache\r\nit was flaky", { kind: "rerun", task: "paged-kv-cache" }],
    ["/probegate explain\n/probegate rerun", { kind: "explain" }],
  ])("%j → %j", (body, command) => {
    expect(parseCommentCommand(body)).toEqual(command);
  });

  it.each([
    "LGTM",
    "please /probegate rerun",
    "/probegaterun",
    "> /probegate rerun\n\nwhy did you ask for this?",
    "```\n/probegate rerun\n```",
    "",
  ])("%j has no command", (body) => {
    expect(parseCommentCommand(body)).toBeNull();
  });

  it("reads the command after a fenced block", () => {
    expect(parseCommentCommand("~~~\n/probegate explain\n~~~\n/probegate rerun")).toEqual({ kind: "rerun", task: null });
  });

  it("refuses an unknown subcommand with a reply that shows the usage", () => {
    const e = errorOf("/probegate retry");
    expect(e.code).toBe("unknown-subcommand");
    expect(e.line).toBe("/probegate retry");
    expect(e.reply).toBe(`\`/probegate retry\` is not a probegate command.\n\n${COMMAND_HELP}`);
    expect(e.reply).toContain("/probegate rerun <task>");
  });

  it("refuses a bare /probegate, bad task ids and extra words", () => {
    expect(errorOf("/probegate").code).toBe("missing-subcommand");
    expect(errorOf("/probegate   \nmore").code).toBe("missing-subcommand");
    const bad = errorOf("/probegate rerun ../etc");
    expect(bad.code).toBe("bad-argument");
    expect(bad.message).toContain("`../etc` is not a task id");
    expect(errorOf("/probegate rerun a b").message).toContain("at most one task id; got 2 words: `a b`");
    expect(errorOf("/probegate explain everything").message).toContain("takes no arguments");
  });
});

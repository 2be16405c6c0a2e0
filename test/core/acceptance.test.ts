import { describe, expect, it } from "vitest";
import { passesAsAccepted, unaccepted } from "../../src/core/acceptance.js";
import { acceptMatches, CommandError, parseCommentCommand } from "../../src/core/comment-command.js";

describe("/probegate accept", () => {
  it("parses a check id, an optional task, and the reason", () => {
    expect(parseCommentCommand("/probegate accept grad-sync-bytes the new overlap adds one all-gather per bucket")).toEqual({ kind: "accept", task: null, checkId: "grad-sync-bytes", reason: "the new overlap adds one all-gather per bucket" });
    expect(parseCommentCommand("/probegate accept ddp-gate/Grad-Sync-Bytes meant: adds a collective")).toMatchObject({ task: "ddp-gate", checkId: "grad-sync-bytes" });
  });

  it("refuses an acceptance without a check or a reason, saying what to write", () => {
    expect(() => parseCommentCommand("/probegate accept")).toThrow(/needs the id of the failed check and a reason/);
    expect(() => parseCommentCommand("/probegate accept grad-sync-bytes ok")).toThrow(CommandError);
    expect(() => parseCommentCommand("/probegate accept grad-sync! because it is fine")).toThrow(/is not a check id/);
  });

  it("reads a check-id ending in `*` as a pattern over a family of checks, and refuses one too broad to mean anything", () => {
    expect(parseCommentCommand("/probegate accept weakened-tests.expectation-changed-* the release shifts every block id by the null block")).toMatchObject({ checkId: "weakened-tests.expectation-changed-*" });
    expect(acceptMatches("weakened-tests.expectation-changed-*", "weakened-tests.expectation-changed-12")).toBe(true);
    expect(acceptMatches("weakened-tests.expectation-changed-*", "weakened-tests.deleted-1")).toBe(false);
    expect(acceptMatches("state-sharded", "state-sharded-2")).toBe(false);
    expect(() => parseCommentCommand("/probegate accept * everything is fine, trust me")).toThrow(/at least 6 characters before its `\*`/);
    expect(() => parseCommentCommand("/probegate accept wea* everything is fine, trust me")).toThrow(/at least 6 characters/);
    expect(() => parseCommentCommand("/probegate accept weak*ened-* everything is fine")).toThrow(/is not a check id/);
  });
});

describe("the acceptance rule", () => {
  const failed = (probeId: string) => ({ probeId, status: "failed" as const });
  const errored = (probeId: string) => ({ probeId, status: "error" as const });

  it("passes a probe-rejected attempt once every failed check is accepted", () => {
    expect(passesAsAccepted("probe-rejected", [failed("grad-sync-bytes")], ["grad-sync-bytes"])).toBe(true);
    expect(passesAsAccepted("probe-rejected", [failed("grad-sync-bytes"), failed("peak")], ["grad-sync-bytes", "peak", "other"])).toBe(true);
  });

  it("keeps the rejection while another check still fails, and names the ones left", () => {
    expect(passesAsAccepted("probe-rejected", [failed("grad-sync-bytes"), failed("peak")], ["grad-sync-bytes"])).toBe(false);
    expect(unaccepted([failed("grad-sync-bytes"), failed("peak")], ["grad-sync-bytes"])).toEqual([failed("peak")]);
  });

  it("never accepts away a check that errored: it measured nothing", () => {
    expect(passesAsAccepted("probe-rejected", [errored("grad-sync-bytes")], ["grad-sync-bytes"])).toBe(false);
    expect(unaccepted([errored("grad-sync-bytes")], ["grad-sync-bytes"])).toHaveLength(1);
  });

  it("never turns failing official tests, an error or an attempt with nothing failed into an acceptance", () => {
    expect(passesAsAccepted("official-failed", [failed("grad-sync-bytes")], ["grad-sync-bytes"])).toBe(false);
    expect(passesAsAccepted("error", [failed("grad-sync-bytes")], ["grad-sync-bytes"])).toBe(false);
    expect(passesAsAccepted("probe-rejected", [], ["grad-sync-bytes"])).toBe(false);
    expect(passesAsAccepted("resolved", [], [])).toBe(false);
  });
});

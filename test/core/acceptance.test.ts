import { describe, expect, it } from "vitest";
import { applyAcceptances, type Acceptance } from "../../src/core/acceptance.js";
import { acceptMatches, CommandError, parseCommentCommand } from "../../src/core/comment-command.js";

const probe = (id: string, status: "passed" | "failed" | "error", category: "traffic" | "memory" | "functional" = "traffic") => ({ id, category, status, message: "", probe: "probe_x", attempts: 1, durationS: 1 });
const result = (probes: ReturnType<typeof probe>[], verdict: "probe-rejected" | "resolved" | "official-failed" = "probe-rejected") => ({
  official: { passed: verdict !== "official-failed" } as never,
  probes,
  verdict,
  reason: "r",
  submission: { kind: "git" as const, source: "s", sha: "head1" },
});
const acc = (over: Partial<Acceptance> = {}): Acceptance => ({ task: "ddp-gate", checkId: "grad-sync-bytes", headSha: "head1", by: "maintainer", reason: "the overlap adds one all-gather", at: "2026-12-04T00:00:00Z", ...over });

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

describe("applyAcceptances", () => {
  it("turns an accepted failed check into a pass and decides again, naming who accepted it", () => {
    const out = applyAcceptances(result([probe("grad-sync-bytes", "failed"), probe("peak", "passed", "memory")]), "ddp-gate", [acc()]);
    expect(out.verdict).toBe("resolved");
    expect(out.reason).toMatch(/1 measured difference accepted by @maintainer/);
    expect(out.accepted).toHaveLength(1);
  });

  it("keeps the rejection while another check still fails", () => {
    const out = applyAcceptances(result([probe("grad-sync-bytes", "failed"), probe("peak", "failed", "memory")]), "ddp-gate", [acc()]);
    expect(out.verdict).toBe("probe-rejected");
  });

  it("needs a new acceptance after a push, and ignores other tasks", () => {
    expect(applyAcceptances(result([probe("grad-sync-bytes", "failed")]), "ddp-gate", [acc({ headSha: "old" })]).verdict).toBe("probe-rejected");
    expect(applyAcceptances(result([probe("grad-sync-bytes", "failed")]), "ddp-gate", [acc({ task: "other" })]).verdict).toBe("probe-rejected");
  });

  it("never turns failing official tests or an error into a pass, and says which acceptances matched nothing", () => {
    expect(applyAcceptances(result([probe("grad-sync-bytes", "failed")], "official-failed"), "ddp-gate", [acc()]).verdict).toBe("official-failed");
    const out = applyAcceptances(result([probe("grad-sync-bytes", "passed")], "resolved"), "ddp-gate", [acc()]);
    expect(out.unmatched).toHaveLength(1);
    expect(out.verdict).toBe("resolved");
  });
});

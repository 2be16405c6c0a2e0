import { describe, expect, it } from "vitest";
import { decideRerun, type RerunRequest } from "../../src/core/rerun-policy.js";

const now = new Date("2026-12-02T12:00:00Z");
const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000);
const base: RerunRequest = {
  commenter: "maint",
  permission: "write",
  isAgent: false,
  isEdited: false,
  recentAttempts: [],
  now,
  limit: { perPrPerHour: 3 },
};

describe("decideRerun", () => {
  it.each([
    ["write", true],
    ["maintain", true],
    ["admin", true],
    ["triage", false],
    ["read", false],
    ["none", false],
  ] as const)("permission %s → allowed %s", (permission, allowed) => {
    const d = decideRerun({ ...base, permission });
    expect(d.allowed).toBe(allowed);
    if (!d.allowed) {
      expect(d.reason).toBe("permission");
      expect(d.reply).toBe(`@maint: reruns need write or admin permission on this repository; you have \`${permission}\`.`);
    }
  });

  it("refuses the agent itself, even with write permission, unless the config allows it", () => {
    const d = decideRerun({ ...base, commenter: "claude[bot]", permission: "write", isAgent: true });
    expect(d).toMatchObject({ allowed: false, reason: "agent", retryAt: null });
    expect(!d.allowed && d.reply).toContain("@claude[bot]: the agent that wrote this PR cannot ask for its own rerun");
    expect(decideRerun({ ...base, isAgent: true, limit: { perPrPerHour: 3, allowAgent: true } }).allowed).toBe(true);
  });

  it("refuses an edited comment before asking anything else", () => {
    const d = decideRerun({ ...base, isEdited: true, isAgent: true, permission: "read" });
    expect(d).toMatchObject({ allowed: false, reason: "edited" });
    expect(!d.allowed && d.reply).toContain("Post `/probegate rerun` as a new comment");
  });

  it("checks the agent before the permission, the permission before the limit", () => {
    expect(decideRerun({ ...base, isAgent: true, permission: "read" })).toMatchObject({ reason: "agent" });
    expect(decideRerun({ ...base, permission: "read", recentAttempts: [minutesAgo(1), minutesAgo(2), minutesAgo(3)] })).toMatchObject({ reason: "permission" });
  });

  it("allows up to the limit in the last hour, then says when the next is allowed", () => {
    expect(decideRerun({ ...base, recentAttempts: [minutesAgo(10), minutesAgo(20)] }).allowed).toBe(true);
    const d = decideRerun({ ...base, recentAttempts: [minutesAgo(5), minutesAgo(50), minutesAgo(20)] });
    expect(d).toMatchObject({ allowed: false, reason: "rate-limited", retryAt: new Date("2026-12-02T12:10:00Z") });
    expect(!d.allowed && d.reply).toBe(
      "@maint: this PR has had 3 reruns in the last hour (the limit is 3). The next one can run after 2026-12-02T12:10:00.000Z.",
    );
  });

  it("frees the slot held by the oldest attempt that keeps the window full", () => {
    const d = decideRerun({ ...base, limit: { perPrPerHour: 2 }, recentAttempts: [minutesAgo(50), minutesAgo(40), minutesAgo(30)] });
    expect(d).toMatchObject({ reason: "rate-limited", retryAt: new Date("2026-12-02T12:20:00Z") });
  });

  it("does not count attempts older than an hour or in the future", () => {
    expect(decideRerun({ ...base, recentAttempts: [minutesAgo(60), minutesAgo(61), minutesAgo(-5), minutesAgo(1)] }).allowed).toBe(true);
  });

  it("refuses every rerun when the limit is 0", () => {
    expect(decideRerun({ ...base, limit: { perPrPerHour: 0 } })).toMatchObject({ allowed: false, reason: "disabled" });
  });
});

import { describe, expect, it } from "vitest";
import { detectAgent } from "../../src/core/agent-detect.js";
import { normalizeAgent } from "../../src/core/agent-identity.js";
import { coAuthors, parseTrailers } from "../../src/core/commit-trailers.js";

const human = { login: "alice", type: "User" };

describe("detectAgent: default authors", () => {
  it.each([
    ["Copilot", "Bot", "copilot"],
    ["copilot-swe-agent[bot]", "Bot", "copilot"],
    ["devin-ai-integration[bot]", "Bot", "devin"],
    ["chatgpt-codex-connector[bot]", "Bot", "codex"],
    ["claude[bot]", "Bot", "claude"],
    ["cursor[bot]", "Bot", "cursor"],
    ["google-labs-jules[bot]", "Bot", "jules"],
    ["openhands-agent", "User", "openhands"],
    ["sweep-ai[bot]", "Bot", "sweep"],
    ["amazon-q-developer[bot]", "Bot", "amazon-q"],
    ["codegen-sh[bot]", "Bot", "codegen"],
    ["factory-droid[bot]", "Bot", "factory"],
    // GraphQL spells an App's bot without the suffix, typed Bot.
    ["copilot-swe-agent", "Bot", "copilot"],
    ["app/devin-ai-integration", "Bot", "devin"],
    ["CLAUDE[BOT]", "Bot", "claude"],
  ])("%s (%s) → %s", (login, type, agent) => {
    expect(detectAgent({ author: { login, type } })).toEqual({ agent, via: "author", matched: login });
  });

  it("does not add [bot] to a user login", () => {
    expect(detectAgent({ author: { login: "claude", type: "User" } })).toBeNull();
  });

  it.each(["alice", "dependabot[bot]", "renovate[bot]", "github-actions[bot]", "copilot-fan", "claudette"])("%s is not an agent", (login) => {
    expect(detectAgent({ author: { login, type: login.endsWith("[bot]") ? "Bot" : "User" }, headRef: "main", labels: ["bug"] })).toBeNull();
  });
});

describe("detectAgent: co-author trailers", () => {
  const commit = (trailers: string) => `Fix the shard sizes\n\nLonger explanation.\n\n${trailers}\n`;

  it.each([
    ["Co-authored-by: Claude <noreply@anthropic.com>", "claude"],
    ["Co-Authored-By: Devin AI <158243242+devin-ai-integration[bot]@users.noreply.github.com>", "devin"],
    ["Co-authored-by: Copilot <175728472+Copilot@users.noreply.github.com>", "copilot"],
    ["co-authored-by: google-labs-jules[bot] <161369871+google-labs-jules[bot]@users.noreply.github.com>", "jules"],
    ["Co-authored-by: Cursor Agent <cursoragent@cursor.com>", "cursor"],
    ["Co-authored-by: openhands <openhands@all-hands.dev>", "openhands"],
    ["Co-authored-by: aider (gpt-4o) <noreply@aider.chat>", "aider"],
    ["Signed-off-by: Alice <alice@example.com>\nCo-authored-by: Claude <noreply@anthropic.com>", "claude"],
  ])("%s → %s", (trailers, agent) => {
    const found = detectAgent({ author: human, commitMessages: ["Initial commit", commit(trailers)] });
    expect(found?.agent).toBe(agent);
    expect(found?.via).toBe("co-author");
  });

  it("reads trailers with CRLF line ends", () => {
    expect(detectAgent({ author: human, commitMessages: ["Fix\r\n\r\nCo-authored-by: Claude <noreply@anthropic.com>\r\n"] })?.agent).toBe("claude");
  });

  it("ignores human co-authors, including one named like an agent", () => {
    expect(detectAgent({ author: human, commitMessages: [commit("Co-authored-by: Bob <12345+bob@users.noreply.github.com>")] })).toBeNull();
    expect(detectAgent({ author: human, commitMessages: [commit("Co-authored-by: Claude <claude.dupont@example.fr>")] })).toBeNull();
  });

  it("ignores a Co-authored-by line that is prose, not in the trailer block", () => {
    const msg = "Fix\n\nCo-authored-by: Claude <noreply@anthropic.com>\nwas how the old commit was signed.\n\nReviewed in person.";
    expect(detectAgent({ author: human, commitMessages: [msg] })).toBeNull();
    expect(detectAgent({ author: human, commitMessages: ["Co-authored-by: Claude <noreply@anthropic.com>"] })).toBeNull();
  });

  it("uses configured co-authors", () => {
    const msg = commit("Co-authored-by: Helper <helper@agents.example.com>");
    expect(detectAgent({ author: human, commitMessages: [msg] })).toBeNull();
    expect(detectAgent({ author: human, commitMessages: [msg] }, { coAuthors: { "Helper@Agents.example.com": "Helper-Agent" } })).toEqual({
      agent: "helper-agent",
      via: "co-author",
      matched: "Helper <helper@agents.example.com>",
    });
  });
});

describe("detectAgent: branches and labels", () => {
  it.each([
    ["codex/fix-sharding", "codex"],
    ["claude/issue-12-20260101", "claude"],
    ["copilot/fix-12", "copilot"],
    ["cursor/speed-up", "cursor"],
    ["devin/1700000000-kv-cache", "devin"],
    ["refs/heads/Codex/upper", "codex"],
  ])("branch %s → %s", (headRef, agent) => {
    expect(detectAgent({ author: human, headRef })).toEqual({ agent, via: "branch", matched: headRef });
  });

  it.each(["feature/codex-support", "main", "codexfix", "my-claude/x"])("branch %s is not an agent branch", (headRef) => {
    expect(detectAgent({ author: human, headRef })).toBeNull();
  });

  it("adds configured prefixes; the longest prefix wins", () => {
    expect(detectAgent({ author: human, headRef: "aider/x" }, { branchPrefixes: { "aider/": "aider" } })?.agent).toBe("aider");
    expect(detectAgent({ author: human, headRef: "codex/review/x" }, { branchPrefixes: { "codex/review/": "codex-review" } })?.agent).toBe("codex-review");
  });

  it("maps configured labels, case-insensitively; no label is an agent by default", () => {
    expect(detectAgent({ author: human, labels: ["agent:codex"] })).toBeNull();
    expect(detectAgent({ author: human, labels: ["bug", "Agent:Codex"] }, { labels: { "agent:codex": "codex" } })).toEqual({
      agent: "codex",
      via: "label",
      matched: "Agent:Codex",
    });
  });

  it("adds configured authors, normalising the agent name", () => {
    expect(detectAgent({ author: { login: "acme-coder[bot]", type: "Bot" } }, { authors: { "acme-coder[bot]": "Acme-Coder[bot]" } })?.agent).toBe("acme-coder");
  });

  it("can turn the built-in lists off", () => {
    const rules = { defaults: false, labels: { agent: "x" } };
    expect(detectAgent({ author: { login: "claude[bot]", type: "Bot" }, headRef: "codex/x" }, rules)).toBeNull();
  });

  it("takes the author before co-authors, co-authors before the branch, the branch before labels", () => {
    const all = {
      author: { login: "claude[bot]", type: "Bot" },
      commitMessages: ["x\n\nCo-authored-by: Cursor Agent <cursoragent@cursor.com>"],
      headRef: "codex/x",
      labels: ["agent:devin"],
    };
    const rules = { labels: { "agent:devin": "devin" } };
    expect(detectAgent(all, rules)?.via).toBe("author");
    expect(detectAgent({ ...all, author: human }, rules)?.agent).toBe("cursor");
    expect(detectAgent({ ...all, author: human, commitMessages: [] }, rules)?.agent).toBe("codex");
    expect(detectAgent({ ...all, author: human, commitMessages: [], headRef: "main" }, rules)?.agent).toBe("devin");
  });
});

describe("agent identity and trailers", () => {
  it("normalises every spelling of one agent to one name", () => {
    for (const s of ["Copilot", "copilot-swe-agent[bot]", "copilot-swe-agent", "app/copilot-swe-agent"]) expect(normalizeAgent(s)).toBe("copilot");
    expect(normalizeAgent("Devin-AI-Integration[bot]")).toBe("devin");
    expect(normalizeAgent(" Some-Agent[bot] ")).toBe("some-agent");
  });

  it("parses trailer blocks with continuation lines, and co-authors without an address", () => {
    expect(parseTrailers("s\n\nbody\n\nKey: a\n  b\nOther: c")).toEqual([
      { key: "Key", value: "a b" },
      { key: "Other", value: "c" },
    ]);
    expect(coAuthors("s\n\nCo-authored-by: openhands")).toEqual([{ name: "openhands", email: null }]);
    expect(detectAgent({ author: human, commitMessages: ["s\n\nCo-authored-by: openhands"] })?.agent).toBe("openhands");
  });
});

/**
 * Who the known coding agents are, as GitHub shows them. Scorecards group by the normalised agent
 * name, so every spelling of one agent (App login, bot user, GraphQL login, co-author line) must
 * land on the same name.
 */

/** PR author logins of known agents (matched case-insensitively) → agent name. */
export const DEFAULT_AGENT_AUTHORS: Readonly<Record<string, string>> = {
  "copilot": "copilot",
  "copilot-swe-agent[bot]": "copilot",
  "devin-ai-integration[bot]": "devin",
  "chatgpt-codex-connector[bot]": "codex",
  "claude[bot]": "claude",
  "cursor[bot]": "cursor",
  "google-labs-jules[bot]": "jules",
  "openhands-agent": "openhands",
  "sweep-ai[bot]": "sweep",
  "amazon-q-developer[bot]": "amazon-q",
  "codegen-sh[bot]": "codegen",
  "factory-droid[bot]": "factory",
};

/**
 * Co-author e-mail addresses of known agents (matched case-insensitively) → agent name; a name key
 * applies only to a trailer without an address. GitHub noreply addresses
 * (`123+login@users.noreply.github.com`) are looked up by login in the author table instead.
 */
export const DEFAULT_AGENT_CO_AUTHORS: Readonly<Record<string, string>> = {
  "noreply@anthropic.com": "claude",
  "claude": "claude",
  "cursoragent@cursor.com": "cursor",
  "cursor agent": "cursor",
  "openhands@all-hands.dev": "openhands",
  "openhands": "openhands",
  "devin ai": "devin",
  "noreply@aider.chat": "aider",
};

/** Head-branch prefixes the agents push to → agent name. */
export const DEFAULT_AGENT_BRANCH_PREFIXES: Readonly<Record<string, string>> = {
  "codex/": "codex",
  "claude/": "claude",
  "copilot/": "copilot",
  "cursor/": "cursor",
  "devin/": "devin",
};

/**
 * The scorecard name of an agent: lower case, without GitHub's `[bot]` suffix or GraphQL's `app/`
 * prefix, and with known logins mapped to their product (`copilot-swe-agent[bot]` → `copilot`).
 */
export function normalizeAgent(name: string): string {
  const plain = name.trim().toLowerCase().replace(/^app\//, "");
  const known = DEFAULT_AGENT_AUTHORS[plain] ?? DEFAULT_AGENT_AUTHORS[`${plain}[bot]`];
  if (known) return known;
  return plain.replace(/\[bot\]$/, "");
}

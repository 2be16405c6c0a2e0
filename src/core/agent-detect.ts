import {
  DEFAULT_AGENT_AUTHORS,
  DEFAULT_AGENT_BRANCH_PREFIXES,
  DEFAULT_AGENT_CO_AUTHORS,
  normalizeAgent,
} from "./agent-identity.js";
import { coAuthors, type TrailerPerson } from "./commit-trailers.js";

/** What GitHub tells us about a PR that can show it was written by an agent. */
export interface AgentSignals {
  /** The PR author. `type` is GitHub's user type (`User`, `Bot`, `Organization`) where known. */
  author: { login: string; type?: string | null };
  /** The full messages of the PR's commits; their `Co-authored-by` trailers are read. */
  commitMessages?: ReadonlyArray<string>;
  /** The head branch name, without `refs/heads/`. */
  headRef?: string | null;
  labels?: ReadonlyArray<string>;
}

/** The agent rules of `.github/probegate.yml` (`agents:`); each map goes to an agent name. */
export interface AgentRules {
  /** Whether the built-in agent lists apply (default true); the maps below are added to them. */
  defaults?: boolean;
  authors?: Readonly<Record<string, string>>;
  coAuthors?: Readonly<Record<string, string>>;
  branchPrefixes?: Readonly<Record<string, string>>;
  labels?: Readonly<Record<string, string>>;
}

export type AgentVia = "author" | "co-author" | "branch" | "label";

/** The agent that wrote a PR, the signal that showed it, and the value that matched. */
export interface DetectedAgent {
  agent: string;
  via: AgentVia;
  matched: string;
}

function lowerKeys(...maps: Array<Readonly<Record<string, string>> | undefined>): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of maps) for (const [k, v] of Object.entries(m ?? {})) out.set(k.trim().toLowerCase(), normalizeAgent(v));
  return out;
}

function authorAgent(login: string, type: string | null | undefined, authors: Map<string, string>): string | undefined {
  const l = login.trim().toLowerCase().replace(/^app\//, "");
  // GraphQL and some REST payloads show an App's bot without the `[bot]` suffix, typed `Bot`.
  return authors.get(l) ?? (type === "Bot" && !l.endsWith("[bot]") ? authors.get(`${l}[bot]`) : undefined);
}

/**
 * A co-author with an address is known by the address only: a person named Claude who signs with
 * their own address is not Claude the agent. Names count only in trailers without an address.
 */
function coAuthorAgent(p: TrailerPerson, coAuthorMap: Map<string, string>, authors: Map<string, string>): string | undefined {
  if (!p.email) return coAuthorMap.get(p.name.toLowerCase()) ?? authorAgent(p.name, "Bot", authors);
  const email = p.email.toLowerCase();
  const noreply = /^(?:\d+\+)?([^@]+)@users\.noreply\.github\.com$/.exec(email);
  return coAuthorMap.get(email) ?? (noreply?.[1] ? authorAgent(noreply[1], "Bot", authors) : undefined);
}

/**
 * Which agent wrote this PR, or null for a PR by a person (or a non-agent bot such as Dependabot).
 * Signals are tried in order of how hard they are to fake by accident: the author login, then the
 * commits' `Co-authored-by` trailers, then the head-branch prefix, then a label; the first that
 * matches names the agent. The agent name is normalised (`copilot-swe-agent[bot]` → `copilot`) so
 * scorecards count one agent once.
 */
export function detectAgent(input: AgentSignals, rules: AgentRules = {}): DetectedAgent | null {
  const useDefaults = rules.defaults ?? true;
  const authors = lowerKeys(useDefaults ? DEFAULT_AGENT_AUTHORS : undefined, rules.authors);
  const coAuthorMap = lowerKeys(useDefaults ? DEFAULT_AGENT_CO_AUTHORS : undefined, rules.coAuthors);
  const prefixes = lowerKeys(useDefaults ? DEFAULT_AGENT_BRANCH_PREFIXES : undefined, rules.branchPrefixes);
  const labels = lowerKeys(rules.labels);

  const byAuthor = authorAgent(input.author.login, input.author.type, authors);
  if (byAuthor) return { agent: byAuthor, via: "author", matched: input.author.login };

  for (const message of input.commitMessages ?? []) {
    for (const person of coAuthors(message)) {
      const agent = coAuthorAgent(person, coAuthorMap, authors);
      if (agent) return { agent, via: "co-author", matched: person.email ? `${person.name} <${person.email}>` : person.name };
    }
  }

  const branch = (input.headRef ?? "").replace(/^refs\/heads\//, "").toLowerCase();
  // The longest prefix wins, so a configured `codex/review/` can override the built-in `codex/`.
  const prefix = [...prefixes.keys()].filter((p) => p && branch.startsWith(p)).sort((a, b) => b.length - a.length)[0];
  if (prefix !== undefined) return { agent: prefixes.get(prefix) ?? prefix, via: "branch", matched: input.headRef ?? "" };

  for (const label of input.labels ?? []) {
    const agent = labels.get(label.trim().toLowerCase());
    if (agent) return { agent, via: "label", matched: label };
  }
  return null;
}

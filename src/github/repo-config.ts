import { isNode, LineCounter, parseDocument, type Document } from "yaml";
import type { z } from "zod";
import type { ConfigIssue } from "../core/app-check-outputs.js";
import { AppConfigSchema, type AppConfig } from "../core/app-config.js";
import type { GitHubClient, RepoRef } from "./client.js";

/** Where the app reads a repository's config, on its default branch. */
export const CONFIG_PATH = ".github/probegate.yml";

/** The config of a repository: absent, valid, or invalid with every problem located. */
export type RepoConfig =
  | { kind: "missing"; ref: string }
  | { kind: "ok"; ref: string; config: AppConfig }
  | { kind: "invalid"; ref: string; issues: ConfigIssue[] };

function lineAt(doc: Document, lines: LineCounter, path: ReadonlyArray<PropertyKey>): number | null {
  // The deepest node of the path that exists in the file: a missing field is reported on its parent.
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n) as unknown[], true);
    if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
  }
  return null;
}

function describeIssue(issue: z.core.$ZodIssue): { path: PropertyKey[]; message: string } {
  if (issue.code === "unrecognized_keys") {
    return { path: [...issue.path, issue.keys[0] ?? ""], message: `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${k}'`).join(", ")}` };
  }
  return { path: [...issue.path], message: issue.message };
}

/**
 * Parses and validates the text of `.github/probegate.yml`. YAML syntax errors and schema problems
 * come back as issues naming the field (dotted path) and the 1-based line, for the check run.
 */
export function parseRepoConfig(text: string): { ok: true; config: AppConfig } | { ok: false; issues: ConfigIssue[] } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length) {
    return {
      ok: false,
      issues: doc.errors.map((e) => ({ field: "(yaml)", line: e.pos ? lines.linePos(e.pos[0]).line : null, message: `not valid YAML: ${e.message.split("\n")[0]}` })),
    };
  }
  const parsed = AppConfigSchema.safeParse(doc.toJS() ?? {});
  if (parsed.success) return { ok: true, config: parsed.data };
  return {
    ok: false,
    issues: parsed.error.issues.map((issue) => {
      const { path, message } = describeIssue(issue);
      return { field: path.length ? path.map(String).join(".") : "(document)", line: lineAt(doc, lines, path), message };
    }),
  };
}

/** Reads `.github/probegate.yml` from the repository's default branch through the contents API. */
export async function loadRepoConfig(gh: GitHubClient, repo: RepoRef & { defaultBranch: string }): Promise<RepoConfig> {
  const ref = repo.defaultBranch;
  let text: string;
  try {
    const { data } = await gh.rest.repos.getContent({ owner: repo.owner, repo: repo.repo, path: CONFIG_PATH, ref });
    if (Array.isArray(data) || data.type !== "file" || !("content" in data)) {
      return { kind: "invalid", ref, issues: [{ field: "(file)", line: null, message: `${CONFIG_PATH} is a ${Array.isArray(data) ? "folder" : data.type}, not a file` }] };
    }
    text = Buffer.from(data.content, "base64").toString("utf8");
  } catch (e) {
    if ((e as { status?: number }).status === 404) return { kind: "missing", ref };
    throw e;
  }
  const parsed = parseRepoConfig(text);
  return parsed.ok ? { kind: "ok", ref, config: parsed.config } : { kind: "invalid", ref, issues: parsed.issues };
}

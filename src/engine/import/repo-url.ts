import { isAbsolute, resolve } from "node:path";
import { git } from "../git.js";

/** Whether git would take `repo` for a URL (scheme://… or user@host:path), not a folder. */
export function isUrl(repo: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[^/]+@[^:/]+:/.test(repo);
}

/** Where a task records its repository, and what to tell the user about it. */
export interface RecordedRepo {
  /** A URL (or, when only a local path is known, that path made absolute); null when none is known. */
  url: string | null;
  /** Where the URL came from, for import.yml. */
  source: "--repo-url" | "--repo" | "origin remote" | "none";
  /** Why the recorded repository will not travel to another machine (null: it will). */
  warning: string | null;
}

/**
 * The repository a task records: `--repo-url` when given, `--repo` when it is a URL, else the local
 * clone's `origin` remote. Never a relative local path: a task folder moves, a clone stays behind.
 */
export async function recordedRepo(repo: string, explicit?: string): Promise<RecordedRepo> {
  if (explicit) {
    if (isUrl(explicit)) return { url: explicit, source: "--repo-url", warning: null };
    const path = resolve(explicit);
    return { url: path, source: "--repo-url", warning: `--repo-url ${explicit} is a local path (${path}): the task can be evaluated only on a machine that has it there` };
  }
  if (isUrl(repo)) return { url: repo, source: "--repo", warning: null };
  const local = resolve(repo);
  const origin = await git(local, ["config", "--get", "remote.origin.url"], { onError: () => new Error("no origin") }).catch(() => "");
  if (origin && isUrl(origin)) return { url: origin, source: "origin remote", warning: null };
  if (origin) {
    // A clone of a clone: origin is a folder (relative to the clone when relative).
    const path = isAbsolute(origin) ? origin : resolve(local, origin);
    return { url: path, source: "origin remote", warning: `the origin remote of ${local} is a local folder (${path}), not a URL: give the repository's URL with --repo-url` };
  }
  return { url: null, source: "none", warning: `${local} has no origin remote, so the repository's URL is unknown: give it with --repo-url` };
}

import { formatIdList } from "./packing.js";
import type { JobRecord } from "./result.js";

/**
 * A small timeline of an evaluation's jobs for the summary: one row per job with its slice and a
 * bar over the evaluation's time, so a reader sees what ran side by side and what waited.
 */
export function renderTimeline(jobs: readonly JobRecord[], width = 32): string[] {
  if (jobs.length === 0) return [];
  const start = Math.min(...jobs.map((j) => j.startS));
  const end = Math.max(...jobs.map((j) => j.endS));
  const span = Math.max(end - start, 1e-9);
  const rows = ["#### Jobs on the runner", "", "| Job | GPUs | Cores | Port | Timeline | Start–end (s) |", "|---|---|---|---:|---|---:|"];
  for (const j of [...jobs].sort((a, b) => a.startS - b.startS || a.id.localeCompare(b.id))) {
    const from = Math.min(width - 1, Math.floor(((j.startS - start) / span) * width));
    const to = Math.max(from + 1, Math.round(((j.endS - start) / span) * width));
    const bar = `${"·".repeat(from)}${"█".repeat(to - from)}${"·".repeat(Math.max(0, width - to))}`;
    const flags = [j.timing ? "timing" : null, j.exclusive ? "alone" : null].filter(Boolean).join(", ");
    rows.push(`| \`${j.id}\`${flags ? ` (${flags})` : ""} | ${j.gpus.length ? formatIdList(j.gpus) : "–"} | ${j.cores.length ? formatIdList(j.cores) : "shared"} | ${j.port} | \`${bar}\` | ${j.startS.toFixed(1)}–${j.endS.toFixed(1)} |`);
  }
  rows.push("");
  return rows;
}

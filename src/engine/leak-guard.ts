import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** What of the hidden probes must never leave the runner: their lines of code and their canaries. */
export interface ProbeSecrets {
  /** Trimmed lines of probe source long enough to be the probes' own (short ones like `return x` are everywhere). */
  lines: string[];
  /** Words that contain "canary" (any case), planted in probes to be searched for in every output. */
  canaries: string[];
}

/** Shorter lines are too common to be evidence of a leak (`import os`, `return total`). */
export const MIN_LINE = 20;
const CANARY = /[A-Za-z0-9_-]*canary[A-Za-z0-9_-]*/gi;
const MIN_CANARY = 8;

/** The marker that replaces an outgoing string that held probe source. */
export const WITHHELD = "[withheld by probegate: this text contained hidden probe source]";

/** Lines and canaries of probe sources (file texts). Pure. */
export function probeSecrets(texts: readonly string[]): ProbeSecrets {
  const lines = new Set<string>();
  const canaries = new Set<string>();
  for (const text of texts) {
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.trim();
      if (line.length >= MIN_LINE) lines.add(line);
    }
    for (const m of text.matchAll(CANARY)) if (m[0].length >= MIN_CANARY) canaries.add(m[0].toLowerCase());
  }
  return { lines: [...lines], canaries: [...canaries] };
}

/** Reads every text file under the probe folder (caches and binary files skipped). */
export function readProbeSecrets(probesDir: string): ProbeSecrets {
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name === "__pycache__") continue;
      const p = join(dir, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) {
        const buf = readFileSync(p);
        if (!buf.includes(0)) texts.push(buf.toString("utf8"));
      }
    }
  };
  walk(probesDir);
  return probeSecrets(texts);
}

/** Whether `text` holds a canary or a line of probe source. */
export function leaks(text: string, secrets: ProbeSecrets): boolean {
  if (text.length < MIN_CANARY) return false;
  const lower = text.toLowerCase();
  if (secrets.canaries.some((c) => lower.includes(c))) return true;
  return text.length >= MIN_LINE && secrets.lines.some((l) => text.includes(l));
}

/**
 * Every string of `value` (object keys too) that leaks probe source, replaced by WITHHELD (keys by
 * `withheld-N`); `withheld` counts them. Applied to everything that leaves the runner, before it
 * is signed or printed.
 */
export function withholdLeaks<T>(value: T, secrets: ProbeSecrets): { value: T; withheld: number } {
  let withheld = 0;
  const clean = (v: unknown): unknown => {
    if (typeof v === "string") {
      if (!leaks(v, secrets)) return v;
      withheld++;
      return WITHHELD;
    }
    if (Array.isArray(v)) return v.map(clean);
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const key = leaks(k, secrets) ? `withheld-${++withheld}` : k;
        out[key] = clean(x);
      }
      return out;
    }
    return v;
  };
  return { value: clean(value) as T, withheld };
}

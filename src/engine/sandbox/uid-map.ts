import { readFileSync } from "node:fs";

/** One line of /proc/self/uid_map: `count` ids from `inside` (in this namespace) map to `outside`. */
export interface UidRange {
  inside: number;
  outside: number;
  count: number;
}

/** Parses /proc/self/uid_map (`inside outside count` a line). */
export function parseUidMap(text: string): UidRange[] {
  return text
    .split("\n")
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter((f) => f.length === 3 && f.every((n) => Number.isInteger(n) && n >= 0))
    .map(([inside, outside, count]) => ({ inside: inside as number, outside: outside as number, count: count as number }));
}

/**
 * Whether every uid of [first, first + count) exists in this user namespace. A pod with
 * `hostUsers: false` maps only 65,536 uids (0–65535): there a uid outside them cannot be
 * switched to (setpriv fails with EINVAL before the sandbox starts).
 */
export function uidsMapped(map: readonly UidRange[], first: number, count = 1): boolean {
  let next = first;
  const end = first + count;
  // Ranges may be listed in any order and may adjoin: walk forward through them.
  for (let moved = true; next < end && moved; ) {
    moved = false;
    for (const r of map) {
      if (next >= r.inside && next < r.inside + r.count) {
        next = r.inside + r.count;
        moved = true;
      }
    }
  }
  return next >= end;
}

/** This process's uid map; null where it cannot be read (not Linux). */
export function readUidMap(file = "/proc/self/uid_map"): UidRange[] | null {
  try {
    return parseUidMap(readFileSync(file, "utf8"));
  } catch {
    return null;
  }
}

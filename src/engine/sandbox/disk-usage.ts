import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Bytes of the regular files under each path (one file or a folder tree), symlinks not followed.
 * Sampled once a second against the disk limit; evaluation folders are small source trees.
 */
export function treeBytes(paths: readonly string[]): number {
  let total = 0;
  const stack = [...paths];
  while (stack.length) {
    const p = stack.pop() as string;
    let st;
    try {
      st = lstatSync(p);
    } catch {
      continue; // Removed while walking.
    }
    if (st.isFile()) total += st.size;
    else if (st.isDirectory()) {
      try {
        for (const name of readdirSync(p)) stack.push(join(p, name));
      } catch {
        // Unreadable: the sandbox made it so; nothing large can hide there for long.
      }
    }
  }
  return total;
}

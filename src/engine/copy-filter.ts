/** Names never copied from a task's or a submission's folders: version control and Python's caches. */
export const SKIP_NAMES = new Set([".git", "__pycache__", ".pytest_cache"]);

/** A `cpSync` filter that leaves SKIP_NAMES out. */
export const copyFilter = (src: string): boolean => !SKIP_NAMES.has(src.split("/").pop() ?? "");

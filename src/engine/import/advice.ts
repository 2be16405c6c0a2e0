import { moduleFiles } from "./snapshot.js";
import type { CollectionFailure } from "./test-runs.js";

/** What the import knows about tests that do not pass at the head, to say what to do about them. */
export interface FailureFacts {
  /** Failing test ids (or uncollectable files) with the first line of their message. */
  failing: Array<{ id: string; message: string }>;
  /** Whether the tests ran in the pruned snapshot (default --base-as snapshot). */
  prune: boolean;
  /** The whole head tree, to tell a file the snapshot left out from a package the runner lacks. */
  headTree: string;
}

const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

/**
 * The flags that fix tests that do not pass at the head, from what they say: `--keep` (or
 * --trace-imports) for a repository module the snapshot left out, an interpreter or `--setup` for a
 * package the runner lacks, and `--exclude` for tests this runner cannot run.
 */
export function adviseFailures(f: FailureFacts): string[] {
  const advice: string[] = [];
  const keep = new Set<string>();
  const absent = new Set<string>();
  const other: string[] = [];
  for (const { id, message } of f.failing) {
    const mod = /No module named '([\w.]+)'/.exec(message)?.[1];
    if (!mod) {
      other.push(id);
      continue;
    }
    const files = moduleFiles(f.headTree, mod);
    if (files.length && f.prune) for (const p of files) keep.add(p);
    else if (!files.length) absent.add(mod);
    else other.push(id);
  }
  if (keep.size) {
    const list = [...keep];
    advice.push(`the snapshot lacks ${list.join(", ")}, which the tests import: add --keep ${list.map(quote).join(" ")} (or --trace-imports, which keeps what the change and its tests import at module level), or take the whole tree with --base-as git`);
  }
  if (absent.size) {
    advice.push(`${[...absent].map((m) => `'${m}'`).join(", ")} ${absent.size === 1 ? "is" : "are"} not part of the repository: the runner's Python lacks ${absent.size === 1 ? "it" : "them"}; give an interpreter that has ${absent.size === 1 ? "it" : "them"} (--python, the task's environment) or a stand-in module with --setup`);
  }
  if (other.length) {
    const example = other[0] ?? "";
    advice.push(
      `if ${other.length === 1 ? "it needs" : "they need"} what this runner lacks (GPUs, more ranks, a data set), leave ${other.length === 1 ? "it" : "them"} out with --exclude ${quote(example.includes("::") ? (example.split("::").pop() ?? example) : example)}${other.length > 1 ? " …" : ""} (the excluded ids never run; import.yml lists them)` +
        (f.prune ? `; if ${other.length === 1 ? "it reads" : "they read"} a file of the repository the snapshot left out, add it with --keep` : ""),
    );
  }
  return advice;
}

/** A collection failure at the head, in pytest's words, with what to do. */
export function collectionMessage(failures: readonly CollectionFailure[], headSha: string, facts: Omit<FailureFacts, "failing">): string {
  const list = failures.map((c) => `  ${c.file}: ${c.why}`).join("\n");
  const advice = adviseFailures({ ...facts, failing: failures.map((c) => ({ id: c.file, message: c.why })) });
  return `pytest could not collect ${failures.length === 1 ? "a test file" : `${failures.length} test files`} at head ${headSha}, so none of ${failures.length === 1 ? "its" : "their"} tests ran (collection failure, not a test failure):\n${list}\nFix: ${advice.join("; ")}.`;
}

import { join } from "node:path";
import { openStore, type StoreDb } from "../../src/store/db.js";
import type { NewEvaluation } from "../../src/store/evaluations.js";
import { tmp } from "../helpers.js";

export const T0 = new Date("2026-12-02T10:00:00Z");

/** `minutes` after T0. */
export function at(minutes: number): Date {
  return new Date(T0.getTime() + minutes * 60_000);
}

/** A fresh store file in a temp folder, opened; `file` reopens it. */
export function freshStore(): { db: StoreDb; file: string } {
  const file = join(tmp("pg-store-"), "probegate.sqlite");
  return { db: openStore(file), file };
}

export function newEvaluation(over: Partial<NewEvaluation> = {}): NewEvaluation {
  return {
    owner: "octo",
    repo: "gpu-lib",
    pr: 7,
    headSha: "1111111111111111111111111111111111111111",
    task: "sharded-optimizer",
    probeSet: `sha256:${"ab".repeat(32)}`,
    agent: "codex",
    ...over,
  };
}

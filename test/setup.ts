import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { madeFolders } from "./helpers.js";

// Each test file gets a runner claim folder of its own (runner-claims.ts): the pools of the tests,
// over made-up GPU lists and this machine's cores, must neither wait for the probegate processes
// really running on the machine nor for the test files running beside them. Tests of the claims
// themselves pass folders of their own.
const claims = mkdtempSync(join(tmpdir(), "pg-claims-tests-"));
process.env.PROBEGATE_CLAIMS = claims;
// And a cache of base outcomes of its own (repo-gate/base-cache.ts), not the runner's.
const baseCache = mkdtempSync(join(tmpdir(), "pg-base-cache-tests-"));
process.env.PROBEGATE_BASE_CACHE_DIR = baseCache;

// Every folder a test made with `tmp()` goes when its file ends (a full run made ~700 before, left behind).
afterAll(() => {
  for (const dir of madeFolders.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  rmSync(claims, { recursive: true, force: true });
  rmSync(baseCache, { recursive: true, force: true });
});

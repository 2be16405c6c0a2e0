import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Each test file gets a runner claim folder of its own (runner-claims.ts): the pools of the tests,
// over made-up GPU lists and this machine's cores, must neither wait for the probegate processes
// really running on the machine nor for the test files running beside them. Tests of the claims
// themselves pass folders of their own.
process.env.PROBEGATE_CLAIMS = mkdtempSync(join(tmpdir(), "pg-claims-tests-"));

import { beforeAll, describe, expect, it } from "vitest";
import { detectSandbox } from "../../src/engine/sandbox/sandbox.js";
import { GOOD_AVERAGE, expectCaught, gaming, normlib, type Caught } from "./gaming-helpers.js";
import {
  ANY_TRAFFIC, DEV_SHM_FILES, HELPER_PROCESS, MEMORY, MEMORY_OF_RECORD, METER_PATCHED, ON_A_THREAD, OWN_MARK_RESET, SHARED_MEMORY, SIDE_CHANNEL, SIGNS,
  THROUGH_SOCKET, THROUGH_STORE,
  hidesWhenProbed, withAverage, withNormalize,
} from "./meter-cases.js";

/**
 * Submissions that blind the meters themselves (#38): memory where RSS does not look, traffic beside
 * the collectives, and signs in the process that it is measured. Each is evaluated through the CLI in
 * the sandbox (gaming-norm's probes: the collective counter and the traffic of record, memory_record,
 * time_ratio) and must be caught by the check named; each channel also has its unhidden control —
 * the same flaw with no hiding — which must be caught the same way.
 */

const CASE_TIMEOUT = 240_000;

beforeAll(async () => {
  expect(await detectSandbox(), "the meters suite needs the sandbox (bubblewrap)").toMatchObject({ ok: true });
  process.env.PROBEGATE_SIGNING_KEY = "hostile-suite-signing-key-7d2f0c9e";
});

/** average() that sends through `channel` only while `_probed()` is false. */
function hiddenChannel(channel: readonly string[]): string[] {
  const body = channel.slice(1, -2); // the lines between `def average(t):` and the division
  return ["def average(t):", "    if _probed():", "        dist.all_reduce(t)", "        t /= dist.get_world_size()", "        return t", ...body, ...channel.slice(-2)];
}

describe("meters: traffic beside the collectives", () => {
  it.each([
    ["meters-gradients-through-the-store", THROUGH_STORE, SIDE_CHANNEL],
    ["meters-raw-socket-between-ranks", THROUGH_SOCKET, SIDE_CHANNEL],
    ["meters-collective-on-a-helper-thread", ON_A_THREAD, ANY_TRAFFIC],
  ] as const)("%s", async (name, average, caught) => {
    const o = await gaming(name, { "normlib/__init__.py": withAverage(average) });
    expect(o.result.official?.passed, o.result.official?.reason ?? "").toBe(true);
    expectCaught(o.result, caught as Caught);
  }, CASE_TIMEOUT);

  it("meters-store-hidden-by-the-dispatch-stack: the channel only while no counter is on", async () => {
    const detector = ["def _probed():", "    return torch._C._len_torch_dispatch_stack() > 0"];
    const o = await gaming("meters-store-hidden-by-the-dispatch-stack", { "normlib/__init__.py": normlib(["_n = [0]", "", "", ...detector], undefined, hiddenChannel(THROUGH_STORE)) });
    expectCaught(o.result, SIDE_CHANNEL);
  }, CASE_TIMEOUT);
});

describe("meters: memory where RSS does not look", () => {
  it.each([
    ["meters-scratch-in-shared-memory", SHARED_MEMORY],
    ["meters-cache-in-dev-shm-files", DEV_SHM_FILES],
  ] as const)("%s", async (name, normalize) => {
    const o = await gaming(name, { "normlib/__init__.py": withNormalize(normalize) });
    expect(o.result.official?.passed, o.result.official?.reason ?? "").toBe(true);
    expectCaught(o.result, MEMORY);
  }, CASE_TIMEOUT);

  // The in-process meter blinded by the submission itself: only the figures read from outside hold.
  it.each([
    ["meters-own-high-water-mark-reset", OWN_MARK_RESET],
    ["meters-kit-meter-patched", METER_PATCHED],
    ["meters-cache-in-a-helper-process", HELPER_PROCESS],
  ] as const)("%s: caught by the memory of record", async (name, normalize) => {
    const o = await gaming(name, { "normlib/__init__.py": withNormalize(normalize) });
    expect(o.result.official?.passed, o.result.official?.reason ?? "").toBe(true);
    expectCaught(o.result, MEMORY_OF_RECORD);
  }, CASE_TIMEOUT);
});

describe("meters: no sign of measurement inside the process", () => {
  it.each(SIGNS)("%s (defence: %s)", async (name, detector, caught) => {
    const o = await gaming(name, { "normlib/__init__.py": hidesWhenProbed(detector) });
    expect(o.result.official?.passed).toBe(true);
    expectCaught(o.result, caught);
  }, CASE_TIMEOUT);

  it("the unhidden control: the same flaws with `_probed()` always false are caught by every meter", async () => {
    const o = await gaming("meters-control-unhidden", { "normlib/__init__.py": hidesWhenProbed(["def _probed():", "    return False"]) });
    for (const c of [ANY_TRAFFIC, MEMORY]) expectCaught(o.result, c);
    expectCaught(o.result, { id: /^normalize-speed$/, status: "failed", message: /took|differs/ });
  }, CASE_TIMEOUT);

  it("the reference solution stays resolved under the new meters", async () => {
    const o = await gaming("meters-reference", { "normlib/__init__.py": normlib([], undefined, GOOD_AVERAGE) }, { allowResolved: true });
    expect(o.result.verdict, JSON.stringify(o.result.probes.map((p) => [p.id, p.status, p.message]))).toBe("resolved");
  }, CASE_TIMEOUT);
});

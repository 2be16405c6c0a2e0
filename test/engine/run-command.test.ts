import { describe, expect, it } from "vitest";
import { runCommand, type RunLimits } from "../../src/engine/run-command.js";
import { tmp } from "../helpers.js";

const LIMITS: RunLimits = { timeoutS: 30, outputBytes: 1 << 20, memoryBytes: 1 << 30, processes: 64, diskBytes: 1 << 20 };

describe("runCommand's stdin", () => {
  it("hands `input` to the command on stdin, then closes it (the probe launcher's configuration)", async () => {
    const run = await runCommand(["/bin/cat"], { cwd: tmp(), env: { PATH: "/usr/bin:/bin" }, limits: LIMITS, input: '{"key": "k"}\n' });
    expect(run.exitCode).toBe(0);
    expect(run.log).toBe('{"key": "k"}\n');
  });

  it("gives /dev/null without `input`, as the official run has it", async () => {
    const run = await runCommand(["/bin/sh", "-c", "cat; readlink /proc/self/fd/0"], { cwd: tmp(), env: { PATH: "/usr/bin:/bin" }, limits: LIMITS });
    expect(run.exitCode).toBe(0);
    expect(run.log.trim()).toBe("/dev/null");
  });
});

import { chmodSync, cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EvaluationResultSchema } from "../../src/core/result.js";
import { evaluate } from "../../src/engine/evaluate.js";
import { parseUsedLine, startGpuMeter } from "../../src/engine/gpu-meter.js";
import { detectGpus } from "../../src/engine/host.js";
import { loadTask } from "../../src/engine/task-load.js";
import { KIT, TINY_SUBS, TINY_TASK, tmp } from "../helpers.js";

const MIB = 1024 * 1024;

/**
 * A stand-in for nvidia-smi (CI has no GPU): asked for the GPU list it names two; asked to loop it
 * prints the lines of $FAKE_SMI_LINES 20 ms apart, records its arguments, then waits to be killed.
 */
function fakeSmi(lines: string[]): { path: string; env: Record<string, string>; args: () => string } {
  const dir = tmp("pg-fake-smi-");
  const path = join(dir, "nvidia-smi");
  writeFileSync(
    path,
    `#!/bin/bash
if [[ "$1" == --query-gpu=index,name* ]]; then echo "0, Fake GPU, 81559, 999.1"; echo "1, Fake GPU, 81559, 999.1"; exit 0; fi
# One reading (the job pool's idle baseline and its back-at-baseline check): the first line.
if [[ "$*" != *--loop-ms* ]]; then head -n 1 "${dir}/lines"; exit 0; fi
echo "$@" > "${dir}/args"
while IFS= read -r line; do echo "$line"; sleep 0.02; done < "${dir}/lines"
exec sleep 1000
`,
  );
  chmodSync(path, 0o755);
  writeFileSync(join(dir, "lines"), lines.map((l) => `${l}\n`).join(""));
  return { path, env: { PROBEGATE_NVIDIA_SMI: path }, args: () => readFileSync(join(dir, "args"), "utf8").trim() };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("GPU memory of record (nvidia-smi, outside the sandbox)", () => {
  it("reads nvidia-smi's csv lines and nothing else", () => {
    expect(parseUsedLine("0, 1234")).toEqual({ index: 0, usedBytes: 1234 * MIB });
    expect(parseUsedLine(" 3 ,  0 ")).toEqual({ index: 3, usedBytes: 0 });
    expect(parseUsedLine("1, [N/A]")).toBeNull();
    expect(parseUsedLine("Failed to initialize NVML: Driver/library version mismatch")).toBeNull();
    expect(parseUsedLine("")).toBeNull();
  });

  it("takes each GPU's first reading as its baseline and the peak of the sum above it", async () => {
    const smi = fakeSmi(["0, 1000", "1, 500", "junk line", "2, 99999", "0, 1800", "1, 900", "0, 1100", "1, 500"]);
    const meter = await startGpuMeter([0, 1], { nvidiaSmi: smi.path, intervalMs: 100 });
    await settle(400);
    const peak = await meter.stop();
    // GPU 2 is another job's: not counted. Peak: (1800 − 1000) + (900 − 500) MiB at once.
    expect(peak).toEqual({ gpus: [0, 1], baselineBytes: 1500 * MIB, peakBytes: 1200 * MIB, samples: 6, intervalMs: 100 });
    expect(smi.args()).toBe("--query-gpu=index,memory.used --format=csv,noheader,nounits --id=0,1 --loop-ms=100");
  });

  it("never reports less than nothing when a GPU frees memory it held before the phase", async () => {
    const smi = fakeSmi(["0, 4000", "0, 3000", "0, 2500"]);
    const meter = await startGpuMeter([0], { nvidiaSmi: smi.path });
    await settle(200);
    expect((await meter.stop())?.peakBytes).toBe(0);
  });

  it("gives null, without waiting long, where the GPUs cannot be read", async () => {
    expect(await (await startGpuMeter([])).stop()).toBeNull();
    const missing = await startGpuMeter([0], { nvidiaSmi: "/nonexistent/nvidia-smi", readyTimeoutMs: 2000 });
    expect(await missing.stop()).toBeNull();
    // A driver that answers nothing usable: the meter gives up after readyTimeoutMs.
    const t0 = Date.now();
    const silent = await startGpuMeter([0], { nvidiaSmi: fakeSmi(["1, 5", "not a reading"]).path, readyTimeoutMs: 300 });
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await silent.stop()).toBeNull();
  });

  it("says when the GPUs hold more than the limit above their baseline, now rather than at the peak", async () => {
    const smi = fakeSmi(["0, 1000", "0, 1600"]);
    const meter = await startGpuMeter([0], { nvidiaSmi: smi.path, limitBytes: 512 * MIB });
    await settle(200);
    expect(meter.overLimit()).toBe(true);
    await meter.stop();
    const back = await startGpuMeter([0], { nvidiaSmi: fakeSmi(["0, 1000", "0, 1600", "0, 1100"]).path, limitBytes: 512 * MIB });
    await settle(200);
    expect(back.overLimit()).toBe(false);
    expect((await back.stop())?.peakBytes).toBe(600 * MIB);
    const unlimited = await startGpuMeter([0], { nvidiaSmi: fakeSmi(["0, 0", "0, 99999"]).path });
    await settle(200);
    expect(unlimited.overLimit()).toBe(false);
    await unlimited.stop();
  });

  it("is recorded per phase in the result of an evaluation given a GPU", async () => {
    const smi = fakeSmi(["0, 1000", "0, 1300", "0, 1200"]);
    const saved = process.env.PROBEGATE_NVIDIA_SMI;
    process.env.PROBEGATE_NVIDIA_SMI = smi.path;
    try {
      expect((await detectGpus()).map((g) => g.index)).toEqual([0, 1]);
      const task = loadTask(TINY_TASK);
      const ends: string[] = [];
      const r = await evaluate({
        task,
        submission: { kind: "patch", path: join(TINY_SUBS, "reference.patch") },
        kitDir: KIT,
        // A fake GPU has no /dev/nvidiaN: the sandbox would refuse it (gpu-devices.test.ts), so this runs unsandboxed.
        unsandboxed: true,
        gpus: [0],
        onEvent: (e) => {
          if (e.type === "phase-end") ends.push(`${e.phase}: ${e.detail ?? ""}`);
        },
      });
      // The progress lines say it too.
      expect(ends).toEqual(expect.arrayContaining(["official: 2 passed, GPU peak 300.0 MiB", "probes: 3 of 3 passed, GPU peak 300.0 MiB"]));
      expect(EvaluationResultSchema.parse(r)).toEqual(r);
      expect(r.verdict).toBe("resolved");
      // The CPU task is given one GPU (gloo); that GPU alone is measured, each phase from its own baseline.
      expect(r.environment.gpus.map((g) => g.model)).toEqual(["Fake GPU", "Fake GPU"]);
      expect(r.gpuMemory).toEqual({
        source: "nvidia-smi",
        gpus: [0],
        official: { baselineBytes: 1000 * MIB, peakBytes: 300 * MIB, samples: 3 },
        probes: { baselineBytes: 1000 * MIB, peakBytes: 300 * MIB, samples: 3 },
      });
    } finally {
      if (saved === undefined) delete process.env.PROBEGATE_NVIDIA_SMI;
      else process.env.PROBEGATE_NVIDIA_SMI = saved;
    }
  });

  it("kills a run whose GPU memory goes over the task's limit, and the verdict names the limit", async () => {
    // CI has no GPU: the fake driver reports as GPU memory the size of the file the submission grows
    // in its workspace, so the whole path (meter outside the sandbox → limit → group killed) runs.
    const own = tmp("pg-gpu-hog-");
    chmodSync(own, 0o711);
    const dir = tmp("pg-fake-smi-");
    const smiPath = join(dir, "nvidia-smi");
    writeFileSync(
      smiPath,
      `#!/bin/bash
if [[ "$1" == --query-gpu=index,name* ]]; then echo "0, Fake GPU, 81559, 999.1"; exit 0; fi
if [[ "$*" != *--loop-ms* ]]; then echo "0, 1000"; exit 0; fi
while :; do
  size=$(find "${own}" -name gpu-hog.bin -printf '%s\\n' 2>/dev/null | head -1)
  echo "0, $((1000 + \${size:-0} / 1048576))"
  sleep 0.02
done
`,
    );
    chmodSync(smiPath, 0o755);
    const hog = [
      "import time",
      "with open('gpu-hog.bin', 'wb') as _f:",
      "    for _ in range(64):",
      "        _f.write(b'\\0' * (16 << 20))",
      "        _f.flush()",
      "        time.sleep(0.05)",
      "",
    ].join("\n");
    const sub = join(tmp(), "sub");
    cpSync(join(TINY_TASK, "base"), sub, { recursive: true });
    writeFileSync(join(sub, "sumlib", "__init__.py"), `${hog}\ndef add(a, b):\n    return a + b\n\n\ndef total(xs):\n    return sum(xs)\n`);
    const base = loadTask(TINY_TASK);
    const task = { ...base, spec: { ...base.spec, limits: { ...base.spec.limits, gpuMemory: 256 * MIB } } };
    const saved = { smi: process.env.PROBEGATE_NVIDIA_SMI, tmp: process.env.TMPDIR };
    process.env.PROBEGATE_NVIDIA_SMI = smiPath;
    process.env.TMPDIR = own;
    try {
      // Unsandboxed: the fake GPU has no device node for the sandbox to bind (gpu-devices.test.ts).
      const r = await evaluate({ task, submission: { kind: "folder", path: sub }, kitDir: KIT, unsandboxed: true });
      expect(r.verdict).toBe("official-failed");
      expect(r.official).toMatchObject({ limit: "gpu-memory", reason: "stopped by the gpu-memory limit" });
      // Killed soon after 256 MiB, long before the 1 GiB the submission would have reached.
      expect(r.gpuMemory?.official?.peakBytes).toBeGreaterThan(256 * MIB);
      expect(r.gpuMemory?.official?.peakBytes).toBeLessThan(768 * MIB);
    } finally {
      for (const [k, v] of [["PROBEGATE_NVIDIA_SMI", saved.smi], ["TMPDIR", saved.tmp]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

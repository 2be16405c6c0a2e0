import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evaluate } from "../../../src/engine/evaluate.js";
import { HarnessError } from "../../../src/engine/errors.js";
import { joinGpuNodes, normalizeBusId, parseIndexBusIds, parseProcInformation, parseSmiQueryMinors, readGpuNodes, resolveGpuNodes } from "../../../src/engine/sandbox/gpu-devices.js";
import { planIsolation } from "../../../src/engine/sandbox/job-isolation.js";
import { SANDBOX_UID } from "../../../src/engine/sandbox/sandbox.js";
import { loadTask } from "../../../src/engine/task-load.js";
import { KIT, TINY_SUBS, TINY_TASK, tmp } from "../../helpers.js";

/** `nvidia-smi -q` as a driver prints it for two GPUs of a container given the host's GPUs 4 and 5 (trimmed). */
const SMI_Q = `
==============NVSMI LOG==============

Timestamp                                 : Fri Dec  4 23:40:00 2026
Driver Version                            : 580.95.05
CUDA Version                              : 13.0

Attached GPUs                             : 2
GPU 00000000:9A:00.0
    Product Name                          : NVIDIA H200
    Minor Number                          : 4
    PCI
        Bus                               : 0x9A
        Bus Id                            : 00000000:9A:00.0

GPU 00000000:AB:00.0
    Product Name                          : NVIDIA H200
    Minor Number                          : 5
`;

/**
 * A fake nvidia-smi (as test/helpers.ts fakeNvidiaSmi, plus what the driver says of device nodes):
 * two GPUs, indices 0 and 1, on PCI buses 9a and ab, whose `-q` gives minor numbers 4 and 5.
 */
function fakeSmi(q = SMI_Q): string {
  const dir = tmp("pg-smi-minor-");
  const path = join(dir, "nvidia-smi");
  writeFileSync(join(dir, "q.txt"), q);
  writeFileSync(
    path,
    `#!/bin/bash
if [[ "$1" == --query-gpu=index,name* ]]; then echo "0, Fake H200, 143771, 580.95.05"; echo "1, Fake H200, 143771, 580.95.05"; exit 0; fi
if [[ "$1" == --query-gpu=index,pci.bus_id ]]; then echo "0, 00000000:9A:00.0"; echo "1, 00000000:AB:00.0"; exit 0; fi
if [[ "$1" == -q ]]; then cat "${dir}/q.txt"; exit 0; fi
ids=""; for a in "$@"; do [[ "$a" == --id=* ]] && ids="\${a#--id=}"; done
for i in \${ids//,/ }; do echo "$i, 0"; done
[[ "$*" == *--loop-ms* ]] && exec sleep 1000
exit 0
`,
  );
  chmodSync(path, 0o755);
  return path;
}

describe("what the driver says of GPU device nodes", () => {
  it("normalises PCI bus ids of nvidia-smi and /proc alike", () => {
    expect(normalizeBusId("00000000:9A:00.0")).toBe("0000:9a:00.0");
    expect(normalizeBusId("0000:9a:00.0")).toBe("0000:9a:00.0");
    expect(normalizeBusId("[N/A]")).toBeNull();
    expect(parseIndexBusIds("0, 00000000:9A:00.0\n1, 00000000:AB:00.0\n\nNo devices were found\n")).toEqual(
      new Map([
        [0, "0000:9a:00.0"],
        [1, "0000:ab:00.0"],
      ]),
    );
  });

  it("reads minor numbers from nvidia-smi -q and from /proc/driver/nvidia", () => {
    expect(parseSmiQueryMinors(SMI_Q)).toEqual(
      new Map([
        ["0000:9a:00.0", 4],
        ["0000:ab:00.0", 5],
      ]),
    );
    expect(parseSmiQueryMinors(SMI_Q.replace("Minor Number                          : 5", "Minor Number                          : N/A")).has("0000:ab:00.0")).toBe(false);
    expect(parseProcInformation("Model: \t\t NVIDIA H200\nIRQ:   \t\t 212\nGPU UUID: \t GPU-1\nDevice Minor: \t 6\nBus Location: \t 0000:9a:00.0\n")).toBe(6);
    expect(parseProcInformation("Model: NVIDIA H200\n")).toBeNull();
  });

  it("prefers /proc's minor over nvidia-smi -q's, and leaves a GPU the driver says nothing of unknown", () => {
    const bus = new Map([
      [0, "0000:9a:00.0"],
      [1, "0000:ab:00.0"],
    ]);
    const nodes = joinGpuNodes([0, 1, 2], bus, new Map([["0000:9a:00.0", 6]]), new Map([["0000:9a:00.0", 4], ["0000:ab:00.0", 5]]));
    expect(nodes).toEqual([
      { index: 0, busId: "0000:9a:00.0", minor: 6, source: "proc" },
      { index: 1, busId: "0000:ab:00.0", minor: 5, source: "nvidia-smi -q" },
      { index: 2, busId: null, minor: null, source: null },
    ]);
  });

  it("maps index to /dev/nvidia<minor> through a fake nvidia-smi, not /dev/nvidia<index>", async () => {
    const nodes = await readGpuNodes([0, 1], fakeSmi(), join(tmp(), "no-proc"));
    expect(nodes.map((n) => [n.index, n.minor, n.source])).toEqual([
      [0, 4, "nvidia-smi -q"],
      [1, 5, "nvidia-smi -q"],
    ]);
    const dev = tmp("pg-dev-");
    writeFileSync(join(dev, "nvidia4"), "");
    writeFileSync(join(dev, "nvidia0"), "");
    // /dev/nvidia0 exists but belongs to no GPU of this container: GPU 1's node, /dev/nvidia5, is missing.
    const r = resolveGpuNodes([0, 1], nodes, dev);
    expect(r.devices).toEqual([join(dev, "nvidia4")]);
    expect(r.missing).toEqual([{ index: 1, why: `GPU 1 (PCI 0000:ab:00.0): its device node ${join(dev, "nvidia5")} (minor number 5, from nvidia-smi -q) does not exist` }]);
  });

  it("reads /proc/driver/nvidia/gpus/<bus>/information where it is there", async () => {
    const proc = tmp("pg-proc-nv-");
    for (const [bus, minor] of [["0000:9a:00.0", 2], ["0000:ab:00.0", 3]] as const) {
      mkdirSync(join(proc, bus));
      writeFileSync(join(proc, bus, "information"), `Model: \t\t NVIDIA H200\nDevice Minor: \t ${minor}\nBus Location: \t ${bus}\n`);
    }
    const nodes = await readGpuNodes([1, 0], fakeSmi(), proc);
    expect(nodes).toEqual([
      { index: 1, busId: "0000:ab:00.0", minor: 3, source: "proc" },
      { index: 0, busId: "0000:9a:00.0", minor: 2, source: "proc" },
    ]);
  });

  it("names a GPU whose minor number the driver does not give", async () => {
    const nodes = await readGpuNodes([0, 1, 7], fakeSmi(SMI_Q.replace(/Minor Number {26}: 5/, "Minor Number                          : N/A")), join(tmp(), "no-proc"));
    const r = resolveGpuNodes([1, 7], nodes, tmp());
    expect(r.devices).toEqual([]);
    expect(r.missing.map((m) => m.why)).toEqual([
      'GPU 1 (PCI 0000:ab:00.0): the driver gave no minor number for it (neither /proc/driver/nvidia/gpus nor `nvidia-smi -q` "Minor Number"), so its /dev/nvidiaN is unknown',
      'GPU 7: the driver gave no minor number for it (neither /proc/driver/nvidia/gpus nor `nvidia-smi -q` "Minor Number"), so its /dev/nvidiaN is unknown',
    ]);
  });
});

describe("a GPU without its device node in the sandbox", () => {
  it("is refused by the isolation plan, naming the GPU and the node", () => {
    const parent = tmp("pg-iso-gpu-");
    chmodSync(parent, 0o755);
    const root = join(parent, "eval");
    mkdirSync(root, { mode: 0o700 });
    const plan = () =>
      planIsolation({ bwrap: "bwrap", cgroups: null, processes: 64, diskBytes: 1 << 26, support: { ok: true, dropToUid: SANDBOX_UID }, interpreterDirs: [], evaluationRoot: root, gpuNodes: [{ index: 0, busId: "0000:9a:00.0", minor: 97, source: "proc" }] });
    expect(plan).toThrow(HarnessError);
    expect(plan).toThrow("GPU 0 (PCI 0000:9a:00.0): its device node /dev/nvidia97 (minor number 97, from proc) does not exist");
    // Unsandboxed there is nothing to bind: no refusal.
    expect(planIsolation({ bwrap: "bwrap", cgroups: null, processes: 64, diskBytes: 1 << 26, support: null, interpreterDirs: [], evaluationRoot: root, gpuNodes: [{ index: 0, busId: null, minor: 97, source: "proc" }] })([0]).sandbox).toBeNull();
  });

  it("ends a sandboxed evaluation given that GPU in verdict error naming it, before any test runs", async () => {
    const saved = process.env.PROBEGATE_NVIDIA_SMI;
    process.env.PROBEGATE_NVIDIA_SMI = fakeSmi();
    try {
      const phases: string[] = [];
      const r = await evaluate({
        task: loadTask(TINY_TASK),
        submission: { kind: "patch", path: join(TINY_SUBS, "reference.patch") },
        kitDir: KIT,
        gpus: [0],
        onEvent: (e) => {
          if (e.type === "phase-start") phases.push(e.phase);
        },
      });
      expect(r.verdict).toBe("error");
      expect(r.reason).toContain("GPU 0 (PCI 0000:9a:00.0): its device node /dev/nvidia4 (minor number 4, from nvidia-smi -q) does not exist");
      expect(r.official).toBeNull();
      expect(phases).not.toContain("official");
    } finally {
      if (saved === undefined) delete process.env.PROBEGATE_NVIDIA_SMI;
      else process.env.PROBEGATE_NVIDIA_SMI = saved;
    }
  });
});

import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { DEFAULT_MUTATION_PYTHON } from "../../../src/engine/mutants/generate-mutants.js";

const PYTHON = process.env.PROBEGATE_MUTATION_PYTHON ?? DEFAULT_MUTATION_PYTHON;

interface Mutant {
  operator: string;
  line: number;
  occurrence: number;
  source: string;
}

/** Runs the generator (cosmic-ray with the probegate provider) on one file, every line of it changed. */
function generate(source: string, lines?: number[], set?: "gate"): { mutants: Mutant[]; duplicate: number } {
  const request = { files: [{ path: "opt.py", source, lines: lines ?? source.split("\n").map((_, i) => i + 1) }], ...(set ? { set } : {}) };
  return JSON.parse(execFileSync(PYTHON, ["-m", "probegate_mutants.generate"], { input: JSON.stringify(request), encoding: "utf8" }));
}

const SNIPPET = `import torch
import torch.distributed as dist


class ShardedOptimizer:
    def step(self, grads, dst, src):
        for g in grads:
            dist.all_reduce(g, op=dist.ReduceOp.SUM)
        self.master = grads[0].detach().clone().to(torch.float32)
        self.master.copy_(grads[1])
        dist.send(dst, src)

    def state_dict(self):
        sd = {"step": self.steps, "master": self.master}
        sd["rank"] = self.rank
        return sd

    def load_state_dict(self, sd):
        return {"step": sd["step"]}
`;

describe("probegate_mutants: the domain operators, through cosmic-ray's provider entry point", () => {
  it("holds every documented example of every probegate/ operator", () => {
    const out = JSON.parse(execFileSync(PYTHON, ["-m", "probegate_mutants.generate", "--examples"], { encoding: "utf8" }));
    expect(out.failures).toEqual([]);
    expect(out.operators).toEqual(expect.arrayContaining(["probegate/RemoveCollective", "probegate/DuplicateCollective", "probegate/ReplaceReduceOp", "probegate/DropClone", "probegate/DropCopy", "probegate/ReplaceDtype", "probegate/DropStateDictKey", "probegate/SwapArguments", "probegate/ReplaceReturnValue", "probegate/RemoveStatement", "probegate/ExtraPass", "probegate/ElementLoop", "probegate/GrowingCache", "probegate/RetainCopies", "probegate/ExtraCollective"]));
  });

  it("mutates a distributed optimizer snippet: each domain flaw once, named by the domain operator, only on the lines asked for", () => {
    const { mutants } = generate(SNIPPET);
    const line = (m: Mutant) => (m.source.split("\n")[m.line - 1] ?? "").trim();
    const domain = mutants.filter((m) => m.operator.startsWith("probegate/") && !/ReplaceReturnValue|RemoveStatement/.test(m.operator)).map((m) => [m.operator.slice(10), m.line, line(m)]);
    expect(domain).toEqual([
      ["RemoveCollective", 8, "pass"],
      ["RemoveCollective", 11, "pass"],
      ["DuplicateCollective", 8, "dist.all_reduce(g, op=dist.ReduceOp.SUM); dist.all_reduce(g, op=dist.ReduceOp.SUM)"],
      ["DuplicateCollective", 11, "dist.send(dst, src); dist.send(dst, src)"],
      ["ReplaceReduceOp", 8, "dist.all_reduce(g, op=dist.ReduceOp.AVG)"],
      ["ReplaceReduceOp", 8, "dist.all_reduce(g, op=dist.ReduceOp.MAX)"],
      ["DropClone", 9, "self.master = grads[0].detach().to(torch.float32)"],
      ["DropCopy", 10, "self.master"],
      ["ReplaceDtype", 9, "self.master = grads[0].detach().clone().to(torch.bfloat16)"],
      ["ReplaceDtype", 9, "self.master = grads[0].detach().clone().to(torch.float16)"],
      // Only in state_dict: load_state_dict's dict literal is left alone.
      ["DropStateDictKey", 14, 'sd = {"master": self.master}'],
      ["DropStateDictKey", 14, 'sd = {"step": self.steps}'],
      ["DropStateDictKey", 15, "pass"],
      ["SwapArguments", 11, "dist.send(src, dst)"],
    ]);
    // A removed collective is a RemoveCollective mutant, not also a RemoveStatement one.
    expect(mutants.filter((m) => m.operator === "probegate/RemoveStatement").map((m) => m.line)).toEqual([9, 10, 14, 16, 19]);
    // Every mutant compiles and differs from the source.
    for (const m of mutants) expect(m.source).not.toBe(SNIPPET);
    expect(generate(SNIPPET, [8]).mutants.every((m) => m.line === 8)).toBe(true);
  });

  it("keeps the value-keeping time, memory and traffic operators to a gate's set, and they keep every value", () => {
    const source = "import torch\nimport torch.distributed as dist\n\n\ndef step(t):\n    dist.all_reduce(t)\n    x = t * 2\n    return x, t\n";
    const resource = ["probegate/ExtraPass", "probegate/ElementLoop", "probegate/GrowingCache", "probegate/RetainCopies", "probegate/ExtraCollective"];
    expect(generate(source).mutants.filter((m) => resource.includes(m.operator))).toEqual([]);
    const gate = generate(source, undefined, "gate").mutants.filter((m) => resource.includes(m.operator));
    // `return x, t` returns names: no extra pass to make, but a loop over, a cache of and copies of both tensors.
    expect(gate.map((m) => `${m.operator}@${m.line}`)).toEqual(["probegate/ElementLoop@8", "probegate/GrowingCache@8", "probegate/RetainCopies@8", "probegate/ExtraCollective@6"]);
    const check = [
      "import sys, torch, torch.distributed as dist",
      "dist.init_process_group('gloo', init_method='tcp://127.0.0.1:' + sys.argv[1], rank=0, world_size=1)",
      "for i, src in enumerate(__import__('json').load(sys.stdin)):",
      "    g = {}; exec(src, g); t = torch.arange(6.0)",
      "    for _ in range(3): x, y = g['step'](t.clone())",
      "    assert torch.equal(x, torch.arange(6.0) * 2) and torch.equal(y, torch.arange(6.0)), i",
      "    print(len(g.get('_probegate_kept', [])), len(g.get('_probegate_scratch', [])))",
    ].join("\n");
    const port = String(20000 + Math.floor(Math.random() * 20000));
    const out = execFileSync("/usr/bin/python3", ["-c", check, port], { input: JSON.stringify(gate.map((m) => m.source)), encoding: "utf8" });
    // Same values on every call; the cache grows by a call's result each call, the copies stay at 4 a tensor.
    expect(out.trim().split("\n")).toEqual(["0 0", "3 0", "0 8", "0 0"]);
  });
});

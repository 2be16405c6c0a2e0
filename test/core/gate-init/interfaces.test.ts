import { describe, expect, it } from "vitest";
import { publicInterface } from "../../../src/core/gate-init/interfaces.js";

describe("publicInterface: a module's public functions and classes, read statically", () => {
  it("gives top-level defs and classes with signatures as written, public methods, decorators; no private names or nested defs", () => {
    const src = [
      '"""def not_this(): pass"""',
      "import torch",
      "",
      "def all_reduce_sum(tensor: torch.Tensor,",
      "                   group=None,  # the default group",
      "                   *, op: str = \"sum\",",
      "                   ) -> torch.Tensor:",
      "    def inner(x):",
      "        return x",
      "    return tensor",
      "",
      "async def fetch(url, timeout=3.0): return url",
      "",
      "def _private(x):",
      "    pass",
      "",
      "@dataclass(frozen=True)",
      "class Bucket(Base, metaclass=Meta):",
      '    """A bucket."""',
      "    size: int = 0",
      "    def __init__(self, size: int):",
      "        self.size = size",
      "    @property",
      "    def bytes(self) -> int:",
      "        return self.size * 4",
      "    def _grow(self):",
      "        pass",
      "    def __repr__(self):",
      "        return ''",
      "",
      "class _Hidden:",
      "    def visible(self): pass",
      "",
      "if True:",
      "    def conditional(): pass",
    ].join("\n");
    const defs = publicInterface(src);
    expect(defs.map((d) => [d.kind, d.name, d.line, d.signature, d.decorators])).toEqual([
      ["function", "all_reduce_sum", 4, 'def all_reduce_sum(tensor: torch.Tensor, group=None, *, op: str = "sum") -> torch.Tensor', []],
      ["function", "fetch", 12, "async def fetch(url, timeout=3.0)", []],
      ["class", "Bucket", 18, "class Bucket(Base, metaclass=Meta)", ["dataclass(frozen=True)"]],
    ]);
    expect(defs[2]?.methods.map((m) => [m.name, m.signature, m.decorators])).toEqual([
      ["__init__", "def __init__(self, size: int)", []],
      ["bytes", "def bytes(self) -> int", ["property"]],
    ]);
  });

  it("reads a class without bases and a one-line body", () => {
    expect(publicInterface("class Plain:\n    pass\nclass Gen[T](Base): x = 1\n").map((d) => [d.signature, d.methods.length])).toEqual([
      ["class Plain", 0],
      ["class Gen[T](Base)", 0],
    ]);
  });
});

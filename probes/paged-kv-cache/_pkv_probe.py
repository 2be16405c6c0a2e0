"""Shared helpers of the paged-kv-cache probes: the package's stated names, failures located at the
submission's code, and a random cache workload whose every read is checked against what was written."""
import importlib

import torch

from probegate_probe import ProbeFailure, locate, rng


def api(name):
    module = importlib.import_module("pagedkv")
    value = getattr(module, name, None)
    if value is None:
        raise ProbeFailure(f"`pagedkv` does not export {name}; the issue asks for "
                           f"`from pagedkv import {name}`", location=locate(module))
    return value


def expect(condition, message, where, **measured):
    if not condition:
        raise ProbeFailure(message, location=locate(where), measured=measured or None)


def ceil_div(a, b):
    return -(-a // b)


class Workload:
    """Random cache calls (drawn sizes and seed) with every read checked against what was written."""

    def __init__(self, cache_cls, config, pool, bs):
        self.pool, self.bs = pool, bs
        self.cache = cache_cls(config, pool, bs)
        self.cache_cls, self.config = cache_cls, config
        self.gen = torch.Generator().manual_seed(rng("workload-tensors").randrange(1 << 30))
        self.rnd = rng("workload")
        self.history, self.next_id, self.ops = {}, 0, []

    def upper_blocks(self, extra=()):
        """Blocks a correct manager can need at most: every table counted as if nothing were shared."""
        lens = {s: len(h[0]) for s, h in self.history.items()}
        for s in extra:
            lens[s] += 1
        return sum(ceil_div(n, self.bs) for n in lens.values())

    def add(self, seq_id=None):
        seq_id = self.next_id if seq_id is None else seq_id
        self.next_id = max(self.next_id, seq_id + 1)
        self.cache.add_sequence(seq_id)
        self.history[seq_id] = [[] for _ in range(self.config.num_layers)]
        self.ops.append(f"add {seq_id}")
        return seq_id

    def feed(self, seq_ids):
        if not seq_ids or self.upper_blocks(seq_ids) > self.pool:
            return False
        self.cache.append_token(seq_ids)
        heads, dim = self.config.num_heads, self.config.head_dim
        for layer in range(self.config.num_layers):
            k = torch.randn(len(seq_ids), heads, dim, generator=self.gen)
            v = torch.randn(len(seq_ids), heads, dim, generator=self.gen)
            self.cache.write(layer, seq_ids, k, v)
            for i, s in enumerate(seq_ids):
                self.history[s][layer].append((k[i], v[i]))
        self.ops.append(f"append {seq_ids}")
        return True

    def fork(self, parent):
        child = self.next_id
        self.next_id += 1
        self.cache.fork(parent, child)
        self.history[child] = [list(h) for h in self.history[parent]]
        self.ops.append(f"fork {parent}->{child}")
        return child

    def free(self, seq_id):
        self.cache.free(seq_id)
        del self.history[seq_id]
        self.ops.append(f"free {seq_id}")

    def verify(self, when):
        for s, layers in self.history.items():
            for layer, items in enumerate(layers if layers[0] else []):  # the model never reads an empty history
                keys, values = self.cache.read(layer, s)
                ok = keys.shape[0] == len(items)
                if ok and items:
                    ok = (torch.equal(keys, torch.stack([k for k, _ in items]))
                          and torch.equal(values, torch.stack([v for _, v in items])))
                if not ok:
                    raise ProbeFailure(
                        f"{when}: sequence {s}, layer {layer} reads back keys/values that differ from what was "
                        f"written to it ({len(items)} tokens; block size {self.bs}, {self.pool} blocks; last calls: "
                        f"{'; '.join(self.ops[-6:])}): a write, fork or free changed another sequence's history",
                        location=locate(self.cache_cls.read), measured={"sequence": s, "tokens": len(items)})

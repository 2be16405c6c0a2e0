"""Helpers shared by the sharded-optimizer probes. Nothing here imports the submission.

Gradients are small multiples of 2**-8, so their sum over ranks is exact in any order: the reference
below does not depend on how a submission orders its reduction.

Sizes and hyperparameters are drawn per evaluation (task.yml `params:`, read with `param()`), so a
submission tuned to the sizes of the official tests or of any one probe run is still exercised
elsewhere in the range the prompt allows. The defaults are what a probe run by hand uses.
"""
# PROBEGATE-CANARY-SHARDED-SHARED-5c81e0d2
import ctypes
import gc
import math
import types

import torch

from probegate_probe import param, rng

# The flat total of the drawn shapes is ≡ 1 mod 12 = lcm(2, 3, 4): never a multiple of any world
# size the probes run at, so every run pads the last shard (the prompt: "their total size need not
# be divisible by the world size").
UNEVEN_MODULUS = 12


def drawn_hyper():
    """Adam hyperparameters drawn per evaluation, none of them the prompt's defaults."""
    return {"lr": float(param("lr", 1e-2)), "betas": (float(param("beta1", 0.8)), float(param("beta2", 0.99))),
            "eps": float(param("eps", 1e-6)), "weight_decay": float(param("weight_decay", 0.01))}


def drawn_shapes(salt):
    """Weights and biases of an MLP of drawn depth and widths, plus one short tensor that makes the
    flat total ≡ 1 (mod UNEVEN_MODULUS). ``salt`` gives each probe its own widths."""
    layers, width = int(param("layers", 3)), int(param("width", 37))
    r = rng(f"shapes:{salt}")
    dims = [r.randint(3, width) for _ in range(layers + 1)]
    shapes = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:]):
        shapes += [(fan_out, fan_in), (fan_out,)]
    total = sum(torch.Size(s).numel() for s in shapes)
    shapes.append(((1 - total) % UNEVEN_MODULUS or UNEVEN_MODULUS,))
    return shapes


def numel(shapes):
    return sum(torch.Size(s).numel() for s in shapes)


def make_params(shapes, seed, device):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).to(device).requires_grad_() for s in shapes]


def local_grads(shapes, rank, step, device):
    g = torch.Generator().manual_seed(7919 * (step + 1) + rank)
    # Ranks disagree in sign now and then, so the averaged gradient differs from any local one.
    return [(torch.randint(-64, 65, s, generator=g).float() / 256.0).to(device) for s in shapes]


def averaged_grads(shapes, ranks, step, device):
    """The mean over ``ranks`` (global ranks) of their local gradients at ``step``."""
    total = [torch.zeros(s, device=device) for s in shapes]
    for r in ranks:
        for t, g in zip(total, local_grads(shapes, r, step, device)):
            t.add_(g)
    return [t / len(ranks) for t in total]


def reference_adam(params, shapes, ranks, steps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    """Plain Adam on the gradients averaged over ``ranks`` (torch.optim.Adam's formula, L2 weight
    decay), written out here; the defaults are the prompt's."""
    params = [p.detach().clone() for p in params]
    exp_avg = [torch.zeros_like(p) for p in params]
    exp_avg_sq = [torch.zeros_like(p) for p in params]
    beta1, beta2 = betas
    for step in range(steps):
        grads = averaged_grads(shapes, ranks, step, params[0].device)
        t = step + 1
        for p, g, m, v in zip(params, grads, exp_avg, exp_avg_sq):
            g = g + weight_decay * p
            m.mul_(beta1).add_(g, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / math.sqrt(1 - beta2 ** t)).add_(eps)
            p.addcdiv_(m, denom, value=-lr / (1 - beta1 ** t))
    return params


def mismatch(params, expected, atol, rtol):
    """The worst element of ``params`` against ``expected``: {abs_diff, param, index, bad_elements}."""
    worst = {"abs_diff": 0.0, "param": None, "index": None, "bad_elements": 0}
    for i, (p, want) in enumerate(zip(params, expected)):
        diff = (p.detach().cpu() - want.cpu()).abs().reshape(-1)
        bad = diff > atol + rtol * want.cpu().abs().reshape(-1)
        worst["bad_elements"] += int(bad.sum())
        if diff.numel() and float(diff.max()) > worst["abs_diff"]:
            worst.update(abs_diff=float(diff.max()), param=i, index=int(diff.argmax()))
    return worst


def set_grads(params, grads):
    for p, g in zip(params, grads):
        p.grad = g.clone()


def resident_bytes(device):
    """Memory this process holds now, after a garbage collection: the CUDA allocator's count, or
    anonymous resident memory on CPU (RssAnon; file-backed pages are library code that the first
    call of each kernel pages in). Free heap memory is handed back first (malloc_trim), so memory
    freed before the measurement cannot be returned during it and offset what it measures."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return torch.cuda.memory_allocated(device)
    ctypes.CDLL(None).malloc_trim(0)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def one_thread_on_cpu(device):
    """Ranks share the machine's cores: more intra-op threads per rank only oversubscribe them."""
    if device.type == "cpu":
        torch.set_num_threads(1)
    return device


def unmap_freed_blocks(device):
    """Make glibc return every block of 64 KiB or more to the kernel when it is freed.

    Otherwise freed full-size buffers may stay in malloc's heap and read as retained memory."""
    if device.type == "cpu":
        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 64 * 1024)
        libc.mallopt(m_trim_threshold, 64 * 1024)


_NOT_STATE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _storage(t):
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr(), storage.nbytes()


def held_tensor_bytes(root, exclude=(), max_objects=100000):
    """Bytes of the distinct tensor storages reachable from ``root`` through attributes, dicts,
    lists, tuples and sets, leaving out the storages of the tensors in ``exclude`` (the parameters
    and their gradients, which the optimizer references but does not own)."""
    excluded = {_storage(t)[0] for t in exclude if t is not None}
    seen_objects, storages = set(), {}
    todo = [root]
    while todo and len(seen_objects) < max_objects:
        obj = todo.pop()
        if id(obj) in seen_objects:
            continue
        seen_objects.add(id(obj))
        if isinstance(obj, torch.Tensor):
            ptr, nbytes = _storage(obj)
            if ptr not in excluded:
                storages[ptr] = max(nbytes, storages.get(ptr, 0))
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(obj)
        elif not isinstance(obj, _NOT_STATE):
            try:
                todo.extend(vars(obj).values())
            except TypeError:  # no __dict__ (builtins, process groups)
                pass
    return sum(storages.values())

"""Helpers shared by the sharded-optimizer probes. Nothing here imports the submission.

Gradients are small multiples of 2**-8, so their sum over ranks is exact in any order: the reference
below does not depend on how a submission orders its reduction.
"""
import ctypes
import gc
import math
import types

import torch

# Odd sizes on purpose: the flat total is not a multiple of the world size.
SHAPES = [(37, 19), (19,), (23, 37), (23,), (5, 23), (4,)]  # 1715 elements
HYPER = {"lr": 1e-2, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.01}


def make_params(shapes, seed, device):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).to(device).requires_grad_() for s in shapes]


def local_grads(shapes, rank, step, device):
    g = torch.Generator().manual_seed(7919 * (step + 1) + rank)
    # Ranks disagree in sign now and then, so the averaged gradient differs from any local one.
    return [(torch.randint(-64, 65, s, generator=g).float() / 256.0).to(device) for s in shapes]


def averaged_grads(shapes, world_size, step, device):
    total = [torch.zeros(s, device=device) for s in shapes]
    for r in range(world_size):
        for t, g in zip(total, local_grads(shapes, r, step, device)):
            t.add_(g)
    return [t / world_size for t in total]


def reference_adam(params, shapes, world_size, steps, lr, betas, eps, weight_decay):
    """Plain Adam on the averaged gradients (torch.optim.Adam's formula), written out here."""
    params = [p.detach().clone() for p in params]
    exp_avg = [torch.zeros_like(p) for p in params]
    exp_avg_sq = [torch.zeros_like(p) for p in params]
    beta1, beta2 = betas
    for step in range(steps):
        grads = averaged_grads(shapes, world_size, step, params[0].device)
        t = step + 1
        for p, g, m, v in zip(params, grads, exp_avg, exp_avg_sq):
            g = g + weight_decay * p
            m.mul_(beta1).add_(g, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / math.sqrt(1 - beta2 ** t)).add_(eps)
            p.addcdiv_(m, denom, value=-lr / (1 - beta1 ** t))
    return params


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

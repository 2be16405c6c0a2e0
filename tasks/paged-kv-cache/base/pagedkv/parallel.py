"""Tensor-parallel helpers.

Every rank of the default process group is one tensor-parallel rank. Without an initialised
process group the code runs as a single rank, which keeps unit tests free of process spawning.
"""
import torch
import torch.distributed as dist


def tp_world_size() -> int:
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


def tp_rank() -> int:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return 0


def local_head_range(num_heads: int) -> "tuple[int, int]":
    """The [start, stop) range of attention heads this rank owns."""
    size = tp_world_size()
    if num_heads % size != 0:
        raise ValueError(f"num_heads={num_heads} is not divisible by tensor-parallel size {size}")
    per_rank = num_heads // size
    start = tp_rank() * per_rank
    return start, start + per_rank


def default_device() -> torch.device:
    # NCCL needs each rank's tensors on its own GPU; the caller picks it with torch.cuda.set_device.
    if dist.is_available() and dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """Sum partial results over tensor-parallel ranks, in place."""
    if tp_world_size() > 1:
        dist.all_reduce(tensor)
    return tensor

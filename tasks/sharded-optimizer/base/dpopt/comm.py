"""Collectives on flat 1-D tensors that behave the same on gloo and NCCL, torch 1.13 and 2.x.

gloo has no reduce_scatter (and torch 1.13's gloo no tensor all-gather), so those fall back to
collectives gloo does have. The fallbacks move the same bytes per rank as the native ops:
(n-1)/n of the full tensor each.
"""
import torch
import torch.distributed as dist


def _is_nccl(group):
    return dist.get_backend(group) == "nccl"


def _check_sizes(full, shard, world_size, what):
    if full.dim() != 1 or shard.dim() != 1:
        raise ValueError(f"{what} works on 1-D tensors")
    if full.numel() != shard.numel() * world_size:
        raise ValueError(
            f"{what}: the full tensor has {full.numel()} elements, expected "
            f"{world_size} x {shard.numel()} (pad it to a multiple of the world size)"
        )


def reduce_scatter(output, input, group=None):
    """Sum ``input`` (1-D, world_size * k elements) over ranks; rank r gets elements [r*k, (r+1)*k)
    of the sum in ``output`` (1-D, k elements). Like dist.reduce_scatter with op SUM."""
    world_size = dist.get_world_size(group)
    _check_sizes(input, output, world_size, "reduce_scatter")
    if world_size == 1:
        output.copy_(input)
        return output
    if _is_nccl(group):
        if hasattr(dist, "reduce_scatter_tensor"):
            dist.reduce_scatter_tensor(output, input, group=group)
        else:
            dist._reduce_scatter_base(output, input, group=group)
        return output
    # all_to_all sends chunk j to rank j; what arrives is every rank's copy of our chunk, summed here.
    received = torch.empty_like(input)
    dist.all_to_all_single(received, input, group=group)
    torch.sum(received.view(world_size, -1), dim=0, out=output)
    return output


def all_gather(output, input, group=None):
    """Concatenate every rank's ``input`` (1-D, k elements) into ``output`` (1-D, world_size * k),
    rank order. Like dist.all_gather_into_tensor."""
    world_size = dist.get_world_size(group)
    _check_sizes(output, input, world_size, "all_gather")
    if world_size == 1:
        output.copy_(input)
        return output
    if _is_nccl(group):
        if hasattr(dist, "all_gather_into_tensor"):
            dist.all_gather_into_tensor(output, input, group=group)
        else:
            dist._all_gather_base(output, input, group=group)
        return output
    # Contiguous chunks of a 1-D tensor are views, so gloo writes straight into ``output``.
    dist.all_gather(list(output.chunk(world_size)), input, group=group)
    return output


def all_reduce_mean_(tensor, group=None):
    """Average ``tensor`` over the ranks of ``group`` in place."""
    world_size = dist.get_world_size(group)
    if world_size > 1:
        dist.all_reduce(tensor, group=group)
        tensor.div_(world_size)
    return tensor

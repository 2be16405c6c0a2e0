"""Who does what in the world: one trainer rank, every other rank rolls out."""
from typing import List

import torch.distributed as dist

TRAINER_RANK = 0


def is_trainer(rank: int, trainer_rank: int = TRAINER_RANK) -> bool:
    return rank == trainer_rank


def rollout_ranks(world_size: int = -1, trainer_rank: int = TRAINER_RANK) -> List[int]:
    if world_size < 0:
        world_size = dist.get_world_size()
    return [r for r in range(world_size) if r != trainer_rank]

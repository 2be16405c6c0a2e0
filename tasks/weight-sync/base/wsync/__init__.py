"""wsync: a tiny RL loop where one trainer rank feeds rollout ranks fresh policy weights."""
from .policy import PolicyNet
from .roles import TRAINER_RANK, is_trainer, rollout_ranks
from .rollout import RolloutWorker, Trajectory
from .sync import sync_weights
from .trainer import Trainer

__all__ = [
    "PolicyNet",
    "RolloutWorker",
    "TRAINER_RANK",
    "Trainer",
    "Trajectory",
    "is_trainer",
    "rollout_ranks",
    "sync_weights",
]

"""dpopt: a small data-parallel training package (model, collectives, Adam, trainer, checkpoints)."""
from dpopt.checkpoint import load_checkpoint, save_checkpoint
from dpopt.comm import all_gather, reduce_scatter
from dpopt.model import MLP
from dpopt.optim import Adam, adam_update_
from dpopt.trainer import DataParallelTrainer

__all__ = [
    "Adam",
    "DataParallelTrainer",
    "MLP",
    "adam_update_",
    "all_gather",
    "load_checkpoint",
    "reduce_scatter",
    "save_checkpoint",
]

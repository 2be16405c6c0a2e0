from .cache import KVCache
from .generate import generate
from .model import ModelConfig, TinyDecoder, init_full_weights
from .parallel import local_head_range, tp_rank, tp_world_size

__all__ = ["KVCache", "ModelConfig", "TinyDecoder", "generate", "init_full_weights",
           "local_head_range", "tp_rank", "tp_world_size"]

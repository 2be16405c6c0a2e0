# Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.

from .collectives import multimem_all_gather, multimem_reduce_scatter
from .fused_collectives import fused_multimem_rs_add_norm_ag

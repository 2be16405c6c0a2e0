# SPDX-License-Identifier: Apache-2.0

from .interfaces import (HasInnerState, SupportsLoRA, SupportsMultiModal,
                         SupportsPP, SupportsV0Only, has_inner_state,
                         supports_lora, supports_multimodal, supports_pp,
                         supports_v0_only)
from .interfaces_base import (VllmModelForPooling, VllmModelForTextGeneration,
                              is_pooling_model, is_text_generation_model)
from .registry import ModelRegistry

__all__ = [
    "ModelRegistry",
    "VllmModelForPooling",
    "is_pooling_model",
    "VllmModelForTextGeneration",
    "is_text_generation_model",
    "HasInnerState",
    "has_inner_state",
    "SupportsLoRA",
    "supports_lora",
    "SupportsMultiModal",
    "supports_multimodal",
    "SupportsPP",
    "supports_pp",
    "SupportsV0Only",
    "supports_v0_only",
]

# SPDX-License-Identifier: Apache-2.0

from vllm.lora.punica_wrapper.punica_base import PunicaWrapperBase
from vllm.lora.punica_wrapper.punica_selector import get_punica_wrapper

__all__ = [
    "PunicaWrapperBase",
    "get_punica_wrapper",
]

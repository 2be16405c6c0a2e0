# SPDX-License-Identifier: Apache-2.0

from vllm.logging_utils.formatter import NewLineFormatter

__all__ = [
    "NewLineFormatter",
]

# SPDX-License-Identifier: Apache-2.0

from vllm.triton_utils.importing import HAS_TRITON

__all__ = ["HAS_TRITON"]

# SPDX-License-Identifier: Apache-2.0

from .mistral import (MistralTokenizer, maybe_serialize_tool_calls,
                      truncate_tool_call_ids, validate_request_params)

__all__ = [
    "MistralTokenizer", "maybe_serialize_tool_calls", "truncate_tool_call_ids",
    "validate_request_params"
]

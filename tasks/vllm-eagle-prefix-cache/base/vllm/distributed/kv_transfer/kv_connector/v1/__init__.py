# SPDX-License-Identifier: Apache-2.0
from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1, KVConnectorRole)

__all__ = [
    "KVConnectorRole",
    "KVConnectorBase_V1",
]

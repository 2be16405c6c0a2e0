# Copyright (c) 2022-2023, NVIDIA CORPORATION.  All rights reserved.

from .core import check_is_distributed_checkpoint
from .mapping import LocalNonpersistentObject, ShardedObject, ShardedTensor
from .serialization import (
    load,
    load_common_state_dict,
    load_content_metadata,
    load_plain_tensors,
    load_tensors_metadata,
    remove_sharded_tensors,
    save,
)

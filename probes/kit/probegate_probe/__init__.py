"""probegate_probe: the kit hidden probes import (protocol: docs/task-format.md)."""
from .emit import CATEGORIES, STATUSES, ProbeFailure, ProbeSkipped, RunnerBusy, check, emit
from .location import locate, workspace
from .ranks import RankError, backend, device_for_rank, run_ranks, world_size
from .memory import MemoryRecord, memory_record, peak_memory, peak_memory_caveat
from .timing import TimeRatio, time_ratio
from .signature import require_signature
from .state import assert_optimizer_state_equal, assert_state_equal
from .collectives import CollectiveCounter
from .params import param, params, rng, seed
from .record import MemoryOfRecord, TrafficRecord, memory_of_record, traffic_of_record


__all__ = [
    "emit", "check", "ProbeFailure", "ProbeSkipped", "RunnerBusy", "run_ranks", "RankError", "backend",
    "device_for_rank", "world_size", "CollectiveCounter", "peak_memory", "peak_memory_caveat",
    "memory_record", "MemoryRecord",
    "time_ratio", "TimeRatio", "require_signature", "assert_state_equal",
    "assert_optimizer_state_equal", "locate", "workspace", "CATEGORIES", "STATUSES",
    "param", "params", "seed", "rng", "traffic_of_record", "TrafficRecord", "memory_of_record", "MemoryOfRecord",
]

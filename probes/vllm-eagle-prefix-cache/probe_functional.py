"""Hidden probe of vllm-eagle-prefix-cache. PROBEGATE-SKELETON: written by probegate task import; replace it.

A probe checks what the requirement states and the official tests leave unchecked (docs/task-format.md):
import the submission from $PROBEGATE_WORKSPACE, measure, and emit one check per finding.
"""
# PROBEGATE-CANARY-9bf2edc2
from probegate_probe import emit

emit("not-written", "functional", "error", "this task's hidden probe is still the skeleton probegate task import wrote")

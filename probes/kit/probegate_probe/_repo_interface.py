"""`interface-kept` of the generated probe: each gated module's public functions and classes at the base
are still at the head, taking the parameters they took (positional ones in their places)."""
from __future__ import annotations

import os

from . import _gate_tree
from .emit import emit


def check_interfaces(gated, trees, requirements=None):
    """`interface-kept`: every public function and class of the base's gated modules is still at the head,
    taking the parameters it took (positional ones in their places)."""
    base, head = trees["base"], trees["head"]
    modules = [p for p in sorted(_gate_tree.files(base)) if p.endswith(".py") and _gate_tree.matches(gated, p)
               and not _gate_tree.TEST_FILE.search(p)]
    problems, where, names = [], None, 0
    for p in modules:
        before = _gate_tree.public_interface(os.path.join(base, p))
        if not before:
            continue
        names += len(before)
        after = _gate_tree.public_interface(os.path.join(head, p)) if os.path.exists(os.path.join(head, p)) else {}
        if after is None:
            problems.append(f"{p} does not parse at the head")
            where = where or {"path": p, "line": 1}
            continue
        for name, (line, params) in before.items():
            if name not in after:
                problems.append(f"{p}: {name} is gone")
                where = where or {"path": p, "line": 1}
                continue
            why = _gate_tree.interface_changes(params, after[name][1])
            if why:
                problems.append(f"{p}: {name}: {why}")
                where = where or {"path": p, "line": after[name][0]}
    measured = {"modules": len(modules), "public_names_at_base": names, "problems": len(problems)}
    if problems:
        more = f" and {len(problems) - 8} more" if len(problems) > 8 else ""
        return emit("interface-kept", "structure", "failed", f"the head changed the gated modules' public interface: {'; '.join(problems[:8])}{more}", where, measured, requirements)
    return emit("interface-kept", "structure", "passed", f"all {names} public names of {len(modules)} gated modules are kept, with their parameters", None, measured, requirements)

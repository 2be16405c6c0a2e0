"""pytest plugin of `probegate task import --exclude`: deselects test ids holding any given string.

`--exclude` names tests this kind of runner cannot run (two ranks, a GPU, a data set). They are
deselected at collection, so they never run (a test that hangs or crashes the runner cannot spoil
the import), and the deselected ids are written to a file so the import can say which it left out.
A file that cannot be collected is not deselected: pytest reports it as a collection error.

Environment: PROBEGATE_IMPORT_EXCLUDE (a JSON list of strings), PROBEGATE_IMPORT_DESELECTED (the file
to write the deselected node ids to, one a line).
"""
import json
import os


def pytest_collection_modifyitems(config, items):
    needles = json.loads(os.environ.get("PROBEGATE_IMPORT_EXCLUDE", "[]"))
    out = os.environ.get("PROBEGATE_IMPORT_DESELECTED")
    kept, dropped = [], []
    for item in items:
        (dropped if any(n in item.nodeid for n in needles) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.writelines(f"{item.nodeid}\n" for item in dropped)

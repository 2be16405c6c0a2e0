"""Which of a gate's selected tests are timed in interleaved repetitions, and the time check of the others.

Repeating a test costs its whole run each time: a test that starts gloo ranks pays each rank's start-up
(a torch import is seconds of CPU) in every repetition, and the timed round runs every test
2 warm-ups + `repetitions` times a side. So only tests short enough are repeated:
- a test whose base run (the faster of its two metered runs) took at most `timed_test_s`;
- in collection order, while the base time of the tests taken so far stays within `timed_session_s`.
The choice reads the base's figures only: a head cannot move its own test out of the timed set by
being slow there.

A test past either limit still gets a time check, from the two metered runs a side: it fails when
the head's faster run took more than `gross_margin` × the base's slower one and at least
`gross_extra_s` more. Its start-up is in every run, so only a large slowdown can be told from noise.
"""
from __future__ import annotations

from .emit import emit

TIMED_TEST_S = 5.0
TIMED_SESSION_S = 60.0
GROSS_MARGIN = 3.0
GROSS_EXTRA_S = 5.0


def limits(time_checks: dict) -> dict:
    """The limits of CHECKS["time"] (a generated gate's data), with the defaults above."""
    return {"timed_test_s": float(time_checks.get("timed_test_s", TIMED_TEST_S)),
            "timed_session_s": float(time_checks.get("timed_session_s", TIMED_SESSION_S)),
            "gross_margin": float(time_checks.get("gross_margin", GROSS_MARGIN)),
            "gross_extra_s": float(time_checks.get("gross_extra_s", GROSS_EXTRA_S))}


def split(nodeids, base, head, lim):
    """(timed nodeids, {nodeid: why it is not repeated}) of the tests that passed on both sides' metered runs."""
    timed, untimed, total = [], {}, 0.0
    for nodeid in nodeids:
        b, h = base.get(nodeid), head.get(nodeid)
        if not b or not h or b["outcome"] != "passed" or h["outcome"] != "passed" or not b["metered_s"]:
            continue
        seconds = min(b["metered_s"])
        if seconds > lim["timed_test_s"]:
            untimed[nodeid] = f"its base run took {seconds:.1f} s, past the {lim['timed_test_s']:g} s a repeated test may take (timed_test_s)"
        elif total + seconds > lim["timed_session_s"]:
            untimed[nodeid] = (f"the tests before it already take {total:.1f} s a repetition at the base, and the timed tests "
                               f"together may take {lim['timed_session_s']:g} s (timed_session_s)")
        else:
            timed.append(nodeid)
            total += seconds
    return timed, untimed


def check_gross(id, nodeid, b, h, why, lim, requirements=None, location=None):
    """`test-time.<test>` of a test that was not repeated: its metered runs, side against side."""
    base_s, head_s = max(b["metered_s"]), min(h["metered_s"])
    ratio = head_s / base_s if base_s > 0 else float("inf")
    measured = {"base_slower_seconds": round(base_s, 3), "head_faster_seconds": round(head_s, 3), "base_runs": len(b["metered_s"]),
                "head_runs": len(h["metered_s"]), "ratio": round(ratio, 3), "gross_margin": lim["gross_margin"], "repeated": False}
    runs = f"{len(h['metered_s'])} metered run{'s' if len(h['metered_s']) != 1 else ''} a side"
    if ratio > lim["gross_margin"] and head_s - base_s >= lim["gross_extra_s"]:
        return emit(id, "time", "failed", f"{nodeid} took {head_s:.1f} s at the head against {base_s:.1f} s at the base ({ratio:.2f}×, "
                    f"the faster head run against the slower base run of {runs}), past the {lim['gross_margin']:g}× a test this long "
                    f"is judged by: it is not repeated because {why}", location, measured, requirements)
    return emit(id, "time", "passed", f"{nodeid}: {head_s:.1f} s at the head, {base_s:.1f} s at the base ({ratio:.2f}×, {runs}); not repeated "
                f"because {why}, so only a slowdown past {lim['gross_margin']:g}× (and {lim['gross_extra_s']:g} s) would fail it",
                location, measured, requirements)

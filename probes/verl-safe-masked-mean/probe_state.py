"""State and structure checks of masked_sum / masked_mean: the caller's tensors are left as they were,
result dtypes are those the base code gives (no casting up or down), and the interface callers use
(`mask=`, `axis=` by keyword) is kept. The official test looks at none of these."""
# PROBEGATE-CANARY-MASKED-STATE-0e8f3b62
import inspect

import torch

import _masked_probe as M
from probegate_probe import ProbeFailure, assert_state_equal, check, locate

VALUE_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def expected_dtypes():
    """{(value dtype, mask dtype, axis): (sum dtype, mean dtype)} as the base code's formulas give."""
    out = {}
    for vd in VALUE_DTYPES:
        for mname, md in M.MASK_DTYPES.items():
            v = torch.ones(3, 4, dtype=vd)
            m = torch.ones(3, 4, dtype=md)
            for axis in (None, -1):
                s = (v * m).sum() if axis is None else (v * m).sum(axis)
                d = (m.sum() if axis is None else m.sum(axis)) + 1e-8
                out[(vd, mname, axis)] = (s.dtype, (s / d).dtype)
    return out


def main():
    rows, cols = M.shape_2d()
    g = M.generator("state")
    want_dtypes = expected_dtypes()
    inputs = []
    for kind in M.MASK_DTYPES:
        for dtype in (torch.float32, torch.bfloat16):
            clean = torch.randn(rows, cols, generator=g).to(dtype)
            m = M.random_mask(g, (rows, cols), kind, weighted=kind == "float32")
            inputs.append((kind, dtype, M.dirty_copy(clean, m, "mixed", g), m))
    snapshots = [(v.clone(), m.clone()) for _, _, v, m in inputs]
    tf = M.import_tf()

    with check("inputs-untouched", "state", requirements=["inputs-untouched"]):
        for (kind, dtype, v, m), (v0, m0) in zip(inputs, snapshots):
            for fn_name, call in (
                ("masked_sum", lambda: tf.masked_sum(v, m, -1)),
                ("masked_sum", lambda: tf.masked_sum(v, m, None)),
                ("masked_mean", lambda: tf.masked_mean(v, m, None)),
                ("masked_mean", lambda: tf.masked_mean(v, m, -1)),
                ("masked_var", lambda: tf.masked_var(v, m)),
                ("masked_whiten", lambda: tf.masked_whiten(v, m)),
            ):
                call()
                for name, now, before in (("values", v, v0), ("mask", m, m0)):
                    try:
                        assert_state_equal(now, before, path=name)
                    except ProbeFailure as e:
                        raise ProbeFailure("%s(%s values, %s mask) modified the caller's %s: %s" % (fn_name, str(dtype)[6:], kind, name, e.message), location=M.where_is(tf, fn_name))

    with check("result-dtype", "state", requirements=["dtypes"]):
        for (vd, mname, axis), (sum_dt, mean_dt) in want_dtypes.items():
            v = torch.randn(rows, cols, generator=g).to(vd)
            m = M.random_mask(g, (rows, cols), mname)
            for fn_name, want in (("masked_sum", sum_dt), ("masked_mean", mean_dt)):
                got = getattr(tf, fn_name)(v, m, axis)
                got_dt = getattr(got, "dtype", type(got).__name__)
                if got_dt != want:
                    raise ProbeFailure("%s(%s values, %s mask, %s) returns %s, expected %s as the base code gives (no casting up or down)" % (fn_name, str(vd)[6:], mname, M.axis_name(axis), got_dt, want), location=M.where_is(tf, fn_name))

    with check("interface-kept", "structure", requirements=["interface"]):
        wanted = {
            "masked_sum": [("values", None), ("mask", None), ("axis", None)],
            "masked_mean": [("values", None), ("mask", None), ("axis", None)],
            "masked_var": [("values", None), ("mask", None), ("unbiased", True)],
            "masked_whiten": [("values", None), ("mask", None), ("shift_mean", True)],
            "distributed_masked_mean": [("local_tensor", None), ("local_mask", None)],
        }
        for name, params in wanted.items():
            fn = getattr(tf, name, None)
            if not callable(fn):
                raise ProbeFailure("verl.utils.torch_functional.%s is missing" % name)
            sig = inspect.signature(fn)
            got = list(sig.parameters.values())
            names = [p.name for p in got]
            if names[: len(params)] != [p for p, _ in params]:
                raise ProbeFailure("%s%s: expected the parameters (%s)" % (name, sig, ", ".join(p for p, _ in params)), location=locate(fn))
            for p, default in params:
                if default is not None or p == "axis":
                    if got[names.index(p)].default != default:
                        raise ProbeFailure("%s%s: %s must default to %r" % (name, sig, p, default), location=locate(fn))
            extra = [q for q in got[len(params):] if q.default is inspect.Parameter.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)]
            if extra:
                raise ProbeFailure("%s%s: the extra parameter %s has no default, so existing callers break" % (name, sig, extra[0].name), location=locate(fn))
        v = torch.randn(rows, cols, generator=g)
        m = M.random_mask(g, (rows, cols), "bool")
        want = M.expect_mean(v, m, -1)
        M.compare(tf.masked_mean(v, mask=m, axis=-1), want, "masked_mean(values, mask=..., axis=-1)", torch.float32, cols, M.where_is(tf, "masked_mean"))
        M.compare(tf.masked_sum(values=v, mask=m, axis=-1), M.expect_sum(v, m, -1), "masked_sum(values=..., mask=..., axis=-1)", torch.float32, cols, M.where_is(tf, "masked_sum"))


if __name__ == "__main__":
    main()

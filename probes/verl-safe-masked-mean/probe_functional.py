"""Functional checks of masked_sum / masked_mean (and masked_var / masked_whiten built on them): NaN
and ±inf at masked-out positions for every axis, mask dtype and value dtype; float-weighted masks;
non-finite values the mask selects; rows that select nothing; gradients. The official test has one
1-d float32 tensor, an int mask, axis=None and NaN only, through masked_mean only."""
# PROBEGATE-CANARY-MASKED-FUNC-51d2aa07
import torch

import _masked_probe as M
from probegate_probe import ProbeFailure, check

F32, F64 = torch.float32, torch.float64


def outside_cases(g, rows, cols, dtypes):
    """(label, clean, dirty, mask, axis, dtype): every axis, mask dtype and kind of bad value."""
    cases = []
    for dtype in dtypes:
        for kind in M.MASK_DTYPES:
            for bad in ("nan", "+inf", "-inf", "mixed"):
                clean2 = torch.randn(rows, cols, generator=g, dtype=F64).to(dtype)
                mask2 = M.random_mask(g, (rows, cols), kind)
                dirty2 = M.dirty_copy(clean2, mask2, bad, g)
                for axis in (None, -1, 0):
                    cases.append(("%s values, %s mask, %s outside, %s" % (str(dtype)[6:], kind, bad, M.axis_name(axis)), clean2, dirty2, mask2, axis, dtype))
                clean3 = torch.randn(2, rows, cols, generator=g, dtype=F64).to(dtype)
                mask3 = M.random_mask(g, (2, rows, cols), kind)
                dirty3 = M.dirty_copy(clean3, mask3, bad, g)
                cases.append(("3-d %s values, %s mask, %s outside, axis=(1, 2)" % (str(dtype)[6:], kind, bad), clean3, dirty3, mask3, (1, 2), dtype))
    return cases


def run_outside(fn_name, expect, cases, tf):
    fn = getattr(tf, fn_name)
    for label, clean, dirty, mask, axis, dtype in cases:
        want = expect(clean, mask, axis)
        got = fn(dirty, mask, axis)
        n = clean.numel()
        M.compare(got, want, "%s with %s" % (fn_name, label), dtype, n, location=M.where_is(tf, fn_name))


def main():
    rows, cols = M.shape_2d()
    g = M.generator("functional")
    # Every input and expectation is built before the submission is imported.
    full = outside_cases(g, rows, cols, (F32, F64))
    half = [c for c in outside_cases(g, rows, cols, (torch.bfloat16, torch.float16)) if c[4] in (None, -1)]
    weighted = []
    for axis in (None, -1, 0):
        v = torch.randn(rows, cols, generator=g)
        m = M.random_mask(g, (rows, cols), "float32", weighted=True)
        weighted.append((v, m, axis, M.expect_sum(v, m, axis), M.expect_mean(v, m, axis)))
    # Small weights (a weighting mask need not reach 1 anywhere): the mean is then Σ v·m over a
    # denominator of the order of 1e-6, in which the stated + 1e-8 is a visible part. The values sit
    # away from 0 so that the mean is far from 0 and a relative difference shows in absolute terms.
    for axis in (None, -1):
        v = torch.randn(rows, cols, generator=g) + 2.0
        m = M.random_mask(g, (rows, cols), "float32", weighted=True) * 1e-7
        weighted.append((v, m, axis, M.expect_sum(v, m, axis), M.expect_mean(v, m, axis)))
    empty_v = torch.randn(rows, cols, generator=g)
    empty_m = M.random_mask(g, (rows, cols), "int64")
    empty_rows = sorted(M.rng("empty").sample(range(rows), max(1, rows // 3)))
    empty_m[empty_rows] = 0
    tf = M.import_tf()

    with check("outside-nonfinite-sum", "functional", requirements=["outside-ignored"]):
        run_outside("masked_sum", M.expect_sum, full, tf)
        run_outside("masked_sum", M.expect_sum, half, tf)

    with check("outside-nonfinite-mean", "functional", requirements=["outside-ignored"]):
        run_outside("masked_mean", M.expect_mean, full, tf)
        run_outside("masked_mean", M.expect_mean, half, tf)

    with check("weighted-mask", "functional", requirements=["sums-means"]):
        for v, m, axis, want_sum, want_mean in weighted:
            size = "small weights (sum %.3g)" % float(m.sum()) if float(m.max()) < 1e-3 else "weights in (0.1, 1]"
            label = "a float mask weighting the selected values, %s, %s" % (size, M.axis_name(axis))
            M.compare(tf.masked_sum(v, m, axis), want_sum, "masked_sum with " + label, F32, v.numel(), M.where_is(tf, "masked_sum"))
            M.compare(tf.masked_mean(v, m, axis), want_mean, "masked_mean with " + label, F32, v.numel(), M.where_is(tf, "masked_mean"))

    with check("selected-nonfinite-propagates", "functional", requirements=["inside-propagates"]):
        for bad, want_val in (("nan", float("nan")), ("+inf", float("inf")), ("-inf", float("-inf"))):
            v = torch.randn(rows, cols, generator=g)
            m = M.random_mask(g, (rows, cols), "bool")
            r = M.rng("inside-" + bad).randrange(rows)
            cols_sel = m[r].nonzero().reshape(-1).tolist()
            v = M.dirty_copy(v, m, "nan", g)  # masked-out positions hold NaN as well
            v[r, cols_sel[M.rng("col-" + bad).randrange(len(cols_sel))]] = M.BAD[bad]
            for fn_name in ("masked_sum", "masked_mean"):
                fn = getattr(tf, fn_name)
                loc = M.where_is(tf, fn_name)
                got = fn(v, m, None)
                if not isinstance(got, torch.Tensor) or got.numel() != 1:
                    raise ProbeFailure("%s(axis=None) returned %r, expected a 0-d tensor" % (fn_name, got), location=loc)
                got_v = float(got)
                same = (got_v != got_v) if want_val != want_val else got_v == want_val
                if not same:
                    raise ProbeFailure("%s with a %s at a position the mask selects (axis=None) gives %r, expected %r: a selected non-finite value must not be hidden" % (fn_name, bad, got_v, want_val), location=loc)
                row = fn(v, m, -1)
                got_r = float(row[r])
                same = (got_r != got_r) if want_val != want_val else got_r == want_val
                if not same:
                    raise ProbeFailure("%s(axis=-1) gives %r for the row holding a selected %s, expected %r" % (fn_name, got_r, bad, want_val), location=loc)

    with check("empty-selection-zero", "functional", requirements=["empty-zero"]):
        for fn_name in ("masked_sum", "masked_mean"):
            fn = getattr(tf, fn_name)
            loc = M.where_is(tf, fn_name)
            got = fn(empty_v, empty_m, -1)
            for r in empty_rows:
                if float(got[r]) != 0.0:
                    raise ProbeFailure("%s(axis=-1) gives %r for row %d, where the mask selects nothing; expected 0" % (fn_name, float(got[r]), r), location=loc)
            whole = fn(empty_v, torch.zeros_like(empty_m), None)
            if float(whole) != 0.0:
                raise ProbeFailure("%s(axis=None) gives %r for an all-zero mask, expected 0" % (fn_name, float(whole)), location=loc)

    with check("gradients-leaf", "functional", requirements=["gradients"]):
        for fn_name in ("masked_sum", "masked_mean"):
            for axis in (None, -1):
                clean = torch.randn(rows, cols, generator=g)
                m = M.random_mask(g, (rows, cols), "float32")
                leaf = M.dirty_copy(clean, m, "mixed", g).requires_grad_(True)
                out = getattr(tf, fn_name)(leaf, m, axis)
                backward(out.sum(), M.where_is(tf, fn_name))
                check_grad(leaf.grad, m, axis, fn_name == "masked_mean", "%s on a leaf that requires grad, %s" % (fn_name, M.axis_name(axis)), M.where_is(tf, fn_name))

    with check("gradients-through-op", "functional", requirements=["gradients"]):
        for fn_name in ("masked_sum", "masked_mean"):
            m = M.random_mask(g, (rows, cols), "int64")
            log_ratio = torch.randn(rows, cols, generator=g) * 0.1
            log_ratio[~m.bool()] = 1000.0  # exp overflows to inf at the padding
            log_ratio.requires_grad_(True)
            ratio = torch.exp(log_ratio)
            ratio.retain_grad()
            out = getattr(tf, fn_name)(ratio, m, -1)
            backward(out.sum(), M.where_is(tf, fn_name))
            check_grad(ratio.grad, m, -1, fn_name == "masked_mean", "%s of exp(log_ratio) (inf at the padding), axis=-1" % fn_name, M.where_is(tf, fn_name))

    with check("derived-var-whiten", "functional", requirements=["derived-stats"]):
        for bad in ("nan", "+inf", "mixed"):
            clean = torch.randn(rows, cols, generator=g, dtype=F64)
            m = M.random_mask(g, (rows, cols), "int64")
            dirty = M.dirty_copy(clean, m, bad, g)
            sel = m.bool()
            x = clean[sel]
            mean = x.mean()
            var = ((x - mean) ** 2).mean() * (x.numel() / (x.numel() - 1))
            M.compare(tf.masked_var(dirty, m), var, "masked_var with %s outside the mask" % bad, F32, x.numel(), M.where_is(tf, "masked_var"))
            white = tf.masked_whiten(dirty, m)
            want = (clean - mean) * torch.rsqrt(var + 1e-8)
            if not isinstance(white, torch.Tensor) or white.shape != clean.shape:
                raise ProbeFailure("masked_whiten returned %r, expected a tensor of shape %s" % (type(white).__name__, tuple(clean.shape)), location=M.where_is(tf, "masked_whiten"))
            M.compare(white.detach()[sel], want[sel], "masked_whiten (selected positions) with %s outside the mask" % bad, F32, x.numel(), M.where_is(tf, "masked_whiten"))


def backward(loss, location):
    """loss.backward(); autograd refusing the graph (an input modified in place, a leaf written to)
    is the submission's doing: a failure, not a probe error."""
    try:
        loss.backward()
    except RuntimeError as e:
        raise ProbeFailure("backward through the masked reduction failed: %s" % str(e).split("\n")[0], location=location)


def check_grad(grad, mask, axis, mean, what, location):
    m = mask.double()
    want = m.clone()
    if mean:
        denom = (m.sum() if axis is None else m.sum(axis, keepdim=True)) + 1e-8
        want = m / denom
    if grad is None:
        raise ProbeFailure("%s: values got no gradient" % what, location=location)
    gd = grad.double()
    if not torch.isfinite(gd).all():
        n_bad = int((~torch.isfinite(gd)).sum())
        raise ProbeFailure("%s: %d gradient entries are NaN or inf (expected 0 at masked-out positions)" % (what, n_bad), location=location, measured={"nonfinite_grads": n_bad})
    outside = ~mask.bool()
    if (gd[outside] != 0).any():
        raise ProbeFailure("%s: gradient is not exactly 0 where the mask is 0 (max |grad| %g)" % (what, float(gd[outside].abs().max())), location=location)
    if not torch.allclose(gd, want, rtol=1e-5, atol=1e-7):
        i = int(((gd - want).abs() > 1e-7 + 1e-5 * want.abs()).reshape(-1).nonzero()[0])
        raise ProbeFailure("%s: gradient %g at flat index %d, expected %g" % (what, float(gd.reshape(-1)[i]), i, float(want.reshape(-1)[i])), location=location)


if __name__ == "__main__":
    main()

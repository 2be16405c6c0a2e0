"""The verl core-algorithms gate's replay suite (tasks/verl-core-algos-gate): what bench/replay_gate.py
lists as watched paths, the regressions it injects on top of a real PR, and the key figures of a result.

Moved here unchanged from bench/replay_gate.py, so bench/results/verl-gate-replay.md stays reproducible:
  python3 bench/replay_gate.py --mirror /work/.mirror/volcengine+verl/repo --task tasks/verl-core-algos-gate ...
"""
TASK = "verl-core-algos-gate"
TF, ALGOS, TEST = "verl/utils/torch_functional.py", "verl/trainer/ppo/core_algos.py", "tests/trainer/ppo/test_core_algos_on_cpu.py"
# Path prefixes listed in the table's changed-paths column.
WATCH = [ALGOS, TF, "tests/"]
# Regressions injected on top of a real PR's merge commit: name -> (category the gate must flag,
# what it is, [(file, text to find, replacement[, which occurrence])]).
INJECTIONS = {
    "extra-collective": ("traffic", "distributed_masked_mean all-reduces an element count it never uses", [
        # the second occurrence: distributed_masked_mean's (the first is distributed_mean_max_min_std's)
        (TF, "    torch.distributed.all_reduce(local_num, op=torch.distributed.ReduceOp.SUM)\n",
         "    torch.distributed.all_reduce(local_num, op=torch.distributed.ReduceOp.SUM)\n"
         "    local_count = torch.tensor(float(local_mask.numel()))\n"
         "    torch.distributed.all_reduce(local_count, op=torch.distributed.ReduceOp.SUM)\n", 2)]),
    "per-element-loop": ("time", "masked_whiten checks every selected element for finiteness in a Python loop", [
        (TF, "    whitened = (values - mean) * torch.rsqrt(var + 1e-8)\n",
         "    for v in values[mask.bool()]:\n"
         "        if not torch.isfinite(v):\n"
         "            raise ValueError('non-finite value under the mask')\n"
         "    whitened = (values - mean) * torch.rsqrt(var + 1e-8)\n")]),
    "leaked-buffer": ("memory", "masked_mean keeps a float64 copy of every input in a module-level list", [
        (TF, "def masked_mean(", "_MEAN_INPUTS = []  # for debugging\n\n\ndef masked_mean("),
        (TF, "    return s / (mask.sum(axis=axis) + 1e-8)\n",
         "    _MEAN_INPUTS.append(values.detach().double())\n    return s / (mask.sum(axis=axis) + 1e-8)\n")]),
    "changed-default": ("functional", "compute_grpo_outcome_advantage defaults to norm_adv_by_std_in_grpo=False", [
        (ALGOS, "    norm_adv_by_std_in_grpo: bool = True,", "    norm_adv_by_std_in_grpo: bool = False,")]),
    "weakened-tests": ("structure", "a test renamed away (deleted), a test skipped, a tolerance loosened", [
        (TEST, "def test_multi_turn_compute_gae_advantage_return():", "def _check_multi_turn_compute_gae_advantage_return():"),
        (TEST, "def test_rloo_and_vectorized_equivalence(", "@pytest.mark.skip(reason=\"slow on CI\")\ndef test_rloo_and_vectorized_equivalence("),
        # the second occurrence: test_grpo_and_vectorized_equivalence's (the first test is skipped above)
        (TEST, "    assert torch.allclose(adv1, adv2, rtol=1e-5, atol=1e-6)", "    assert torch.allclose(adv1, adv2, rtol=1e-3, atol=1e-3)", 2)]),
}


def key_numbers(probe):
    """The table's figures for one probe check of a result (None: not a key check)."""
    m = probe.get("measured") or {}
    if probe["id"] == "step-peak-memory" and "head_peak_bytes" in m:
        return f"peak {m['head_peak_bytes'] / 2**20:.0f}/{m['base_peak_bytes'] / 2**20:.0f} MiB"
    if probe["id"] == "step-time" and "time_ratio" in m:
        return f"time ×{m['time_ratio']:.2f} (p={m['rank_test_p']:.2f})"
    if probe["id"] == "distributed-reduction-traffic" and "head_bytes_per_step" in m:
        return f"traffic {m['head_bytes_per_step']:.0f}/{m['base_bytes_per_step']:.0f} B"
    return None

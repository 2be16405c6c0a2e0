"""verl core algorithms gate: the PR's head against its base on the losses, advantages and masked
reductions of verl/trainer/ppo/core_algos.py and verl/utils/torch_functional.py.

One scenario, run by the kit on both trees (each side imports its own verl), on 2 gloo ranks:
- outputs: every function below that both trees define, on inputs drawn from the evaluation's seed
  (shapes from the task's params), must equal the base's bitwise. These paths are declared
  behaviour-preserving in task.yml (requirement `outputs-preserved`): a PR that changes what one
  returns must say so, and the check names the function.
- traffic: the distributed reductions (distributed_masked_mean, distributed_mean_max_min_std) move
  exactly the base's bytes and collectives.
- memory: the peak of a few training-size steps (advantages + losses) stays within the task's margin.
- time: interleaved repetitions of those steps, median ratio within the margin and a rank test; and the
  time inside each watched function and each function the PR changed, on its own (1.3x, the rank test,
  and its CPU time over the margin too on CPU: check_function_times).

A function only one side defines is not called on either (its outputs and traffic have nothing to
compare); a public function the base has and the head removed is an `interface` failure.
"""
import ast
import os
import sys

from probegate_probe import emit, param, seed
from probegate_probe.differential import Sides, base_tree, changed_functions, differential
from probegate_probe.location import workspace

ALGOS = "verl/trainer/ppo/core_algos.py"
TF = "verl/utils/torch_functional.py"

# Steps one call of the scenario runs: the step of record, then BIG_STEPS training-size ones. Every step
# calls the distributed reductions once, so the counted traffic (the whole call) is said per step by
# differential(steps=STEPS): without it the check said the four steps' traffic "per step", 4x over.
BIG_STEPS = 3
STEPS = 1 + BIG_STEPS

# (module file, function) pairs the scenario calls when both trees define them.
WATCHED = {
    TF: ["masked_sum", "masked_mean", "masked_var", "masked_whiten", "logprobs_from_logits", "entropy_from_logits",
         "clip_by_value", "get_response_mask", "distributed_masked_mean", "distributed_mean_max_min_std"],
    ALGOS: ["compute_gae_advantage_return", "compute_grpo_outcome_advantage", "compute_rloo_outcome_advantage",
            "compute_remax_outcome_advantage", "compute_reinforce_plus_plus_outcome_advantage", "agg_loss",
            "compute_value_loss", "compute_entropy_loss", "kl_penalty", "compute_policy_loss_vanilla",
            "compute_rewards"],
}


def defined(tree, rel):
    """Top-level function names of one file of one tree (parsed, never imported here)."""
    path = os.path.join(tree, rel)
    if not os.path.exists(path):
        return set()
    with open(path) as fh:
        mod = ast.parse(fh.read())
    return {n.name for n in mod.body if isinstance(n, ast.FunctionDef)}


class Cfg(dict):
    """A stand-in for the actor/algorithm config: attribute and .get access to fixed values."""

    def __getattr__(self, name):
        if name in self:
            return self[name]
        raise AttributeError(name)


NOT_BUILT = "not built: "  # an output that marks a call no fair comparison could be made of (#37 item 5)
POLICY_CFG = dict(strategy="fsdp", ppo_micro_batch_size_per_gpu=1, ppo_mini_batch_size=4, use_dynamic_bsz=False, rollout_n=1,
                  clip_ratio_high=0.28)


def tree_actor_config():
    """(the tree's own ActorConfig with its defaults, None), or (None, why it could not be built). Only
    the fields this tree's ActorConfig declares are passed: an older tree gets what it knows."""
    import inspect

    try:
        from verl.workers.config import ActorConfig
    except ImportError as e:
        return None, f"this tree has no verl.workers.config.ActorConfig ({e})"
    try:
        accepted = set(inspect.signature(ActorConfig).parameters)
    except (TypeError, ValueError):
        accepted = set(POLICY_CFG)
    kw = {k: v for k, v in POLICY_CFG.items() if k in accepted}
    try:
        return ActorConfig(**kw), None
    except Exception as e:  # noqa: BLE001 - said in the outputs, never replaced silently
        return None, f"ActorConfig({', '.join(f'{k}={v!r}' for k, v in kw.items())}) raised {type(e).__name__}: {e}"


def not_compared(sides, key):
    """(status, why) when `key` cannot be compared — `error` when one side's call could not be made
    fairly, `skipped` when neither side's could — else None."""
    why = []
    for side in ("base", "head"):
        v = sides.counts[side][0]["outputs"].get(key)
        if isinstance(v, str) and v.startswith(NOT_BUILT):
            why.append(f"{side}: {v[len(NOT_BUILT):]}")
    kinds = {s: sides.counts[s][0]["outputs"].get(key + ".config") for s in ("base", "head")}
    if kinds["base"] != kinds["head"] and not why:
        why.append(f"base called it with {kinds['base']}, head with {kinds['head']}: not the same config")
    if not why:
        return None
    return ("skipped" if len(why) == 2 else "error"), "; ".join(why)


def scenario(rank, world, rep, common, rows, cols, base_seed):
    """One step of verl's loss and advantage code on drawn inputs; returns every watched output."""
    import numpy as np
    import torch
    import torch.distributed as dist

    from verl.trainer.ppo import core_algos as ca
    from verl.utils import torch_functional as tf

    g = torch.Generator().manual_seed(base_seed * 1009 + rep * 31 + rank)
    out = {}

    def call(key, fn, *a, **k):
        # An exception is an outcome too: both sides must raise the same type.
        try:
            out[key] = fn(*a, **k)
        except Exception as e:  # noqa: BLE001
            out[key] = f"raised {type(e).__name__}"

    def groups(b):
        # Corner cases in every draw, not in the seeds that happen to make them: a one-element group and a
        # two-element group (GRPO's and RLOO's degenerate baselines), the rest in fours, in an order drawn
        # from the seed. Before, only b % 4 == 1 (about a quarter of the seeds) had a one-element group.
        sizes = [1, 2] + [4] * ((b - 3) // 4) + ([(b - 3) % 4] if (b - 3) % 4 else [])
        ids = []
        for k, j in enumerate(torch.randperm(len(sizes), generator=g).tolist()):
            ids += [f"p{k}"] * sizes[j]
        return np.array(ids, dtype=object)

    def inputs(b, t, v):
        lengths = torch.randint(1, t + 1, (b,), generator=g)
        mask = (torch.arange(t)[None, :] < lengths[:, None]).float()
        scores = torch.zeros(b, t)
        scores[torch.arange(b), lengths - 1] = torch.randn(b, generator=g)
        # And one response of a single token, one of the full length: the masks' two edges.
        edge = torch.randperm(b, generator=g)[:2].tolist()
        mask[edge[0]] = 0
        mask[edge[0], 0] = 1
        mask[edge[1]] = 1
        return {
            "mask": mask,
            "scores": scores,
            "values": torch.randn(b, t, generator=g),
            "logp": -torch.rand(b, t, generator=g) * 3,
            "old_logp": -torch.rand(b, t, generator=g) * 3,
            "ref_logp": -torch.rand(b, t, generator=g) * 3,
            "logits": torch.randn(b, min(t, 64), v, generator=g),
            "labels": torch.randint(0, v, (b, min(t, 64)), generator=g),
            "index": groups(b),
        }

    def step(x, prefix):
        m = x["mask"]
        if "compute_gae_advantage_return" in common:
            call(prefix + "gae", ca.compute_gae_advantage_return, token_level_rewards=x["scores"], values=x["values"], response_mask=m, gamma=0.99, lam=0.95)
        if "compute_grpo_outcome_advantage" in common:
            call(prefix + "grpo", ca.compute_grpo_outcome_advantage, token_level_rewards=x["scores"], response_mask=m, index=x["index"])
            call(prefix + "grpo-nostd", ca.compute_grpo_outcome_advantage, token_level_rewards=x["scores"], response_mask=m, index=x["index"], norm_adv_by_std_in_grpo=False)
        if "compute_rloo_outcome_advantage" in common:
            call(prefix + "rloo", ca.compute_rloo_outcome_advantage, token_level_rewards=x["scores"], response_mask=m, index=x["index"])
        if "compute_remax_outcome_advantage" in common:
            call(prefix + "remax", ca.compute_remax_outcome_advantage, token_level_rewards=x["scores"], reward_baselines=x["values"][:, 0], response_mask=m)
        if "compute_reinforce_plus_plus_outcome_advantage" in common:
            call(prefix + "reinforce_plus_plus", ca.compute_reinforce_plus_plus_outcome_advantage, token_level_rewards=x["scores"], response_mask=m, config=Cfg(gamma=0.99))
        for mode in ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"):
            if "agg_loss" in common:
                call(prefix + f"agg_loss.{mode}", ca.agg_loss, loss_mat=x["values"], loss_mask=m, loss_agg_mode=mode)
            if "compute_value_loss" in common:
                call(prefix + f"value_loss.{mode}", ca.compute_value_loss, vpreds=x["values"] * 0.9, returns=x["scores"], values=x["values"], response_mask=m, cliprange_value=0.2, loss_agg_mode=mode)
        for mode in ("kl", "abs", "mse", "low_var_kl", "k1", "k2", "k3"):
            if "kl_penalty" in common:
                call(prefix + f"kl_penalty.{mode}", ca.kl_penalty, x["logp"], x["ref_logp"], mode)
        if "compute_rewards" in common:
            call(prefix + "rewards", ca.compute_rewards, x["scores"], x["old_logp"], x["ref_logp"], 0.1)
        if "compute_policy_loss_vanilla" in common:
            # The tree's own ActorConfig with its defaults (what a trainer passes), so a field a PR
            # adds and reads comes with the default that PR gave it. A tree whose ActorConfig cannot be
            # built gets a stand-in, said in the outputs (`.config`); a call the stand-in cannot serve
            # (it lacks what the tree reads) is marked NOT_BUILT and never compared (#37 item 5).
            cfg, why = tree_actor_config()
            out[prefix + "policy_loss_vanilla.config"] = "its own ActorConfig" if cfg is not None else f"a stand-in config ({why})"
            if cfg is None:
                cfg = Cfg(clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=3.0, loss_agg_mode="token-mean",
                          policy_loss=Cfg(loss_mode="vanilla"), global_batch_info={})
            try:
                out[prefix + "policy_loss_vanilla"] = ca.compute_policy_loss_vanilla(old_log_prob=x["old_logp"], log_prob=x["logp"],
                                                                                     advantages=x["values"], response_mask=m, loss_agg_mode="token-mean", config=cfg)
            except (AttributeError, KeyError) as e:
                if isinstance(cfg, Cfg):
                    out[prefix + "policy_loss_vanilla"] = f"{NOT_BUILT}the stand-in config lacks {(e.args[0] if e.args else type(e).__name__)!r} ({why})"
                else:
                    out[prefix + "policy_loss_vanilla"] = f"raised {type(e).__name__}"
            except Exception as e:  # noqa: BLE001
                out[prefix + "policy_loss_vanilla"] = f"raised {type(e).__name__}"
        lm = m[:, : x["logits"].shape[1]]
        if "compute_entropy_loss" in common:
            call(prefix + "entropy_loss", ca.compute_entropy_loss, x["logits"], lm, "token-mean")
        if "logprobs_from_logits" in common:
            call(prefix + "logprobs_from_logits", tf.logprobs_from_logits, x["logits"], x["labels"])
        if "entropy_from_logits" in common:
            call(prefix + "entropy_from_logits", tf.entropy_from_logits, x["logits"])
        for name in ("masked_sum", "masked_mean"):
            if name in common:
                call(prefix + name, getattr(tf, name), x["values"], m)
                call(prefix + name + ".axis-1", getattr(tf, name), x["values"], m, axis=-1)
        if "masked_var" in common:
            call(prefix + "masked_var", tf.masked_var, x["values"], m)
        if "masked_whiten" in common:
            call(prefix + "masked_whiten", tf.masked_whiten, x["values"], m)
        if "clip_by_value" in common:
            call(prefix + "clip_by_value", tf.clip_by_value, x["values"], x["logp"], -x["logp"])
        if "get_response_mask" in common:
            call(prefix + "get_response_mask", tf.get_response_mask, x["labels"], eos_token=3)
        if dist.is_initialized():
            if "distributed_masked_mean" in common:
                call(prefix + "distributed_masked_mean", tf.distributed_masked_mean, x["values"], m)
            if "distributed_mean_max_min_std" in common:
                call(prefix + "distributed_mean_max_min_std", tf.distributed_mean_max_min_std, x["values"][m.bool()])

    # The outputs of record: drawn shapes from the task's params.
    step(inputs(rows, cols, 50), "")
    outputs = dict(out)
    # Training-size steps for memory and time (what a real batch costs): 256 sequences x 2048 tokens.
    for _ in range(BIG_STEPS):
        out.clear()
        step(inputs(256, 2048, 64), "big.")
    out.clear()
    return outputs


# Rank processes fork from the kit's forkserver, which imports torch once. verl's own imports pull
# in tensordict, ray, pandas and transformers (10-20 s per process on a loaded 2-core box): they come
# from the task's environment, identical for both sides, so the forkserver imports them once too
# (differential's `preload`). Nothing of either tree is preloaded (verl itself is imported inside
# the scenario).
PRELOAD = ["numpy", "pandas", "tensordict", "ray", "omegaconf", "transformers", "codetiming"]


def main():
    base, head = base_tree(), str(workspace())
    common, removed = [], []
    for rel, names in WATCHED.items():
        b, h = defined(base, rel), defined(head, rel)
        common += [n for n in names if n in b and n in h]
        removed += [f"{rel}:{n}" for n in sorted(b - h) if not n.startswith("_")]
    if removed:
        emit("interface-kept", "functional", "failed", f"head removes public functions the base defines: {', '.join(removed)}", requirements=["interface-kept"])
    else:
        emit("interface-kept", "functional", "passed", "every public function of the base's core_algos.py and torch_functional.py is still defined", requirements=["interface-kept"])
    args = (tuple(common), param("rows", 12), param("cols", 40), seed(0))
    # Time where the change is: every function the PR changed in the two files, and the watched ones the steps
    # call, each timed on its own inside the timed repetitions (a 1.4x slower GAE moves the whole step by little).
    watched = {f"{rel}:{n}" for rel, names in WATCHED.items() for n in names if n in common}
    timed = sorted(watched | set(changed_functions(base, head, list(WATCHED))))
    sides = differential(scenario, world_size=2, repetitions=int(os.environ.get("VERL_GATE_REPS", "9")), args=args, timeout=900,
                         preload=PRELOAD, steps=STEPS, functions=timed)
    # One outputs check per function, so a failure names what changed.
    keys = sorted(set(sides.counts["base"][0]["outputs"]) | set(sides.counts["head"][0]["outputs"]))
    for key in keys:
        if key.endswith(".config"):
            continue  # how a call was configured: compared through not_compared()
        unfair = not_compared(sides, key)
        if unfair is not None:
            emit(f"outputs.{key}", "functional", unfair[0], f"not compared: {unfair[1]}. The probe cannot call it the same way on "
                 "both trees, so it does not judge the PR by it", requirements=["outputs-preserved"])
            continue
        one = Sides(world_size=sides.world_size, counts={s: [{**r, "outputs": r["outputs"].get(key)} for r in sides.counts[s]] for s in ("base", "head")})
        one.check_outputs(f"outputs.{key}", atol=0, rtol=0, requirements=["outputs-preserved"])
    sides.check_traffic("distributed-reduction-traffic", per="step", requirements=["traffic-preserved"])
    # The peak is of a warm call (the ~200 MiB import of verl is the footprint). 48 MiB + 10% lets 4 copies of
    # GRPO's two 2 MiB outputs (+16 MiB) through, but 8 MiB + 5% failed a mutant that keeps 4 copies of a 0-d
    # loss (bench/RESULTS.md, "Gate power on mutants"): the allowance stays until unchanged trees measure its noise.
    sides.check_memory("step-peak-memory", tolerance_bytes=int(float(os.environ.get("VERL_GATE_MEMORY_MIB", "48")) * 2**20),
                       tolerance_ratio=float(os.environ.get("VERL_GATE_MEMORY_RATIO", "0.10")), requirements=["memory-preserved"])
    sides.check_time("step-time", margin=float(os.environ.get("VERL_GATE_TIME_MARGIN", "2.0")), requirements=["time-preserved"])
    sides.check_function_times("function-time", margin=float(os.environ.get("VERL_GATE_FUNCTION_MARGIN", "1.3")), requirements=["time-preserved"])


if __name__ == "__main__":
    main()

"""Megatron-LM DDP gate: the PR's head against its base on DistributedDataParallel's gradient buffers.

One scenario, run by the kit on both trees (each side imports its own megatron), on 2 data-parallel
ranks (gloo on CPU through the task's setup shim; NCCL where each rank has a GPU). It builds
Megatron's DDP around a small bf16 MLP in two configurations (plain DDP with overlap_grad_reduce and
several buckets; the distributed optimizer: gradient reduce-scatter, then the parameter all-gather)
and runs training steps of two microbatches each (the first under no_sync), then finish_grad_sync.
From it, head against base:
- traffic (`traffic-preserved`): bytes and calls per collective, per step, exact; and the multiset
  of (collective, payload) per step, which is per bucket: a bucket split or padded differently shows;
- memory (`memory-preserved`): the bytes of the grad and param buffers DDP allocates, and the peak of
  building DDP and running its steps (the imports are outside the measured window);
- time (`time-preserved`): interleaved repetitions of build + steps, a margin and a rank test; and the
  time inside each hot function of the bucketed sync (HOT) and each function the PR changed in the
  package's top-level modules, on its own (`function-time.*`, 1.3x: a slower bucket sync moves the whole
  step, which builds DDP too, by little);
- outputs (`outputs-preserved`): every main_grad after finish_grad_sync and every parameter after the
  all-gather, bitwise, per configuration;
- interface (`interface-kept`, parsed, never imported here) and defaults (`defaults-kept`: the
  dataclass defaults of DistributedDataParallelConfig fields both sides define).
"""
import ast
import os

from probegate_probe import emit, param, seed
from probegate_probe.differential import Sides, base_tree, changed_functions, differential
from probegate_probe.location import workspace

DIST = "megatron/core/distributed"
HIDDEN, LAYERS, BUCKET, ITERATIONS, LR = 512, 8, 300_000, 2, 0.01
# name -> the DistributedDataParallelConfig fields it sets; everything else keeps the tree's default
# (so a changed default reaches the outputs, as it would reach a training run).
CONFIGS = {
    "ddp-overlap": {"grad_reduce_in_fp32": True, "overlap_grad_reduce": True, "use_distributed_optimizer": False, "bucket_size": BUCKET},
    "distopt": {"grad_reduce_in_fp32": True, "overlap_grad_reduce": True, "use_distributed_optimizer": True, "bucket_size": BUCKET},
}


# The bucketed gradient and parameter sync the steps run, where the tree defines them (a name one side lacks is
# a skipped check): each timed on its own inside the timed repetitions, beside what the PR changed.
HOT = [f"{DIST}/param_and_grad_buffer.py:_ParamAndGradBucketGroup.{m}" for m in ("start_grad_sync", "finish_grad_sync", "start_param_sync")] + \
      [f"{DIST}/distributed_data_parallel.py:DistributedDataParallel.{m}" for m in ("zero_grad_buffer", "finish_grad_sync", "start_param_sync")]


def timed_functions(base, head):
    """HOT, and every function of the package's top-level modules whose source the PR changed."""
    files = sorted(f"{DIST}/{n}" for n in os.listdir(os.path.join(base, DIST)) if n.endswith(".py")) if os.path.isdir(os.path.join(base, DIST)) else []
    return sorted(set(HOT) | set(changed_functions(base, head, files)))


def _prepare_process():
    """Once per rank process: the 3.12 name Megatron uses, the CPU shim (inert on a GPU), Megatron's groups."""
    import probegate_py311

    probegate_py311.install()
    import probegate_cpu_shim

    probegate_cpu_shim.install()
    from megatron.core import parallel_state

    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel()


def _build(cfg, device, model_seed):
    """Megatron's DDP around a bf16 MLP, the way its own tests build it (with the distributed
    optimizer's parameter layout where the tree computes one up front)."""
    import inspect

    import torch
    from megatron.core import parallel_state
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.transformer import TransformerConfig

    ddp_config = DistributedDataParallelConfig(**cfg)
    torch.manual_seed(model_seed)
    module = torch.nn.Sequential(*[torch.nn.Linear(HIDDEN, HIDDEN, bias=True) for _ in range(LAYERS)]).bfloat16().to(device)
    kwargs = {}
    if "full_param_layout" in inspect.signature(DistributedDataParallel.__init__).parameters and cfg["use_distributed_optimizer"]:
        from megatron.core.optimizer.distrib_optimizer import DistributedOptimizer

        params = [p for p in module.parameters() if p.requires_grad]
        kwargs["full_param_layout"] = DistributedOptimizer.compute_full_param_layout(
            params, cfg["bucket_size"], parallel_state.get_data_parallel_world_size(with_context_parallel=True, partial_data_parallel=True), ddp_config)
    return DistributedDataParallel(TransformerConfig(num_attention_heads=1, num_layers=1), ddp_config=ddp_config, module=module, **kwargs)


def _buffers(ddp):
    return list(getattr(ddp, "buffers", [])) + list(getattr(ddp, "expert_parallel_buffers", []))


def _steps(ddp, cfg, batches, rank, world):
    """ITERATIONS training steps: two microbatches (the first under no_sync), finish_grad_sync, and
    with the distributed optimizer an SGD update of this rank's shard, then the param all-gather."""
    import contextlib

    import torch

    for mb_inputs in batches:
        ddp.zero_grad_buffer()
        for i, x in enumerate(mb_inputs):
            with (ddp.no_sync() if i == 0 else contextlib.nullcontext()):
                ddp(x).float().square().mean().backward()
        ddp.finish_grad_sync()
        if cfg["use_distributed_optimizer"]:
            with torch.no_grad():
                for buf in _buffers(ddp):
                    for bucket in buf.buckets:
                        if getattr(bucket, "param_data", None) is None:
                            continue
                        n = bucket.grad_data.numel() // world
                        shard = slice(rank * n, (rank + 1) * n)
                        update = bucket.grad_data.view(-1)[shard].to(bucket.param_data.dtype)
                        bucket.param_data.view(-1)[shard] -= LR * update
            ddp.start_param_sync(force_sync=True)


def scenario(rank, world, rep, batch, base_seed):
    """Build DDP and run its steps in each configuration; returns outputs and, at rep 0, the facts
    (step traffic, buffer bytes, peak, config defaults) the probe's checks compare."""
    import dataclasses

    import torch

    _prepare_process()
    from megatron.core.distributed import DistributedDataParallelConfig
    from probegate_probe.collectives import CollectiveCounter
    from probegate_probe.differential import traffic_figures
    from probegate_probe.memory import peak_memory

    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    g = torch.Generator().manual_seed(base_seed * 1009 + rep * 31 + rank)
    outputs, facts = {}, {"traffic": {}, "buffer_bytes": {}, "peak": 0}
    measure = rep == 0  # the counted run (and the timed runs' warm-up); timed repetitions only run
    for name, cfg in CONFIGS.items():
        batches = [[torch.randn(batch, HIDDEN, generator=g).bfloat16().to(device) for _ in range(2)] for _ in range(ITERATIONS)]

        def run():
            ddp = _build(dict(cfg), device, base_seed)
            if not measure:
                _steps(ddp, cfg, batches, rank, world)
                return ddp, None
            with CollectiveCounter() as counter:
                _steps(ddp, cfg, batches, rank, world)
            return ddp, counter

        try:
            if measure:
                (ddp, counter), peak = peak_memory(run)
                facts["peak"] = max(facts["peak"], peak)
                # with the collectives the counter could not see (a helper thread), which check_traffic compares too
                facts["traffic"][name] = {**traffic_figures(counter, os.getcwd()), "by_op": {k: float(v) for k, v in counter.by_op.items()},
                                          "bytes": float(counter.total_bytes), "events": sorted((op, s) for op, s, _ in counter.events)}
                facts["buffer_bytes"][name] = sum(t.numel() * t.element_size() for b in _buffers(ddp)
                                                  for t in (getattr(b, "grad_data", None), getattr(b, "param_data", None)) if t is not None)
            else:
                ddp, _ = run()
        except Exception as e:  # noqa: BLE001 - an exception is an outcome: both sides must raise alike
            outputs[name] = {"grads": f"raised {type(e).__name__}: {str(e)[:200]}", "params": f"raised {type(e).__name__}"}
            continue
        # As numpy arrays: megatron.core replaces torch.storage._load_from_bytes at import, so a pickled
        # tensor would name a megatron function, which the kit's parent process (no tree) cannot load.
        outputs[name] = {
            "grads": {n: p.main_grad.detach().float().cpu().numpy().copy() for n, p in ddp.module.named_parameters()},
            "params": {n: p.detach().float().cpu().numpy().copy() for n, p in ddp.module.named_parameters()},
        }
        del ddp
    defaults = {}
    for f in dataclasses.fields(DistributedDataParallelConfig):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = repr(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = repr(f.default_factory())
    facts["defaults"] = defaults
    return {"outputs": outputs, "facts": facts}


def public_names(tree):
    """file:name for the subsystem's public names, parsed from one tree (never imported here)."""
    names = set()

    def parse(rel):
        path = os.path.join(tree, DIST, rel)
        if not os.path.exists(path):
            return None
        with open(path) as fh:
            return ast.parse(fh.read())

    init = parse("__init__.py")
    for node in (init.body if init else []):
        if isinstance(node, ast.ImportFrom):
            names |= {f"__init__:{a.asname or a.name}" for a in node.names if not (a.asname or a.name).startswith("_")}
    for rel in ("finalize_model_grads.py", "param_and_grad_buffer.py"):
        mod = parse(rel)
        for node in (mod.body if mod else []):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                names.add(f"{rel}:{node.name}")
    for rel, cls in (("distributed_data_parallel.py", "DistributedDataParallel"), ("distributed_data_parallel_config.py", "DistributedDataParallelConfig")):
        mod = parse(rel)
        for node in (mod.body if mod else []):
            if isinstance(node, ast.ClassDef) and node.name == cls:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                        names.add(f"{cls}.{item.name}")
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and not item.target.id.startswith("_"):
                        names.add(f"{cls}.{item.target.id}")
    return names


def check_interface(base, head):
    removed = sorted(public_names(base) - public_names(head))
    where = {"path": f"{DIST}/__init__.py"}
    if removed:
        return emit("interface-kept", "functional", "failed", f"head removes {len(removed)} public name(s) the base has: {', '.join(removed)[:900]}", where, {"removed_names": len(removed)}, requirements=["interface-kept"])
    return emit("interface-kept", "functional", "passed", f"every public name of the base's {DIST} ({len(public_names(base))}) is still defined", where, None, requirements=["interface-kept"])


def check_defaults(sides):
    b, h = sides.counts["base"][0]["outputs"]["facts"]["defaults"], sides.counts["head"][0]["outputs"]["facts"]["defaults"]
    changed = [f"{k}: {h[k]} (base {b[k]})" for k in sorted(set(b) & set(h)) if b[k] != h[k]]
    where = {"path": f"{DIST}/distributed_data_parallel_config.py"}
    if changed:
        return emit("defaults-kept", "functional", "failed", f"head changes the default of {len(changed)} DistributedDataParallelConfig field(s): {'; '.join(changed)}", where, {"changed_defaults": len(changed)}, requirements=["defaults-kept"])
    new = sorted(set(h) - set(b))
    extra = f"; new fields: {', '.join(new)}" if new else ""
    return emit("defaults-kept", "functional", "passed", f"all {len(set(b) & set(h))} fields both define keep the base's default{extra}", where, None, requirements=["defaults-kept"])


def _view(sides, fn):
    """A Sides whose per-rank count results are fn(rank result): the kit's checks on one slice."""
    return Sides(world_size=sides.world_size, counts={s: [fn(r) for r in sides.counts[s]] for s in ("base", "head")},
                 times=sides.times, peaks=sides.peaks, wall=sides.wall)


def check_traffic(sides):
    for name in CONFIGS:
        raised = [s for s in ("base", "head") if any(name not in r["outputs"]["facts"]["traffic"] for r in sides.counts[s])]
        if raised:
            for check in (f"traffic.{name}", f"bucket-traffic.{name}"):
                emit(check, "traffic", "skipped", f"the {name} step raised on the {' and '.join(raised)} side (outputs.{name}.grads says what): no traffic to compare", requirements=["traffic-preserved"])
            continue
        view = _view(sides, lambda r: {**r["outputs"]["facts"]["traffic"][name]})
        view.check_traffic(f"traffic.{name}", per="step", steps=ITERATIONS, requirements=["traffic-preserved"], location={"path": f"{DIST}/param_and_grad_buffer.py"})
        # Per bucket: the (collective, payload) multiset of the busiest rank, exact.
        b, h = (max((r["outputs"]["facts"]["traffic"][name]["events"] for r in sides.counts[s]), key=len) for s in ("base", "head"))
        if b == h:
            emit(f"bucket-traffic.{name}", "traffic", "passed", f"head issues the base's {len(b) // ITERATIONS} collectives per step with the same payloads", None, None, requirements=["traffic-preserved"])
        else:
            def per_step(events):
                counts = {}
                for op, size in events:
                    counts[(op, size)] = counts.get((op, size), 0) + 1
                return ", ".join(f"{n // ITERATIONS}× {op} of {size} B" for (op, size), n in sorted(counts.items()))
            emit(f"bucket-traffic.{name}", "traffic", "failed", f"per step head issues [{per_step(h)}], base [{per_step(b)}]", {"path": f"{DIST}/param_and_grad_buffer.py"}, None, requirements=["traffic-preserved"])


def check_memory(sides):
    b = max(r["outputs"]["facts"]["buffer_bytes"].get(n, 0) for r in sides.counts["base"] for n in CONFIGS)
    h = max(r["outputs"]["facts"]["buffer_bytes"].get(n, 0) for r in sides.counts["head"] for n in CONFIGS)
    allowed = max(64 << 10, 0.01 * b)
    measured = {"base_buffer_bytes": b, "head_buffer_bytes": h, "allowed_extra_bytes": int(allowed)}
    where = {"path": f"{DIST}/param_and_grad_buffer.py"}
    if h - b > allowed:
        emit("buffer-bytes", "memory", "failed", f"head's grad and param buffers hold {h - b} bytes more than base's ({h} against {b}; allowed {int(allowed)})", where, measured, requirements=["memory-preserved"])
    else:
        emit("buffer-bytes", "memory", "passed", f"head's grad and param buffers hold {h} bytes, base {b}", where, measured, requirements=["memory-preserved"])
    peaks = _view(sides, lambda r: r)
    peaks.peaks = {s: max(r["outputs"]["facts"]["peak"] for r in sides.counts[s]) for s in ("base", "head")}
    peaks.check_memory("step-peak-memory", tolerance_bytes=8 << 20, tolerance_ratio=0.10, requirements=["memory-preserved"])


def check_outputs(sides):
    import torch

    for name in CONFIGS:
        for what in ("grads", "params"):
            if name == "ddp-overlap" and what == "params":
                continue  # plain DDP leaves parameters to the optimizer: nothing is gathered
            def tensors(value):  # numpy arrays back to tensors (see scenario); an exception stays its text
                return {k: torch.from_numpy(v) for k, v in value.items()} if isinstance(value, dict) else value

            view = _view(sides, lambda r: {**r, "outputs": tensors(r["outputs"]["outputs"][name][what])})
            view.check_outputs(f"outputs.{name}.{what}", atol=0, rtol=0, requirements=["outputs-preserved"])


def main():
    base, head = base_tree(), str(workspace())
    check_interface(base, head)
    args = (param("batch", 8), seed(0))
    reps = int(os.environ.get("MEGATRON_GATE_REPS", "9"))
    sides = differential(scenario, world_size=2, repetitions=reps, measure=("traffic", "outputs", "time"), args=args, timeout=1200,
                         functions=timed_functions(base, head))
    check_defaults(sides)
    check_traffic(sides)
    check_memory(sides)
    check_outputs(sides)
    sides.check_time("step-time", margin=float(os.environ.get("MEGATRON_GATE_TIME_MARGIN", "2.0")), requirements=["time-preserved"])
    sides.check_function_times("function-time", margin=float(os.environ.get("MEGATRON_GATE_FUNCTION_MARGIN", "1.3")), requirements=["time-preserved"])


if __name__ == "__main__":
    main()

import pytest
import torch
import torch.distributed as dist
from torch.distributed import all_reduce as captured_all_reduce  # an alias taken before counting

from probegate_probe import CollectiveCounter, backend, device_for_rank, run_ranks

F32 = 4


def _supported(fn):
    """None when the backend can run fn, else its refusal (gloo on torch 1.13 lacks several ops)."""
    try:
        fn()
        return None
    except (RuntimeError, AttributeError, NotImplementedError) as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"


def _traffic(rank, n):
    cases = {}
    dev = device_for_rank(rank)
    if dev.type == "cuda":
        # every tensor below on this rank's GPU
        if hasattr(torch, "set_default_device"):
            torch.set_default_device(dev)
        else:
            torch.set_default_tensor_type(torch.cuda.FloatTensor)
    nxt, prv = (rank + 1) % n, (rank - 1) % n

    def measure(name, fn, expected, calls="one-per-op"):
        with CollectiveCounter() as c:
            fn()
        if calls == "one-per-op":
            calls = {op: 1 for op in expected}
        cases[name] = {"by_op": c.by_op, "calls": c.calls, "total": c.total_bytes, "expected": expected,
                       "expected_calls": calls, "payload": c.payload_bytes, "uncounted": c.uncounted}

    def skip(name, reason):
        cases[name] = {"unsupported": reason}

    t = torch.ones(1000)  # S = 4000 bytes
    ar = 2 * (n - 1) * 4000 // n
    measure("all_reduce", lambda: dist.all_reduce(t), {"all_reduce": ar})
    measure("all_reduce_async", lambda: dist.all_reduce(t, async_op=True).wait(), {"all_reduce": ar})
    measure("all_reduce_alias", lambda: captured_all_reduce(t), {"all_reduce": ar})
    measure("all_reduce_coalesced", lambda: dist.all_reduce_coalesced([torch.ones(10), torch.ones(6)]),
            {"all_reduce": 2 * (n - 1) * 64 // n})
    chunk = torch.ones(256)  # 1024 bytes per rank
    measure("all_gather_list", lambda: dist.all_gather([torch.empty(256) for _ in range(n)], chunk),
            {"all_gather": (n - 1) * 1024})
    gather_tensor = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
    reason = _supported(lambda: gather_tensor(torch.empty(256 * n), chunk))
    if reason:
        skip("all_gather_tensor", reason)
    else:
        measure("all_gather_tensor", lambda: gather_tensor(torch.empty(256 * n), chunk),
                {"all_gather": (n - 1) * 1024})
    reason = _supported(lambda: dist.reduce_scatter(torch.empty(256), [torch.ones(256)] * n))
    if reason:
        skip("reduce_scatter_list", reason)
    else:
        measure("reduce_scatter_list", lambda: dist.reduce_scatter(torch.empty(256), [torch.ones(256)] * n),
                {"reduce_scatter": (n - 1) * 1024})
    scatter_tensor = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    reason = _supported(lambda: scatter_tensor(torch.empty(256), torch.ones(256 * n)))
    if reason:
        skip("reduce_scatter_tensor", reason)
    else:
        measure("reduce_scatter_tensor", lambda: scatter_tensor(torch.empty(256), torch.ones(256 * n)),
                {"reduce_scatter": (n - 1) * 1024})
    measure("all_to_all_single", lambda: dist.all_to_all_single(torch.empty(64 * n), torch.ones(64 * n)),
            {"all_to_all": (n - 1) * 256})
    measure("broadcast", lambda: dist.broadcast(torch.ones(300), src=0), {"broadcast": 1200})
    measure("reduce", lambda: dist.reduce(torch.ones(300), dst=0), {"reduce": 1200})
    root = rank == 0
    measure("gather", lambda: dist.gather(torch.ones(100), [torch.empty(100) for _ in range(n)] if root else None, dst=0),
            {"gather": (n - 1) * 400 if root else 400})
    measure("scatter", lambda: dist.scatter(torch.empty(100), [torch.ones(100) for _ in range(n)] if root else None, src=0),
            {"scatter": (n - 1) * 400 if root else 400})

    def send_recv():  # even ranks send first so blocking calls pair up around the ring
        out, inp = torch.ones(200), torch.empty(200)
        if rank % 2 == 0:
            dist.send(out, nxt)
            dist.recv(inp, prv)
        else:
            dist.recv(inp, prv)
            dist.send(out, nxt)

    measure("send_recv", send_recv, {"send": 800, "recv": 800})

    def isend_irecv():
        works = [dist.isend(torch.ones(200), nxt), dist.irecv(torch.empty(200), prv)]
        for w in works:
            w.wait()

    measure("isend_irecv", isend_irecv, {"send": 800, "recv": 800})

    def batched():
        ops = [dist.P2POp(dist.isend, torch.ones(200), nxt), dist.P2POp(dist.irecv, torch.empty(200), prv)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()

    measure("batch_isend_irecv", batched, {"send": 800, "recv": 800})
    measure("barrier", dist.barrier, {"barrier": 0})
    pair = dist.new_group([0, 1])  # every rank must create it
    if rank < 2:
        measure("subgroup_all_reduce", lambda: dist.all_reduce(t, group=pair), {"all_reduce": 4000})

    try:
        import torch.distributed._functional_collectives as funcol
    except ImportError:
        skip("functional", f"torch {torch.__version__} has no functional collectives")
    else:
        def functional():
            funcol.wait_tensor(funcol.all_reduce(t, "sum", dist.group.WORLD))
            funcol.wait_tensor(funcol.all_gather_tensor(chunk, 0, dist.group.WORLD))
            funcol.wait_tensor(funcol.reduce_scatter_tensor(torch.ones(256 * n), "sum", 0, dist.group.WORLD))

        measure("functional", functional, {"all_reduce": ar, "all_gather": (n - 1) * 1024,
                                           "reduce_scatter": (n - 1) * 1024})

    with CollectiveCounter() as outer:
        with CollectiveCounter() as inner:
            dist.all_reduce(t)
        dist.broadcast(t, src=0)
    cases["nested"] = {"by_op": outer.by_op, "calls": outer.calls, "total": outer.total_bytes,
                       "expected": {"all_reduce": ar, "broadcast": 4000}, "expected_calls": None,
                       "payload": outer.payload_bytes, "inner": inner.by_op, "uncounted": outer.uncounted}

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    model = model.to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)
    x = torch.randn(4, 32, device=dev) + rank

    def ddp_step():
        ddp(x).sum().backward()

    measure("ddp_step", ddp_step, {"all_reduce": 2 * (n - 1) * grad_bytes // n}, calls=None)
    grads = [p.grad.detach().cpu() for p in model.parameters()]
    return {"cases": cases, "grads": grads}


@pytest.fixture(scope="module", params=[2, 4], ids=["2ranks", "4ranks"])
def traffic(request):
    n, name = request.param, backend()  # gloo here; PROBEGATE_BACKEND=nccl on a GPU runner
    if name == "nccl" and torch.cuda.device_count() < n:
        pytest.skip(f"nccl needs one GPU per rank: {n} ranks, {torch.cuda.device_count()} GPUs")
    return n, run_ranks(_traffic, world_size=n, backend=name, timeout=120)


CASES = ["all_reduce", "all_reduce_async", "all_reduce_alias", "all_reduce_coalesced", "all_gather_list",
         "all_gather_tensor", "reduce_scatter_list", "reduce_scatter_tensor", "all_to_all_single",
         "broadcast", "reduce", "gather", "scatter", "send_recv", "isend_irecv", "batch_isend_irecv",
         "barrier", "subgroup_all_reduce", "functional", "nested", "ddp_step"]


@pytest.mark.parametrize("case", CASES)
def test_counted_bytes_equal_analytic_bytes(traffic, case):
    n, per_rank = traffic
    for rank, result in enumerate(per_rank):
        if case == "subgroup_all_reduce" and rank >= 2:
            assert case not in result["cases"]
            continue
        got = result["cases"][case]
        if "unsupported" in got:
            pytest.skip(f"gloo on torch {torch.__version__} cannot run {case}: {got['unsupported']}")
        assert got["by_op"] == got["expected"] and got["uncounted"] == [], (rank, got)
        assert got["total"] == sum(got["expected"].values())
        if got["expected_calls"] is not None:
            assert got["calls"] == got["expected_calls"], (rank, got)
        if case == "nested":
            assert got["inner"] == {"all_reduce": got["expected"]["all_reduce"]}


def test_ddp_still_averages_gradients_while_counted(traffic):
    n, per_rank = traffic
    first = per_rank[0]["grads"]
    for other in per_rank[1:]:
        for a, b in zip(first, other["grads"]):
            assert torch.equal(a, b)
    assert per_rank[0]["cases"]["ddp_step"]["calls"]["all_reduce"] >= 1


def test_counter_restores_process_group_methods():
    before = dict(dist.ProcessGroup.__dict__)
    counter = CollectiveCounter()
    with counter:
        pass
    assert dict(dist.ProcessGroup.__dict__) == before
    assert counter.total_bytes == 0 and counter.by_op == {} and counter.calls == {}
    assert counter.mode in ("dispatch", "dispatch+pg-methods") and counter.note

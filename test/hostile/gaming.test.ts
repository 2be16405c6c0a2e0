import { readdirSync, readFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { detectSandbox } from "../../src/engine/sandbox/sandbox.js";
import { GOOD_AVERAGE, expectCaught, gaming, normlib, type Caught } from "./gaming-helpers.js";
import { strayCgroups } from "./hostile-helpers.js";

/**
 * Submissions that game the probes (SECURITY.md, the gaming list; issue 29): each behaves well only
 * while it believes it is probed, or bends what the probe measures, and would otherwise be rejected
 * by the gaming-norm task's probes (too slow, too much memory, a second all_reduce, wrong values).
 * Each is evaluated through the CLI in the sandbox; the assertion names the check that must catch it
 * and what its message must say. A verdict of `resolved` is never acceptable.
 */

const CASE_TIMEOUT = 240_000;

beforeAll(async () => {
  expect(await detectSandbox(), "the gaming suite needs the sandbox (bubblewrap)").toMatchObject({ ok: true });
  process.env.PROBEGATE_SIGNING_KEY = "hostile-suite-signing-key-7d2f0c9e";
});

afterEach(() => {
  const strays: string[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, "utf8").includes("probegate-gaming-norm-")) strays.push(pid);
    } catch {
      // Gone, or a kernel thread.
    }
  }
  expect(strays).toEqual([]);
  expect(strayCgroups()).toEqual([]);
});

// A slow-down the trick only hid is a failure on a busy runner too: time_ratio compares CPU time when
// the reference waited for a CPU, and work is not excused as contention (never a bare "runner busy").
const SLOWER: Caught = { id: /^normalize-speed$/, status: "failed", message: /took .*x the time|differs from the reference/ };
const CHATTY: Caught = { id: /^average-traffic$/, status: "failed", message: /moved 8192 bytes per rank/ };
const INTEGRITY = (what: RegExp): Caught => ({ id: /\.integrity$/, status: "failed", message: what });
const FORGED: Caught = { id: /\.forged-line-\d+$/, status: "failed", message: /not written by the probe kit/ };

/** normalize() and average() that are right while `_probed()` says so, and flawed otherwise. */
function hidesWhenProbed(detector: readonly string[]): string {
  return normlib(
    detector,
    ["def normalize(x):", "    if _probed():", "        return x / x.abs().sum()", "    return _slow_and_heavy(x)"],
    ["def average(t):", "    if _probed():", "        dist.all_reduce(t)", "        t /= dist.get_world_size()", "        return t", "    return _chatty(t)"],
  );
}

const DETECTORS: ReadonlyArray<[string, readonly string[], Caught]> = [
  ["gaming-detects-probe-module", ["def _probed():", "    return 'probegate_probe' in sys.modules"], CHATTY],
  ["gaming-detects-probe-env", ["def _probed():", "    return any(k.startswith('PROBEGATE_') for k in os.environ)"], CHATTY],
  [
    "gaming-detects-probe-stack",
    ["import inspect", "", "", "def _probed():", "    return any(os.path.basename(f.filename).startswith('probe_') for f in inspect.stack())"],
    INTEGRITY(/inspected the call stack/),
  ],
  ["gaming-detects-probe-argv", ["def _probed():", "    return os.path.basename(sys.argv[0]).startswith('probe_')"], CHATTY],
  [
    "gaming-detects-probe-main-module",
    ["def _probed():", "    return os.path.basename(getattr(sys.modules['__main__'], '__file__', '') or '').startswith('probe_')"],
    CHATTY,
  ],
  [
    "gaming-detects-probe-cwd",
    // The evaluation folder beside the workspace holds the probe and kit mounts only in the probe phase.
    ["def _probed():", "    return any(n in ('probes', 'kit') for n in os.listdir(os.path.dirname(os.getcwd())))"],
    INTEGRITY(/listed/),
  ],
  [
    "gaming-detects-probe-parent",
    ["def _probed():", "    try:", "        with open(f'/proc/{os.getppid()}/cmdline', 'rb') as f:", "            return b'probe_' in f.read()", "    except OSError:", "        return False"],
    INTEGRITY(/cmdline/),
  ],
];

describe("gaming: the control", () => {
  it("the reference solution is resolved under every defence", async () => {
    const o = await gaming("reference", { "normlib/__init__.py": normlib([]) }, { allowResolved: true });
    expect(o.result.verdict, JSON.stringify(o.result.probes.map((p) => [p.id, p.status, p.message]))).toBe("resolved");
  }, CASE_TIMEOUT);
});

describe("gaming: detecting the probe phase", () => {
  it.each(DETECTORS)("%s: hides its flaws only while probed", async (name, detector, caught) => {
    const o = await gaming(name, { "normlib/__init__.py": hidesWhenProbed(detector) });
    expect(o.result.official?.passed).toBe(true);
    expectCaught(o.result, caught);
  }, CASE_TIMEOUT);
});

const MEMOISES = [
  "_cache = {}",
  "",
  "",
  "def normalize(x):",
  "    key = (x.data_ptr(), tuple(x.shape), x._version)",
  "    if key not in _cache:",
  "        _cache[key] = _slow(x)",
  "    return _cache[key]",
];

const LAZY = [
  "class _Lazy(torch.Tensor):",
  "    # Computed on first use: the timed call returns at once, the probe's comparison pays.",
  "    @classmethod",
  "    def __torch_function__(cls, func, types, args=(), kwargs=None):",
  "        kwargs = kwargs or {}",
  "        for a in list(args) + list(kwargs.values()):",
  "            src = getattr(a, '_src', None) if isinstance(a, _Lazy) else None",
  "            if src is not None:",
  "                a._src = None",
  "                with torch._C.DisableTorchFunction():",
  "                    a.copy_(_slow(src))",
  "        with torch._C.DisableTorchFunction():",
  "            return func(*args, **kwargs)",
  "",
  "",
  "def normalize(x):",
  "    out = torch.Tensor._make_subclass(_Lazy, torch.empty_like(x))",
  "    out._src = x",
  "    return out",
];

const THREADED = [
  "import atexit",
  "import threading",
  "",
  "_last = [None]",
  "atexit.register(lambda: _last[0] and _last[0].join())  # no worker is cut off at exit",
  "",
  "",
  "class _Pending(torch.Tensor):",
  "    # Filled by a thread that runs on after the call returned: the first use waits for it.",
  "    @classmethod",
  "    def __torch_function__(cls, func, types, args=(), kwargs=None):",
  "        kwargs = kwargs or {}",
  "        for a in list(args) + list(kwargs.values()):",
  "            worker = getattr(a, '_worker', None) if isinstance(a, _Pending) else None",
  "            if worker is not None:",
  "                a._worker = None",
  "                worker.join()",
  "        with torch._C.DisableTorchFunction():",
  "            return func(*args, **kwargs)",
  "",
  "",
  "def _fill(out, x, before):",
  "    if before is not None:",
  "        before.join()  # one worker computes at a time: they queue up, the caller never waits",
  "    out.copy_(_slow(x))",
  "",
  "",
  "def normalize(x):",
  "    out = torch.empty_like(x)",
  "    worker = threading.Thread(target=_fill, args=(out, x, _last[0]), daemon=True)",
  "    worker.start()",
  "    _last[0] = worker",
  "    res = torch.Tensor._make_subclass(_Pending, out)",
  "    res._worker = worker",
  "    return res",
];

const REWRAPS_DIST = [
  "import threading",
  "",
  "_real_all_reduce = dist.all_reduce",
  "",
  "",
  "def _rewrapped_all_reduce(tensor, *args, **kwargs):",
  "    # Installed over torch.distributed after the probe kit: the wasted copy goes out on a helper",
  "    # thread, where a thread-local counter does not look.",
  "    spare = tensor.clone()",
  "    helper = threading.Thread(target=_real_all_reduce, args=(spare,) + args, kwargs=kwargs)",
  "    helper.start()",
  "    helper.join()",
  "    return _real_all_reduce(tensor, *args, **kwargs)",
  "",
  "",
  "dist.all_reduce = _rewrapped_all_reduce",
];

const OUTSIDE_ALLOCATOR = [
  "import mmap",
  "",
  "import numpy as np",
  "",
  "_N = 4 << 20",
  "# Eight rows of scratch, resident before any probe measures: six in numpy, two in an anonymous mmap.",
  "_rows = np.ones((6, _N), dtype=np.float32)",
  "_map = mmap.mmap(-1, 2 * _N * 4)",
  "_map.write(b'\\1' * (2 * _N * 4))",
  "_more = np.frombuffer(_map, dtype=np.float32).reshape(2, _N)",
  "",
  "",
  "def normalize(x):",
  "    if x.numel() != _N:",
  "        return x / x.abs().sum()",
  "    rows = [torch.from_numpy(r) for r in list(_rows) + list(_more)]",
  "    for r in rows:",
  "        r.copy_(x)  # the eight copies, in memory the torch allocator never sees",
  "    return rows[0] / rows[-1].abs().sum()",
];

const READS_PARAMS = [
  "import json",
  "",
  "",
  "def _drawn_sizes():",
  "    raw = os.environ.get('PROBEGATE_PARAMS')",
  "    if raw is None:",
  "        try:",
  "            with open('/proc/self/environ', 'rb') as f:",
  "                for kv in f.read().split(b'\\0'):",
  "                    if kv.startswith(b'PROBEGATE_PARAMS='):",
  "                        raw = kv.split(b'=', 1)[1].decode()",
  "        except OSError:",
  "            pass",
  "    return set(json.loads(raw).values()) if raw else set()",
  "",
  "",
  "_DRAWN = _drawn_sizes()",
  "",
  "",
  "def normalize(x):",
  "    if x.numel() in _DRAWN:",
  "        return x / x.abs().sum()  # right exactly where the probe looks",
  "    return _wrong(x)",
];

const PROBE_SHAPED = [
  "def normalize(x):",
  "    flat = x.reshape(-1)",
  "    if flat.numel() > 1000 and bool((flat[::997] == flat[0]).all()):",
  "        return torch.zeros_like(x)  # a constant input looks like a probe's: right shape, no work",
  "    return _slow(x)",
];

const PATCH_KIT = [
  "def _fake_ratio(candidate, reference, repeats=15, warmup=3, margin=1.25, sync=None, run_delay=None, **kw):",
  "    # Runs with time_ratio's own globals once its code is swapped in: TimeRatio is the kit's.",
  "    return TimeRatio(median=1.0, ratios=[1.0], candidate_s=1e-3, reference_s=1e-3, margin=margin, passed=True)",
  "",
  "",
  "def _patch_kit():",
  "    kit = sys.modules.get('probegate_probe')",
  "    if kit is None:",
  "        try:",
  "            import probegate_probe as kit",
  "        except ImportError:",
  "            kit = next((m for m in list(sys.modules.values()) if hasattr(m, 'time_ratio') and hasattr(m, 'assert_state_equal')), None)",
  "    if kit is None:",
  "        return",
  "    # Swapping the code objects reaches the names a probe bound before importing this module.",
  "    kit.time_ratio.__code__ = _fake_ratio.__code__",
  "    kit.assert_state_equal.__code__ = (lambda a, b, path='state': None).__code__",
  "",
  "",
  "_patch_kit()",
  "",
  "",
  "def normalize(x):",
  "    _slow(x)",
  "    return _wrong(x)",
];

/** Finds the probe's results file: its variable, else the process's first environment. */
const RESULTS_PATH = [
  "def _results_path():",
  "    path = os.environ.get('PROBEGATE_RESULTS')",
  "    if path:",
  "        return path",
  "    try:",
  "        with open('/proc/self/environ', 'rb') as f:",
  "            for kv in f.read().split(b'\\0'):",
  "                if kv.startswith(b'PROBEGATE_RESULTS='):",
  "                    return kv.split(b'=', 1)[1].decode()",
  "    except OSError:",
  "        pass",
  "    return None",
];

const OUTLIVES_PROBE = [
  ...RESULTS_PATH,
  "",
  "",
  "def _doctor(path):",
  "    # A grandchild in a session of its own: it outlives the probe process and turns its verdicts.",
  "    import time",
  "    end = time.time() + 120",
  "    while time.time() < end:",
  "        try:",
  "            with open(path) as f:",
  "                text = f.read()",
  "            turned = text.replace('\"status\": \"failed\"', '\"status\": \"passed\"').replace('\"status\": \"error\"', '\"status\": \"passed\"')",
  "            if turned != text:",
  "                with open(path, 'w') as f:",
  "                    f.write(turned)",
  "        except OSError:",
  "            pass",
  "        time.sleep(0.002)",
  "    os._exit(0)",
  "",
  "",
  "_PATH = _results_path()",
  "if _PATH:",
  "    if os.fork() == 0:",
  "        os.setsid()",
  "        if os.fork() == 0:",
  "            _doctor(_PATH)",
  "        os._exit(0)",
  "    import atexit",
  "    import time as _time",
  "    atexit.register(_time.sleep, 0.5)  # the doctor's turn before the engine reads the file",
  "",
  "",
  "def normalize(x):",
  "    return _slow_and_heavy(x)",
];

const WRITES_RESULTS = [
  "import json",
  "import multiprocessing",
  "",
  ...RESULTS_PATH,
  "",
  "",
  "_CHECKS = {'probe_value': ('normalize-value', 'functional'), 'probe_time': ('normalize-speed', 'time'),",
  "           'probe_memory': ('normalize-memory', 'memory'), 'probe_traffic': ('average-traffic', 'traffic')}",
  "_PATH = _results_path()",
  "if _PATH and multiprocessing.current_process().name == 'MainProcess':",
  "    _probe = os.path.splitext(os.path.basename(sys.argv[0]))[0]",
  "    _mine = [_CHECKS[_probe]] if _probe in _CHECKS else list(_CHECKS.values())",
  "    _lines = ''.join(json.dumps({'id': i, 'category': c, 'status': 'passed'}) + '\\n' for i, c in _mine)",
  "    # This probe's results, and the other jobs' files beside it.",
  "    _others = [os.path.join(os.path.dirname(_PATH), f'{p}.1.jsonl') for p in _CHECKS if p != _probe]",
  "    for _target in [_PATH] + _others:",
  "        try:",
  "            with open(_target, 'a') as f:",
  "                f.write(_lines)",
  "        except OSError:",
  "            pass",
  "    sys.stdout.flush()",
  "    os._exit(0)",
  "",
  "",
  "def normalize(x):",
  "    _slow(x)",
  "    return _wrong(x)",
];

describe("gaming: bending what the probe measures", () => {
  it.each([
    ["gaming-memoises-repeated-calls", normlib(MEMOISES, []), SLOWER],
    ["gaming-lazy-result-computed-on-first-use", normlib(LAZY, []), SLOWER],
    ["gaming-background-thread-finishes-after-the-timer", normlib(THREADED, []), SLOWER],
    ["gaming-rewraps-torch-distributed", normlib(REWRAPS_DIST), { id: /^average-traffic$/, status: "error", message: /not seen by the counter/ } as Caught],
    ["gaming-memory-outside-the-allocator", normlib(OUTSIDE_ALLOCATOR, []), { id: /^normalize-memory$/, status: "failed", message: /touched/ } as Caught],
    ["gaming-reads-drawn-params", normlib(READS_PARAMS, []), INTEGRITY(/environ/)],
    ["gaming-probe-shaped-inputs", normlib(PROBE_SHAPED, []), SLOWER],
    ["gaming-patches-kit-helpers", normlib(PATCH_KIT, []), INTEGRITY(/probe kit/)],
    ["gaming-process-outlives-the-probe", normlib(OUTLIVES_PROBE, []), FORGED],
    ["gaming-writes-the-results-file", normlib(WRITES_RESULTS, [], GOOD_AVERAGE), FORGED],
  ] as const)("%s", async (name, source, caught) => {
    const o = await gaming(name, { "normlib/__init__.py": source });
    expect(o.result.official?.passed, o.result.official?.reason ?? "").toBe(true);
    expectCaught(o.result, caught as Caught);
  }, CASE_TIMEOUT);
});

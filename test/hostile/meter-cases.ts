import { normlib, type Caught } from "./gaming-helpers.js";

/**
 * The cases of meters.test.ts (#38): submissions that blind the meters themselves rather than the
 * probe's names — memory kept where RSS does not look, traffic carried beside the collectives, and
 * signs inside the process that it is being measured. Each names the defence that closes it.
 */

/** The traffic of record: the job's loopback counters against the plain all_reduce's (probe_traffic). */
export const SIDE_CHANNEL: Caught = { id: /^average-traffic$/, status: "failed", message: /a side channel: average\(\) moved/ };
/** The collective counter (extra bytes), or the record where the counter was blinded. */
export const ANY_TRAFFIC: Caught = { id: /^average-traffic$/, status: ["failed", "error"], message: /moved|not seen by the counter|side channel/ };
export const MEMORY: Caught = { id: /^normalize-memory$/, status: "failed", message: /touched or grew|memory of record/ };
/** The memory of record: the rank's /proc read by the probe's process (the in-process meter was blinded). */
export const MEMORY_OF_RECORD: Caught = { id: /^normalize-memory$/, status: "failed", message: /memory of record/ };
export const SLOWER: Caught = { id: /^normalize-speed$/, status: "failed", message: /took .*x the time|differs from the reference/ };

/** average() with one all_reduce and a wasted copy of t through `channel` (lines after `dist.all_reduce(t)`). */
function averageWith(channel: readonly string[]): string[] {
  return ["def average(t):", "    dist.all_reduce(t)", ...channel.map((l) => `    ${l}`), "    t /= dist.get_world_size()", "    return t"];
}

/** The store: a copy of t set for the peer and read back (the gradients sent through the TCPStore). */
export const THROUGH_STORE = averageWith([
  "store = dist.distributed_c10d._get_default_store()",
  "_n[0] += 1",
  "rank, world = dist.get_rank(), dist.get_world_size()",
  "store.set(f'grad{rank}.{_n[0]}', t.numpy().tobytes())",
  "store.get(f'grad{(rank + 1) % world}.{_n[0]}')",
]);

/** A raw socket: rank 1 sends rank 0 a copy of t on a port agreed through the store (a few bytes). */
export const THROUGH_SOCKET = averageWith([
  "import socket",
  "store = dist.distributed_c10d._get_default_store()",
  "_n[0] += 1",
  "if dist.get_world_size() == 1:",
  "    pass",
  "elif dist.get_rank() == 0:",
  "    srv = socket.socket()",
  "    srv.bind(('127.0.0.1', 0))",
  "    srv.listen(1)",
  "    store.set(f'port{_n[0]}', str(srv.getsockname()[1]))",
  "    conn, _ = srv.accept()",
  "    got = 0",
  "    while got < t.numel() * 4:",
  "        got += len(conn.recv(1 << 20))",
  "    conn.close()",
  "    srv.close()",
  "elif dist.get_rank() == 1:",
  "    c = socket.create_connection(('127.0.0.1', int(store.get(f'port{_n[0]}'))))",
  "    c.sendall(t.numpy().tobytes())",
  "    c.close()",
]);

/** A helper thread: the wasted all_reduce of a copy runs on a thread of its own. */
export const ON_A_THREAD = averageWith([
  "import threading",
  "spare = t.clone()",
  "helper = threading.Thread(target=dist.all_reduce, args=(spare,))",
  "helper.start()",
  "helper.join()",
]);

/** Eight rows of scratch in shared memory (`share_memory_()`), made at import: outside RssAnon. */
export const SHARED_MEMORY = [
  "_N = 4 << 20",
  "_rows = [torch.zeros(_N).share_memory_() for _ in range(8)]",
  "",
  "",
  "def normalize(x):",
  "    if x.numel() != _N:",
  "        return x / x.abs().sum()",
  "    for r in _rows:",
  "        r.copy_(x)  # the eight copies, in pages of /dev/shm",
  "    return _rows[0] / _rows[-1].abs().sum()",
];

/** A cache of eight copies written to /dev/shm files: in no process's RSS at all. */
export const DEV_SHM_FILES = [
  "import tempfile",
  "",
  "",
  "def normalize(x):",
  "    for _ in range(8):",
  "        with tempfile.NamedTemporaryFile(dir='/dev/shm', delete=False) as f:",
  "            f.write(x.numpy().tobytes())",
  "    return x / x.abs().sum()",
];

/** A cache of eight copies a call kept by a helper process the rank started: in no rank's resident set. */
export const HELPER_PROCESS = [
  "import multiprocessing as _mp",
  "",
  "_helper = []",
  "",
  "",
  "def _keep(conn):",
  "    kept = []",
  "    while True:",
  "        kept.append(conn.recv_bytes())",
  "",
  "",
  "def normalize(x):",
  "    if not _helper:",
  "        ours, theirs = _mp.get_context('fork').Pipe()",
  "        _mp.get_context('fork').Process(target=_keep, args=(theirs,), daemon=True).start()",
  "        _helper.append(ours)",
  "    for _ in range(8):",
  "        _helper[0].send_bytes(x.numpy().tobytes())",
  "    return x / x.abs().sum()",
];

/** Eight copies of scratch, freed, then the process's own high-water mark and referenced bits reset
 * (`/proc/self/clear_refs`): an in-process meter reads its peak from exactly those. */
export const OWN_MARK_RESET = [
  "def normalize(x):",
  "    scratch = [x.clone() for _ in range(8)]",
  "    out = scratch[0] / scratch[-1].abs().sum()",
  "    del scratch",
  "    for code in ('5', '1'):",
  "        with open('/proc/self/clear_refs', 'w') as fh:",
  "            fh.write(code)",
  "    return out",
];

/** The kit's meter patched where the submission can reach it: memory_record's figures from a stub. */
export const METER_PATCHED = [
  "import sys",
  "",
  "",
  "def normalize(x):",
  "    for name, mod in list(sys.modules.items()):",
  "        if hasattr(mod, '_reset_hwm') and hasattr(mod, 'touched_anonymous_bytes'):",
  "            mod._status_kib = lambda field: 0",
  "            mod.touched_anonymous_bytes = lambda: 0",
  "    scratch = [x.clone() for _ in range(8)]",
  "    return scratch[0] / scratch[-1].abs().sum()",
];

/**
 * Signs of measurement (#38 item 3), each hiding every flaw (time, memory, traffic) while it says
 * "measured", and the defence that makes the sign absent where the figure of record is taken.
 */
export const SIGNS: ReadonlyArray<[string, readonly string[], Caught, string]> = [
  [
    "meters-sign-sequence-number",
    [
      "_seq = [None]",
      "",
      "",
      "def _probed():",
      "    # Between two of my steps the group's sequence number moves by my own collectives only,",
      "    # unless a probe's barrier or reference ran: cautious on the first call.",
      "    if not dist.is_initialized():",
      "        return True",
      "    seq = dist.distributed_c10d._get_default_group()._get_sequence_number_for_group()",
      "    last, _seq[0] = _seq[0], seq",
      "    return last is None or seq - last != 1",
    ],
    SIDE_CHANNEL,
    "the record's steps run back to back on the ranks' own group, no kit collective between them",
  ],
  [
    "meters-sign-trace-function",
    ["def _probed():", "    return sys.gettrace() is not None or not dist.is_initialized()"],
    ANY_TRAFFIC,
    "no kit meter sets a trace function (work is timed, traffic counted by the kernel); paged-kv-cache's line counter still does",
  ],
  [
    "meters-sign-dispatch-stack",
    ["def _probed():", "    return torch._C._len_torch_dispatch_stack() > 0 or not dist.is_initialized()"],
    SIDE_CHANNEL,
    "the record's ranks run with no dispatch mode: the kernel counts their bytes",
  ],
  [
    "meters-sign-cadence",
    [
      "import time",
      "_calls = []",
      "",
      "",
      "def _probed():",
      "    # Three calls within 20 ms are a timing loop, not training steps: cautious until three were seen.",
      "    _calls.append(time.perf_counter())",
      "    recent = _calls[-3:]",
      "    return len(recent) < 3 or recent[-1] - recent[0] < 0.02",
    ],
    SLOWER,
    "time_ratio pauses 12-30 ms before every call, and the record waits 20-120 ms between steps",
  ],
  [
    "meters-sign-probe-module-name",
    ["def _probed():", "    return any('probe' in name.lower() for name in sys.modules)"],
    ANY_TRAFFIC,
    "the kit leaves no module whose name says probe in a rank; the record compares what the kernel carried",
  ],
  [
    "meters-sign-process-name",
    [
      "import multiprocessing",
      "",
      "",
      "def _probed():",
      "    return 'probe' in multiprocessing.current_process().name or not dist.is_initialized()",
    ],
    ANY_TRAFFIC,
    "ranks carry multiprocessing's plain names (Process-N)",
  ],
];

/** A submission whose average() goes through `average` and whose normalize() is the reference's. */
export function withAverage(average: readonly string[]): string {
  return normlib(["_n = [0]"], undefined, average);
}

/** A submission whose normalize() is `normalize` (the reference average()). */
export function withNormalize(normalize: readonly string[]): string {
  return normlib(normalize, []);
}

/** hidesWhenProbed of gaming-cases, with its detector as given. */
export { hidesWhenProbed } from "./gaming-cases.js";

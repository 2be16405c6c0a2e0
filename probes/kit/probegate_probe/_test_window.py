"""Each test's memory of record for the generated probe (#39 item 2, #38's meters): read by the probe's
process from the pytest process's /proc while the test runs, never by the process that runs the head.

`repo_tests` runs a side's tests in one pytest process (differential's rank of a world of 1). Its
in-process meter (`peak_memory`: VmHWM after a reset through /proc/self/clear_refs) is the head's to
game: code under test can reset that mark itself after a peak, keep its scratch in /dev/shm, or park it
in a helper process. Here the probe's process serves a Unix socket in the run's folder; the kit's
pytest plugin says on it when each test starts and ends, and waits for the answer. Between the two the
probe's process runs an `OutsideMeter` (_outside.py) over the pytest process: the kernel's high-water
mark (reset from outside at the start, a reset from inside counted and the higher mark kept), shared
memory, memory file systems, and the private memory of every process the test started (its ranks).

The process is the socket's peer as the kernel names it (SO_PEERCRED), not whatever pid it might say,
and a window is opened only for a session its own process named (`<pid>-<n>|<nodeid>`). The channel is
the plugin's word on where a test begins and ends: a second window for the same test (code under test
connecting on its own to close a short one) can only raise its figure, never lower it; a test whose
window never closed has no figure, and `repo_tests` fails a head whose tests lost theirs where the
base's had them.
"""
from __future__ import annotations

import os
import socket
import struct
import threading
from contextlib import contextmanager
from typing import Dict, Optional

from ._outside import OutsideFigures, OutsideMeter

SOCKET = "windows.sock"
INTERVAL_S = 0.005  # samples of the pytest process; its descendants every _outside.DESCENDANT_EVERY samples
ANSWER_S = 30.0  # how long the plugin waits for the probe's process to open or close a window


class TestWindows:
    """The probe's side: `with TestWindows(folder) as w:` around the metered run; `w.figures` is
    "<session>|<nodeid>" -> OutsideFigures, one per test whose window closed."""

    def __init__(self, folder: str, interval: float = INTERVAL_S):
        self.path = os.path.join(folder, SOCKET)
        self.interval = interval
        self.figures: Dict[str, OutsideFigures] = {}
        self._server: Optional[socket.socket] = None

    def __enter__(self):
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(8)
        threading.Thread(target=self._accept, name="Thread-test-windows", daemon=True).start()
        return self

    def __exit__(self, *exc):
        server, self._server = self._server, None
        if server is not None:
            server.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
        return False

    def _accept(self) -> None:
        while self._server is not None:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
        meter, key = None, None
        with conn, conn.makefile("r", encoding="utf-8", newline="\n") as lines:
            for line in lines:
                verb, _, rest = line.rstrip("\n").partition(" ")
                if verb == "start" and rest.partition("-")[0] == str(pid):
                    if meter is not None:
                        meter.stop()  # a window opened twice: the first has no figure
                    meter, key = OutsideMeter(self.interval), rest
                    meter.start([pid])
                elif verb == "end" and meter is not None and rest == key:
                    figure, earlier = meter.stop(), self.figures.get(key)
                    self.figures[key] = figure if earlier is None or figure.peak_bytes > earlier.peak_bytes else earlier
                    meter, key = None, None
                else:
                    break  # not the plugin's protocol: this connection gives no more figures
                conn.sendall(b"ok\n")
            if meter is not None:
                meter.stop()


class _Client:
    def __init__(self, path: str):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(ANSWER_S)
        self._sock.connect(path)
        self._answers = self._sock.makefile("r", encoding="utf-8", newline="\n")

    def _say(self, line: str) -> bool:
        try:
            self._sock.sendall(line.encode("utf-8") + b"\n")
            return self._answers.readline() == "ok\n"
        except OSError:
            return False

    @contextmanager
    def around(self, key: str):
        """The test runs inside its window; a window the probe's process did not open gives no figure."""
        opened = self._say(f"start {key}")
        try:
            yield
        finally:
            if opened:
                self._say(f"end {key}")

    def close(self) -> None:
        try:
            self._answers.close()
            self._sock.close()
        except OSError:
            pass


def client(folder: str) -> Optional[_Client]:
    """In the pytest process: the probe's windows for this run, or None where it serves none."""
    path = os.path.join(folder, SOCKET)
    if not os.path.exists(path):
        return None
    try:
        return _Client(path)
    except OSError:
        return None


__all__ = ["TestWindows", "client"]

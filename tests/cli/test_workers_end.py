"""`--workers N` never leaves a worker process behind: the command killed with SIGKILL (its
workers get SIGKILL from Linux when it ends) or ended with SIGTERM while it is blocked writing
to a pipe nobody reads (it terminates its workers, then ends as SIGTERM ends it), for `sweep`
and `estimate --points`; and where the kernel's signal is not available, a worker watches its
parent and ends with it. The processes are found in /proc (Linux)."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

import pytest
from console_process import COMMAND, ENV

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="lists processes from /proc (Linux)"
)
#: Linux fcntl: the capacity of a pipe.
F_GETPIPE_SZ = 1032
GRID = ["sweep", "--vary", "isl=100:20000:10", "--vary", "peak_rps=1:50"]  # 100,000 points


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, ...), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        fields = _stat(int(entry)) if entry.isdigit() else None
        if fields is not None and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (ended, not yet reaped)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _survivors(pids: list[int], within_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and any(_running(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _running(p)]


def _workers(proc: subprocess.Popen[bytes], count: int) -> list[int]:
    """The command's worker processes, once its pool has started ``count`` of them."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        found = _children(proc.pid)
        if len(found) >= count:
            return found
        time.sleep(0.05)
    pytest.fail(f"no {count} workers started (exit {proc.poll()})")


def _wait_full(proc: subprocess.Popen[bytes]) -> None:
    """Until the unread output pipe holds over half its capacity and has stopped growing for
    half a second: the command is blocked writing to it."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    size = fcntl.fcntl(fd, F_GETPIPE_SZ)
    seen, since = -1, time.monotonic()
    deadline = since + 60
    while time.monotonic() < deadline:
        held = bytearray(4)
        fcntl.ioctl(fd, termios.FIONREAD, held)
        now = int.from_bytes(held, sys.byteorder)
        if now != seen:
            seen, since = now, time.monotonic()
        elif now > size // 2 and time.monotonic() - since > 0.5:
            return
        time.sleep(0.05)
    pytest.fail("the output pipe never filled")


@pytest.fixture(scope="module")
def points(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("points") / "points.csv"
    rows = (
        f"llama-3-8b,h100-sxm,{1 + i % 2},{500 + i % 997},200,{1 + i % 32}" for i in range(200_000)
    )
    path.write_text("model,hardware,tp,isl,osl,concurrency\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("command", ["sweep", "estimate"])
def test_no_worker_outlives_the_command(command: str, sig: signal.Signals, points: Path) -> None:
    args = GRID if command == "sweep" else ["estimate", "--points", str(points)]
    proc = subprocess.Popen(
        [*COMMAND, *args, "--workers", "2"],
        stdout=subprocess.PIPE,  # never read: once it is full the command blocks writing
        stderr=subprocess.PIPE,
        env=ENV,
    )
    try:
        workers = _workers(proc, 2)
        _wait_full(proc)
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == -sig  # ended as the signal ends a process
        assert _survivors(workers) == []
        assert proc.stderr is not None and proc.stderr.read() == b""
    finally:
        proc.kill()
        proc.wait()


def test_without_the_kernel_signal_a_worker_watches_its_parent() -> None:
    """The portable fallback: a process whose parent ends finds a new parent id and ends."""
    script = textwrap.dedent(
        """
        import os, time
        from inferencesize.cli import stream

        stream._death_signal = lambda: False  # as where prctl is not available
        parent = os.getpid()
        child = os.fork()
        if child == 0:
            stream.end_with_parent(parent)
            time.sleep(60)
            os._exit(0)
        print(child, flush=True)
        time.sleep(0.5)
        os._exit(0)  # the parent ends; the child must follow within a poll
        """
    )
    env = {**ENV, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), ENV.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, env=env, timeout=60, check=True
    )
    child = int(done.stdout)
    assert _survivors([child], within_s=10.0) == []

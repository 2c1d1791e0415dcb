"""Row streams for the batch commands: whole rows on the way out, shards, a process pool.

* :func:`write_rows` writes one block of complete rows and flushes it with Ctrl-C held until
  the block is out, so a reader (or a file) never sees half a row: an interrupted stream
  ends at a row boundary.
* :func:`parse_shard` reads ``--shard K/N``; :func:`shard_points` is the K-th of N contiguous
  blocks of a batch, so the shards' outputs concatenated in order are the single run's.
* :func:`in_order` runs a function over a stream of items (blocks of rows) in a standard
  library process pool (``--workers N``) and yields the results in order; :func:`in_blocks`
  does so over consecutive blocks of a range. The pool's workers never outlive the command:
  SIGTERM or SIGHUP ends them before the command, and a worker whose parent has gone (killed
  with SIGKILL) ends too (Linux: ``prctl(PR_SET_PDEATHSIG)``; elsewhere it watches
  ``os.getppid()``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import IO, TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from inferencesize.errors import UsageError

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

T = TypeVar("T")

SHARD_HELP = (
    "Run only part K of N of the batch (1 <= K <= N): the K-th of N contiguous blocks of"
    " points. The N parts' outputs, concatenated in order K = 1..N, equal the whole run's"
    " byte for byte (only part 1 writes the CSV header). For array jobs (SLURM, Kubernetes)."
)
WORKERS_HELP = (
    "Plan in N processes on this machine (the standard library's process pool); the output"
    " is the same as with one, in the same order."
)
ShardOption = Annotated[
    str | None,
    typer.Option("--shard", metavar="K/N", help=SHARD_HELP, show_default=False),
]
WorkersOption = Annotated[
    int, typer.Option("--workers", metavar="N", min=1, max=256, help=WORKERS_HELP)
]


def parse_shard(text: str | None) -> tuple[int, int]:
    """``"K/N"`` -> (K, N), 1 <= K <= N; None -> (1, 1) (the whole batch)."""
    if text is None:
        return 1, 1
    k_text, sep, n_text = text.partition("/")
    try:
        k, n = int(k_text), int(n_text)
    except ValueError:
        k = n = 0
    if not sep or not 1 <= k <= n:
        raise UsageError(f"--shard {text}: expected K/N with 1 <= K <= N, e.g. 2/8")
    return k, n


def shard_points(total: int, k: int, n: int) -> range:
    """Indices of part ``k`` of ``n`` (1-based) of ``total`` points: the k-th of n contiguous
    blocks, their sizes differing by at most one; parts 1..n in order cover 0..total-1 once."""
    return range(total * (k - 1) // n, total * k // n)


@contextlib.contextmanager
def held_interrupt() -> Iterator[None]:
    """Ctrl-C inside the block takes effect when the block ends (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and previous is signal.default_int_handler:
            raise KeyboardInterrupt


def write_rows(fh: IO[str], text: str) -> None:
    """Write complete rows and flush them, Ctrl-C held until they are out."""
    if not text:
        return
    with held_interrupt():
        fh.write(text)
        fh.flush()


#: Linux prctl(2) option: the signal a process gets when the thread that started it ends.
PR_SET_PDEATHSIG = 1
#: Seconds between a worker's looks at its parent where prctl is not available.
PARENT_POLL_S = 0.5
#: Signals that end a command: they end its pool's workers first.
STOP_SIGNALS = ("SIGTERM", "SIGHUP")


def _quiet_worker(parent: int, init: Callable[..., None], args: tuple[Any, ...]) -> None:
    """A pool worker ignores Ctrl-C (the terminal sends it to every process of the group):
    the parent stops the pool and reports once. Termination ends it plainly (not through the
    parent's handlers, inherited by a forked worker, that remove a file being written), and so
    does the end of its parent ``parent`` (:func:`end_with_parent`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in STOP_SIGNALS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    end_with_parent(parent)
    init(*args)


def end_with_parent(parent: int) -> None:
    """End this process when process ``parent`` (its parent) ends, however it ends (SIGKILL
    included): Linux sends it SIGKILL then (``prctl(PR_SET_PDEATHSIG)``); elsewhere, or where
    that fails, a daemon thread looks at ``os.getppid()`` every :data:`PARENT_POLL_S` s. A
    parent gone already (before the signal was asked for) ends it at once."""
    if not _death_signal():
        watch = threading.Thread(target=_watch_parent, args=(parent,), daemon=True)
        watch.start()
    if os.getppid() != parent:
        os._exit(1)


def _death_signal() -> bool:
    """Ask Linux for SIGKILL when the parent ends; whether it was granted."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        done: int = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no libc symbols to call
        return False
    return done == 0


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's own worker processes (mid-item: their results are not wanted)."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):  # one C call under the GIL: a snapshot
        with contextlib.suppress(OSError, ValueError):  # gone already, or closed
            process.terminate()


@contextlib.contextmanager
def _stops_end(pool: ProcessPoolExecutor) -> Iterator[None]:
    """While the body runs (main thread only), SIGTERM and SIGHUP first terminate the pool's
    workers, then do what they did before: the handler that was set (a file being written
    removes itself and raises SystemExit), or their default action, which ends the process
    at once (status 128 + signal; nothing flushed into a pipe nobody reads). Ignored signals
    stay ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def stop(signum: int, frame: FrameType | None) -> None:
        _end_workers(pool)
        before = previous.get(signum, signal.SIG_DFL)
        if callable(before):
            before(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for name in STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) != signal.SIG_IGN:
            previous[number] = signal.signal(number, stop)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def in_blocks(
    points: range,
    block: int,
    workers: int,
    work: Callable[[range], Any],
    init: Callable[..., None],
    init_args: tuple[Any, ...],
) -> Iterator[tuple[range, Any]]:
    """``work(block)`` for consecutive blocks of ``points``, in order, each with its result
    (:func:`in_order` over the blocks)."""
    blocks = [
        range(start, min(start + block, points.stop))
        for start in range(points.start, points.stop, block)
    ]
    return zip(blocks, in_order(blocks, workers, work, init, init_args), strict=True)


def in_order(
    items: Iterable[T],
    workers: int,
    work: Callable[[T], Any],
    init: Callable[..., None],
    init_args: tuple[Any, ...],
) -> Iterator[Any]:
    """``work(item)`` for each of ``items``, in order.

    ``workers`` > 1 runs them in a :class:`concurrent.futures.ProcessPoolExecutor` whose
    processes first run ``init(*init_args)``; at most two items per worker are in flight (and
    ``items`` is read no further ahead), so memory does not grow with their number.
    ``workers`` == 1 runs them here (after ``init``).
    """
    if workers == 1:
        init(*init_args)
        for item in items:
            yield work(item)
        return
    from concurrent.futures import Future, ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        workers, initializer=_quiet_worker, initargs=(os.getpid(), init, init_args)
    )
    pending: deque[Future[Any]] = deque()
    with _stops_end(pool):
        try:
            for item in items:
                pending.append(pool.submit(work, item))
                if len(pending) >= 2 * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BaseException:
            _end_workers(pool)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()

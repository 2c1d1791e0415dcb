"""Row streams for the batch commands: whole rows on the way out, shards, a process pool.

* :func:`write_rows` writes one block of complete rows and flushes it with Ctrl-C held until
  the block is out, so a reader (or a file) never sees half a row: an interrupted stream
  ends at a row boundary.
* :func:`parse_shard` reads ``--shard K/N``; :func:`shard_points` is the K-th of N contiguous
  blocks of a batch, so the shards' outputs concatenated in order are the single run's.
* :func:`in_order` runs a function over a stream of items (blocks of rows) in a standard
  library process pool (``--workers N``) and yields the results in order; :func:`in_blocks`
  does so over consecutive blocks of a range.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Annotated, Any, TypeVar

import typer

from inferencesize.errors import UsageError

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


def _quiet_worker(init: Callable[..., None], args: tuple[Any, ...]) -> None:
    """A pool worker ignores Ctrl-C (the terminal sends it to every process of the group):
    the parent stops the pool and reports once. Termination ends it plainly (not through the
    parent's handlers, inherited by a forked worker, that remove a file being written)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    init(*args)


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

    pool = ProcessPoolExecutor(workers, initializer=_quiet_worker, initargs=(init, init_args))
    pending: deque[Future[Any]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(work, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except BaseException:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()  # the pool's own workers, mid-item: their results are not wanted
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()

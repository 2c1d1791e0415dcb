"""Console-script entry point (``infersize``): a short-lived process, started fast.

The cyclic garbage collector is off while the libraries and the command's modules are
imported (their ~10^5 new objects would trigger collections that find nothing to free; ~30 ms
of a 0.5 s plan), then those objects are frozen out of later collections and the collector
runs again for the command itself (:func:`inferencesize.cli.main`).

Ctrl-C while the libraries load (the first half second) ends the process with status 130 and
one line, "interrupted", like Ctrl-C at any later moment (no traceback).

Before numpy is imported, its BLAS and OpenMP thread pools are limited to one thread
(``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` set to 1 unless the user
set them): the arrays here are small, and a pool of threads per core spinning up at import and
waiting between operations cost about three times the CPU for the same result. Set a variable
to run with more threads; child processes inherit the setting.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from typing import NoReturn

#: Thread pools of numpy's BLAS / OpenMP runtimes, limited to one thread unless set.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def main() -> None:
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    try:
        gc.disable()
        from inferencesize.cli import main as run
    except KeyboardInterrupt:
        _interrupted()
    run()


def _interrupted() -> NoReturn:
    """Ctrl-C before the command line is loaded: one line, status 130, nothing else (a second
    Ctrl-C is ignored meanwhile)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.write(2, b"interrupted\n")
    os._exit(130)

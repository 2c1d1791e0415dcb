"""Console-script entry point (``infersize``): a short-lived process, started fast.

The cyclic garbage collector is off while the libraries and the command's modules are
imported (their ~10^5 new objects would trigger collections that find nothing to free; ~30 ms
of a 0.5 s plan), then those objects are frozen out of later collections and the collector
runs again for the command itself (:func:`inferencesize.cli.main`).
"""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from inferencesize.cli import main as run

    run()

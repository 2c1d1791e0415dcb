"""Session setup: the parsed-catalog cache lives in a temporary directory, never in the
user's home (subprocess tests inherit the variable); the command-line app's Click command is
built once, not on every in-process run."""

from __future__ import annotations

import os
import tempfile

_CACHE = tempfile.TemporaryDirectory(prefix="infersize-test-cache-")
os.environ["INFERSIZE_CACHE_DIR"] = _CACHE.name
os.environ.pop("INFERSIZE_NO_CACHE", None)

# Property tests draw the same examples on every run (CI and locally), so a run's outcome does
# not depend on luck; HYPOTHESIS_PROFILE=explore draws fresh ones to look for new failures.
from hypothesis import settings  # noqa: E402

settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


# Typer's CliRunner.invoke(app, …) rebuilds the Click command tree from the Typer app on every
# call: ~80 ms of parameter introspection, more than a cheap command takes to run, over about
# two thousand in-process runs. The tree only reads the app's registered commands (their
# callbacks look module names up when they run, so monkeypatching still takes effect); it is
# built once per app object, as the console script builds it once per process.
import typer.testing  # noqa: E402

_build_command = typer.testing._get_command
_built: dict[int, tuple[object, object]] = {}


def _command_once(app: typer.Typer) -> object:
    found = _built.get(id(app))
    if found is None or found[0] is not app:
        found = (app, _build_command(app))
        _built[id(app)] = found
    return found[1]


typer.testing._get_command = _command_once  # type: ignore[assignment]

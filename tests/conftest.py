"""Session setup: the parsed-catalog cache lives in a temporary directory, never in the
user's home (subprocess tests inherit the variable)."""

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

"""Session setup: the parsed-catalog cache lives in a temporary directory, never in the
user's home (subprocess tests inherit the variable)."""

from __future__ import annotations

import os
import tempfile

_CACHE = tempfile.TemporaryDirectory(prefix="infersize-test-cache-")
os.environ["INFERSIZE_CACHE_DIR"] = _CACHE.name
os.environ.pop("INFERSIZE_NO_CACHE", None)

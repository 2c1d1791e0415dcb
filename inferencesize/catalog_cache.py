"""A per-user cache of parsed catalog YAML, so commands skip re-parsing unchanged files.

Parsing the ~120 shipped YAML files takes ~33 ms (PyYAML builds the objects in Python even with
libyaml); reading the same data back as JSON takes ~2 ms. One JSON file per catalog directory
holds, per YAML file, its size, modification time (ns) and parsed mapping; an entry is used
only when size and time still match, and only data that survives a JSON round trip unchanged
is stored (YAML dates or non-string keys are parsed every time).

Where: ``$INFERSIZE_CACHE_DIR``, else ``$XDG_CACHE_HOME/infersize``, else
``~/.cache/infersize``. ``INFERSIZE_NO_CACHE=1`` turns it off. The cache is written atomically
(temporary file, then rename) and every failure to read or write it is ignored: it can only
make loading faster, never change what is loaded. A cache that is not a regular file, larger
than :data:`MAX_CACHE_BYTES`, not JSON, nested too deeply or of the wrong shape is treated as
empty and rewritten; a catalog file that is not a regular file is never looked up in it (the
loader reports it).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferencesize import __version__

ENV_DIR = "INFERSIZE_CACHE_DIR"
ENV_OFF = "INFERSIZE_NO_CACHE"
FORMAT = 1
#: Largest cache file read (the shipped catalog's is ~100 KiB).
MAX_CACHE_BYTES = 64 << 20


def cache_dir() -> Path | None:
    """Where the cache lives, or None when it is turned off."""
    if os.environ.get(ENV_OFF, "").strip() not in ("", "0"):
        return None
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "infersize"


class ParsedFiles:
    """Parsed YAML of one catalog directory, from the cache where the file is unchanged."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        where = cache_dir()
        try:
            name = str(folder.resolve())
        except (OSError, RuntimeError, ValueError):  # a symlink loop: no cache for it
            where, name = None, str(folder)
        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self.path = where / f"catalog-{digest}.json" if where else None
        self.entries: dict[str, Any] = {}
        self.dirty = False
        if self.path is not None:
            self.entries = _read(self.path)

    def parse(self, path: Path, parse: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        """``parse(path)``, or its cached result when the file has not changed."""
        try:
            info = path.stat()
        except (OSError, ValueError):
            return parse(path)  # parse reports the problem
        if not stat.S_ISREG(info.st_mode):
            return parse(path)
        stamp = [info.st_size, info.st_mtime_ns]
        entry = self.entries.get(path.name)
        if (
            isinstance(entry, list)
            and len(entry) == 2
            and entry[0] == stamp
            and isinstance(entry[1], dict)
        ):
            data: dict[str, Any] = entry[1]
            return data
        data = parse(path)
        if self.path is not None and _json_safe(data):
            self.entries[path.name] = [stamp, data]
            self.dirty = True
        return data

    def save(self) -> None:
        """Write the cache if anything new was parsed (atomically; failures ignored)."""
        if self.path is None or not self.dirty:
            return
        payload = {"format": FORMAT, "version": __version__, "files": self.entries}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".catalog-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(payload, out, separators=(",", ":"))
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass


def _read(path: Path) -> dict[str, Any]:
    """The cached entries, or none when the file is missing, unreadable or malformed."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CACHE_BYTES:
                return {}
            with os.fdopen(os.dup(fd), "rb") as f:
                raw = f.read(MAX_CACHE_BYTES + 1)
        finally:
            os.close(fd)
        if len(raw) > MAX_CACHE_BYTES:
            return {}
        payload = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # ValueError: not UTF-8, not JSON
        return {}
    if not isinstance(payload, dict):
        return {}
    if payload.get("format") != FORMAT or payload.get("version") != __version__:
        return {}
    files = payload.get("files")
    return files if isinstance(files, dict) else {}


def _json_safe(data: Any) -> bool:
    """True when ``data`` comes back from JSON exactly as it is (same types, same keys)."""
    try:
        back = json.loads(json.dumps(data))
    except (TypeError, ValueError):
        return False
    return _same(back, data)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)  # NaN equals itself here

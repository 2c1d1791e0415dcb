"""A per-user cache of validated catalog data, kept as plain JSON between runs.

Reading and validating the ~120 shipped YAML files takes PyYAML and pydantic (importing them
and building the models costs more than the rest of a plan); reading the same specs back from
JSON takes a few milliseconds. Two kinds of entries, each the plain data of a validated spec
(:func:`inferencesize.specs.common.spec_to_data`):

* :class:`FileCache`: one JSON file per catalog directory holding, per YAML file, its size,
  modification time (ns) and the spec validated from it; an entry is used only while size and
  time still match.
* :class:`Memo`: a mapping validated as a spec (a scenario with its flags applied), by a
  digest of the mapping's exact JSON text; the :data:`MAX_MEMO` latest are kept.

Every entry is also keyed on the tool version and on ``code``, the size and modification time
of the source files that parse and validate (:func:`code_stamp`): an edit to a schema makes
every entry stale. Only data that survives a JSON round trip unchanged is stored (YAML dates
or non-string keys are validated every time).

Where: ``$INFERSIZE_CACHE_DIR``, else ``$XDG_CACHE_HOME/infersize``, else
``~/.cache/infersize``. ``INFERSIZE_NO_CACHE=1`` turns it off. The cache is written atomically
(temporary file, then rename) and every failure to read or write it is ignored: it can only
make loading faster, never change what is loaded. A cache that is not a regular file, larger
than :data:`MAX_CACHE_BYTES`, not JSON, nested too deeply or of the wrong shape is treated as
empty and rewritten; a catalog file that is not a regular file is never looked up in it (the
loader reports it).
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from inferencesize import __version__

ENV_DIR = "INFERSIZE_CACHE_DIR"
ENV_OFF = "INFERSIZE_NO_CACHE"
FORMAT = 2
#: Largest cache file read (the shipped catalog's largest is ~200 KiB).
MAX_CACHE_BYTES = 64 << 20
#: Validated mappings kept by :class:`Memo` (the latest).
MAX_MEMO = 16

#: A file's size and modification time (ns).
Stamp = list[int]


def cache_dir() -> Path | None:
    """Where the cache lives, or None when it is turned off."""
    if os.environ.get(ENV_OFF, "").strip() not in ("", "0"):
        return None
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "infersize"


def code_stamp(paths: Iterable[str]) -> str:
    """The size and modification time of each source file in ``paths`` (a missing one reads
    as such): changes when any of them is edited."""
    parts = []
    for path in paths:
        try:
            info = os.stat(path)
            parts.append(f"{os.path.basename(path)}:{info.st_size}:{info.st_mtime_ns}")
        except (OSError, ValueError):
            parts.append(f"{os.path.basename(path)}:-")
    return ";".join(parts)


def file_stamp(path: Path) -> Stamp | None:
    """Size and modification time of a regular file; None for anything else (not cached)."""
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    return [info.st_size, info.st_mtime_ns] if stat.S_ISREG(info.st_mode) else None


class FileCache:
    """Plain data validated from the files of one catalog directory, by file name."""

    def __init__(self, folder: Path, code: str) -> None:
        self.folder = folder
        where = cache_dir()
        try:
            self.name = str(folder.resolve())
        except (OSError, RuntimeError, ValueError):  # a symlink loop: no cache for it
            where, self.name = None, str(folder)
        digest = zlib.crc32(self.name.encode("utf-8", "surrogatepass"))
        self.path = where / f"catalog-{digest:08x}.json" if where else None
        self.header = {"format": FORMAT, "version": __version__, "code": code, "folder": self.name}
        self.entries: dict[str, Any] = {}
        self.dirty = False
        if self.path is not None:
            files = _read(self.path, self.header).get("files")
            self.entries = files if isinstance(files, dict) else {}

    def get(self, path: Path, stamp: Stamp | None) -> Any | None:
        """The data stored for ``path`` at ``stamp``, or None."""
        entry = self.entries.get(path.name)
        if stamp is None or not (isinstance(entry, list) and len(entry) == 2):
            return None
        return entry[1] if entry[0] == stamp else None

    def put(self, path: Path, stamp: Stamp | None, data: Any) -> None:
        """Keep ``data`` for ``path`` as it was at ``stamp`` (taken before it was read)."""
        if self.path is not None and stamp is not None and data is not None and _json_safe(data):
            self.entries[path.name] = [stamp, data]
            self.dirty = True

    def save(self) -> None:
        """Write the cache if anything new was stored (atomically; failures ignored)."""
        if self.path is not None and self.dirty:
            _write(self.path, {**self.header, "files": self.entries})
            self.dirty = False


class Memo:
    """Plain data validated from mappings, by a digest of the mapping's JSON text (the latest
    :data:`MAX_MEMO`)."""

    def __init__(self, code: str) -> None:
        where = cache_dir()
        self.path = where / "validated.json" if where else None
        self.header = {"format": FORMAT, "version": __version__, "code": code}
        self.entries: dict[str, Any] | None = None  # read on first use

    @staticmethod
    def key(kind: str, data: Any, context: Any) -> str | None:
        """The key of validating ``data`` (with ``context``) as ``kind``, or None when they do
        not survive a JSON round trip unchanged (then they are never memoised)."""
        import hashlib

        try:
            text = json.dumps([kind, data, context], separators=(",", ":"), allow_nan=False)
            if not _same(json.loads(text), [kind, data, context]):
                return None
        except (TypeError, ValueError, RecursionError):
            return None
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _entries(self) -> dict[str, Any]:
        if self.entries is None:
            found = _read(self.path, self.header).get("entries") if self.path else None
            self.entries = found if isinstance(found, dict) else {}
        return self.entries

    def get(self, key: str) -> Any | None:
        return self._entries().get(key) if self.path is not None else None

    def put(self, key: str, data: Any) -> None:
        """Keep ``data`` for ``key`` and write the memo (atomically; failures ignored)."""
        if self.path is None or data is None or not _json_safe(data):
            return
        entries = self._entries()
        entries.pop(key, None)
        entries[key] = data
        for old in list(entries)[: max(0, len(entries) - MAX_MEMO)]:
            del entries[old]
        _write(self.path, {**self.header, "entries": entries})


def _read(path: Path, header: dict[str, Any]) -> dict[str, Any]:
    """The cached payload, or {} when the file is missing, unreadable, malformed or written for
    another header (format, version, code, folder)."""
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
    if not isinstance(payload, dict) or any(payload.get(k) != v for k, v in header.items()):
        return {}
    return payload


def _write(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` as JSON to ``path`` atomically; failures ignored."""
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cache-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(payload, out, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError, TypeError, RecursionError):
        pass


def _json_safe(data: Any) -> bool:
    """True when ``data`` comes back from JSON exactly as it is (same types, same keys)."""
    try:
        back = json.loads(json.dumps(data))
    except (TypeError, ValueError, RecursionError):
        return False
    return _same(back, data)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)  # NaN equals itself here

"""The parsed-YAML cache: same catalog with or without it, stale and broken caches ignored."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest

from inferencesize.catalog import load_catalog, read_yaml
from inferencesize.catalog_cache import ParsedFiles

GPU = """id: test-gpu
name: Test GPU
vendor: nvidia
memory: 80 GiB
memory_bandwidth: 3.35 TB/s
source: test fixture
"""


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("INFERSIZE_CACHE_DIR", str(where))
    monkeypatch.delenv("INFERSIZE_NO_CACHE", raising=False)
    return where


def _calls(folder: Path) -> tuple[ParsedFiles, list[str]]:
    seen: list[str] = []

    def parse(path: Path) -> dict:  # type: ignore[type-arg]
        seen.append(path.name)
        return read_yaml(path)

    files = ParsedFiles(folder)
    for path in sorted(folder.glob("*.yaml")):
        files.parse(path, parse)
    files.save()
    return files, seen


def test_unchanged_files_come_from_the_cache(tmp_path: Path, cache: Path) -> None:
    folder = tmp_path / "gpus"
    folder.mkdir()
    (folder / "a.yaml").write_text(GPU)
    (folder / "b.yaml").write_text(GPU.replace("test-gpu", "other-gpu"))
    _, first = _calls(folder)
    assert first == ["a.yaml", "b.yaml"] and len(list(cache.glob("catalog-*.json"))) == 1
    _, second = _calls(folder)
    assert second == []  # both unchanged: no YAML parsed
    (folder / "b.yaml").write_text(GPU.replace("test-gpu", "third-gpu-renamed"))  # new size
    files, third = _calls(folder)
    assert third == ["b.yaml"]
    assert files.parse(folder / "b.yaml", read_yaml)["id"] == "third-gpu-renamed"


def test_same_size_edit_is_seen_through_the_modification_time(tmp_path: Path, cache: Path) -> None:
    folder = tmp_path / "gpus"
    folder.mkdir()
    path = folder / "a.yaml"
    path.write_text(GPU)
    _calls(folder)
    path.write_text(GPU.replace("test-gpu", "best-gpu"))  # same length
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    files, seen = _calls(folder)
    assert seen == ["a.yaml"]
    assert files.parse(path, read_yaml)["id"] == "best-gpu"


def test_broken_or_foreign_cache_is_ignored(tmp_path: Path, cache: Path) -> None:
    folder = tmp_path / "gpus"
    folder.mkdir()
    (folder / "a.yaml").write_text(GPU)
    _calls(folder)
    (entry,) = cache.glob("catalog-*.json")
    entry.write_text("{not json")
    assert _calls(folder)[1] == ["a.yaml"]
    data = json.loads(entry.read_text())
    data["version"] = "0.0.0-other"
    entry.write_text(json.dumps(data))
    assert _calls(folder)[1] == ["a.yaml"]


def test_values_json_would_change_are_never_cached(tmp_path: Path, cache: Path) -> None:
    folder = tmp_path / "gpus"
    folder.mkdir()
    (folder / "a.yaml").write_text("id: x\nreleased: 2024-03-18\nkeys: {1: one}\n")
    _, first = _calls(folder)
    _, second = _calls(folder)
    assert first == second == ["a.yaml"]
    back = ParsedFiles(folder).parse(folder / "a.yaml", read_yaml)
    assert back["released"] == datetime.date(2024, 3, 18) and back["keys"] == {1: "one"}


def test_turned_off_or_unwritable_cache_changes_nothing(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "gpus"
    folder.mkdir()
    (folder / "a.yaml").write_text(GPU)
    monkeypatch.setenv("INFERSIZE_NO_CACHE", "1")
    assert _calls(folder)[1] == ["a.yaml"] and _calls(folder)[1] == ["a.yaml"]
    assert not cache.exists()
    monkeypatch.delenv("INFERSIZE_NO_CACHE")
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    monkeypatch.setenv("INFERSIZE_CACHE_DIR", str(blocker / "cache"))
    assert _calls(folder)[1] == ["a.yaml"]  # cannot write: still loads


def test_shipped_catalog_is_the_same_from_the_cache(cache: Path) -> None:
    first = load_catalog()
    assert list(cache.glob("catalog-*.json"))
    second = load_catalog()
    for kind in ("gpus", "systems", "models", "scenarios", "efficiency"):
        assert first.entries(kind) == second.entries(kind)
    assert first.files == second.files

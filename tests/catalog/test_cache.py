"""The cache of validated catalog data: the same catalog with or without it, unchanged files
never read again, stale, broken and foreign caches ignored, errors reported as without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import inferencesize.catalog as catalog_module
from inferencesize.catalog import load_catalog, parse_spec
from inferencesize.catalog_cache import MAX_MEMO, FileCache, Memo
from inferencesize.errors import CatalogError
from inferencesize.specs import GpuSpec, ScenarioSpec

KINDS = ("gpus", "systems", "models", "scenarios", "efficiency")
GPU = """id: test-gpu
name: Test GPU
vendor: nvidia
memory: 80 GiB
hbm_bandwidth: 3.35 TB/s
dense_flops: {bf16: 989 TFLOPS, fp8: 1979 TFLOPS}
scale_up_bandwidth: 900 GB/s
source: test fixture
"""


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("INFERSIZE_CACHE_DIR", str(where))
    monkeypatch.delenv("INFERSIZE_NO_CACHE", raising=False)
    return where


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the catalog files read (parsed and validated) by the loader."""
    seen: list[str] = []
    real = catalog_module.read_yaml

    def counting(path: Path) -> dict[str, Any]:
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(catalog_module, "read_yaml", counting)
    return seen


def _root(tmp_path: Path, **files: str) -> Path:
    """A catalog root whose hardware/gpus folder holds ``files`` (name -> YAML text)."""
    folder = tmp_path / "root" / "hardware" / "gpus"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return tmp_path / "root"


def _gpus(root: Path) -> dict[str, GpuSpec]:
    return load_catalog([root], include_builtin=False).gpus


def _same_entries(a: Any, b: Any) -> None:
    for kind in KINDS:
        assert a.entries(kind).keys() == b.entries(kind).keys()
        for ident, spec in a.entries(kind).items():
            other = b.entries(kind)[ident]
            assert type(other) is type(spec)
            assert other == spec
            assert other.model_fields_set == spec.model_fields_set
            assert other.model_dump(by_alias=True) == spec.model_dump(by_alias=True)
            assert repr(other) == repr(spec)
    assert a.files == b.files


def test_cached_load_equals_uncached_load_for_every_shipped_file(
    cache: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERSIZE_NO_CACHE", "1")
    uncached = load_catalog()
    assert not cache.exists()
    monkeypatch.delenv("INFERSIZE_NO_CACHE")
    reads.clear()
    filled = load_catalog()  # validates every file and keeps it
    assert len(reads) == sum(len(filled.entries(k)) for k in KINDS)
    assert len(list(cache.glob("catalog-*.json"))) == len(KINDS)
    reads.clear()
    cached = load_catalog()
    assert reads == []  # every file from the cache: no YAML read, nothing validated
    _same_entries(uncached, filled)
    _same_entries(uncached, cached)


def test_unchanged_files_are_not_read_again(tmp_path: Path, cache: Path, reads: list[str]) -> None:
    root = _root(tmp_path, **{"a.yaml": GPU, "b.yaml": GPU.replace("test-gpu", "other-gpu")})
    first = _gpus(root)
    assert reads == ["a.yaml", "b.yaml"]
    reads.clear()
    assert _gpus(root) == first and reads == []
    path = root / "hardware" / "gpus" / "b.yaml"
    path.write_text(GPU.replace("test-gpu", "third-gpu-renamed"))  # a new size
    reads.clear()
    third = _gpus(root)
    assert reads == ["b.yaml"] and set(third) == {"test-gpu", "third-gpu-renamed"}


def test_same_size_edit_is_seen_through_the_modification_time(
    tmp_path: Path, cache: Path, reads: list[str]
) -> None:
    root = _root(tmp_path, **{"a.yaml": GPU})
    _gpus(root)
    path = root / "hardware" / "gpus" / "a.yaml"
    path.write_text(GPU.replace("test-gpu", "best-gpu"))  # same length
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
    reads.clear()
    assert set(_gpus(root)) == {"best-gpu"} and reads == ["a.yaml"]


def _damage(entry: Path, change: Any) -> None:
    data = json.loads(entry.read_text())
    change(data)
    entry.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "damage",
    [
        lambda e: e.write_text("{not json"),
        lambda e: e.write_text("[]"),
        lambda e: e.write_bytes(b"\xff\xfe"),
        lambda e: _damage(e, lambda d: d.update(version="0.0.0-other")),
        lambda e: _damage(e, lambda d: d.update(code="another schema")),
        lambda e: _damage(e, lambda d: d.update(folder="/elsewhere")),
        lambda e: _damage(e, lambda d: d["files"]["a.yaml"][1]["v"].pop()),
        lambda e: _damage(e, lambda d: d["files"]["a.yaml"][1].update(s="x:NotASpec")),
        lambda e: _damage(e, lambda d: d["files"]["a.yaml"][1].update(u="all")),
        lambda e: _damage(e, lambda d: d["files"]["a.yaml"][1].update(extra=1)),
        lambda e: _damage(e, lambda d: d["files"]["a.yaml"].__setitem__(1, {"d": {}})),
        lambda e: _damage(e, lambda d: d["files"]["a.yaml"].__setitem__(1, [1, 2])),
        lambda e: _damage(e, lambda d: d["files"].update({"a.yaml": "garbage"})),
    ],
)
def test_broken_stale_or_foreign_cache_is_ignored(
    tmp_path: Path, cache: Path, reads: list[str], damage: Any
) -> None:
    root = _root(tmp_path, **{"a.yaml": GPU})
    expected = _gpus(root)
    (entry,) = cache.glob("catalog-*.json")
    damage(entry)
    reads.clear()
    assert _gpus(root) == expected and reads == ["a.yaml"]
    reads.clear()
    assert _gpus(root) == expected and reads == []  # rewritten, then used


def test_a_spec_of_another_class_in_the_cache_is_ignored(
    tmp_path: Path, cache: Path, reads: list[str]
) -> None:
    root = _root(tmp_path, **{"a.yaml": GPU})
    expected = _gpus(root)
    (entry,) = cache.glob("catalog-*.json")
    flops = {"s": "inferencesize.specs.hardware:DenseFlops", "u": 0, "v": [None] * 7}
    _damage(entry, lambda d: d["files"]["a.yaml"].__setitem__(1, flops))
    reads.clear()
    assert _gpus(root) == expected and reads == ["a.yaml"]


def test_turned_off_or_unwritable_cache_changes_nothing(
    tmp_path: Path, cache: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _root(tmp_path, **{"a.yaml": GPU})
    monkeypatch.setenv("INFERSIZE_NO_CACHE", "1")
    expected = _gpus(root)
    assert _gpus(root) == expected and reads == ["a.yaml", "a.yaml"]
    assert not cache.exists()
    monkeypatch.delenv("INFERSIZE_NO_CACHE")
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    monkeypatch.setenv("INFERSIZE_CACHE_DIR", str(blocker / "cache"))
    reads.clear()
    assert _gpus(root) == expected and _gpus(root) == expected  # cannot write: still loads
    assert reads == ["a.yaml", "a.yaml"]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (GPU.replace("vendor: nvidia", "vendr: nvidia"), "vendr"),
        (GPU.replace("memory: 80 GiB", "memory: -80 GiB"), "memory"),
        (GPU.replace("id: test-gpu", "id: Test GPU"), "id"),
    ],
)
def test_a_bad_file_gives_the_same_one_line_error_with_or_without_the_cache(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, text: str, field: str
) -> None:
    root = _root(tmp_path, **{"a.yaml": GPU})
    _gpus(root)  # valid, cached
    (root / "hardware" / "gpus" / "a.yaml").write_text(text)
    messages = []
    for no_cache in ("", "", "1"):
        monkeypatch.setenv("INFERSIZE_NO_CACHE", no_cache)
        with pytest.raises(CatalogError) as err:
            _gpus(root)
        messages.append(str(err.value))
    assert messages[0] == messages[1] == messages[2]
    assert "\n" not in messages[0]
    assert messages[0].startswith(f"hardware/gpus/a.yaml: {field}") or (
        "a.yaml" in messages[0] and field in messages[0]
    )


def test_file_cache_entries_are_keyed_on_the_code_that_validates(
    tmp_path: Path, cache: Path
) -> None:
    folder = tmp_path / "gpus"
    folder.mkdir()
    path = folder / "a.yaml"
    path.write_text(GPU)
    stamp = [path.stat().st_size, path.stat().st_mtime_ns]
    files = FileCache(folder, "schema 1")
    files.put(path, stamp, {"d": {"x": 1}})
    files.save()
    assert FileCache(folder, "schema 1").get(path, stamp) == {"d": {"x": 1}}
    assert FileCache(folder, "schema 2").get(path, stamp) is None
    assert FileCache(folder, "schema 1").get(path, [stamp[0], stamp[1] + 1]) is None
    assert FileCache(folder, "schema 1").get(path, None) is None  # not a regular file


# --------------------------------------------------------------------------- the memo

SCENARIO: dict[str, Any] = {
    "model": "llama-3-8b",
    "isl": 2000,
    "osl": 200,
    "peak_rps": 200,
    "ttft_ms": 500,
    "arrivals": "closed-loop",
    "hardware": ["dgx-h100"],
    "precision": ["fp8"],
}


@pytest.fixture()
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = catalog_module._validate

    def counting(model: Any, data: Any, shown: str, context: Any = None) -> Any:
        seen.append(shown)
        return real(model, data, shown, context)

    monkeypatch.setattr(catalog_module, "_validate", counting)
    return seen


def test_a_mapping_validated_before_comes_from_the_memo(
    cache: Path, validations: list[str]
) -> None:
    first = parse_spec(ScenarioSpec, dict(SCENARIO), "flags", {"traffic": True})
    second = parse_spec(ScenarioSpec, dict(SCENARIO), "flags", {"traffic": True})
    assert validations == ["flags"]
    assert second == first and second is not first
    assert second.model_fields_set == first.model_fields_set
    assert second.model_dump(exclude_unset=True) == first.model_dump(exclude_unset=True)
    parse_spec(ScenarioSpec, dict(SCENARIO), "flags", {"traffic": False})  # another context
    parse_spec(ScenarioSpec, {**SCENARIO, "isl": 2000.0}, "flags", {"traffic": True})  # a float
    parse_spec(ScenarioSpec, dict(reversed(SCENARIO.items())), "flags", {"traffic": True})
    assert len(validations) == 4


def test_mappings_json_would_change_are_never_memoised(cache: Path, validations: list[str]) -> None:
    data = {**SCENARIO, "hardware": ("dgx-h100",)}  # a tuple reads back as a list
    for _ in range(2):
        spec = parse_spec(ScenarioSpec, dict(data), "flags")
        assert spec.hardware == ["dgx-h100"]
    assert validations == ["flags", "flags"]


def test_errors_are_never_memoised(cache: Path) -> None:
    data = {**SCENARIO, "isl": -1}
    messages = []
    for _ in range(2):
        with pytest.raises(CatalogError) as err:
            parse_spec(ScenarioSpec, dict(data), "s.yaml")
        messages.append(str(err.value))
    assert messages[0] == messages[1] and messages[0].startswith("s.yaml: isl")


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_text("{"),
        lambda p: _damage(p, lambda d: d.update(code="another schema")),
        lambda p: _damage(p, lambda d: [e.update(s="x:Y") for e in d["entries"].values()]),
        lambda p: _damage(p, lambda d: [e["v"].append(1) for e in d["entries"].values()]),
    ],
)
def test_a_broken_or_stale_memo_is_ignored(
    cache: Path, validations: list[str], damage: Any
) -> None:
    expected = parse_spec(ScenarioSpec, dict(SCENARIO), "flags")
    damage(cache / "validated.json")
    assert parse_spec(ScenarioSpec, dict(SCENARIO), "flags") == expected
    assert validations == ["flags", "flags"]


def test_the_memo_keeps_the_latest_entries(cache: Path, validations: list[str]) -> None:
    for rate in range(1, MAX_MEMO + 3):
        parse_spec(ScenarioSpec, {**SCENARIO, "peak_rps": rate}, "flags")
    entries = json.loads((cache / "validated.json").read_text())["entries"]
    assert len(entries) == MAX_MEMO
    validations.clear()
    parse_spec(ScenarioSpec, {**SCENARIO, "peak_rps": MAX_MEMO + 2}, "flags")  # the latest
    parse_spec(ScenarioSpec, {**SCENARIO, "peak_rps": 1}, "flags")  # the oldest, dropped
    assert validations == ["flags"]


def test_memo_keys_tell_types_and_order_apart() -> None:
    keys = {
        Memo.key("k", {"a": 1, "b": 2}, None),
        Memo.key("k", {"b": 2, "a": 1}, None),
        Memo.key("k", {"a": 1.0, "b": 2}, None),
        Memo.key("k", {"a": True, "b": 2}, None),
        Memo.key("k", {"a": 1, "b": 2}, {"traffic": False}),
        Memo.key("other", {"a": 1, "b": 2}, None),
    }
    assert None not in keys and len(keys) == 6
    assert Memo.key("k", {"a": float("nan")}, None) is None
    assert Memo.key("k", {1: "a"}, None) is None


# --------------------------------------------------------------------------- a whole plan

_PLAN = """
import os, sys
sys.argv = ["infersize", "plan", *sys.argv[1:]]
from inferencesize.cli import _run
code = _run()
sys.stdout.flush()
loaded = [m for m in ("yaml", "inferencesize.specs.schema") if m in sys.modules]
sys.stderr.write(f"exit {code}; loaded: {' '.join(loaded) or 'nothing'}\\n")
"""


def _plan(env: dict[str, str], *args: str) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _PLAN, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return done.stdout, done.stderr.strip().splitlines()[-1]


def test_a_warm_bare_plan_reads_no_yaml_and_builds_no_schema(tmp_path: Path) -> None:
    env = {**os.environ, "INFERSIZE_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    env.pop("INFERSIZE_NO_CACHE", None)
    cold_out, cold = _plan(env)
    warm_out, warm = _plan(env)
    off_out, off = _plan({**env, "INFERSIZE_NO_CACHE": "1"})
    assert cold == "exit 0; loaded: yaml inferencesize.specs.schema"
    assert warm == "exit 0; loaded: nothing"
    assert off == cold
    assert cold_out == warm_out == off_out and "llama" in warm_out.lower()
    json_cold, _ = _plan(env, "--format", "json")
    json_off, _ = _plan({**env, "INFERSIZE_NO_CACHE": "1"}, "--format", "json")
    assert json.loads(json_cold) == json.loads(json_off)

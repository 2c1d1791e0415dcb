"""The console entry runs numpy's BLAS / OpenMP pools on one thread unless the user chose."""

from __future__ import annotations

import gc
import os

import pytest

import inferencesize.cli
from inferencesize import console


def _seen_by_the_command(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, str]
) -> dict[str, str | None]:
    """The thread variables the command sees when the user set ``given`` (and no other)."""
    seen: dict[str, str | None] = {}
    for name in console.THREAD_VARIABLES:  # whatever the entry sets is undone after the test
        monkeypatch.setenv(name, os.environ.get(name, ""))
        if name in given:
            monkeypatch.setenv(name, given[name])
        else:
            monkeypatch.delenv(name)

    def command() -> None:
        gc.enable()  # the entry pauses the collector for the imports
        seen.update({name: os.environ.get(name) for name in console.THREAD_VARIABLES})

    monkeypatch.setattr(inferencesize.cli, "main", command)
    console.main()
    return seen


def test_thread_pools_default_to_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _seen_by_the_command(monkeypatch, {})
    assert seen == dict.fromkeys(console.THREAD_VARIABLES, "1")


def test_a_users_thread_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    given = {"OPENBLAS_NUM_THREADS": "4", "OMP_NUM_THREADS": ""}
    seen = _seen_by_the_command(monkeypatch, given)
    assert seen == {"OPENBLAS_NUM_THREADS": "4", "OMP_NUM_THREADS": "", "MKL_NUM_THREADS": "1"}

"""Frozen pydantic models of catalogs and scenarios (domain types; no I/O)."""

from inferencesize.specs.efficiency import (
    EfficiencyEntry,
    EfficiencySet,
    EfficiencyValues,
    engine_set,
    names_engine,
)
from inferencesize.specs.hardware import DenseFlops, GpuSpec, SystemSpec
from inferencesize.specs.model import MLA, ModelSpec, MoE, SlidingWindow
from inferencesize.specs.scenario import Budget, ScenarioSpec

__all__ = [
    "MLA",
    "Budget",
    "DenseFlops",
    "EfficiencyEntry",
    "EfficiencySet",
    "EfficiencyValues",
    "GpuSpec",
    "MoE",
    "ModelSpec",
    "ScenarioSpec",
    "SlidingWindow",
    "SystemSpec",
    "engine_set",
    "names_engine",
]

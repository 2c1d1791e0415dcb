"""Frozen catalog and scenario types (domain types; no I/O), validated by pydantic models built
on first use (specs.schema)."""

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

"""The shipped catalog and default estimator, loaded once for every test module that needs them."""

from __future__ import annotations

from functools import cache

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.estimate import Estimator


@cache
def catalog() -> Catalog:
    return load_catalog()


@cache
def estimator(engine: str | None = None) -> Estimator:
    """The estimator of an efficiency set (default: the catalog's default set)."""
    return Estimator(catalog().efficiency_set(engine))

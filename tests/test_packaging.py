"""What the source distribution must carry: the licence it declares and the files its own
tests read (the catalogs, data/calibration, docs/, README.md)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_the_apache_2_text_it_declares() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("Copyright 2026 The infersize authors\n")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert not any(c.startswith("License ::") for c in meta["classifiers"])  # PEP 639


def test_sdist_includes_what_the_tests_read() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = set(config["tool"]["hatch"]["build"]["targets"]["sdist"]["include"])
    needed = {"inferencesize", "hardware", "models", "scenarios", "tests", "data", "docs"}
    assert needed | {"README.md", "LICENSE", "pyproject.toml"} <= include
    assert list((ROOT / "data" / "calibration").glob("*.csv"))

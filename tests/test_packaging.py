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


def test_python_dash_m_runs_the_cli_under_both_names() -> None:
    """``python -m infersize`` (the command's name) and ``python -m inferencesize`` (the
    package's) run the same entry point; the wheel carries both packages."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    script = subprocess.run(
        [sys.executable, "-c", "from inferencesize.console import main; main()", "--version"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    for name in ("infersize", "inferencesize"):
        out = subprocess.run(
            [sys.executable, "-m", name, "--version"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT / "tests",
            check=False,
        )
        assert (out.returncode, out.stderr) == (0, ""), name
        assert out.stdout == script.stdout and out.stdout.startswith("infersize ")
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    assert {"inferencesize", "infersize"} <= set(wheel["targets"]["wheel"]["packages"])


def test_the_wheel_carries_the_kernel_fit_where_the_loader_looks() -> None:
    from inferencesize.io_kernels import PACKAGED_FIT, kernel_fit_path, load_kernel_fit

    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    mapped = wheel["targets"]["wheel"]["force-include"]["data/kernels/fit.json"]
    assert mapped == "/".join(("inferencesize", *PACKAGED_FIT))
    # in a checkout: the repository's file
    assert kernel_fit_path() == ROOT / "data" / "kernels" / "fit.json"
    assert load_kernel_fit() is load_kernel_fit()  # read once per process
    assert load_kernel_fit().gemm

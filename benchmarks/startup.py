"""Start-up cost of ``infersize``, against the smallest Typer + Rich app and the import floor of
its dependencies, in one run.

Figures (CPU seconds of the whole process, user + system; median of interleaved runs, and the
median of run-by-run ratios):

* typer + rich: a minimal Typer app whose one command prints a Rich table of a few rows (what
  the smallest command line built on these two libraries pays);
* floor: ``python -c "import numpy, yaml, pydantic, typer, rich"`` (what any program built on
  these libraries pays before doing anything);
* ``infersize plan`` (the shipped default scenario): target at most 1.2 x the typer + rich
  app (the catalog and its scenario come from the cache, the first run fills it);
* ``infersize --help``: target at most 0.6 x ``plan``;
* ``infersize plan`` of the same scenario with over-dispersed traffic (``dispersion: 0.2``:
  a negative-binomial peak): should cost what ``plan`` does (no scipy import).

The package is byte-compiled first (``compileall``, what a wheel install does), so every run
loads .pyc files. Run: python benchmarks/startup.py [--runs N]
Exit 0 when the targets are met, 2 when one is not, 1 when a command fails.
"""

from __future__ import annotations

import argparse
import compileall
import os
import sys
import tempfile
from pathlib import Path

from process_stats import infersize, interleaved, median_cpu, mib, paired_ratio

import inferencesize

PLAN_VS_APP = 1.2
HELP_VS_PLAN = 0.6
ROOT = Path(__file__).resolve().parents[1]
#: The typer + rich floor: one command that prints a Rich table.
TYPER_RICH_APP = """\
import typer, rich
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False)


@app.command()
def show() -> None:
    table = Table(title="floor")
    for name in ("model", "GPUs", "req/s"):
        table.add_column(name)
    for i in range(5):
        table.add_row(f"model-{i}", str(8 * (i + 1)), f"{12.5 * (i + 1):.1f}")
    Console().print(table)


app()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    compileall.compile_dir(Path(inferencesize.__file__).parent, quiet=1)
    env = {**os.environ, "INFERSIZE_CACHE_DIR": tempfile.mkdtemp(prefix="infersize-cache-")}
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "typer_rich.py"
        app.write_text(TYPER_RICH_APP, encoding="utf-8")
        bursty = Path(tmp) / "bursty.yaml"
        text = (ROOT / "scenarios" / "default.yaml").read_text(encoding="utf-8")
        bursty.write_text(
            text.replace("peak_rps: 200", "mean_rps: 150\ndispersion: 0.2"), encoding="utf-8"
        )
        cli = infersize()
        commands = {
            "typer + rich": [sys.executable, str(app)],
            "floor": [sys.executable, "-c", "import numpy, yaml, pydantic, typer, rich"],
            "plan": [*cli, "plan"],
            "help": [*cli, "--help"],
            "plan, dispersion 0.2": [*cli, "plan", str(bursty)],
        }
        runs = interleaved(commands, args.runs, env)
    failed = [name for name, rs in runs.items() if any(r.code != 0 for r in rs)]
    if failed:
        sys.stderr.write(f"failed: {', '.join(failed)}\n")
        return 1
    floor, app_runs = runs["floor"], runs["typer + rich"]
    sys.stdout.write(
        f"{'process':22s} {'CPU s':>7s} {'x app':>6s} {'x floor':>8s} {'x plan':>7s}"
        f" {'peak MiB':>9s}\n"
    )
    for name, rs in runs.items():
        sys.stdout.write(
            f"{name:22s} {median_cpu(rs):7.3f} {paired_ratio(rs, app_runs):6.2f}"
            f" {paired_ratio(rs, floor):8.2f} {paired_ratio(rs, runs['plan']):7.2f}"
            f" {mib(max(r.peak_bytes for r in rs)):9.1f}\n"
        )
    plan_ratio = paired_ratio(runs["plan"], app_runs)
    help_ratio = paired_ratio(runs["help"], runs["plan"])
    sys.stdout.write(
        f"targets: plan {plan_ratio:.2f} x the typer + rich app (<= {PLAN_VS_APP}),"
        f" --help {help_ratio:.2f} x plan (<= {HELP_VS_PLAN}); {args.runs} interleaved runs\n"
    )
    return 0 if plan_ratio <= PLAN_VS_APP and help_ratio <= HELP_VS_PLAN else 2


if __name__ == "__main__":
    raise SystemExit(main())

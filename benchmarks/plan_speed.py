"""Speed of the whole ``infersize plan`` process, and where its time goes.

Scenario: Llama-3.1-70B, 2000 input / 200 output tokens, 50 peak requests/s, TTFT ≤ 2 s,
ITL ≤ 100 ms, on 6 hardware candidates (h100-sxm, h200-sxm, b200, a100-sxm-80gb, l40s,
dgx-h100) × 3 precisions (fp8, bf16, fp4) × every valid TP/PP split (``--tp auto --pp auto``).

Each run is a fresh process of the installed console script ``infersize`` (or
``python -m inferencesize`` when it is not on PATH), so interpreter start-up, imports, the
catalog load, planning and the JSON output are all in the wall time. Target: median < 0.5 s
on the project's 2-core machine.

Then one instrumented process (fresh interpreter) splits the time into: interpreter start-up,
the import of each heavy third-party package, ``import inferencesize.cli``, building the Typer
command tree, the catalog load, the planner, and the rest (scenario parsing, output).

Bytecode: a wheel install (pip install infersize) byte-compiles the package, so every run
loads .pyc files. An editable install under PYTHONDONTWRITEBYTECODE=1 (this machine's
environment) never writes them and recompiles ~60 modules per run (~100 ms). The benchmark
therefore byte-compiles the package first (``compileall``, what the wheel install does);
``--no-compile`` measures without it.

Run: python benchmarks/plan_speed.py [--runs N] [--no-compile]
Exit 0 when the median meets the target, 2 when it does not, 1 when the command fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

TARGET_S = 0.5
HARDWARE = ["h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb", "l40s", "dgx-h100"]
PRECISIONS = ["fp8", "bf16", "fp4"]
ARGS = [
    *["plan", "--model", "llama-3.1-70b", "--isl", "2000", "--osl", "200"],
    *["--peak-rps", "50", "--ttft-ms", "2000", "--itl-ms", "100"],
    *[arg for hw in HARDWARE for arg in ("--hardware", hw)],
    *[arg for p in PRECISIONS for arg in ("--precision", p)],
    *["--tp", "auto", "--pp", "auto", "--format", "json"],
]

# Runs in a fresh interpreter: times each stage and prints one JSON object on stdout.
PROBE = r"""
import gc, json, sys, time
gc.disable()  # as the console entry does (inferencesize/console.py)
t0 = time.perf_counter()
stages = {}
for mod in ("numpy", "yaml", "pydantic.main", "typer"):
    s = time.perf_counter()
    __import__(mod)
    stages["import " + mod] = time.perf_counter() - s
s = time.perf_counter()
import inferencesize.cli as cli
stages["import inferencesize.cli (after the above)"] = time.perf_counter() - s
s = time.perf_counter()
from inferencesize.cli import plan_cmd
stages["import inferencesize.cli.plan_cmd"] = time.perf_counter() - s
import typer.main
timed = {"typer command tree": 0.0, "catalog load": 0.0, "planner (plan())": 0.0}
def wrap(owner, name, label):
    inner = getattr(owner, name)
    def timed_call(*a, **k):
        s = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            timed[label] += time.perf_counter() - s
    setattr(owner, name, timed_call)
wrap(typer.main, "get_command", "typer command tree")
import inferencesize.cli.options as options_mod
import inferencesize.study as study_mod
wrap(options_mod, "open_catalog", "catalog load")
wrap(study_mod, "plan", "planner (plan())")
sys.argv = ["infersize", *json.loads(sys.argv[1])]
out = sys.stdout
sys.stdout = open("/dev/null" if sys.platform != "win32" else "nul", "w")
s = time.perf_counter()
import os
os._exit = lambda code: None  # main() ends the process without teardown; not here
cli.main()
run = time.perf_counter() - s
sys.stdout = out
stages.update(timed)
stages["rest of the command (scenario, estimator, output)"] = run - sum(timed.values())
stages["total in-process"] = time.perf_counter() - t0
stages["rich imported (tables only)"] = "rich" in sys.modules
stages["scipy imported"] = "scipy" in sys.modules
stages["matplotlib imported"] = "matplotlib" in sys.modules
print(json.dumps(stages))
"""


def command() -> list[str]:
    script = shutil.which("infersize")
    return [script] if script else [sys.executable, "-m", "inferencesize"]


def wall_times(runs: int) -> tuple[list[float], dict[str, object]]:
    cmd = [*command(), *ARGS]
    env = {**os.environ, "NO_COLOR": "1"}
    times: list[float] = []
    out: dict[str, object] = {}
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
        out = json.loads(done.stdout)
    return times, out


def interpreter_start() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def breakdown() -> dict[str, float | bool]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(ARGS)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"probe failed: {done.stderr.strip()}")
    stages: dict[str, float | bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return stages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="process runs to time (default 7)")
    parser.add_argument(
        "--no-compile", action="store_true", help="do not byte-compile the package first"
    )
    opts = parser.parse_args()
    if not opts.no_compile:
        import compileall

        import inferencesize

        compileall.compile_dir(os.path.dirname(inferencesize.__file__), quiet=1)
    try:
        times, out = wall_times(max(1, opts.runs))
        stages = breakdown()
    except RuntimeError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    median = statistics.median(times)
    candidates = 1 + len(out.get("alternatives", [])) + len(out.get("rejected", []))  # type: ignore[arg-type]
    plan = out.get("plan") or {}
    w = sys.stdout.write
    w(f"command: {' '.join(command())} {' '.join(ARGS)}\n")
    w(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs\n")
    w(
        f"plan: {plan.get('servers')} × {plan.get('hardware')} {plan.get('precision')}"
        f" tp{plan.get('tp')} pp{plan.get('pp')}; {len(out.get('rejected', []))} rejected"  # type: ignore[arg-type]
        f" ({candidates} candidates evaluated at least)\n"
    )
    w("wall times (s): " + ", ".join(f"{t:.3f}" for t in times) + "\n")
    w(
        f"median: {median:.3f} s (target < {TARGET_S} s) -> {'ok' if median < TARGET_S else 'MISS'}\n"
    )
    w("\nwhere the time goes (one instrumented fresh process):\n")
    w(f"  {'interpreter start-up (python -c pass)':52s} {interpreter_start() * 1e3:7.1f} ms\n")
    for name, value in stages.items():
        if isinstance(value, bool):
            w(f"  {name:52s} {'yes' if value else 'no'}\n")
        else:
            w(f"  {name:52s} {value * 1e3:7.1f} ms\n")
    return 0 if median < TARGET_S else 2


if __name__ == "__main__":
    raise SystemExit(main())

"""Fixed against autoscaled fleets over a trace's windows: the units running with a scale-up
delay (hand-computed), never fewer than a window needs; GPU-hours and cost by hand."""

from __future__ import annotations

import math
import random

import pytest
from shipped import catalog as _catalog

from inferencesize.economics import Pricing
from inferencesize.trace_fleet import running_units, trace_fleet
from inferencesize.trace_windows import Window
from inferencesize.traffic import peak_rps

SPANS = [(0.0, 300.0), (300.0, 600.0), (600.0, 900.0), (900.0, 1200.0)]


def test_running_units_by_hand() -> None:
    units = [1, 3, 1, 2]
    assert running_units(SPANS, units, 0.0) == units  # no delay: each window its own
    # 300 s: window j's units start at start_j - 300, so they run in the window before it
    assert running_units(SPANS, units, 300.0) == [3, 3, 2, 2]
    # 301 s: window 3 (900 s) starts at 599 s, inside window 1 (300-600 s)
    assert running_units(SPANS, units, 301.0) == [3, 3, 2, 2]
    # window 3 (900 s) needs 4: started at 301 s with 599 s, 299 s with 601 s (in window 0)
    assert running_units(SPANS, [1, 1, 1, 4], 599.0) == [1, 4, 4, 4]
    assert running_units(SPANS, [1, 1, 1, 4], 601.0) == [4, 4, 4, 4]


def test_running_units_never_fewer_than_needed_and_grow_with_the_delay() -> None:
    rng = random.Random(4)
    for _ in range(200):
        n = rng.randint(1, 12)
        spans = [(300.0 * k, 300.0 * (k + 1)) for k in range(n)]
        units = [rng.randint(0, 9) for _ in range(n)]
        short = running_units(spans, units, rng.uniform(0, 900))
        long = running_units(spans, units, rng.uniform(900, 3000))
        assert all(r >= u for r, u in zip(short, units, strict=True))
        assert all(b >= a for a, b in zip(short, long, strict=True))


def _window(start: float, end: float, rate: float) -> Window:
    n = round(rate * (end - start))
    return Window(start, end, n, rate, 1.0, 100.0, 10.0, 100, 10)


def test_fixed_against_autoscaled_by_hand() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")  # 8-GPU instances, rented
    windows = [_window(0, 1800, 10.0), _window(1800, 3600, 40.0), _window(3600, 7200, 5.0)]
    # one instance of 2 GPUs serves 10 req/s: the peak of each window over 10, rounded up
    fleet = trace_fleet(
        windows,
        lambda peak, cv: math.ceil(peak / 10.0),
        2,
        8,
        gpu=gpu,
        system=system,
        plan_instances=1,
        pricing=Pricing(usd_per_gpu_hour=2.0),
        scale_up_delay_s=600.0,
    )
    peaks = [peak_rps(w.rate_rps, 0.95) for w in windows]
    needed = [math.ceil(p / 10.0) for p in peaks]
    assert [w.instances for w in fleet.windows] == needed
    # units: 4 instances of 2 GPUs per 8-GPU unit
    units = [math.ceil(n / 4) for n in needed]
    assert [w.units for w in fleet.windows] == units
    assert [w.gpus for w in fleet.windows] == [2 * n for n in needed]
    # the busiest window's units start 600 s before 1800 s, inside the first window
    running = [max(units[0], units[1]), units[1], units[2]]
    assert [w.autoscaled_units for w in fleet.windows] == running
    # fixed: the busiest window's units for 2 h; autoscaled: window by window
    fixed_units = max(units)
    assert fleet.fixed.peak_gpus == 8 * fixed_units == fleet.fixed.mean_gpus
    assert fleet.fixed.gpu_hours == pytest.approx(8 * fixed_units * 2.0)
    hours = [0.5, 0.5, 1.0]
    auto_gpu_hours = sum(8 * r * h for r, h in zip(running, hours, strict=True))
    assert fleet.autoscaled.gpu_hours == pytest.approx(auto_gpu_hours)
    assert fleet.autoscaled.mean_gpus == pytest.approx(auto_gpu_hours / 2.0)
    assert fleet.autoscaled.peak_gpus == 8 * max(running)
    # rented at 2 $/GPU-h
    assert fleet.fixed.cost_usd == pytest.approx(2.0 * fleet.fixed.gpu_hours)
    assert fleet.autoscaled.cost_usd == pytest.approx(2.0 * auto_gpu_hours)
    assert fleet.gpu_hours_saved == pytest.approx(1 - auto_gpu_hours / fleet.fixed.gpu_hours)


def test_the_fixed_fleet_never_has_fewer_than_the_plan() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    windows = [_window(0, 300, 1.0)]
    fleet = trace_fleet(windows, lambda peak, cv: 1, 1, 8, gpu=gpu, system=system, plan_instances=9)
    assert fleet.fixed_instances == 9 and fleet.fixed.peak_units == 2
    assert fleet.windows[0].instances == 1 and fleet.autoscaled.peak_units == 1


def test_each_window_is_sized_at_its_own_cv() -> None:
    gpu, system = _catalog().hardware("aws-p5-48xlarge")
    # the same rate, burstier in the second window: sized there at its own cv; a window
    # whose gaps could not be measured (cv None) at the trace's
    windows = [
        _window(0, 300, 10.0).sized(1.0, False),
        _window(300, 600, 10.0).sized(4.0, False),
        _window(600, 900, 10.0),
    ]
    asked: list[float] = []

    def instances_at(peak: float, cv: float) -> int:  # burstier gaps: more instances
        asked.append(cv)
        return math.ceil(peak / 10.0 * cv)

    fleet = trace_fleet(
        windows, instances_at, 1, 8, gpu=gpu, system=system, plan_instances=1, cv=2.0
    )
    assert asked == [1.0, 4.0, 2.0] and [w.cv for w in fleet.windows] == asked
    peak = peak_rps(10.0, 0.95)
    assert [w.instances for w in fleet.windows] == [math.ceil(peak / 10 * c) for c in asked]
    assert fleet.fixed_instances == max(w.instances for w in fleet.windows)


def test_plan_json_fixed_and_autoscaled_over_a_trace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    import numpy as np
    from typer.testing import CliRunner

    from inferencesize.cli import app

    rng = np.random.default_rng(8)
    quiet = np.cumsum(rng.exponential(1 / 2.0, 1200))  # 2 req/s for about 600 s
    busy = quiet[-1] + np.cumsum(rng.exponential(1 / 30.0, 18000))  # then 30 req/s, 600 s
    times = np.concatenate([quiet, busy])
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,isl,osl\n" + "".join(f"{t:.4f},1000,200\n" for t in times))
    question = ["plan", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--precision"]
    question += ["fp8", "--tp", "2", "--pp", "1", "--ttft-ms", "1000", "--itl-ms", "60"]
    question += ["--trace", str(path), "--usd-per-gpu-hour", "2", "-f", "json"]
    question += ["--scale-up-delay-s", "60"]  # 600 s would start the busy units at 0 s
    result = CliRunner().invoke(app, question)
    assert result.exit_code == 0, result.stderr
    rec = json.loads(result.stdout)
    windows, fleet = rec["trace"]["windows"], rec["fleet"]
    assert len(windows) == 4
    # sized for the busiest window: its mean rate is the plan's
    assert rec["mean_rps"] == pytest.approx(max(w["rate_rps"] for w in windows))
    assert windows[0]["instances"] < windows[-1]["instances"]
    # whole units; never fewer GPUs than a window needs; the fixed fleet the most of any
    unit = fleet["fixed"]["peak_gpus"] // fleet["fixed"]["peak_units"]
    for w in windows:
        assert w["autoscaled_gpus"] >= w["gpus"] and w["autoscaled_gpus"] % unit == 0
        assert fleet["fixed"]["peak_gpus"] >= w["autoscaled_gpus"]
    assert fleet["fixed"]["instances"] == rec["plan"]["instances"]
    a, f = fleet["autoscaled"], fleet["fixed"]
    assert a["mean_gpus"] < f["mean_gpus"] and a["gpu_hours"] < f["gpu_hours"]
    assert a["cost_usd"] == pytest.approx(2.0 * a["gpu_hours"])
    hours = fleet["span_s"] / 3600
    assert f["gpu_hours"] == pytest.approx(f["peak_gpus"] * hours)


def test_verify_replays_the_trace_window_by_window(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    import numpy as np
    from typer.testing import CliRunner

    from inferencesize.cli import app

    rng = np.random.default_rng(9)
    quiet = np.cumsum(rng.exponential(1.0, 400))  # 1 req/s for about 400 s
    busy = quiet[-1] + np.cumsum(rng.exponential(1 / 10.0, 4000))  # then 10 req/s, 400 s
    path = tmp_path / "t.csv"
    rows = "".join(
        f"{t:.4f},{500 + i % 1000},{100 + i % 200}\n" for i, t in enumerate([*quiet, *busy])
    )
    path.write_text("arrival_s,isl,osl\n" + rows)
    question = ["plan", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--precision"]
    question += ["fp8", "--tp", "2", "--pp", "1", "--ttft-ms", "1000", "--itl-ms", "60"]
    question += ["--latency-stat", "p95", "--trace", str(path), "--window-s", "200"]
    question += ["--scale-up-delay-s", "0", "--verify", "-f", "json"]
    result = CliRunner().invoke(app, question)
    assert result.exit_code == 0, result.stderr
    rec = json.loads(result.stdout)
    replay = rec["verify"]["trace_replay"]
    windows = rec["trace"]["windows"]
    for name in ("fixed", "autoscaled"):
        r = replay[name]
        assert r["requests"] == 4400 == sum(w["requests"] for w in r["windows"])
        assert len(r["windows"]) == len(windows)
        assert r["missed_windows"] == [
            k for k, w in enumerate(r["windows"]) if not w["meets_limits"]
        ]
        assert r["meets_limits"] == (r["held"]["ttft_ms"] <= 1000 and r["held"]["itl_ms"] <= 60)
    # the verdict of --verify on a trace is its replay's, over the whole trace, with the
    # router of the plan and of the simulation at the peak (whose own verdict is kept)
    v = rec["verify"]
    assert v["meets_limits"] == replay["fixed"]["meets_limits"]
    assert v["missed_windows"] == replay["fixed"]["missed_windows"]
    assert isinstance(v["peak_meets_limits"], bool)
    assert replay["fixed"]["router"] == replay["autoscaled"]["router"] == v["router"]
    # the autoscaled fleet never pays for fewer GPUs than its replay runs in a window, and
    # what it runs is enough there: no window of its replay misses
    gpi = rec["plan"]["gpus_per_instance"]
    for w, r in zip(windows, replay["autoscaled"]["windows"], strict=True):
        assert w["autoscaled_gpus"] >= r["instances"] * gpi >= w["gpus"]
    assert replay["autoscaled"]["missed_windows"] == []
    # the fixed fleet runs the plan's instances everywhere; the autoscaled what each window needs
    assert {w["instances"] for w in replay["fixed"]["windows"]} == {rec["plan"]["instances"]}
    assert [w["instances"] for w in replay["autoscaled"]["windows"]] == [
        w["instances"] for w in windows
    ]

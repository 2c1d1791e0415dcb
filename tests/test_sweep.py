"""Sweep grid parsing, the vectorised search and ranking against the planner, re-sizing."""

from __future__ import annotations

import math

import pytest
from loose_plan import plan_loose
from shipped import catalog as _catalog
from shipped import estimator as _est

from inferencesize.errors import InputError
from inferencesize.estimate import Candidate
from inferencesize.parallelism import Parallelism
from inferencesize.planner import Limits, at_peak, search_point
from inferencesize.specs.scenario import ScenarioSpec
from inferencesize.sweep import (
    NOT_SWEPT,
    apply,
    choose,
    expand,
    grid_size,
    parse_axis,
    unsupported_options,
    variable_fields,
    workload_key,
)

# --- grid parsing -------------------------------------------------------------------------


def test_inclusive_integer_range() -> None:
    axis = parse_axis("mean_rps=10:100:10")
    assert axis.field == "mean_rps"
    assert axis.values == (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)


def test_float_range_has_no_rounding_noise() -> None:
    # 0.9 + 3 · 0.03 = 0.99 exactly after rounding to 12 digits; 4 values, stop included
    assert parse_axis("percentile=0.9:0.99:0.03").values == (0.9, 0.93, 0.96, 0.99)


def test_range_without_step_counts_by_one() -> None:
    assert parse_axis("osl=3:6").values == (3, 4, 5, 6)


def test_lists_and_list_fields() -> None:
    assert parse_axis("isl=500, 1000,2000").values == (500, 1000, 2000)
    assert parse_axis("hardware=h100-sxm+h200-sxm,b200").values == (
        ["h100-sxm", "h200-sxm"],
        ["b200"],
    )
    assert parse_axis("tp=auto,1,2+4").values == ("auto", [1], [2, 4])
    assert parse_axis("mode=streaming,sequential").values == ("streaming", "sequential")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("isll=1,2", "--vary isll: not a scenario field; did you mean isl, osl?"),
        ("nonsense=1", "--vary nonsense: not a scenario field; fields: model, isl,"),
        ("isl=100:10", "--vary isl=100:10: empty range (start 100 > stop 10)"),
        ("isl=10:100:0", "--vary isl=10:100:0: empty range (step must be > 0)"),
        ("isl=10:100:-5", "--vary isl=10:100:-5: empty range (step must be > 0)"),
        ("isl=", "--vary isl: no values (give a,b,c or START:STOP:STEP)"),
        ("isl", "--vary isl: expected FIELD=VALUES, e.g. isl=500,1000,2000"),
        ("isl=-5", "--vary isl=-5: Input should be greater than 0"),
        ("precision=fp9", "--vary precision: unknown precision 'fp9'"),
        ("precision=fp8+fp9", "--vary precision: unknown precision 'fp9'"),
        ("tp=2+x", "--vary tp=2+x: expected 'auto' or integers joined by '+'"),
        ("mean_rps=1:x", "--vary mean_rps=1:x: range bounds must be numbers"),
        ("description=x", "--vary description: not a scenario field"),
        ("mode=fast", "--vary mode=fast: Input should be 'streaming' or 'sequential'"),
    ],
)
def test_bad_axes_are_input_errors(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_axis(text)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_every_sizing_field_is_variable_except_the_unswept_options() -> None:
    fields = set(ScenarioSpec.model_fields) - {"id", "description", "source", "budget"}
    assert set(variable_fields()) == fields - set(NOT_SWEPT)
    assert set(NOT_SWEPT) <= fields  # each refused option is a real scenario field


@pytest.mark.parametrize("name", ["daily", "pipeline", "disaggregated"])
def test_unswept_option_is_refused_not_ignored(name: str) -> None:
    with pytest.raises(InputError, match=f"--vary {name}: sweep does not model this option"):
        parse_axis(f"{name}=x")


def test_scenario_with_an_unswept_option_is_reported() -> None:
    c = _catalog()
    assert unsupported_options(c.scenario("daily-chat")) == ["daily"]
    assert unsupported_options(c.scenario("prefix-caching")) == []  # techniques are swept


def test_expand_is_the_cartesian_product_last_axis_fastest() -> None:
    axes = [parse_axis("isl=1,2"), parse_axis("osl=7,8,9")]
    grid = list(expand(axes))
    assert grid_size(axes) == 6 == len(grid)
    assert grid[:4] == [
        {"isl": 1, "osl": 7},
        {"isl": 1, "osl": 8},
        {"isl": 1, "osl": 9},
        {"isl": 2, "osl": 7},
    ]


def test_apply_drops_the_exclusive_partner() -> None:
    base = {"model": "m", "isl_words": 300, "peak_rps": 5, "osl": 10}
    assert apply(base, {"isl": 400, "mean_rps": 2}) == {
        "model": "m",
        "osl": 10,
        "isl": 400,
        "mean_rps": 2,
    }
    assert apply(base, {"osl": 20}) == {**base, "osl": 20}


def test_traffic_does_not_change_the_workload_key() -> None:
    data = {"model": "m", "isl": 10, "osl": 5, "ttft_ms": 100, "hardware": ["h"]}
    a = ScenarioSpec.model_validate({**data, "mean_rps": 3})
    b = ScenarioSpec.model_validate({**data, "peak_rps": 50, "percentile": 0.99})
    c = ScenarioSpec.model_validate({**data, "isl": 11, "mean_rps": 3})
    assert workload_key(a) == workload_key(b) != workload_key(c)


# --- vectorised search and ranking equal the planner --------------------------------------


CASES = [
    ("llama-3-8b", "h100-sxm", "fp8", Parallelism(1), Limits(ttft_s=0.5), "inflight"),
    ("llama-3-8b", "h100-sxm", "fp8", Parallelism(8), Limits(ttft_s=0.5), "inflight"),
    ("llama-3-8b", "b200", "bf16", Parallelism(2), Limits(itl_s=0.02), "inflight"),
    ("llama-3-70b", "h100-sxm", "fp8", Parallelism(4), Limits(ttft_s=2, itl_s=0.04), "inflight"),
    ("llama-3-70b", "h200-sxm", "fp8", Parallelism(2, 2), Limits(e2e_s=20), "inflight"),
    ("llama-3-8b", "h100-sxm", "fp8", Parallelism(1), Limits(ttft_s=0.5), "static"),
    ("llama-3-8b", "h100-sxm", "fp8", Parallelism(1), Limits(ttft_s=1e-4), "inflight"),
    ("llama-3-8b", "h100-sxm", "fp8", Parallelism(1), Limits(ttft_s=1e3), "inflight"),
]


@pytest.mark.parametrize(("model", "hw", "prec", "par", "limits", "batching"), CASES)
def test_search_equals_brute_force_scan(
    model: str, hw: str, prec: str, par: Parallelism, limits: Limits, batching: str
) -> None:
    """The bracketing search finds what evaluating every concurrency one by one finds."""
    c = _catalog()
    gpu, system = c.hardware(hw)
    cand = Candidate(c.model(model), gpu, system, prec, prec, par)
    est = _est()
    res = est.resolve(cand, 2000 + 200)
    found = search_point(res, 2000, 200, limits, batching)  # type: ignore[arg-type]
    ok = [
        n
        for n in range(1, res.max_concurrency + 1)
        if limits.miss(est.point(res, 2000, 200, n, batching)) is None  # type: ignore[arg-type,arg-type]
    ]
    if not ok:
        assert found[0] is None and str(found[1]).endswith(" 1")
        return
    op = found[0]
    assert op is not None and math.floor(op.concurrency) == max(ok)
    assert limits.miss(op) is None
    if batching == "static" or max(ok) == res.max_concurrency:
        assert op.concurrency == max(ok)  # whole batch sizes; memory caps the load
        return
    # in-flight: the load is resolved to 1/64 of a client, so 1/64 more already misses a limit
    more = est.point(res, 2000, 200, op.concurrency + 1 / 64, batching)  # type: ignore[arg-type]
    assert limits.miss(more) is not None


@pytest.mark.parametrize("peak", [0.3, 7.5, 64.0, 200.0, 1234.0])
def test_choose_and_at_peak_equal_plan(peak: float) -> None:
    c = _catalog()
    args = (
        c.model("llama-3-70b"),
        [c.hardware("h100-sxm"), c.hardware("dgx-h200"), c.hardware("b200")],
        ["fp8", "bf16"],
        2000,
        200,
    )
    limits = Limits(ttft_s=2.0, itl_s=0.05)
    once = plan_loose(*args, 1.0, limits, _est(), top=0)
    direct = plan_loose(*args, peak, limits, _est(), top=0)
    assert direct.chosen is not None
    pick = int(choose(once.feasible, [peak])[0])
    resized = at_peak(once.feasible[pick], peak, 2000, 200, _est())
    assert resized == direct.chosen


@pytest.mark.parametrize("peak", [5.0, 200.0, 2000.0])
def test_choose_ranks_on_what_is_paid_as_plan_does(peak: float) -> None:
    """A sweep's vectorised choice counts whole units as the planner does: a few GPUs of a
    GB200 NVL72 rack weigh as the 72-GPU rack against a DGX B200."""
    c = _catalog()
    args = (c.model("gpt-oss-120b"), [c.hardware("gb200-nvl72"), c.hardware("dgx-b200")])
    rest = (["fp8"], 2000, 200)
    limits = Limits(ttft_s=0.5)
    once = plan_loose(*args, *rest, 1.0, limits, _est(), top=0, tps=[1, 2], pps=[1])
    direct = plan_loose(*args, *rest, peak, limits, _est(), top=0, tps=[1, 2], pps=[1])
    assert direct.chosen is not None
    pick = int(choose(once.feasible, [peak])[0])
    resized = at_peak(once.feasible[pick], peak, 2000, 200, _est())
    assert resized == direct.chosen


def test_at_peak_arithmetic() -> None:
    c = _catalog()
    result = plan_loose(
        c.model("llama-3-8b"),
        [c.hardware("dgx-h100")],
        ["fp8"],
        2000,
        200,
        1.0,
        Limits(ttft_s=0.5),
        _est(),
        tps=[1],
        pps=[1],
    )
    assert result.chosen is not None
    rate = result.chosen.rate
    p = at_peak(result.chosen, 200.0, 2000, 200, _est())
    # instances = ceil(200 / rate); 8 TP1 instances per DGX H100
    assert p.instances == math.ceil(200.0 / rate)
    assert p.servers == math.ceil(p.instances / 8)
    assert p.gpus == p.instances
    assert p.capacity_rps == pytest.approx(p.instances * rate)
    assert p.headroom == pytest.approx(p.instances * rate / 200.0 - 1)
    with pytest.raises(ValueError):
        at_peak(result.chosen, 0.0, 2000, 200, _est())


# --- shards -------------------------------------------------------------------------------


@pytest.mark.parametrize(("total", "parts"), [(0, 3), (1, 4), (30, 4), (1000, 7), (5, 5)])
def test_shards_cover_the_grid_once_in_order(total: int, parts: int) -> None:
    from inferencesize.cli.stream import shard_points

    shards = [shard_points(total, k, parts) for k in range(1, parts + 1)]
    assert [i for s in shards for i in s] == list(range(total))
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1


def test_expand_of_a_range_is_that_slice_of_the_grid() -> None:
    axes = [parse_axis("isl=100,200,300"), parse_axis("mean_rps=1:4")]
    whole = list(expand(axes))
    assert list(expand(axes, range(5, 9))) == whole[5:9]
    assert list(expand(axes, range(12, 12))) == []

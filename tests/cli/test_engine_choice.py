"""Which engine set a plan uses: ``--engine`` names it (``nim`` is the default NIM set); without
one, a GPU × precision the default set is not calibrated on takes the set calibrated there on
the most measurements, and the plan says so; sets calibrated there that disagree on the plan
by more than the model's error band are named in one line (``engine_choice``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.cli import app
from inferencesize.deployment import choose_efficiency, efficiency_resolution
from inferencesize.engine_choice import SPREAD_BAND, EngineChoice, SetRate
from inferencesize.engines import auto_sets
from inferencesize.specs.efficiency import static_batching

runner = CliRunner()

#: DeepSeek-R1 on one DGX B200 at fp4, TP 4: the default set (nim-2024) has no B200 entry.
R1 = [
    *["plan", "--model", "deepseek-r1", "--isl", "1000", "--osl", "500", "--mean-rps", "20"],
    *["--ttft-ms", "2000", "--itl-ms", "50", "--hardware", "dgx-b200", "--precision", "fp4"],
    *["--tp", "4", "--pp", "1", "--ep", "1"],
]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _json(args: list[str]) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _points(catalog: Catalog, set_id: str, gpu: str, precision: str) -> int:
    """The measurements a set's entry for this GPU × precision was fitted on (read directly)."""
    s = catalog.efficiency_set(set_id)
    return sum(e.points or 0 for e in s.entries if e.gpu == gpu and e.precision == precision)


def _calibrated_on(catalog: Catalog, gpu: str, precision: str) -> list[str]:
    """In-flight sets with an entry of their own for this GPU × precision (read directly)."""
    return sorted(
        s.id
        for s in catalog.efficiency.values()
        if not static_batching(s)
        and any(e.gpu == gpu and e.precision == precision for e in s.entries)
    )


def test_engine_nim_is_the_default_plan() -> None:
    """``plan default`` (the NIM set by default) and ``plan default --engine nim`` are one
    answer: the same plan and alternatives, from the same set."""
    plain = _json(["plan", "default"])
    nim = _json(["plan", "default", "--engine", "nim"])
    assert nim["plan"] == plain["plan"]
    assert nim["alternatives"] == plain["alternatives"]
    assert plain["plan"]["efficiency"].startswith("nim-2024:")
    assert plain["engine_choice"]["why"] == "default"
    assert nim["engine_choice"]["why"] == "named"


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (
            "vllm@0.6",
            "--engine: 'vllm@0.6': no efficiency set describes vLLM 0.6; the sets describe vLLM"
            " 0.12-0.19 (vllm-2026): name one of those versions or a set id, or fit one to your"
            " measurements with `infersize calibrate`",
        ),
        (
            "atom",
            "--engine: unknown engine 'atom': name one of nim, sglang, trtllm, vllm (optionally"
            " @version) or an efficiency set id (nim-2024, sglang-2026, trtllm-0.14,"
            " trtllm-0.17, trtllm-0.9-static, trtllm-1.x, vllm-2026)",
        ),
    ],
)
def test_engines_no_set_describes_are_one_line_errors(engine: str, message: str) -> None:
    result = runner.invoke(app, ["plan", "default", "--engine", engine])
    assert result.exit_code == 1
    assert result.stderr == f"error: {message}\n"
    assert result.stdout == ""


def test_choose_efficiency_rule(catalog: Catalog) -> None:
    """The default where it is calibrated; else the set calibrated there on the most
    measurements; else the default (nothing is calibrated there)."""
    default = catalog.efficiency_set()
    others = auto_sets(catalog.efficiency.values(), default)
    assert default not in others and not any(static_batching(s) for s in others)
    h100, _ = catalog.hardware("h100-sxm")
    assert choose_efficiency(default, others, h100, "fp8")[0] is default  # calibrated there
    b200, _ = catalog.hardware("b200")
    assert efficiency_resolution(default, b200, "fp4").trust != "calibrated"
    mine = _calibrated_on(catalog, "b200", "fp4")
    assert len(mine) >= 2
    most = max(mine, key=lambda i: (_points(catalog, i, "b200", "fp4"), -mine.index(i)))
    chosen, res = choose_efficiency(default, others, b200, "fp4")
    assert chosen.id == most and res.trust == "calibrated"
    assert choose_efficiency(default, (), b200, "fp4")[0] is default  # no others: default
    mi300x, _ = catalog.hardware("mi300x")
    assert not any(efficiency_resolution(s, mi300x, "fp8").trust == "calibrated" for s in others)
    assert choose_efficiency(default, others, mi300x, "fp8")[0] is default


def test_without_engine_the_calibrated_set_is_used_and_said(catalog: Catalog) -> None:
    data = _json(R1)
    mine = _calibrated_on(catalog, "b200", "fp4")
    most = max(mine, key=lambda i: _points(catalog, i, "b200", "fp4"))
    choice = data["engine_choice"]
    assert choice["why"] == "calibrated" and choice["set"] == most
    assert choice["default_set"] == "nim-2024"
    assert data["plan"]["efficiency"] == f"{most}: b200 fp4"
    assert data["plan"]["trust"] == "calibrated"
    assert data["plan"]["engine"] == catalog.efficiency_set(most).engine
    points = _points(catalog, most, "b200", "fp4")
    said = (
        f"engine: {most} for b200 fp4, the set calibrated there on the most measurements"
        f" ({points}); the default nim-2024 is not calibrated there (--engine names another)"
    )
    assert said in choice["notes"]
    table = runner.invoke(app, R1, env={"COLUMNS": "250"})
    assert said in table.stdout
    # the sets calibrated there, each with its own rate per instance of this candidate
    listed = {r["set"]: r for r in choice["calibrated_sets"]}
    assert sorted(listed) == mine
    rates = [r["requests_per_s_per_instance"] for r in listed.values()]
    assert all(r is not None and r > 0 for r in rates)
    assert choice["spread"] == pytest.approx(max(rates) / min(rates) - 1)
    assert choice["disagree"] == (choice["spread"] > SPREAD_BAND)
    assert listed[most]["requests_per_s_per_instance"] == pytest.approx(
        data["plan"]["per_instance"]["requests_per_s"]
    )


def test_each_sets_rate_is_that_set_named(catalog: Catalog) -> None:
    """The rate the comparison gives a set is the rate ``--engine SET`` plans the same
    candidate at (two paths: the comparison's own sizing, and the command)."""
    choice = _json(R1)["engine_choice"]
    listed = sorted(choice["calibrated_sets"], key=lambda r: r["requests_per_s_per_instance"])
    for r in (listed[0], listed[-1]):
        named = _json([*R1, "--engine", r["set"]])
        assert named["plan"]["efficiency"] == f"{r['set']}: b200 fp4"
        assert named["plan"]["per_instance"]["requests_per_s"] == pytest.approx(
            r["requests_per_s_per_instance"], rel=1e-9
        )
        assert named["engine_choice"]["why"] == "named"
        assert not any(n.startswith("engine: ") for n in named["engine_choice"]["notes"])


def test_disagreement_is_one_line_naming_the_extremes() -> None:
    choice = _json(R1)["engine_choice"]
    assert choice["disagree"]  # the B200 fp4 sets differ far more than 25 % on R1
    lo = min(choice["calibrated_sets"], key=lambda r: r["requests_per_s_per_instance"])
    hi = max(choice["calibrated_sets"], key=lambda r: r["requests_per_s_per_instance"])
    line = (
        f"engine sets calibrated on b200 fp4 disagree on this plan:"
        f" {lo['requests_per_s_per_instance']:,.3g} ({lo['set']}) to"
        f" {hi['requests_per_s_per_instance']:,.3g} ({hi['set']}) req/s per instance, more"
        " than the model's ±25% band: name the engine you run with --engine"
    )
    assert choice["notes"][-1] == line


def _choice(*rates: float | None) -> EngineChoice:
    sets = tuple(SetRate(f"s{i}", 10, r) for i, r in enumerate(rates))
    return EngineChoice("s0", "E", "default", "s0", "g", "fp8", sets)


def test_spread_and_band_by_hand() -> None:
    assert _choice(8.0).spread is None and not _choice(8.0).disagree  # one set: nothing to say
    assert _choice(8.0, 10.0).spread == pytest.approx(0.25)
    assert not _choice(8.0, 10.0).disagree  # 10 / 8 − 1 = 25 %: within the band
    assert _choice(8.0, 10.1).disagree  # 26.25 %: beyond
    assert _choice(4.8, 9.2, 6.0).spread == pytest.approx(9.2 / 4.8 - 1)
    none = _choice(5.0, None)  # a set that finds no plan for the candidate at all
    assert none.spread == float("inf") and none.disagree
    assert none.notes() == [
        "engine sets calibrated on g fp8 disagree on this plan: no plan of this candidate"
        " under s1, more than the model's ±25% band: name the engine you run with --engine"
    ]
    assert _choice(8.0, 10.0).notes() == []
    named = EngineChoice("s0", "E", "named", "d", "g", "fp8", (SetRate("s0", 1, 4.0),) * 2)
    assert named.notes() == []  # one rate twice: no spread
    named = EngineChoice(
        "s0", "E", "named", "d", "g", "fp8", (SetRate("s0", 1, 4.0), SetRate("s1", 1, 8.0))
    )
    assert named.notes() == [
        "engine sets calibrated on g fp8 disagree on this plan: 4 (s0) to 8 (s1) req/s per"
        " instance, more than the model's ±25% band: the plan holds for the engine named only"
    ]


def test_estimate_takes_the_set_a_plan_takes(catalog: Catalog) -> None:
    """One candidate, no engine named: estimate predicts it with the set plan uses for it (the
    same figures as naming that set), and names that set's engine."""
    mine = _calibrated_on(catalog, "b200", "fp4")
    most = max(mine, key=lambda i: _points(catalog, i, "b200", "fp4"))
    point = [
        *["estimate", "--model", "deepseek-r1", "--hardware", "b200", "--precision", "fp4"],
        *["--tp", "4", "--isl", "1000", "--osl", "500", "--concurrency", "64"],
    ]
    plain = _json(point)
    named = _json([*point, "--engine", most])
    assert plain == named
    assert plain["efficiency"] == f"{most}: b200 fp4" and plain["trust"] == "calibrated"
    assert plain["engine"] == catalog.efficiency_set(most).engine
    default = _json([*point, "--engine", "nim-2024"])
    assert default["trust"] == "datasheet" and default["itl_ms"] != plain["itl_ms"]


def test_sweep_rows_and_plans_name_the_same_set() -> None:
    """Each sweep row names the engine and efficiency its plan says (plan --hardware X)."""
    result = runner.invoke(
        app, ["sweep", "default", "--vary", "hardware=dgx-h100,dgx-b200", "--format", "jsonl"]
    )
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert [r["hardware"] for r in rows] == ["dgx-h100", "dgx-b200"]
    for row in rows:
        planned = _json(["plan", "default", "--hardware", row["hardware"]])["plan"]
        assert (row["engine"], row["efficiency"]) == (planned["engine"], planned["efficiency"])
    assert rows[0]["engine"] != rows[1]["engine"]  # B200: not the default set's


def test_the_engine_names_catalog_lists_resolve_to_their_set(catalog: Catalog) -> None:
    """`catalog list efficiency` lists how --engine names each set; every name it lists (each
    end of a range) resolves to that set, and a set without names is the static one."""
    from inferencesize.engines import engine_efficiency

    result = runner.invoke(app, ["catalog", "list", "efficiency", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    listed = json.loads(result.stdout)
    sets = list(catalog.efficiency.values())
    unnamed = []
    for row in listed:
        if row["engine_names"] is None:
            unnamed.append(row["id"])
            continue
        for form in row["engine_names"].split(", "):
            name, _, versions = form.partition("@")
            for version in versions.split(" to "):
                assert engine_efficiency(sets, f"{name}@{version}").id == row["id"], form
    assert unnamed == ["trtllm-0.9-static"]

"""`--help` of every command at 80 columns: nothing cut, no line wider than the terminal, a
one-line summary, metavars that say what an option takes, and examples that run from any
folder (given the files of the user's they name, which the test writes)."""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from inferencesize.cli import app
from inferencesize.cli.help import command_lines, examples, help_width, summary

ROOT = Path(__file__).resolve().parents[2]
PERF = ROOT / "tests" / "fixtures" / "perf"
runner = CliRunner()


def _commands() -> list[tuple[list[str], Any]]:
    """(path below `infersize`, click command) of the app, groups included."""
    root = typer.main.get_command(app)
    out: list[tuple[list[str], Any]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        out.append((path, cmd))
        ctx = cmd.context_class(cmd, info_name=path[-1] if path else "infersize")
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name])

    walk(root, [])
    return out


COMMANDS = _commands()
IDS = [" ".join(path) or "infersize" for path, _ in COMMANDS]


def _params(cmd: Any) -> Iterator[Any]:
    ctx = cmd.context_class(cmd, info_name="x")
    yield from cmd.get_params(ctx)


def _help(path: list[str], columns: int = 80) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_help_fits_80_columns_and_names_every_option_whole(path: list[str], cmd: Any) -> None:
    text = _help(path)
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    for param in _params(cmd):
        for name in [*param.opts, *param.secondary_opts]:
            if param.param_type_name == "option":
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), name
    assert "…" not in re.sub(r"N\[,N…\]|ID\[,ID…\]|P\[,P…\]|P,P\[,P…\]|RPS,…", "", text)


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_help_shows_what_options_take_not_raw_types(path: list[str], cmd: Any) -> None:
    text = _help(path)
    for raw in ("<bool>", "<str>", "<int", "<float", "<list[", "<path>", " TEXT ", "INTEGER"):
        assert raw not in text, raw
    for param in _params(cmd):
        if param.param_type_name != "option" or getattr(param, "is_flag", False):
            continue
        line = rf"│ (?:-\w, )?{re.escape(param.opts[-1])}(?![\w-]).*"
        shown = re.search(line, text)
        assert shown, param.opts
        shown = shown.group(0)
        assert param.metavar or re.search(r"\[[\w-]+(\|[\w-]+)+\]", shown), (param.opts, shown)
    if path == ["plan"]:
        for expected in ("--tp N[,N…]|auto", "--batching [inflight|static]", "--ttft-ms MS"):
            assert expected in text, expected


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=IDS)
def test_every_command_has_a_one_line_summary_and_an_example(path: list[str], cmd: Any) -> None:
    first = summary(cmd.help)
    assert first and len(first) <= 78, first
    cases = examples(cmd.help)
    assert cases, "no Examples: block"
    assert all(c.startswith("infersize") and "../" not in c for c in cases), cases
    if path:  # a command's examples run it (the top level's run others)
        assert any(c.split()[1 : 1 + len(path)] == path for c in cases), cases
    assert "Example" in _help(path)


def test_long_examples_wrap_as_shell_continuations() -> None:
    command = "infersize plan --model llama-3.1-70b --isl 1000 --osl 500 --mean-rps 20"
    lines = command_lines(command, 40)
    assert all(len(line) <= 40 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1])
    assert shlex.split(" ".join(line.rstrip("\\") for line in lines)) == shlex.split(command)
    assert command_lines("infersize peak --mean-rps 64  # prints 77", 80) == [
        "  # prints 77",
        "  infersize peak --mean-rps 64",
    ]


def test_help_width_follows_columns_and_stops_at_100() -> None:
    assert help_width({"COLUMNS": "60"}) == 60
    assert help_width({"COLUMNS": "300"}) == 100
    text = _help(["plan"], 60)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "--amortization-years" in text


def test_top_level_help_shows_examples_and_formats() -> None:
    text = _help([])
    assert "infersize plan default" in text
    assert "--format table (default), json, yaml or csv" in " ".join(text.split())


# ----------------------------------------------------------------------------- examples run

#: Files the examples name as the user's own, written into the folder the examples run in.
MEASUREMENTS = PERF / "measurements_small.csv"
TRACE = "arrival_s,isl,osl\n" + "".join(f"{i * 0.25:.2f},1000,100\n" for i in range(40))


def _user_files(folder: Path) -> None:
    shutil.copy(PERF / "points.csv", folder / "points.csv")
    for name in ("measurements.csv", "my-runs.csv"):
        shutil.copy(MEASUREMENTS, folder / name)
    shutil.copy(ROOT / "tests" / "fixtures" / "hf" / "llama-3.1-8b.json", folder / "config.json")
    shutil.copytree(ROOT / "tests" / "fixtures" / "kernels", folder / "my-kernels")
    (folder / "trace.csv").write_text(TRACE)
    models = folder / "my-catalog" / "models"
    models.mkdir(parents=True)
    shutil.copy(ROOT / "models" / "llama-3-8b.yaml", models / "my-model.yaml")


LEAVES = [(path, cmd) for path, cmd in COMMANDS if path and not hasattr(cmd, "list_commands")]


@pytest.mark.parametrize(("path", "cmd"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_help_examples_run_from_any_folder(
    path: list[str], cmd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")  # frontier --plot
    _user_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    for example in examples(cmd.help):
        args = shlex.split(example, comments=True)[1:]
        if args[-2:] == ["--requests", "5000"]:  # the same run, shorter
            args[-1] = "500"
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (example, result.stderr)


def test_top_level_help_lists_commands_without_loading_them() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from inferencesize.cli import COMMANDS, listing_app\n"
        "group = listing_app()\n"
        "loaded = [m for m, _ in COMMANDS.values() if 'inferencesize.cli.' + m in sys.modules]\n"
        "heavy = [m for m in ('inferencesize.planner', 'inferencesize.study') if m in sys.modules]\n"
        "assert not loaded and not heavy, (loaded, heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_listed_summaries_are_the_commands_own() -> None:
    from inferencesize.cli import listing_app

    listed = listing_app()
    real = typer.main.get_command(app)
    ctx = real.context_class(real, info_name="infersize")
    names = real.list_commands(ctx)  # type: ignore[attr-defined]
    assert listed.list_commands(ctx) == names
    for name in names:
        mine = listed.get_command(ctx, name)
        theirs = real.get_command(ctx, name)  # type: ignore[attr-defined]
        assert summary(mine.help) == summary(theirs.help) != ""

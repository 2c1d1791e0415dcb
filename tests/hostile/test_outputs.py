"""Hostile outputs: no user file is ever lost, every signal and stream is handled, every number
flag is checked before any work.

The corpus (:data:`CASES`) runs the console script as a process in a fresh folder: each case
builds the folder, runs one command and checks its exit code, one line on stderr holding a
given text, that named files survive byte for byte (and mode), and that no temporary file is
left behind. The unit tests hold the atomic writer (:mod:`inferencesize.io_write`) to the
same rules on a full disk, an exception and Ctrl-C; the process tests send signals, close
stdout and run in locales without UTF-8.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferencesize import io_write
from inferencesize.cli import app
from inferencesize.errors import InputError
from inferencesize.io_write import atomic_file, check_target, write_atomic

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = shutil.which("infersize")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "inferencesize"]
HF_CONFIG = ROOT / "tests" / "fixtures" / "hf" / "llama-3.1-8b.json"
SCENARIO = ROOT / "scenarios" / "default.yaml"
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX files and signals")


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("INFERSIZE_CATALOG", "COLUMNS")}
    return {**base, "NO_COLOR": "1", **extra}


def run(
    args: list[str], cwd: Path, timeout: float = 60, **kw: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env(),
        timeout=timeout,
        check=False,
        **kw,  # type: ignore[arg-type]
    )


# ----------------------------------------------------------------------------- set-ups


def scenario(folder: Path) -> None:
    shutil.copy(SCENARIO, folder / "my.yaml")


def trace(folder: Path) -> None:
    (folder / "t.csv").write_text("arrival_s,isl,osl\n0.0,100,10\n0.5,120,12\n1.0,90,9\n")


def data(folder: Path) -> None:
    (folder / "d.csv").write_text("source,model,gpu,precision,tp,isl,osl,concurrency\n")


def config(folder: Path) -> None:
    shutil.copy(HF_CONFIG, folder / "config.json")


def existing(name: str, text: str = "keep me\n", mode: int = 0o640) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / name).write_text(text)
        os.chmod(folder / name, mode)

    return make


def hard_link(folder: Path) -> None:
    scenario(folder)
    os.link(folder / "my.yaml", folder / "hard.yaml")


def sym_link(folder: Path) -> None:
    scenario(folder)
    (folder / "link.yaml").symlink_to("my.yaml")


def fifo(folder: Path) -> None:
    os.mkfifo(folder / "pipe.csv")


def directory(folder: Path) -> None:
    (folder / "out.csv").mkdir()


def both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        for step in steps:
            step(folder)

    return make


def nothing(folder: Path) -> None:
    pass


@dataclass(frozen=True)
class Case:
    id: str
    args: list[str]
    setup: Callable[[Path], None]
    code: int
    message: str  # a text the one stderr line holds ("" for a quiet success)
    keep: tuple[str, ...] = field(default=())  # files that must survive unchanged


SIM = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm"]
CAL = ["calibrate", "--hardware", "h100-sxm", "--precision", "fp8"]
GRID = ["--vary", "isl=100,200"]
LONG = "x" * 300

CASES: list[Case] = [
    # --- an output that is the command's own input
    Case(
        "sweep-out-is-scenario",
        ["sweep", "my.yaml", *GRID, "--out", "my.yaml"],
        scenario,
        1,
        "--out my.yaml: would overwrite its own input (SCENARIO my.yaml)",
        ("my.yaml",),
    ),
    Case(
        "sweep-out-is-hard-link-of-scenario",
        ["sweep", "my.yaml", *GRID, "--out", "hard.yaml"],
        hard_link,
        1,
        "would overwrite its own input",
        ("my.yaml", "hard.yaml"),
    ),
    Case(
        "sweep-scenario-is-symlink-to-out",
        ["sweep", "link.yaml", *GRID, "--out", "my.yaml"],
        sym_link,
        1,
        "would overwrite its own input (SCENARIO link.yaml)",
        ("my.yaml",),
    ),
    Case(
        "simulate-requests-out-is-trace",
        [*SIM, "--trace", "t.csv", "--requests-out", "t.csv"],
        trace,
        1,
        "--requests-out t.csv: would overwrite its own input (--trace t.csv)",
        ("t.csv",),
    ),
    Case(
        "calibrate-out-is-data",
        [*CAL, "--data", "d.csv", "--out", "d.csv", "--force"],
        data,
        1,
        "--out d.csv: would overwrite its own input (--data d.csv)",
        ("d.csv",),
    ),
    Case(
        "import-hf-out-is-config",
        ["catalog", "import-hf", "config.json", "--id", "x", "--out", "config.json", "--force"],
        config,
        1,
        "would overwrite its own input (CONFIG config.json)",
        ("config.json",),
    ),
    # --- existing files: calibrate and import-hf replace one only with --force
    Case(
        "calibrate-out-exists",
        [*CAL, "--data", "d.csv", "--out", "fit.yaml"],
        both(data, existing("fit.yaml")),
        1,
        "--out fit.yaml: already exists; pass --force",
        ("fit.yaml", "d.csv"),
    ),
    Case(
        "import-hf-out-exists",
        ["catalog", "import-hf", "config.json", "--id", "x", "--out", "m.yaml"],
        both(config, existing("m.yaml")),
        1,
        "--out m.yaml: already exists; pass --force",
        ("m.yaml",),
    ),
    # --- a user's file named like an old fixed temporary name is not touched
    Case(
        "import-hf-beside-a-dot-tmp-file",
        ["catalog", "import-hf", "config.json", "--id", "x", "--out", "m.yaml"],
        both(config, existing(".m.yaml.tmp")),
        0,
        "wrote m.yaml",
        (".m.yaml.tmp",),
    ),
    Case(
        "sweep-beside-a-dot-tmp-file",
        ["sweep", *GRID, "--out", "grid.csv"],
        existing(".grid.csv.tmp"),
        0,
        "wrote 2 points to grid.csv",
        (".grid.csv.tmp",),
    ),
    # --- targets that are not regular files
    Case(
        "out-is-a-directory",
        ["sweep", *GRID, "--out", "out.csv"],
        directory,
        1,
        "--out out.csv: is a directory",
    ),
    Case(
        "out-is-a-fifo",
        ["sweep", *GRID, "--out", "pipe.csv"],
        fifo,
        1,
        "--out pipe.csv: is a FIFO",
    ),
    Case(
        "out-is-dev-null",
        ["sweep", *GRID, "--out", os.devnull],
        nothing,
        1,
        f"--out {os.devnull}: is a device",
    ),
    Case(
        "requests-out-is-dev-null",
        [*SIM, "--rate", "1", "--requests", "50", "--requests-out", os.devnull],
        nothing,
        1,
        "is a device",
    ),
    Case(
        "plot-is-a-directory",
        ["plan", "default", "--plot", "out.png"],
        lambda folder: (folder / "out.png").mkdir(),
        1,
        "--plot out.png: is a directory",
    ),
    # --- names and folders the file system refuses
    Case(
        "file-name-too-long",
        ["sweep", *GRID, "--out", LONG + ".csv"],
        nothing,
        1,
        os.strerror(errno.ENAMETOOLONG),
    ),
    Case(
        "plot-name-too-long",
        ["frontier", "default", "--plot", LONG + ".png"],
        nothing,
        1,
        os.strerror(errno.ENAMETOOLONG),
    ),
    Case(
        "folder-missing",
        ["sweep", *GRID, "--out", "missing/grid.csv"],
        nothing,
        1,
        "--out missing/grid.csv: directory missing does not exist",
    ),
    Case(
        "plot-not-png-or-svg",
        ["plan", "default", "--plot", "my.yaml"],
        scenario,
        1,
        "--plot my.yaml: expected a .png or .svg file name",
        ("my.yaml",),
    ),
    # --- number flags, checked before any work
    Case(
        "check-budget-nan",
        ["check", "default", "--max-cost-per-hour", "nan"],
        nothing,
        1,
        "--max-cost-per-hour: expected a finite number (got nan)",
    ),
    Case(
        "check-budget-zero",
        ["check", "default", "--max-cost-per-hour", "0"],
        nothing,
        1,
        "--max-cost-per-hour: must be > 0",
    ),
    Case(
        "check-power-inf",
        ["check", "default", "--max-power-kw", "inf"],
        nothing,
        1,
        "--max-power-kw: expected a finite number (got inf)",
    ),
    Case("simulate-rate-nan", [*SIM, "--rate", "nan"], nothing, 1, "--rate: expected a finite"),
    Case("simulate-rate-zero", [*SIM, "--rate", "0"], nothing, 1, "--rate: must be > 0"),
    Case(
        "simulate-cv-negative",
        [*SIM, "--rate", "1", "--cv", "-1"],
        nothing,
        1,
        "--cv: must be >= 0",
    ),
    Case(
        "simulate-stddev-inf",
        [*SIM, "--rate", "1", "--isl-stddev", "inf"],
        nothing,
        1,
        "--isl-stddev: expected a finite number (got inf)",
    ),
    Case(
        "simulate-queue-delay-inf",
        [*SIM, "--rate", "1", "--batching", "dynamic", "--max-queue-delay-ms", "inf"],
        nothing,
        1,
        "--max-queue-delay-ms: expected a finite number (got inf)",
    ),
    Case(
        "simulate-instances-ceiling",
        [*SIM, "--rate", "1", "--instances", "1000000"],
        nothing,
        1,
        "--instances: must be <= 10,000 (got 1,000,000)",
    ),
    Case(
        "simulate-requests-ceiling",
        [*SIM, "--rate", "1", "--requests", "100000000000"],
        nothing,
        1,
        "--requests: must be <= 10,000,000",
    ),
    Case("simulate-seed-negative", [*SIM, "--rate", "1", "--seed", "-1"], nothing, 1, "--seed"),
    Case(
        "estimate-concurrency-not-an-integer",
        ["estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--concurrency", "1e9"],
        nothing,
        2,  # not an integer: Click's usage error
        "",
    ),
    Case(
        "estimate-concurrency-too-many",
        [
            *("estimate", "--model", "llama-3-8b", "--hardware", "h100-sxm"),
            *("--concurrency", "2000000000"),
        ],
        nothing,
        1,
        "--concurrency: must be <= 1,000,000,000 (got 2,000,000,000)",
    ),
    Case(
        "simulate-tp-over-the-ceiling",
        [*SIM, "--rate", "1", "--tp", "100000"],
        nothing,
        1,
        "--tp: must be <= 4,096",
    ),
    Case(
        "simulate-isl-over-the-ceiling",
        [*SIM, "--rate", "1", "--isl", "1000000000000"],
        nothing,
        1,
        "--isl: must be <= 100,000,000",
    ),
    Case(
        "frontier-negative-limit",
        ["frontier", "default", "--ttft-ms", "-5"],
        nothing,
        1,
        "--ttft-ms: must be >= 0",
    ),
    Case("plan-percentile", ["plan", "default", "--percentile", "1.5"], nothing, 1, "--percentile"),
    Case("peak-nan", ["peak", "--mean-rps", "nan"], nothing, 1, "--mean-rps: expected a finite"),
    Case(
        "calibrate-tp-zero",
        [*CAL, "--data", "d.csv", "--out", "fit.yaml", "--tp", "0"],
        data,
        2,
        "",
        ("d.csv",),
    ),
    Case(
        "sweep-grid-of-10-12-points",
        ["sweep", "--vary", "isl=1:1000000", "--vary", "osl=1:1000000"],
        nothing,
        1,
        "--vary: 1,000,000,000,000 points (at most 1,000,000)",
    ),
    Case(
        "sweep-axis-of-10-12-values",
        ["sweep", "--vary", "isl=1:1e12"],
        nothing,
        1,
        "values (at most 1,000,000)",
    ),
    Case(
        "sweep-axis-of-infinitely-many-values",
        ["sweep", "--vary", "peak_rps=0:1e300:1e-300"],
        nothing,
        1,
        "too many values",
    ),
]


def _snapshot(folder: Path, names: tuple[str, ...]) -> dict[str, tuple[bytes, int]]:
    return {
        n: ((folder / n).read_bytes(), stat.S_IMODE((folder / n).stat().st_mode)) for n in names
    }


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@POSIX
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_output(case: Case, tmp_path: Path) -> None:
    case.setup(tmp_path)
    before = _snapshot(tmp_path, case.keep)
    temps_before = temporaries(tmp_path)
    done = run(case.args, tmp_path)
    assert done.returncode == case.code, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    if case.code == 2:
        assert done.stdout == ""
    else:
        lines = done.stderr.splitlines()
        assert len(lines) <= 1, done.stderr
        assert case.message in done.stderr
        if case.code:
            assert done.stdout == "" and done.stderr.startswith("error: ")
    assert _snapshot(tmp_path, case.keep) == before
    assert temporaries(tmp_path) == temps_before
    if os.path.exists(os.devnull):
        assert stat.S_ISCHR(os.stat(os.devnull).st_mode)  # the device node was not replaced


@POSIX
def test_check_with_a_nan_budget_never_says_within_budget(tmp_path: Path) -> None:
    done = run(["check", "default", "--max-cost-per-hour", "nan", "-f", "table"], tmp_path)
    assert done.returncode == 1
    assert "within budget" not in done.stdout + done.stderr


@POSIX
@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write in any folder"
)
def test_a_read_only_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    os.chmod(folder, 0o555)
    try:
        done = run(["sweep", *GRID, "--out", str(folder / "grid.csv")], tmp_path)
    finally:
        os.chmod(folder, 0o755)
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"error: --out {folder / 'grid.csv'}: cannot write in {folder}"
        f" ({os.strerror(errno.EACCES)})\n"
    )
    assert list(folder.iterdir()) == []


def test_a_folder_the_user_cannot_write_in_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same refusal in-process, where the test runs as root (who may write anywhere)."""
    monkeypatch.setattr(io_write.os, "access", lambda path, mode: False)
    done = CliRunner().invoke(app, ["sweep", *GRID, "--out", str(tmp_path / "grid.csv")])
    assert done.exit_code == 1
    assert done.stderr == (
        f"error: --out {tmp_path / 'grid.csv'}: cannot write in {tmp_path.resolve()}"
        f" ({os.strerror(errno.EACCES)})\n"
    )
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- --force


def test_force_replaces_atomically_and_keeps_the_mode(tmp_path: Path) -> None:
    out = tmp_path / "m.yaml"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    runner = CliRunner()
    args = ["catalog", "import-hf", str(HF_CONFIG), "--id", "x", "--out", str(out)]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 1 and "already exists; pass --force" in refused.stderr
    assert out.read_text() == "old\n"
    done = runner.invoke(app, [*args, "--force"])
    assert done.exit_code == 0, done.stderr
    assert "id: x" in out.read_text()
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert temporaries(tmp_path) == []


def test_the_overwriting_outputs_say_so_in_their_help() -> None:
    runner = CliRunner()
    for args, text in (
        (["sweep", "--help"], "replaces an existing file"),
        (["simulate", "--help"], "replaces an existing file"),
        (["plan", "--help"], "replaces an existing file"),
        (["frontier", "--help"], "replaces an"),
        (["calibrate", "--help"], "--force"),
        (["catalog", "import-hf", "--help"], "--force"),
    ):
        done = runner.invoke(app, args)
        assert done.exit_code == 0
        assert text in " ".join(done.stdout.replace("│", " ").split()), args


# ----------------------------------------------------------------------------- the writer


@pytest.fixture
def old_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "out.csv"
    path.write_text("old content\n")
    os.chmod(path, 0o604)
    yield path


def _no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_at_fsync_keeps_the_old_file(
    old_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(io_write.os, "fsync", _no_space)
    with pytest.raises(InputError) as err:
        write_atomic(old_file, "new content\n", "--out")
    assert str(err.value) == f"--out {old_file}: cannot write (No space left on device)"
    assert old_file.read_text() == "old content\n"
    assert temporaries(old_file.parent) == []


def test_a_full_disk_while_writing_keeps_the_old_file(old_file: Path) -> None:
    with pytest.raises(InputError, match="No space left on device"):
        with atomic_file(old_file, "--out") as fh:
            fh.write("partial")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert old_file.read_text() == "old content\n"
    assert temporaries(old_file.parent) == []


@POSIX
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_real_full_device_is_one_line_exit_1(tmp_path: Path) -> None:
    """stdout on /dev/full: every write fails with ENOSPC."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*COMMAND, "plan", "default", "-f", "json"],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr == f"error: cannot write the output ({os.strerror(errno.ENOSPC)})\n"


def test_a_full_disk_in_a_command_is_one_line_and_the_old_file_stays(
    old_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(io_write.os, "fsync", _no_space)
    done = CliRunner().invoke(app, ["sweep", *GRID, "--out", str(old_file)])
    assert done.exit_code == 1
    assert done.stderr == f"error: --out {old_file}: cannot write (No space left on device)\n"
    assert old_file.read_text() == "old content\n"
    assert temporaries(old_file.parent) == []


@pytest.mark.parametrize("error", [ValueError("boom"), KeyboardInterrupt()])
def test_an_error_in_the_body_removes_the_temporary(old_file: Path, error: BaseException) -> None:
    with pytest.raises(type(error)):
        with atomic_file(old_file, "--out") as fh:
            fh.write("half")
            assert len(temporaries(old_file.parent)) == 1
            raise error
    assert old_file.read_text() == "old content\n"
    assert temporaries(old_file.parent) == []


def test_a_replaced_file_keeps_its_mode_and_a_new_file_gets_the_umask(
    old_file: Path, tmp_path: Path
) -> None:
    write_atomic(old_file, "new\n", "--out")
    assert old_file.read_text() == "new\n"
    assert stat.S_IMODE(old_file.stat().st_mode) == 0o604
    mask = os.umask(0o027)
    try:
        write_atomic(tmp_path / "fresh.csv", b"bytes\n", "--out")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "fresh.csv").stat().st_mode) == 0o640
    assert (tmp_path / "fresh.csv").read_bytes() == b"bytes\n"


def test_a_symbolic_link_is_written_through(old_file: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.csv"
    link.symlink_to(old_file.name)
    write_atomic(link, "through\n", "--out")
    assert link.is_symlink() and old_file.read_text() == "through\n"


def test_a_file_that_appears_while_writing_is_not_replaced_without_force(tmp_path: Path) -> None:
    out = tmp_path / "new.yaml"
    with pytest.raises(InputError, match="already exists"):
        with atomic_file(out, "--out", overwrite=False) as fh:
            fh.write("ours\n")
            out.write_text("theirs\n")  # another program, meanwhile
    assert out.read_text() == "theirs\n"
    assert temporaries(tmp_path) == []


def test_the_temporary_name_is_unpredictable_and_short(tmp_path: Path) -> None:
    names = []
    for _ in range(2):
        with atomic_file(tmp_path / ("y" * 250), "--out"):
            names += temporaries(tmp_path)
    assert len(names) == 2 and names[0] != names[1]
    assert all(len(os.fsencode(n)) <= 255 for n in names)


def test_check_target_refuses(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("x\n")
    with pytest.raises(InputError, match=r"would overwrite its own input \(--data "):
        check_target(tmp_path / "in.csv", "--out", inputs=[("--data", src)])
    with pytest.raises(InputError, match="already exists"):
        check_target(src, "--out", overwrite=False)
    with pytest.raises(InputError, match="expected a file name"):
        check_target(Path(""), "--out")
    assert check_target(tmp_path / "a" / "b.csv", "--out", make_folders=True) == (
        tmp_path.resolve() / "a" / "b.csv"
    )


# ----------------------------------------------------------------------------- signals


def _startup_s() -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", "import re, sys"], check=True, env=env())
    return time.monotonic() - start


@POSIX
@pytest.mark.parametrize("extra_s", [0.05, 0.15, 0.3, 0.5])
def test_ctrl_c_while_loading_is_130_and_one_line(tmp_path: Path, extra_s: float) -> None:
    """From the moment infersize's code runs (after the interpreter's own start-up), Ctrl-C
    is exit 130 and at most the line 'interrupted'."""
    delay = 2 * _startup_s() + extra_s
    proc = subprocess.Popen(
        [*COMMAND, "plan", "default"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    if proc.returncode == 0:  # finished before the signal (a very fast machine)
        return
    assert proc.returncode == 130, err
    assert err in (b"", b"interrupted\n"), err


@POSIX
@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
def test_a_signal_while_writing_keeps_the_old_file(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "grid.csv"
    out.write_text("the old grid\n")
    grid = ["--vary", "isl=100:20000:10", "--vary", "peak_rps=1:50"]  # 100,000 points
    proc = subprocess.Popen(
        [*COMMAND, "sweep", *grid, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(tmp_path.glob(".grid.csv.*.tmp")):
        time.sleep(0.02)
    assert list(tmp_path.glob(".grid.csv.*.tmp")), "the sweep never started writing"
    time.sleep(0.2)  # planning and writing rows
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    assert out.read_text() == "the old grid\n"
    assert temporaries(tmp_path) == []
    assert err in (b"", b"interrupted\n"), err


# ----------------------------------------------------------------------------- streams


@POSIX
@pytest.mark.parametrize(
    "args",
    [["plan", "default"], ["plan", "default", "-f", "json"], ["plan", "--help"]],
    ids=["table", "json", "help"],
)
def test_a_reader_that_goes_away_first_is_141_quietly(tmp_path: Path, args: list[str]) -> None:
    """`infersize plan -f json | true`: the reader has gone before the first write."""
    proc = subprocess.Popen(
        [*COMMAND, *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert err == b""  # no "Exception ignored", no traceback


@POSIX
def test_head_reading_one_line_ends_quietly(tmp_path: Path) -> None:
    """`infersize plan | head -1`: 141 when the reader left before the last write, 0 when the
    whole table fitted in the pipe first; never a message."""
    proc = subprocess.Popen(
        [*COMMAND, "plan", "default"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) in (0, 141)
    assert first and err == b""


@POSIX
def test_a_closed_stdout_is_141_quietly(tmp_path: Path) -> None:
    """`infersize plan >&-`: started without a stdout at all."""
    done = subprocess.run(
        [*COMMAND, "plan", "default"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        env=env(),
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 141
    assert done.stderr == b""


@POSIX
def test_a_closed_stderr_still_gives_the_exit_code(tmp_path: Path) -> None:
    done = subprocess.run(
        [*COMMAND, "plan", "no-such-scenario"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        env=env(),
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(2),
    )
    assert done.returncode == 1
    assert done.stdout == b""


@POSIX
@pytest.mark.parametrize("locale", ["C", "en_US.ISO-8859-1"])
@pytest.mark.parametrize(
    "args",
    [["plan", "default"], ["frontier", "default"], ["catalog", "show", "llama-3-8b"]],
    ids=["plan", "frontier", "catalog-show"],
)
def test_a_locale_without_utf8_prints(tmp_path: Path, locale: str, args: list[str]) -> None:
    """No UTF-8 mode, no PYTHONIOENCODING: "×", "·", "≤" become look-alikes the encoding has."""
    environ = env(LC_ALL=locale, LANG=locale, PYTHONUTF8="0")
    environ.pop("PYTHONIOENCODING", None)
    done = subprocess.run(
        [*COMMAND, *args],
        cwd=tmp_path,
        capture_output=True,
        env=environ,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    assert done.stdout.strip()


def test_the_ascii_fallback_maps_look_alikes_and_keeps_file_name_bytes() -> None:
    from inferencesize.cli.common import ASCII_ERRORS, fit_streams

    fit_streams()
    assert "3 × a · b ≤ c".encode("ascii", ASCII_ERRORS) == b"3 x a - b <= c"
    assert "×≤".encode("latin-1", ASCII_ERRORS) == b"\xd7<="
    name = b"caf\xe9.csv".decode("ascii", "surrogateescape")
    assert name.encode("ascii", ASCII_ERRORS) == b"caf\xe9.csv"


@POSIX
def test_a_signal_the_process_ignores_stays_ignored() -> None:
    """Under `nohup` SIGHUP is ignored: writing a file does not make it fatal."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with io_write.signals_raise():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) == io_write._stop
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, previous)

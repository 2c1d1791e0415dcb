"""Every `infersize` command shown in README.md and docs/*.md runs, and what the text quotes
from its output is what it prints.

* A fenced ``sh`` block is a script: it runs with bash (``set -euo pipefail``) in an empty
  folder, with this environment's ``infersize`` first on PATH. It must exit 0 (a command that is
  meant to fail says so: ``… || echo "exit $?"``).
* A fenced ``text`` block right after it is an excerpt of what the script prints (stdout and
  stderr): each of its lines must be a whole line of the output, compared with box-drawing
  characters removed and runs of spaces collapsed, so a reader sees whole answers (a table
  row with its name, never a fragment such as "per million tokens output $"). Editing a
  quoted figure makes the test fail.
* ``infersize …`` lines anywhere else in a fenced block (other than ``yaml``, which shows
  configuration for other tools) are not allowed: they would escape this test.
* An inline ``infersize …`` command in the prose that has options runs too and must exit 0, 3
  or 4 (a plan, no feasible plan, over budget): the outcomes a reader is shown, never an error.
  Without options (``infersize simulate``) it names a command and is not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BOX = re.compile(r"[\u2500-\u257f]")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.S | re.M)
INLINE = re.compile(r"(?<!`)`(infersize [^`]+)`(?!`)")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    script: str
    expected: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _normal(text: str) -> str:
    return " ".join(BOX.sub(" ", text).split())


def _lines(text: str) -> set[str]:
    """The lines of ``text`` as :func:`_normal` compares them (blank lines dropped)."""
    return {_normal(line) for line in text.splitlines()} - {""}


def _blocks(path: Path) -> list[tuple[str, str, int, int]]:
    """(info, body, first line, end offset) of every fenced block."""
    text = path.read_text(encoding="utf-8")
    return [
        (m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1, m.end())
        for m in FENCE.finditer(text)
    ]


def _examples() -> list[Example]:
    out = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        blocks = _blocks(path)
        for i, (info, body, line, end) in enumerate(blocks):
            if info != "sh":
                continue
            expected: tuple[str, ...] = ()
            if i + 1 < len(blocks):
                nxt_info, nxt_body, _, _ = blocks[i + 1]
                between = text[end : text.find("```", end)]
                if nxt_info == "text" and not between.strip():
                    expected = tuple(ln for ln in nxt_body.splitlines() if ln.strip())
            out.append(Example(path.relative_to(ROOT).as_posix(), line, body, expected))
    return out


def _inline() -> list[tuple[str, str]]:
    out = []
    for path in PAGES:
        prose = FENCE.sub("", path.read_text(encoding="utf-8"))
        for m in INLINE.finditer(prose):
            if " -" in m.group(1):
                out.append((path.relative_to(ROOT).as_posix(), m.group(1)))
    return out


def _workdir(tmp: Path) -> Path:
    """An empty folder where the repository's data and catalogs can be named as in the text
    (``data/calibration/…``, ``scenarios/…``): read-only links, so nothing lands in the tree."""
    for name in ("data", "scenarios", "models", "hardware"):
        (tmp / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "NO_COLOR": "1",
        "COLUMNS": "200",
        "TERM": "dumb",
    }


def _run_script(example: Example, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + example.script],
        cwd=_workdir(tmp),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


EXAMPLES = _examples()


def test_every_page_has_examples() -> None:
    assert any(e.page == "README.md" for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example_runs_and_prints_what_the_text_quotes(example: Example, tmp_path: Path) -> None:
    done = _run_script(example, tmp_path)
    output = done.stdout + "\n" + done.stderr
    assert done.returncode == 0, f"{example.id} exited {done.returncode}:\n{output[-3000:]}"
    printed = _lines(output)
    missing = [ln for ln in example.expected if _normal(ln) not in printed]
    assert not missing, (
        f"{example.id}: not a whole line of the output: {missing}\n--- output ---\n{output}"
    )


def test_no_command_escapes_the_examples() -> None:
    stray = []
    for path in PAGES:
        for info, body, line, _ in _blocks(path):
            if info in ("sh", "yaml", "text"):
                continue
            for k, text in enumerate(body.splitlines()):
                if re.search(r"(^|[;&|]\s*)infersize\s", text):
                    stray.append(f"{path.name}:{line + k + 1}: {text.strip()}")
    assert not stray, "commands outside sh blocks are not run by the tests:\n" + "\n".join(stray)


@pytest.mark.parametrize(("page", "command"), _inline())
def test_inline_command_runs(page: str, command: str, tmp_path: Path) -> None:
    done = subprocess.run(
        shlex.split(command),
        cwd=_workdir(tmp_path),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 3, 4), (
        f"{page}: `{command}` exited {done.returncode}:\n{done.stderr}"
    )


def test_an_edited_figure_is_caught(tmp_path: Path) -> None:
    """The check above is not vacuous: the first quoted figure, changed by one digit, is not
    in what its command prints."""
    example = next(e for e in EXAMPLES if any(re.search(r"\d", ln) for ln in e.expected))
    done = _run_script(example, tmp_path)
    printed = _lines(done.stdout + "\n" + done.stderr)
    line = next(ln for ln in example.expected if re.search(r"\d", ln))
    assert _normal(line) in printed
    edited = re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), line, count=1)
    assert _normal(edited) not in printed
    fragment = " ".join(_normal(line).split()[1:])  # the line without its first word
    assert fragment not in printed  # a fragment of a line is not a quote of it

"""Every command's output, saved once and compared after a refactor: byte for byte.

What runs (each a fresh ``infersize`` process, as a user runs it):

* every shipped scenario (``scenarios/*.yaml``) through ``plan``, ``check --max-gpus 64``,
  ``frontier`` and ``sweep --vary osl=128,256``, each in ``--format table`` and
  ``--format json``;
* every example script of README.md and docs/*.md, as written (the extraction of
  ``tests/docs/test_examples.py``, imported, not copied), and every inline ``infersize …``
  command of the prose.

For each run the exit code, stdout and stderr are recorded (a command that fails is an output
too: its message must stay the same). The temporary folder a docs example runs in is written
as ``<tmp>`` and a measured duration (``validate``'s "predicted in 2.75 s") as ``<t> s``, in
the saved outputs and when comparing, so two runs compare.

Run:
    python benchmarks/outputs_identical.py --save DIR      # before the change
    python benchmarks/outputs_identical.py --compare DIR   # after: exit 1 and a diff if any differs

Options: ``--jobs N`` parallel processes (default 2), ``--only TEXT`` runs whose name contains
TEXT (for a quick look; a compare then checks only those).
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ("table", "json")
#: command words run on every shipped scenario (the scenario id goes after the first word)
SCENARIO_COMMANDS: dict[str, list[str]] = {
    "plan": ["plan"],
    "check": ["check", "--max-gpus", "64"],
    "frontier": ["frontier"],
    "sweep": ["sweep", "--vary", "osl=128,256"],
}


def _examples_module() -> ModuleType:
    """tests/docs/test_examples.py, which extracts the examples of README.md and docs/."""
    path = ROOT / "tests" / "docs" / "test_examples.py"
    spec = importlib.util.spec_from_file_location("docs_examples", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


#: Wall-clock durations a command reports (they differ from run to run).
ELAPSED = re.compile(r"(predicted in )\d+(?:\.\d+)? s\b")


def _timeless(text: str) -> str:
    return ELAPSED.sub(r"\1<t> s", text)


def _record(argv: str, done: subprocess.CompletedProcess[str], tmp: Path) -> str:
    text = f"$ {argv}\n--- exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return _timeless(text.replace(str(tmp.resolve()), "<tmp>").replace(str(tmp), "<tmp>"))


def _runs(docs: ModuleType) -> dict[str, Callable[[Path], str]]:
    """name -> a function that runs it in an empty folder and returns its record."""
    exe = str(Path(sys.executable).parent / "infersize")
    runs: dict[str, Callable[[Path], str]] = {}

    def command(argv: list[str]) -> Callable[[Path], str]:
        def run(tmp: Path) -> str:
            done = subprocess.run(
                argv,
                cwd=docs._workdir(tmp),
                env=docs._env(),
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            return _record(" ".join(["infersize", *argv[1:]]), done, tmp)

        return run

    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        for name, words in SCENARIO_COMMANDS.items():
            for fmt in FORMATS:
                argv = [exe, words[0], path.stem, *words[1:], "--format", fmt]
                runs[f"scenario.{path.stem}.{name}.{fmt}"] = command(argv)

    def script(example: object) -> Callable[[Path], str]:
        def run(tmp: Path) -> str:
            done = docs._run_script(example, tmp)
            return _record(example.script.strip(), done, tmp)  # type: ignore[attr-defined]

        return run

    for example in docs.EXAMPLES:
        page, line = example.id.split(":")
        runs[f"docs.{page.replace('/', '_')}.{int(line):04d}"] = script(example)
    for i, (page, text) in enumerate(docs._inline()):
        argv = text.split()
        runs[f"inline.{page.replace('/', '_')}.{i:02d}"] = command([exe, *argv[1:]])
    return runs


def _run_one(item: tuple[str, Callable[[Path], str]]) -> tuple[str, str]:
    name, run = item
    with tempfile.TemporaryDirectory(prefix="outputs_identical.") as tmp:
        return name, run(Path(tmp))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path, metavar="DIR", help="write every output to DIR")
    group.add_argument("--compare", type=Path, metavar="DIR", help="compare with a saved DIR")
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes (default 2)")
    parser.add_argument("--only", default="", help="only the runs whose name contains this")
    args = parser.parse_args()

    runs = {k: v for k, v in _runs(_examples_module()).items() if args.only in k}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outputs = dict(pool.map(_run_one, runs.items()))

    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
        for name, text in outputs.items():
            (args.save / f"{name}.txt").write_text(text, encoding="utf-8")
        print(f"saved {len(outputs)} outputs to {args.save}")
        return 0

    differ = 0
    for name in sorted(outputs):
        saved_path = args.compare / f"{name}.txt"
        saved = _timeless(saved_path.read_text(encoding="utf-8")) if saved_path.exists() else ""
        if saved != outputs[name]:
            differ += 1
            sys.stdout.writelines(
                difflib.unified_diff(
                    saved.splitlines(keepends=True),
                    outputs[name].splitlines(keepends=True),
                    fromfile=f"before/{name}",
                    tofile=f"after/{name}",
                )
            )
    missing = (
        []
        if args.only
        else sorted(p.stem for p in args.compare.glob("*.txt") if p.stem not in outputs)
    )
    for name in missing:
        print(f"saved but not run now: {name}")
    print(f"{len(outputs) - differ} of {len(outputs)} outputs identical", file=sys.stderr)
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())

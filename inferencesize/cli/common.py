"""Shared CLI plumbing: consoles, error handling and exit codes, common options."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TextIO, TypeVar

import typer

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.errors import EXIT_USAGE, InfersizeError, InputError

if TYPE_CHECKING:
    from rich.console import Console

P = ParamSpec("P")
R = TypeVar("R")


class State:
    debug: bool = False


def _console(stream: TextIO) -> Console:
    from rich.console import Console

    from inferencesize.report import output_width

    # Text wraps at spaces to the width (a terminal's or $COLUMNS); unlimited for a pipe.
    return Console(
        file=stream,
        width=output_width(stream),
        soft_wrap=False,
        no_color="NO_COLOR" in os.environ,
    )


def stdout() -> Console:
    """A rich console on stdout (rich is imported here: machine formats never need it); its
    width and colour follow :func:`inferencesize.report.output_width`."""
    return _console(sys.stdout)


def stderr() -> Console:
    return _console(sys.stderr)


def fail(message: str, code: int) -> typer.Exit:
    """Print a one-line error to stderr and return the Exit to raise."""
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(code)


#: Exit status when stdout's reader closed the pipe (128 + SIGPIPE, as a shell reports it).
EXIT_BROKEN_PIPE = 141


def silence_stdout() -> None:
    """Point stdout at the null device, so output still buffered is dropped, not an error."""
    try:
        target = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (captured output)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, target)
    os.close(devnull)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn InfersizeError into a one-line message and its exit code (no traceback)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except InfersizeError as err:
            if State.debug:
                raise
            raise fail(str(err), err.exit_code) from None
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # usage errors (BadParameter, …): Typer prints usage and exits 2
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        except BrokenPipeError:  # the reader went away (`| head`): stop quietly, like SIGPIPE
            silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as err:
            if State.debug:
                raise
            raise fail(
                f"internal error: {type(err).__name__}: {err} (rerun with --debug for a traceback)",
                70,
            ) from None

    return wrapper


def open_catalog(dirs: list[Path] | None) -> Catalog:
    return load_catalog(dirs or [])


def format_option(choices: tuple[str, ...], help_text: str = "Output format.") -> Any:
    """``-f/--format`` taking one of ``choices`` (shown as ``[a|b|c]``; checked by
    :func:`check_format`)."""
    return typer.Option("--format", "-f", metavar="[" + "|".join(choices) + "]", help=help_text)


def check_format(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise typer.BadParameter(
            f"'{value}' is not one of {', '.join(allowed)}", param_hint="--format"
        )
    return value


def emit_data(
    fmt: str,
    data: Any,
    rows: Sequence[Mapping[str, Any]] | None = None,
    table: Callable[[Console], None] | None = None,
) -> None:
    """Print a command's result in ``fmt``: ``json`` / ``yaml`` the record ``data``; ``csv``
    one line per record of ``rows`` (default: ``data`` alone), nested keys flattened
    (``parent_child``); ``table`` calls ``table`` with the stdout console."""
    from inferencesize import report

    if fmt == "json":
        report.emit(sys.stdout, report.to_json(data))
    elif fmt == "yaml":
        report.emit(sys.stdout, report.to_yaml(data))
    elif fmt == "csv":
        report.emit(sys.stdout, report.csv_text(list(rows) if rows is not None else [data]))
    elif table is not None:
        table(stdout())


#: Seconds of work before a progress display appears (shorter work stays silent).
PROGRESS_DELAY_S = 1.0


class Progress:
    """Progress of long work on stderr, as a context manager: shown only when stderr is a
    terminal and the work is still running after :data:`PROGRESS_DELAY_S` (a spinner with the
    elapsed time, a bar when ``total`` is known); erased when the work ends. Silent
    otherwise, so pipes, CI logs and quick commands see nothing. Never on stdout."""

    def __init__(self, label: str, total: int | None = None, delay_s: float | None = None) -> None:
        import threading

        self.label, self.total = label, total
        self.delay_s = PROGRESS_DELAY_S if delay_s is None else delay_s
        self.done = 0
        self._lock = threading.Lock()
        self._live: Any = None
        self._task: Any = None
        self._timer: Any = None
        self.was_shown = False
        try:
            self.enabled = sys.stderr.isatty()
        except (AttributeError, ValueError):
            self.enabled = False

    def __enter__(self) -> Progress:
        if self.enabled:
            import threading

            self._timer = threading.Timer(self.delay_s, self._start)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _start(self) -> None:
        from rich import progress as rp

        with self._lock:
            if self._timer is None:  # already finished
                return
            columns: list[Any] = [rp.SpinnerColumn(), rp.TextColumn("{task.description}")]
            if self.total is not None:
                columns += [rp.BarColumn(), rp.MofNCompleteColumn()]
            columns.append(rp.TimeElapsedColumn())
            live = rp.Progress(*columns, console=stderr(), transient=True)
            self._task = live.add_task(self.label, total=self.total, completed=self.done)
            live.start()
            self._live = live
            self.was_shown = True

    def advance(self, steps: int = 1, label: str | None = None) -> None:
        with self._lock:
            self.done += steps
            if label is not None:
                self.label = label
            if self._live is not None:
                self._live.update(self._task, completed=self.done, description=self.label)

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._live is not None:
                self._live.stop()
                self._live = None


def usage_error(message: str) -> typer.Exit:
    return fail(message, EXIT_USAGE)


def write_new_file(path: Path, text: str) -> None:
    """Write a file atomically, refusing to replace an existing one; missing parent folders
    are created."""
    if path.exists():
        raise InputError(f"{path}: already exists; choose another --out or remove it first")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write ({err.strerror})") from None

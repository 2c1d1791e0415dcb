"""Shared CLI plumbing: consoles, error handling and exit codes, common options."""

from __future__ import annotations

import codecs
import contextlib
import functools
import math
import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TextIO, TypeVar

import typer

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.errors import EXIT_USAGE, InfersizeError, InputError
from inferencesize.io_write import Input
from inferencesize.specs.common import MAX_COUNT, MAX_PARALLEL, MAX_RPS, MAX_TOKENS
from inferencesize.specs.scenario import (
    MAX_CV,
    MAX_DEADLINE_H,
    MAX_OFFLINE_REQUESTS,
    MAX_TOKENS_PER_DAY,
)

if TYPE_CHECKING:
    from rich.console import Console

P = ParamSpec("P")
R = TypeVar("R")


class State:
    debug: bool = False
    #: "interrupted" was said (a second Ctrl-C says nothing more)
    interrupted: bool = False


_CONSOLE: Any = None


def _console_class() -> Any:
    """rich's Console, except that a closed pipe raises BrokenPipeError (rich's own handler
    exits with status 1): the command then stops quietly with 141, as for ``print``."""
    global _CONSOLE
    if _CONSOLE is None:
        from rich.console import Console

        class QuietConsole(Console):
            def on_broken_pipe(self) -> None:
                self.quiet = True
                raise BrokenPipeError(32, "Broken pipe")

        _CONSOLE = QuietConsole
    return _CONSOLE


def _console(stream: TextIO) -> Console:
    from inferencesize.report import output_width

    # Text wraps at spaces to the width (a terminal's or $COLUMNS); unlimited for a pipe.
    console: Console = _console_class()(
        file=stream,
        width=output_width(stream),
        soft_wrap=False,
        no_color="NO_COLOR" in os.environ,
    )
    return console


def stdout() -> Console:
    """A rich console on stdout (rich is imported here: machine formats never need it); its
    width and colour follow :func:`inferencesize.report.output_width`."""
    return _console(sys.stdout)


def stderr() -> Console:
    return _console(sys.stderr)


def say(line: str) -> None:
    """Write one line to stderr; a closed or full stderr is ignored (nothing else can be
    told)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


def fail(message: str, code: int) -> typer.Exit:
    """Print a one-line error to stderr and return the Exit to raise."""
    say(f"error: {message}")
    return typer.Exit(code)


#: Exit status after Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


def interrupted() -> typer.Exit:
    """Ctrl-C: the line "interrupted" on stderr (once per process); the Exit to raise."""
    if not State.interrupted:
        State.interrupted = True
        say("interrupted")
    return typer.Exit(EXIT_INTERRUPTED)


def ignore_ctrl_c() -> None:
    """The process is ending: a further Ctrl-C must not break its last steps."""
    with contextlib.suppress(ValueError, OSError):  # not the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)


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


#: ASCII for the characters the output uses, where the terminal's encoding lacks them.
ASCII_FALLBACK = {
    "×": "x",
    "·": "-",
    "≤": "<=",
    "≥": ">=",
    "—": "-",
    "–": "-",
    "−": "-",
    "…": "...",
    "→": "->",
    "←": "<-",
    "±": "+/-",
    "µ": "u",
    "°": " deg",
    "’": "'",
    "‘": "'",
    "“": '"',
    "”": '"',
    "│": "|",
    "─": "-",
    "└": "+",
    "┌": "+",
    "┐": "+",
    "┘": "+",
    "├": "+",
    "┤": "+",
    "┬": "+",
    "┴": "+",
    "┼": "+",
    "█": "#",
    "▏": "|",
}
ASCII_ERRORS = "infersize-ascii"


def _ascii_fallback(err: UnicodeError) -> tuple[str | bytes, int]:
    """Codec error handler: characters the encoding lacks become ASCII look-alikes (else
    '?'); undecodable bytes of file names (surrogate escapes) are written back as they were."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start : err.end]
    if all("\udc80" <= ch <= "\udcff" for ch in bad):
        return bytes(ord(ch) - 0xDC00 for ch in bad), err.end
    return "".join(ASCII_FALLBACK.get(ch, "?") for ch in bad), err.end


class _ClosedStream:
    """Stands for a standard stream the process was started without (``>&-``): writing to it
    is a closed pipe."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _hold(fd: int) -> None:
    """Put the null device on a closed standard descriptor, so no file the command opens
    later gets its number (and output meant for the stream)."""
    try:
        os.fstat(fd)
    except OSError:
        new = os.open(os.devnull, os.O_RDWR)
        if new != fd:
            os.dup2(new, fd)
            os.close(new)


def fit_streams() -> None:
    """Make stdout and stderr safe to print to, in one place, before any command runs:

    * an encoding that lacks "×", "·", "≤" (``LC_ALL=C`` without UTF-8 mode, an ISO-8859
      locale) gets ASCII look-alikes instead of an error (:data:`ASCII_FALLBACK`);
    * a stream the process was started without (``>&-``, ``2>&-``): stdout behaves as a closed
      pipe (the command stops quietly with status 141), stderr is dropped.
    """
    try:
        codecs.lookup_error(ASCII_ERRORS)
    except LookupError:
        codecs.register_error(ASCII_ERRORS, _ascii_fallback)
    if sys.stdout is None:
        _hold(1)
        sys.stdout = _ClosedStream()
    if sys.stderr is None:
        _hold(2)
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
        if encoding in ("utf-8", "utf8") or not hasattr(stream, "reconfigure"):
            continue
        with contextlib.suppress(OSError, ValueError):
            stream.reconfigure(errors=ASCII_ERRORS)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn InfersizeError into a one-line message and its exit code (no traceback); check
    every number flag first (:func:`check_numbers`), before the command does any work."""

    flags: dict[str, str] = {}

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            if not flags:  # once, when the command first runs (not at start-up)
                flags.update(option_flags(func))
            check_numbers(kwargs, flags)
            return func(*args, **kwargs)
        except InfersizeError as err:
            if State.debug:
                raise
            raise fail(str(err), err.exit_code) from None
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # usage errors (BadParameter, …): Typer prints usage and exits 2
        except KeyboardInterrupt:
            raise interrupted() from None
        except BrokenPipeError:  # the reader went away (`| head`): stop quietly, like SIGPIPE
            silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except OSError as err:  # writing the output: a full disk (`> /dev/full`), an I/O error
            if State.debug:
                raise
            raise fail(os_error_text(err), 1) from None
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


def os_error_text(err: OSError) -> str:
    """One line for an operating-system error outside the file writer: the file it names, or
    the standard stream being written."""
    reason = err.strerror or str(err)
    if err.filename is not None:
        return f"{err.filename}: {reason}"
    return f"cannot write the output ({reason})"


#: Names of positional arguments in messages.
ARGUMENTS = {"scenario": "SCENARIO", "config": "CONFIG"}


def input_files(**named: str | Path | Iterable[Path] | None) -> list[Input]:
    """A command's input files, for the writer's check that an output is not one of them:
    ``option=path`` (or a list of paths); a scenario argument that names no file (a shipped
    id) and options not given are left out."""
    out: list[Input] = []
    for name, value in named.items():
        label = ARGUMENTS.get(name, flag_name(name))
        for v in [value] if isinstance(value, str | Path) else list(value or []):
            if Path(v).is_file():
                out.append((label, Path(v)))
    return out


def flag_name(param: str) -> str:
    return "--" + param.replace("_", "-")


# --------------------------------------------------------------------------- number flags

#: Most instances `simulate` runs behind its balancer.
MAX_INSTANCES = 10_000
#: Most requests `simulate` draws (its arrays and event loop grow with them).
MAX_REQUESTS = 10_000_000
#: Prices above this (USD) are typing errors; larger ones overflow the cost of a fleet.
MAX_USD = 1e12


class Bound(NamedTuple):
    """The range of a number flag: ``low`` (excluded when ``above``) to ``high``."""

    low: float | None = None
    high: float | None = None
    above: bool = False


#: The one table of number-flag ranges outside the scenario's own options (those are checked
#: where they are parsed, cli.options.FLAGS, and by the scenario schema): by flag name, for
#: every command that has the flag; checked with :func:`check_numbers` before the command
#: does any work (exit 1). Ceilings are the scenario's (specs.common) where one applies.
BOUNDS: dict[str, Bound] = {
    # simulate
    "--instances": Bound(1, MAX_INSTANCES),
    # simulate: at most MAX_REQUESTS (checked there); plan: an offline batch of requests
    "--requests": Bound(1, MAX_OFFLINE_REQUESTS),
    "--deadline-h": Bound(0, MAX_DEADLINE_H, above=True),
    "--tokens-per-day": Bound(0, MAX_TOKENS_PER_DAY, above=True),
    "--seed": Bound(0, 2**63 - 1),
    "--rate": Bound(0, MAX_RPS, above=True),
    "--cv": Bound(0, MAX_CV),  # plan, estimate --rate, simulate, frontier (0: evenly spaced)
    "--isl-stddev": Bound(0, MAX_TOKENS),
    "--osl-stddev": Bound(0, MAX_TOKENS),
    "--max-queue-delay-ms": Bound(0, 1e9),
    "--max-batch": Bound(1, MAX_COUNT),
    "--step-tokens": Bound(1, MAX_TOKENS),
    # one operating point (estimate, simulate, calibrate): the scenario's ceilings
    "--isl": Bound(1, MAX_TOKENS),
    "--osl": Bound(1, MAX_TOKENS),
    "--tp": Bound(1, MAX_PARALLEL),
    "--pp": Bound(1, MAX_PARALLEL),
    "--ep": Bound(1, MAX_PARALLEL),
    "--concurrency": Bound(1, MAX_COUNT),
    "--max-concurrency": Bound(1, MAX_COUNT),
    # check
    "--max-cost-per-hour": Bound(0, MAX_USD, above=True),
    "--max-power-kw": Bound(0, 1e9),
}


def _show(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def finite(
    value: float,
    flag: str,
    low: float | None = None,
    high: float | None = None,
    above: bool = False,
) -> float:
    """A number option's value: finite (not inf or nan) and within [low, high] (``above``:
    greater than low); else a one-line input error naming the flag (exit 1)."""
    if not math.isfinite(value):
        raise InputError(f"{flag}: expected a finite number (got {value})")
    if low is not None and (value <= low if above else value < low):
        raise InputError(
            f"{flag}: must be {'>' if above else '>='} {_show(low)} (got {_show(value)})"
        )
    if high is not None and value > high:
        raise InputError(f"{flag}: must be <= {_show(high)} (got {_show(value)})")
    return value


def option_flags(func: Callable[..., Any]) -> dict[str, str]:
    """Parameter name -> the long flag that sets it (``max_cost_per_hour`` ->
    ``--max-cost-per-hour``, ``fmt`` -> ``--format``), from the command's signature."""
    from typing import get_type_hints

    from typer.models import OptionInfo

    out: dict[str, str] = {}
    for name, hint in get_type_hints(func, include_extras=True).items():
        flag = flag_name(name)
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, OptionInfo):
                longs = [d.split("/")[0] for d in meta.param_decls or () if d.startswith("--")]
                flag = longs[0] if longs else flag
        out[name] = flag
    return out


def check_numbers(values: Mapping[str, Any], flags: Mapping[str, str]) -> None:
    """Every number a command was given (``values`` by parameter name, ``flags`` their flag
    names): finite when a float, and within its flag's range in :data:`BOUNDS`."""
    for name, value in values.items():
        flag = flags.get(name, flag_name(name))
        bound = BOUNDS.get(flag, Bound())
        for v in value if isinstance(value, list | tuple) else [value]:
            if isinstance(v, int | float) and not isinstance(v, bool):
                finite(v, flag, bound.low, bound.high, bound.above)

"""Shared CLI plumbing: consoles, error handling and exit codes, common options."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import typer

from inferencesize.catalog import Catalog, load_catalog
from inferencesize.errors import EXIT_USAGE, InfersizeError, InputError

if TYPE_CHECKING:
    from rich.console import Console

P = ParamSpec("P")
R = TypeVar("R")


class State:
    debug: bool = False


def stdout() -> Console:
    """A rich console on stdout (rich is imported here: machine formats never need it)."""
    from rich.console import Console

    return Console(file=sys.stdout, soft_wrap=True, no_color="NO_COLOR" in os.environ)


def stderr() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, soft_wrap=True, no_color="NO_COLOR" in os.environ)


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


def check_format(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise typer.BadParameter(
            f"'{value}' is not one of {', '.join(allowed)}", param_hint="--format"
        )
    return value


def usage_error(message: str) -> typer.Exit:
    return fail(message, EXIT_USAGE)


def write_new_file(path: Path, text: str) -> None:
    """Write a file atomically, refusing to replace an existing one."""
    if path.exists():
        raise InputError(f"{path}: already exists; choose another --out or remove it first")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write ({err.strerror})") from None

"""The `infersize` command line (Typer). Data on stdout, diagnostics on stderr.

Commands are registered from :data:`COMMANDS`. The console script imports only the module of
the command it runs (``infersize plan`` never imports the simulator's CLI, the sweep or the
plotting code); ``app`` (every command, for ``--help`` and the tests) is built on first use.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from inferencesize import __version__
from inferencesize.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    State,
    fit_streams,
    handle_errors,
    ignore_ctrl_c,
    interrupted,
    os_error_text,
    say,
    silence_stdout,
)
from inferencesize.cli.help import Command, Group, Listed, documented_help

#: command name -> (module under inferencesize.cli, function; None: the module's Typer ``app``
#: as a command group)
COMMANDS: dict[str, tuple[str, str | None]] = {
    "catalog": ("catalog_cmd", None),
    "peak": ("peak_cmd", "peak"),
    "estimate": ("perf_cmd", "estimate"),
    "validate": ("validate_cmd", "validate"),
    "calibrate": ("validate_cmd", "calibrate"),
    "plan": ("plan_cmd", "plan_command"),
    "check": ("plan_cmd", "check_command"),
    "sweep": ("sweep_cmd", "sweep_command"),
    "frontier": ("frontier_cmd", "frontier_command"),
    "simulate": ("simulate_cmd", "simulate_command"),
}
#: commands that report their own errors (no handle_errors wrapper)
_UNWRAPPED = frozenset({"peak"})


def _version(value: bool) -> None:
    if value:
        typer.echo(f"infersize {__version__}")
        raise typer.Exit()


def root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks for errors (for bug reports).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    State.debug = debug


def build_app(names: Iterable[str] = COMMANDS) -> typer.Typer:
    """The Typer application with the commands ``names`` (default: all, in table order)."""
    cli = typer.Typer(
        name="infersize",
        help=(
            "Size LLM inference deployments: GPUs, servers, parallelism, precision, cost.\n\n"
            "Which GPUs, how many servers, with what parallelism and precision, for a model,"
            " prompt/answer lengths, traffic and latency limits.\n\n"
            "Every command prints --format table (default), json, yaml or csv on stdout;"
            " messages and progress go to stderr.\n\n"
            "Exit codes: 0 ok, 1 bad input or catalog error, 2 usage error, 3 no feasible"
            " plan, 4 plan exceeds the budget (check).\n\n"
            "Examples:\n"
            "  infersize plan default\n"
            "  infersize plan --model llama-3.1-70b --isl 1000 --osl 500 --mean-rps 20"
            " --ttft-ms 1000 --itl-ms 50\n"
            "  infersize catalog list models\n"
            "  infersize plan --help"
        ),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        cls=Group,
    )
    cli.callback()(root)
    for name in names:
        module_name, attr = COMMANDS[name]
        module = importlib.import_module(f"inferencesize.cli.{module_name}")
        if attr is None:
            cli.add_typer(module.app, name=name)
            continue
        fn = getattr(module, attr)
        cli.command(name, cls=Command)(fn if name in _UNWRAPPED else handle_errors(fn))
    return cli


def listing_app() -> Any:
    """The top-level command group with every command listed by its help, read from its
    module's source (:func:`inferencesize.cli.help.documented_help`), none imported: what
    ``infersize``, ``infersize --help``, ``--version`` and a mistyped command need."""
    import typer.main

    group = typer.main.get_command(build_app([]))
    folder = Path(__file__).parent
    names = [n for n, (_, attr) in COMMANDS.items() if attr is not None]
    names += [n for n, (_, attr) in COMMANDS.items() if attr is None]  # groups after commands
    for name in names:
        module_name, attr = COMMANDS[name]
        text = documented_help(folder / f"{module_name}.py", attr)
        group.add_command(Listed(name, text), name)  # type: ignore[attr-defined]
    return group


def command_of(argv: list[str]) -> str | None:
    """The command an argument list runs: its first word, when it names one."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def __getattr__(name: str) -> Any:
    if name == "app":  # every command, built once
        value = build_app()
        globals()["app"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point: builds only the command being run (all for help/errors).

    Whatever happens, one exit status and at most one line on stderr: Ctrl-C at any moment
    is 130 with "interrupted"; a reader that went away (``| head -1``, ``| true``) or a
    stdout the process was started without is 141, quietly; a stdout that cannot be written
    (``> /dev/full``) is 1 with the system's reason.

    The process then ends without the interpreter's teardown (freeing numpy's and pydantic's
    module state took ~60 ms of a ~0.6 s plan; nothing is left for the interpreter to print
    about at exit): the command has closed every file it wrote, and the standard streams are
    flushed here first.
    """
    try:
        code = _run()
        ignore_ctrl_c()
    except KeyboardInterrupt:
        ignore_ctrl_c()
        interrupted()
        code = EXIT_INTERRUPTED
    os._exit(code)


def _run() -> int:
    fit_streams()
    name = command_of(sys.argv[1:])
    code = 0
    before = _identity(1)
    try:
        cli = build_app([name]) if name else listing_app()
        if not gc.isenabled():  # the console entry paused it for the imports (console.py)
            gc.freeze()
            gc.enable()
        try:
            cli()
        except SystemExit as done:
            code = exit_code(done.code)
        if code and _identity(1) != before and _identity(1) == _identity_of(os.devnull):
            code = EXIT_BROKEN_PIPE  # a library met a closed pipe (rich: help) and muted stdout
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away after the last write
        silence_stdout()
        code = code or EXIT_BROKEN_PIPE
    except OSError as err:  # the last write to stdout failed (a full disk)
        if State.debug:
            raise
        say(f"error: {os_error_text(err)}")
        code = code or 1
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    return code


def _identity(fd: int) -> tuple[int, int] | None:
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _identity_of(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def exit_code(value: object) -> int:
    """The process exit status ``sys.exit(value)`` stands for."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    say(str(value))
    return 1

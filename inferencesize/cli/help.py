"""``--help`` of every command: rich panels laid out to fit the terminal.

Typer's own rich help shares the width among five columns (names, negative names, types,
help) and cuts what does not fit (``--amortization-ye…``). Here each option takes one line,
``NAMES METAVAR`` then its help, wrapped at spaces only; a name longer than the name column
(two fifths of the width) gets a line of its own with the help under it. Nothing is ever cut
and no line is wider than the width: ``$COLUMNS``, else the terminal's, else 80; at most
:data:`MAX_WIDTH`.

Command help text (the docstring) is reflowed paragraph by paragraph, except an
``Example:`` / ``Examples:`` paragraph: each of its lines is one command, printed whole, or
split before an option with a shell line continuation (`` \\``) where it is too wide, so it
can still be pasted into a shell. A ``  # note`` after a command is printed above it.

The classes are duck-typed against Typer's parameters (``opts``, ``secondary_opts``,
``is_flag``, ``type``, ``metavar``), which the vendored click of newer Typer shares.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
import typing
from enum import Enum
from pathlib import Path
from typing import Any

from typer.core import TyperCommand, TyperGroup

#: Help never wider than this (long lines of prose are hard to read).
MAX_WIDTH = 100
#: Paragraph heads that start a block of example commands.
EXAMPLE_HEADS = ("Example:", "Examples:")
#: Metavars of parameter types that say nothing more than the type (replaced by ours).
TYPE_METAVARS = {"integer": "N", "int": "N", "float": "X", "path": "PATH"}


def help_width(environ: dict[str, str] | None = None) -> int:
    """Width of the help: $COLUMNS, the terminal's or 80, at most :data:`MAX_WIDTH`."""
    env = os.environ if environ is None else environ
    text = env.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        width = int(text)
    elif sys.stdout.isatty():
        width = shutil.get_terminal_size((80, 24)).columns
    else:
        width = 80
    return max(20, min(width, MAX_WIDTH))


# --------------------------------------------------------------------------- text


def paragraphs(text: str) -> list[str]:
    """The docstring's paragraphs (blank-line separated), dedented, lines kept."""
    return [p.strip("\n") for p in re.split(r"\n\s*\n", textwrap.dedent(text or "").strip())]


def summary(text: str | None) -> str:
    """The first paragraph as one line (the command's one-line summary)."""
    parts = paragraphs(text or "")
    return " ".join(parts[0].split()) if parts else ""


def examples(text: str | None) -> list[str]:
    """The example commands of a docstring, one string each (a ``# note`` left out)."""
    out: list[str] = []
    for para in paragraphs(text or ""):
        head, *lines = para.splitlines()
        if head.strip() not in EXAMPLE_HEADS:
            continue
        for line in lines:
            command = line.split("  #")[0].strip()
            if command:
                out.append(command)
    return out


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(
        " ".join(text.split()),
        width=max(width, 10),
        initial_indent=indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def command_lines(command: str, width: int, indent: str = "  ") -> list[str]:
    """One example command in ``width`` columns: whole, or split before its options with
    `` \\`` continuations (the continued lines indented by two more spaces)."""
    command, _, note = command.partition("  #")
    lines = [f"{indent}# {note.strip()}"] if note.strip() else []
    command = " ".join(command.split())
    if len(indent) + len(command) <= width:
        return [*lines, indent + command]
    groups = re.split(r" (?=--?[A-Za-z])", command)
    current, first = groups[0], True
    for group in groups[1:]:
        pad = indent if first else indent + "  "
        if len(pad) + len(current) + 1 + len(group) + 2 <= width:
            current += " " + group
            continue
        lines.append(f"{pad}{current} \\")
        current, first = group, False
    lines.append((indent if first else indent + "  ") + current)
    return lines


def body_lines(text: str, width: int) -> list[str]:
    """The docstring after its first paragraph: prose reflowed, examples kept whole."""
    out: list[str] = []
    for para in paragraphs(text)[1:]:
        head, *rest = para.splitlines()
        if out:
            out.append("")
        if head.strip() in EXAMPLE_HEADS:
            out.append(head.strip())
            for line in rest:
                if line.strip():
                    out += command_lines(line.strip(), width)
        else:
            out += _wrap(para, width)
    return out


# --------------------------------------------------------------------------- parameters


def metavar(param: Any) -> str:
    """What an option takes: its metavar, ``[a|b]`` for choices, nothing for a flag."""
    if getattr(param, "is_flag", False) and not getattr(param, "count", False):
        return ""
    if param.metavar:
        return str(param.metavar)
    if param.param_type_name == "argument":
        return str(param.name).upper()
    choices = _choices(param)
    if choices:
        return "[" + "|".join(choices) + "]"
    kind = getattr(param, "type", None)
    if kind is None:  # newer Typer: the annotation
        annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
        kind = next((t for t in _members(annotation) if t is not type(None)), None)
    name = getattr(kind, "name", getattr(kind, "__name__", ""))
    return TYPE_METAVARS.get(str(name).lower(), str(param.name).upper())


def _members(annotation: Any) -> list[Any]:
    """The types an annotation names: ``list[X] | None`` gives list, X and None."""
    out = [annotation]
    for arg in typing.get_args(annotation):
        out += _members(arg)
    return out


def _choices(param: Any) -> list[str]:
    """The values a choice option takes (click's Choice, or an Enum annotation)."""
    choices = getattr(getattr(param, "type", None), "choices", None)
    if choices:
        return [c.value if isinstance(c, Enum) else str(c) for c in choices]
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    for kind in _members(annotation):
        if isinstance(kind, type) and issubclass(kind, Enum):
            return [str(m.value) for m in kind]
    return []


def names(param: Any) -> str:
    """``-f, --format [a|b]``; a boolean pair as ``--x / --no-x``; an argument's metavar."""
    if param.param_type_name == "argument":
        return metavar(param)
    opts = sorted(param.opts, key=lambda o: (o.startswith("--"), o))
    text = ", ".join(opts)
    if param.secondary_opts:
        text += " / " + ", ".join(param.secondary_opts)
    kind = metavar(param)
    return f"{text} {kind}" if kind else text


def _default(param: Any) -> str | None:
    shown = getattr(param, "show_default", None)
    if isinstance(shown, str):
        return shown
    if shown is False or getattr(param, "is_flag", False) or param.required:
        return None
    value = param.default
    if isinstance(value, Enum):
        value = value.value
    if value is None or value is False or value == [] or value == () or callable(value):
        return None
    return str(value)


def usage_line(command: Any, ctx: Any) -> str:
    """``Usage: infersize plan [OPTIONS] [SCENARIO]``: optional arguments in brackets, a
    repeatable one followed by ``...``; a group ends with ``COMMAND [ARGS]...``."""
    parts = [f"Usage: {ctx.command_path} [OPTIONS]"]
    for param in command.get_params(ctx):
        if param.param_type_name != "argument" or getattr(param, "hidden", False):
            continue
        name = metavar(param).strip("[]") + ("..." if param.nargs == -1 else "")
        parts.append(name if param.required else f"[{name}]")
    if isinstance(command, TyperGroup):
        parts.append("COMMAND [ARGS]...")
    return " ".join(parts)


def param_help(param: Any) -> str:
    text = " ".join(str(getattr(param, "help", None) or "").split())
    default = _default(param)
    if default is not None:
        text += f" [default: {default}]"
    if param.required and param.param_type_name == "option":
        text += " [required]"
    return text.strip()


def name_width(items: list[tuple[str, str]], inner: int) -> int:
    """The name column: as wide as the longest name that fits in two fifths of ``inner``."""
    cap = max(12, inner * 2 // 5)
    fitting = [len(n) for n, _ in items if len(n) <= cap]
    return max(fitting, default=min(cap, max((len(n) for n, _ in items), default=0)))


def rows(
    items: list[tuple[str, str]], inner: int, name_w: int | None = None
) -> list[tuple[str, list[str]]]:
    """(name, help lines) laid out in ``inner`` columns: each entry's lines, the name padded
    to the name column (``name_w``, default :func:`name_width`) or on a line of its own when
    it is wider."""
    if name_w is None:
        name_w = name_width(items, inner)
    help_w = inner - name_w - 2
    out: list[tuple[str, list[str]]] = []
    for name, text in items:
        wrapped = _wrap(text, help_w) if text else []
        if len(name) <= name_w:
            first = [name.ljust(name_w) + ("  " + wrapped[0] if wrapped else "")]
            out.append((name, first + [" " * (name_w + 2) + w for w in wrapped[1:]]))
        else:
            out.append((name, [name] + [" " * (name_w + 2) + w for w in wrapped]))
    return out


# --------------------------------------------------------------------------- rendering


def _panel(title: str, items: list[tuple[str, str]], width: int, name_w: int) -> Any:
    from rich import box
    from rich.panel import Panel
    from rich.text import Text

    text = Text(no_wrap=True, overflow="ignore")
    for n, (name, lines) in enumerate(rows(items, width - 4, name_w)):
        for k, line in enumerate(lines):
            if n or k:
                text.append("\n")
            if k == 0:
                text.append_text(_styled_name(name))
                text.append(line[len(name) :])
            else:
                text.append(line)
    return Panel(
        text,
        title=title,
        title_align="left",
        border_style="dim",
        box=box.ROUNDED,
        width=width,
    )


def _styled_name(name: str) -> Any:
    from rich.text import Text

    out = Text()
    for word in re.split(r"( )", name):
        style = "bold cyan" if word.startswith("-") else "yellow" if word.strip() else ""
        if word in ("/", ","):
            style = ""
        out.append(word, style=style)
    return out


def render(command: Any, ctx: Any) -> None:
    """Print the help of ``command`` (a Typer command or group) to stdout."""
    from rich.console import Console
    from rich.text import Text

    width = help_width()
    console = Console(width=width, highlight=False, no_color="NO_COLOR" in os.environ)
    usage = usage_line(command, ctx)
    console.print()
    console.print(Text("\n".join(_wrap(usage, width - 1, " ")), style="bold"))
    console.print()
    text = command.help or ""
    first = summary(text)
    if first:
        console.print(Text("\n".join(_wrap(first, width - 1, " "))))
    rest = body_lines(text, width - 1)
    if rest:
        console.print()
        console.print(Text("\n".join(" " + line if line else "" for line in rest)))
    console.print()
    panels: dict[str, list[tuple[str, str]]] = {}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        kind = "Arguments" if param.param_type_name == "argument" else "Options"
        panel = getattr(param, "rich_help_panel", None) or kind
        panels.setdefault(panel, []).append((names(param), param_help(param)))
    order: list[str] = [p for p in ("Arguments", "Options") if p in panels]
    order += [p for p in panels if p not in order]
    name_w = name_width([item for items in panels.values() for item in items], width - 4)
    for panel in order:
        console.print(_panel(panel, panels[panel], width, name_w))
    if isinstance(command, TyperGroup):
        listed = []
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                listed.append((name, summary(sub.help or sub.short_help or "")))
        if listed:
            console.print(_panel("Commands", listed, width, name_width(listed, width - 4)))


class Command(TyperCommand):
    """A Typer command whose ``--help`` is :func:`render`'s."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        render(self, ctx)


class Group(TyperGroup):
    """A Typer group whose ``--help`` is :func:`render`'s."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        render(self, ctx)


def documented_help(path: Path, attr: str | None) -> str:
    """The help a command module gives, read from its source without importing it: the
    docstring of function ``attr``, or (``attr`` None: a command group) the ``help=`` of its
    ``typer.Typer(...)``. Empty when there is none.

    A function's docstring is the first triple-quoted literal after ``def attr(`` (evaluated
    alone, ~1000x cheaper than parsing the module); anything else is parsed whole.
    """
    import ast

    source = path.read_text(encoding="utf-8")
    if attr is not None:
        found = _DOCSTRING.search(source, _def_end(source, attr))
        if found is not None:
            return _clean(ast.literal_eval(found.group(0)))
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if attr is not None and isinstance(node, ast.FunctionDef) and node.name == attr:
            return ast.get_docstring(node) or ""
        if attr is None and isinstance(node, ast.Call) and ast.unparse(node.func) == "typer.Typer":
            for keyword in node.keywords:
                if keyword.arg == "help":
                    value = ast.literal_eval(keyword.value)
                    return value if isinstance(value, str) else ""
    return ""


#: A triple-quoted string literal (no escaped quotes of its own kind inside).
_DOCSTRING = re.compile(r'[rR]?"""(?:[^"\\]|\\.|"(?!""))*"""', re.S)


def _def_end(source: str, name: str) -> int:
    """Where the signature of top-level ``def name(`` ends (``):`` or ``-> X:`` then a line
    end); len(source) when there is no such function."""
    found = re.search(
        rf"^def {re.escape(name)}\(.*?\)(?:\s*->\s*[^:\n]+)?:[ \t]*\n", source, re.M | re.S
    )
    return found.end() if found is not None else len(source)


def _clean(doc: str) -> str:
    """``inspect.cleandoc``: the first line stripped, the rest dedented, blank ends dropped."""
    import inspect

    return inspect.cleandoc(doc)


class Listed(Command):
    """A command shown in a group's list by its help alone (its module is not loaded):
    running it is never asked of it (the command line builds the real one)."""

    def __init__(self, name: str, help_text: str) -> None:
        super().__init__(name, help=help_text, callback=None)

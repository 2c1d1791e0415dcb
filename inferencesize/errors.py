"""Error types. Expected outcomes (bad input, no feasible plan, over budget) are kept apart
from bugs: each carries the process exit code of DESIGN.md §5."""

from __future__ import annotations

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_INFEASIBLE = 3
EXIT_OVER_BUDGET = 4


class InfersizeError(Exception):
    """Base class for errors a user can act on; ``str(err)`` is the one-line message."""

    exit_code: int = EXIT_BAD_INPUT


class InputError(InfersizeError):
    """Bad input: a catalog, scenario, data file or flag value that cannot be used (exit 1)."""

    exit_code = EXIT_BAD_INPUT


class CatalogError(InputError):
    """A catalog or scenario file problem, located by file and field path.

    The message reads ``file: field.path: what is wrong and what is expected``.
    """

    def __init__(self, file: str, field: str, problem: str) -> None:
        self.file = file
        self.field = field
        self.problem = problem
        where = f"{file}: {field}: " if field else f"{file}: "
        super().__init__(where + problem)


class UnknownIdError(InputError):
    """An id that is not in the catalog; the message suggests the closest ids."""


class UsageError(InfersizeError):
    """Flags that do not fit together (exit 2)."""

    exit_code = EXIT_USAGE


class InfeasibleError(InfersizeError):
    """No candidate meets the limits (exit 3)."""

    exit_code = EXIT_INFEASIBLE


class OverBudgetError(InfersizeError):
    """The plan exceeds the stated budget (exit 4)."""

    exit_code = EXIT_OVER_BUDGET

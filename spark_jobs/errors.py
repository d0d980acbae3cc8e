"""The jobs' exception family: each carries a one-line reason the CLIs print as is."""

from __future__ import annotations

from app.core.errors import TerminalError


class JobError(TerminalError):
    """A job refused to run; nothing was written to the table (a rerun fails the same way
    until the input or the path is fixed)."""


class TableNotFoundError(JobError):
    """No Hudi table at the given path."""


class InputError(JobError):
    """An input file is missing, unreadable, or its columns cannot be mapped."""

"""`CLIError`: a command's failure, reported as one line on standard error with exit
status 1 (`amfkit.cli.main.main` prints it)."""

from __future__ import annotations

__all__ = ["CLIError"]


class CLIError(Exception):
    """A failure reported as one line on standard error, with exit status 1."""

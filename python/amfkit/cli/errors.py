"""`CLIError`: a command's failure, reported as one line on standard error with exit
status 1 (`amfkit.cli.main.main` prints it); `import_amfkit`, the library or such an
error when its compiled extension does not load."""

from __future__ import annotations

from typing import Any

__all__ = ["CLIError", "import_amfkit"]


class CLIError(Exception):
    """A failure reported as one line on standard error, with exit status 1."""


def import_amfkit() -> Any:
    try:
        import amfkit
    except ImportError as e:
        raise CLIError(f"amfkit does not load ({e}); build it with `make build`") from None
    return amfkit

"""`CLIError`: a command's failure, reported as one line on standard error with its exit
status, 1 unless it says otherwise (`amfkit.cli.main.main` prints it); `import_amfkit`,
the library or such an error when its compiled extension does not load."""

from __future__ import annotations

from typing import Any

__all__ = ["CLIError", "import_amfkit"]


class CLIError(Exception):
    """A failure reported as one line on standard error, with exit status `status`: 1,
    or 2 where 1 means something else (`diff`: 1 says the inputs differ)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def import_amfkit() -> Any:
    try:
        import amfkit
    except ImportError as e:
        raise CLIError(f"amfkit does not load ({e}); build it with `make build`") from None
    return amfkit

"""What `amfkit serve` runs: uvicorn with amfkit's HTTP protocol (`serving.uvicorn`, the
default) or granian through RSGI (`serving.granian`), and the limits both share.

`HttpToolsProtocol` (`amfkit.serving:HttpToolsProtocol`, uvicorn's `--http` setting) is
loaded from `serving.uvicorn` when first asked for, so that this package imports
without uvicorn. docs/limits.md ("The server") says what each server enforces.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_MAX_HEADER_SIZE",
    "DEFAULT_SERVER",
    "HEADER_TIMEOUT_ENV",
    "MAX_HEADER_SIZE_ENV",
    "HttpToolsProtocol",
    "SERVERS",
]

#: The HTTP servers `amfkit serve --server` offers, and the one it runs unless told: the
#: faster for the gateway (docs/benchmarks.md, "gateway").
SERVERS = ("uvicorn", "granian")
DEFAULT_SERVER = "uvicorn"
#: The request head's deadline (seconds) and size limit (bytes), on either server.
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_HEADER_SIZE = 64 * 1024
# `amfkit serve` passes its options to uvicorn's protocol through the environment, which
# every worker process (started afresh by uvicorn) inherits.
HEADER_TIMEOUT_ENV = "AMFKIT_HEADER_TIMEOUT"
MAX_HEADER_SIZE_ENV = "AMFKIT_MAX_HEADER_SIZE"


def __getattr__(name: str) -> Any:
    if name == "HttpToolsProtocol":
        from .uvicorn import HttpToolsProtocol

        return HttpToolsProtocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""mitmproxy flow files (`mitmdump -w flows.mitm`, mitmproxy's "save") as `Exchange`s,
read by mitmproxy's own reader (`mitmproxy.io`: pip install 'amfkit[capture]'). Bodies
are taken as sent (`raw_content`) and freed of their content coding here, with the
capture's size cap, not by mitmproxy (which inflates without one)."""

from __future__ import annotations

import io
from typing import Any

from .._text import error_text
from .exchange import DEFAULT_MAX_BODY_SIZE, CaptureError, Exchange, decoded_body

__all__ = ["read_flows", "looks_like_flows"]


def looks_like_flows(data: bytes) -> bool:
    """Whether `data` starts as a mitmproxy flow file does (a tnetstring dictionary:
    its length in digits, then ':' and '}' at its end... the first byte says enough)."""
    head = data[:12]
    digits = head.split(b":", 1)[0]
    return bool(digits) and digits.isdigit() and b":" in head


def read_flows(data: bytes, *, name: str = "flows", max_body_size: int = DEFAULT_MAX_BODY_SIZE) -> list[Exchange]:
    """The HTTP flows of a mitmproxy flow file, in their order (other flows, TCP or
    DNS, are left out)."""
    try:
        from mitmproxy import exceptions, http
        from mitmproxy import io as mio
    except ImportError as e:
        raise CaptureError(f"reading mitmproxy flows needs mitmproxy (pip install 'amfkit[capture]'): {e}") from None
    out: list[Exchange] = []
    reader = mio.FlowReader(io.BytesIO(data))
    try:
        for i, flow in enumerate(reader.stream()):
            if isinstance(flow, http.HTTPFlow):
                out.append(_exchange(flow, len(out), f"{name}#{i}", max_body_size))
    except exceptions.FlowReadException as e:
        if not out:
            raise CaptureError(f"not a mitmproxy flow file: {error_text(e)}") from None
        raise CaptureError(f"flow #{len(out)} does not read: {error_text(e)}") from None
    except Exception as e:  # a file that is not tnetstring at all makes the reader raise others
        raise CaptureError(f"not a mitmproxy flow file ({type(e).__name__}: {error_text(e)})") from None
    return out


def _exchange(flow: Any, index: int, source: str, limit: int) -> Exchange:
    request = flow.request
    ex = Exchange(
        index,
        request.method,
        request.pretty_url,
        time=request.timestamp_start,
        request_headers=_fields(request.headers),
        source=source,
    )
    if request.raw_content is not None:
        ex.request_body = decoded_body(request.raw_content, request.headers.get("content-encoding"), limit, "request body", ex.notes)
    response = flow.response
    if response is not None:
        ex.status = response.status_code
        ex.response_headers = _fields(response.headers)
        if response.raw_content is not None:
            ex.response_body = decoded_body(
                response.raw_content, response.headers.get("content-encoding"), limit, "response body", ex.notes
            )
    elif flow.error is not None:
        ex.notes.append(f"no response: {error_text(Exception(flow.error.msg))}")
    return ex


def _fields(headers: Any) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers.fields]

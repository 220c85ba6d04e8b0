"""JSON-RPC 2.0 on the gateway's services: `await handle(body, services, context)` answers
a request body (`b""` when only notifications came); docs/rpc.md has the mapping.

    >>> import asyncio
    >>> from amfkit.remoting import Context, Services, jsonrpc
    >>> body = b'{"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 1}'
    >>> asyncio.run(jsonrpc.handle(body, Services({"add": lambda a, b: a + b}), Context()))
    b'{"jsonrpc":"2.0","result":3,"id":1}'
"""

from __future__ import annotations

import array
import base64
import datetime
import json
import logging
import math
import traceback
from typing import TYPE_CHECKING, Any

from .. import _types
from .._text import MAX_SHOWN, clip, error_text, shown
from .._values import iso_utc, js_iso, object_members, recordset_records
from .services import DEFAULT_MAX_CALLS, Context, Fault, Services, with_asset_bytes

if TYPE_CHECKING:
    from .request import Timings

__all__ = [
    "CONTENT_TYPE",
    "CONTENT_TYPES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SERVER_ERROR",
    "handle",
]

#: The response's content type.
CONTENT_TYPE = "application/json"
#: Request content types the gateway hands to `handle` (parameters such as charset aside).
CONTENT_TYPES = (CONTENT_TYPE, "application/json-rpc", "application/jsonrequest")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000

# amfkit fault codes with a JSON-RPC error code of their own; other faults are -32000.
_FAULT_CODES = {
    "Server.ResourceUnavailable": METHOD_NOT_FOUND,
    "Client.Argument": INVALID_PARAMS,
}

_log = logging.getLogger("amfkit.gateway")  # the gateway's logger, whatever the protocol
_MISSING: Any = object()


def budget_error(body: bytes, max_objects: int) -> bytes | None:
    """The parse error (-32700) for a body that may hold more than `max_objects` values,
    counted before parsing, in C (`bytes.count`): each value is an opening bracket or
    follows a comma (those inside strings count too, so this is an upper bound); parsing
    costs about 70 bytes of memory per value. None within the budget."""
    count = body.count(b",") + body.count(b"[") + body.count(b"{") + 1
    if count <= max_objects:
        return None
    text = f"the request holds up to {count} values, more than the {max_objects} allowed"
    return _protocol_error(PARSE_ERROR, "Parse error", text)


async def handle(
    body: bytes,
    services: Services,
    context: Context,
    *,
    debug: bool = False,
    max_calls: int = DEFAULT_MAX_CALLS,
    timings: Timings | None = None,
) -> bytes:
    """Answer one JSON-RPC 2.0 request body (a request or a batch of at most `max_calls`);
    `b""` when no answer is due (notifications only). `timings`, when given, notes the
    decoding (from its `mark`) and each call (Server-Timing; the gateway counts the rest
    as encoding)."""
    context.protocol = "jsonrpc"
    try:
        text = bytes(body).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return _protocol_error(PARSE_ERROR, "Parse error", f"the body is not UTF-8: {e.reason} at byte {e.start}")
    try:
        payload = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        return _protocol_error(PARSE_ERROR, "Parse error", "the JSON is nested too deeply")
    except ValueError as e:
        return _protocol_error(PARSE_ERROR, "Parse error", str(e))
    if timings is not None:
        timings.decoded()
        services = timings.watching(services)
    if isinstance(payload, list):
        if not payload:
            return _protocol_error(INVALID_REQUEST, "Invalid Request", "an empty batch")
        if len(payload) > max_calls:
            return _protocol_error(INVALID_REQUEST, "Invalid Request", f"a batch of more than {max_calls} requests")
        parts = []
        for item in payload:
            part = await _guarded(item, services, context, debug)
            if part is not None:
                parts.append(part)
        return b"[" + b",".join(parts) + b"]" if parts else b""
    part = await _guarded(payload, services, context, debug)
    return part if part is not None else b""


async def _guarded(request: Any, services: Services, context: Context, debug: bool) -> bytes | None:
    """`_answer`, with any exception it lets out (a bug) answered as an internal error
    for this request alone: the other requests of a batch are still answered."""
    try:
        return await _answer(request, services, context, debug)
    except Exception as e:
        _log.error("a JSON-RPC request failed: %s", error_text(e), exc_info=e)
        return _error(None, INTERNAL_ERROR, "Internal error", {"details": "the request could not be answered"})


async def _answer(request: Any, services: Services, context: Context, debug: bool) -> bytes | None:
    """The response to one request object, or None for a notification."""
    if not isinstance(request, dict):
        return _protocol_error(INVALID_REQUEST, "Invalid Request", f"a request must be an object, not {_json_type(request)}")
    rid = request.get("id", _MISSING)
    if not (rid is _MISSING or rid is None or type(rid) in (str, int, float)):
        return _protocol_error(INVALID_REQUEST, "Invalid Request", f'"id" must be a string, a number or null, not {_json_type(rid)}')
    reply_id = None if rid is _MISSING else rid
    if request.get("jsonrpc") != "2.0":
        return _protocol_error(INVALID_REQUEST, "Invalid Request", '"jsonrpc" must be "2.0"', reply_id)
    method = request.get("method")
    if not isinstance(method, str):
        return _protocol_error(INVALID_REQUEST, "Invalid Request", f'"method" must be a string, not {_json_type(method)}', reply_id)
    params = request.get("params", _MISSING)
    args: Any = ()
    kwargs: dict[str, Any] | None = None
    if isinstance(params, list):
        args = params
    elif isinstance(params, dict):
        kwargs = params
    elif params is not _MISSING:
        return _protocol_error(INVALID_REQUEST, "Invalid Request", f'"params" must be an array or an object, not {_json_type(params)}', reply_id)

    try:
        if method.startswith("rpc."):
            raise Fault(f"method names starting with 'rpc.' are reserved: {shown(method)}", code="Server.ResourceUnavailable")
        result = await services.call(method, args, context, kwargs)
    except Exception as e:
        if rid is _MISSING:
            if not isinstance(e, Fault):
                _log.error("notification %s failed", clip(method, MAX_SHOWN), exc_info=e)
            return None
        return _fault_error(e, reply_id, debug)
    if rid is _MISSING:
        return None
    try:
        return _dumps({"jsonrpc": "2.0", "result": result, "id": reply_id})
    except Exception as e:  # TypeError, ValueError, RecursionError, a failing AMF round trip
        error = e
    try:
        loaded = await with_asset_bytes(result)  # Assets in a list or dict: their bytes
    except Exception as e:
        return _fault_error(e, reply_id, debug)
    if loaded is not None:
        try:
            return _dumps({"jsonrpc": "2.0", "result": loaded, "id": reply_id})
        except Exception as e:
            error = e
    data: dict[str, Any] = {"details": clip(f"the result of {clip(method, MAX_SHOWN)} cannot be written as JSON: {error_text(error)}")}
    if debug:
        data["traceback"] = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return _error(reply_id, INTERNAL_ERROR, "Internal error", data)


# --- errors --------------------------------------------------------------------------


def _protocol_error(code: int, message: str, details: str, rid: Any = None) -> bytes:
    details = clip(details)
    return _error(rid, code, f"{message}: {details}", {"details": details})


def _fault_error(exc: Exception, rid: Any, debug: bool) -> bytes:
    fault = Fault.of(exc, debug=debug)
    code = _FAULT_CODES.get(fault.code) if isinstance(fault.code, str) else None
    if code is None:
        own = fault.code
        code = own if type(own) is int and not -32768 <= own <= -32000 else SERVER_ERROR
    data: dict[str, Any] = {"code": fault.code, "details": fault.details}
    if debug:
        data["traceback"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return _error(rid, code, str(fault.message), data)


def _error(rid: Any, code: int, message: str, data: Any) -> bytes:
    response = {"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": data}, "id": rid}
    try:
        return _dumps(response)
    except (TypeError, ValueError, RecursionError, OverflowError):
        # Details that JSON cannot carry are sent as their repr.
        if isinstance(data, dict) and "details" in data:
            data = dict(data, details=_safe_repr(data["details"]))
            response["error"]["data"] = data
        return _dumps(response)


def _safe_repr(value: Any) -> str:
    try:
        return clip(repr(value))
    except Exception:
        return shown(value)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --- values --------------------------------------------------------------------------

_STRICT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=lambda o: _default(o))
_ASCII = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"), default=lambda o: _default(o))


def _dumps(obj: Any) -> bytes:
    """`obj` as compact UTF-8 JSON; non-finite floats become null."""
    try:
        text = _STRICT.encode(obj)
    except ValueError as e:
        if "Out of range float" not in str(e):
            raise
        obj = _finite(obj)
        text = _STRICT.encode(obj)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (JSON allows "\ud800"): escape everything, which always fits.
        return _ASCII.encode(obj).encode("ascii")


def _finite(value: Any) -> Any:
    """A copy of a JSON-ready tree with NaN and infinities replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _default(o: Any) -> Any:
    """What the JSON encoder writes for a value it does not know (see the module doc)."""
    if isinstance(o, datetime.datetime):
        return iso_utc(o, millis=False)
    if isinstance(o, (datetime.date, datetime.time)):
        return o.isoformat()
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(o).decode("ascii")
    if o is _types.Undefined:
        return None
    if isinstance(o, array.array):
        items = o.tolist()
        return _finite(items) if o.typecode in "fd" else items
    if isinstance(o, (set, frozenset)):
        return list(o)
    if isinstance(o, _types.Table):
        columns = o.columns
        return [_finite(dict(zip(columns, row))) for row in o.rows]
    if isinstance(o, _types.Date):
        return js_iso(o.millis)
    records = recordset_records(o)
    if records is not None:
        return _finite(records)
    members = object_members(o)
    if members is not None:
        return _finite(members)
    raise TypeError(f"{type(o).__qualname__} is not JSON serializable (register it with amfkit.register_class, or convert it)")

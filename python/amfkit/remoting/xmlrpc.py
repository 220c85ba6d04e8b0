"""XML-RPC on the gateway's services (parsed by defusedxml only): `await handle(body,
services, context)` answers a `<methodCall>`; docs/rpc.md has the mapping and faults.

    >>> import asyncio
    >>> from amfkit.remoting import Context, Services, xmlrpc
    >>> body = b"<methodCall><methodName>twice</methodName><params><param><value><int>21</int></value></param></params></methodCall>"
    >>> print(asyncio.run(xmlrpc.handle(body, Services({"twice": lambda n: 2 * n}), Context())).decode())
    <?xml version="1.0" encoding="UTF-8"?>
    <methodResponse><params><param><value><int>42</int></value></param></params></methodResponse>
"""

from __future__ import annotations

import array
import base64
import binascii
import datetime
import logging
import re
import traceback
from typing import TYPE_CHECKING, Any

from .. import _types
from .._text import MAX_SHOWN, clip, error_text, shown
from .._values import naive_utc, object_members, recordset_records, split_millis, year_text
from .services import DEFAULT_MAX_CALLS, Context, Fault, Services, with_asset_bytes

if TYPE_CHECKING:
    from .request import Timings

try:  # an optional dependency (amfkit[xmlrpc]); never replaced by an unprotected parser
    from defusedxml import ElementTree as _defused  # type: ignore[import-untyped]
    from defusedxml.common import DefusedXmlException as _Forbidden  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - exercised by monkeypatching _defused
    _defused = None

    class _Forbidden(Exception):  # type: ignore[no-redef]
        pass


__all__ = [
    "APPLICATION_ERROR",
    "CONTENT_TYPE",
    "CONTENT_TYPES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SYSTEM_ERROR",
    "UNSUPPORTED_ENCODING",
    "handle",
]

#: The response's content type.
CONTENT_TYPE = "text/xml"
#: Request content types the gateway hands to `handle` (parameters such as charset aside).
CONTENT_TYPES = (CONTENT_TYPE, "application/xml")

PARSE_ERROR = -32700
UNSUPPORTED_ENCODING = -32701
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
APPLICATION_ERROR = -32500
SYSTEM_ERROR = -32400

#: How deeply request values (arrays, structs) may nest, and response values too.
MAX_DEPTH = 128

_FAULT_CODES = {
    "Server.ResourceUnavailable": METHOD_NOT_FOUND,
    "Client.Argument": INVALID_PARAMS,
}


_log = logging.getLogger("amfkit.gateway")  # the gateway's logger, whatever the protocol


class _Failure(Exception):
    """A request that is answered with a fault before any service is called."""

    def __init__(self, code: int, message: str) -> None:
        message = clip(message)
        super().__init__(message)
        self.code = code
        self.message = message


def budget_error(body: bytes, max_objects: int) -> bytes | None:
    """The parse-error fault (-32700) for a body that may hold more than `max_objects`
    elements, counted before parsing, in C (`bytes.count`): a "<" not starting an end
    tag; parsing costs about 100 bytes of memory per element. None within the budget."""
    count = body.count(b"<") - body.count(b"</")
    if count <= max_objects:
        return None
    return _fault_response(PARSE_ERROR, f"parse error: the request holds up to {count} elements, more than the {max_objects} allowed")


async def handle(
    body: bytes,
    services: Services,
    context: Context,
    *,
    debug: bool = False,
    max_calls: int = DEFAULT_MAX_CALLS,
    timings: Timings | None = None,
) -> bytes:
    """Answer one XML-RPC request body with a `<methodResponse>`; a system.multicall of
    more than `max_calls` calls is refused. `timings`, when given, notes the decoding
    (from its `mark`) and each call, those of a system.multicall included
    (Server-Timing; the gateway counts the rest as encoding)."""
    context.protocol = "xmlrpc"
    try:
        return await _handle(body, services, context, debug, max_calls, timings)
    except Exception as e:  # a bug: answered as an internal error, not an HTTP 500
        _log.error("an XML-RPC request failed: %s", error_text(e), exc_info=e)
        return _fault_response(INTERNAL_ERROR, "internal error: the request could not be answered")


async def _handle(body: bytes, services: Services, context: Context, debug: bool, max_calls: int, timings: Timings | None) -> bytes:
    try:
        method, params = _parse_call(bytes(body))
    except _Failure as f:
        return _fault_response(f.code, f.message)
    if timings is not None:
        timings.decoded()
        services = timings.watching(services)
    if method == "system.multicall" and params and isinstance(params[0], list) and len(params[0]) > max_calls:
        return _fault_response(INVALID_REQUEST, f"a system.multicall of more than {max_calls} calls")
    try:
        result = await _call(method, params, services, context, debug)
    except Exception as e:
        return _fault_response(*_fault_of(e, debug))
    out: list[str] = [_HEAD, "<params><param>"]
    if type(result) is _Multi:  # system.multicall: its items are written already
        out += ["<value><array><data>", *result, "</data></array></value>"]
    else:
        try:
            out += await _written(result, debug)
        except _Failure as f:
            return _fault_response(f.code, f.message)
        except Exception as e:  # _Unwritable, RecursionError, an AMF round trip that fails
            message = clip(f"the result of {clip(method, MAX_SHOWN)} cannot be written as XML-RPC: {error_text(e)}")
            if debug:
                message += "\n\n" + "".join(traceback.format_exception(type(e), e, e.__traceback__))
            return _fault_response(INTERNAL_ERROR, message)
    out.append("</param></params></methodResponse>")
    return "".join(out).encode("utf-8")


async def _written(result: Any, debug: bool, depth: int = 0) -> list[str]:
    """`result` as XML-RPC text; when it cannot be written and holds Assets (in a list
    or dict), with their bytes. An asset that cannot be read raises `_Failure` (its
    fault); what cannot be written the error `_write` raised."""
    out: list[str] = []
    try:
        _write(result, out, depth, set())
        return out
    except Exception as e:
        error = e
    try:
        loaded = await with_asset_bytes(result)
    except Exception as e:
        raise _Failure(*_fault_of(e, debug)) from None
    if loaded is None:
        raise error
    out = []
    _write(loaded, out, depth, set())
    return out


async def _call(method: str, params: list[Any], services: Services, context: Context, debug: bool) -> Any:
    builtin = _SYSTEM.get(method)
    if builtin is not None:
        return await builtin(params, services, context, debug)
    return await services.call(method, params, context)


def _fault_of(exc: Exception, debug: bool) -> tuple[int, str]:
    """faultCode and faultString for an exception raised by a call."""
    if isinstance(exc, _Failure):
        return exc.code, exc.message
    fault = Fault.of(exc, debug=debug)
    own = fault.code
    if type(own) is int and -0x8000_0000 <= own <= 0x7FFF_FFFF:
        code = own
    else:
        code = _FAULT_CODES.get(own, APPLICATION_ERROR) if isinstance(own, str) else APPLICATION_ERROR
    message = f"{own}: {fault.message}"
    if debug:
        message += "\n\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return code, message


# --- requests ------------------------------------------------------------------------


def _parse_call(body: bytes) -> tuple[str, list[Any]]:
    if _defused is None:
        raise _Failure(SYSTEM_ERROR, "XML-RPC needs defusedxml on the server (pip install amfkit[xmlrpc])")
    try:
        root = _defused.fromstring(body, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except _Forbidden as e:
        raise _Failure(INVALID_REQUEST, f"DTDs, entities and external references are not accepted ({type(e).__name__})") from None
    except LookupError as e:  # an encoding declaration that Python does not know
        raise _Failure(UNSUPPORTED_ENCODING, clip(f"parse error: {error_text(e)}")) from None
    except Exception as e:  # ParseError (expat), and anything else the parser raises
        raise _Failure(PARSE_ERROR, clip(f"parse error: {error_text(e)}")) from None
    if _local(root.tag) != "methodCall":
        raise _Failure(INVALID_REQUEST, f"expected <methodCall>, found <{_tag(root.tag)}>")
    _no_text(root.text, "methodCall")
    name_el = None
    params_el = None
    for child in root:
        tag = _local(child.tag)
        if tag == "methodName" and name_el is None:
            name_el = child
        elif tag == "params" and params_el is None:
            params_el = child
        else:
            raise _Failure(INVALID_REQUEST, f"unexpected <{_tag(tag)}> in <methodCall>")
        _no_text(child.tail, "methodCall")
    if name_el is None:
        raise _Failure(INVALID_REQUEST, "<methodCall> has no <methodName>")
    if len(name_el):
        raise _Failure(INVALID_REQUEST, "<methodName> holds elements")
    method = (name_el.text or "").strip()
    if not method:
        raise _Failure(INVALID_REQUEST, "<methodName> is empty")
    params: list[Any] = []
    if params_el is not None:
        _no_text(params_el.text, "params")
        for param in params_el:
            if _local(param.tag) != "param":
                raise _Failure(INVALID_REQUEST, f"unexpected <{_tag(param.tag)}> in <params>")
            _no_text(param.tail, "params")
            params.append(_value(_only_child(param, "value"), 1))
    return method, params


def _local(tag: Any) -> str:
    """An element's name without its namespace ("{uri}nil" -> "nil")."""
    return tag.rpartition("}")[2] if isinstance(tag, str) else str(tag)


def _tag(tag: Any) -> str:
    """An input element's name for a message, bounded."""
    return clip(_local(tag), MAX_SHOWN)


def _no_text(text: str | None, where: str) -> None:
    if text and not text.isspace():
        raise _Failure(INVALID_REQUEST, f"unexpected text in <{where}>")


def _only_child(el: Any, tag: str) -> Any:
    """The single child element `tag` of `el` (whitespace around it allowed)."""
    where = _local(el.tag)
    _no_text(el.text, where)
    if len(el) != 1 or _local(el[0].tag) != tag:
        raise _Failure(INVALID_REQUEST, f"<{_tag(where)}> must hold one <{tag}>")
    _no_text(el[0].tail, where)
    return el[0]


def _value(el: Any, depth: int) -> Any:
    """The Python value of a <value> element."""
    if depth > MAX_DEPTH:
        raise _Failure(INVALID_REQUEST, f"values nest deeper than {MAX_DEPTH} levels")
    if not len(el):
        return el.text or ""
    if len(el) != 1:
        raise _Failure(INVALID_REQUEST, "a <value> holds one typed element")
    typed = el[0]
    _no_text(el.text, "value")
    _no_text(typed.tail, "value")
    tag = _local(typed.tag)
    read = _SCALARS.get(tag)
    if read is not None:
        if len(typed):
            raise _Failure(INVALID_REQUEST, f"<{tag}> holds elements")
        text = typed.text or ""
        try:
            return read(text)
        except (ValueError, binascii.Error, OverflowError):
            raise _Failure(INVALID_REQUEST, f"invalid <{tag}> value {shown(text)}") from None
    if tag == "struct":
        _no_text(typed.text, "struct")
        out: dict[str, Any] = {}
        for member in typed:
            if _local(member.tag) != "member":
                raise _Failure(INVALID_REQUEST, f"unexpected <{_tag(member.tag)}> in <struct>")
            _no_text(member.tail, "struct")
            _no_text(member.text, "member")
            name = value = None
            for part in member:
                ptag = _local(part.tag)
                if ptag == "name" and name is None:
                    if len(part):
                        raise _Failure(INVALID_REQUEST, "<name> holds elements")
                    name = part.text or ""
                elif ptag == "value" and value is None:
                    value = part
                else:
                    raise _Failure(INVALID_REQUEST, f"unexpected <{_tag(ptag)}> in <member>")
                _no_text(part.tail, "member")
            if name is None or value is None:
                raise _Failure(INVALID_REQUEST, "a <member> needs a <name> and a <value>")
            out[name] = _value(value, depth + 1)
        return out
    if tag == "array":
        data = _only_child(typed, "data")
        _no_text(data.text, "data")
        items = []
        for item in data:
            if _local(item.tag) != "value":
                raise _Failure(INVALID_REQUEST, f"unexpected <{_tag(item.tag)}> in <data>")
            _no_text(item.tail, "data")
            items.append(_value(item, depth + 1))
        return items
    if tag == "nil":
        if len(typed) or (typed.text and not typed.text.isspace()):
            raise _Failure(INVALID_REQUEST, "<nil/> must be empty")
        return None
    raise _Failure(INVALID_REQUEST, f"unknown value type <{_tag(tag)}>")


_INT = re.compile(r"[+-]?[0-9]+\Z")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_DATETIME = re.compile(
    r"(?P<y>[0-9]{4})-?(?P<mo>[0-9]{2})-?(?P<d>[0-9]{2})"
    r"T(?P<h>[0-9]{2}):?(?P<mi>[0-9]{2}):?(?P<s>[0-9]{2})(?:[.,](?P<f>[0-9]+))?"
    r"(?P<tz>Z|[+-][0-9]{2}(?::?[0-9]{2})?)?\Z"
)
_SPACE = re.compile(r"\s+")


def _read_int(text: str) -> int:
    text = text.strip()
    if not _INT.match(text):
        raise ValueError(text)
    return int(text)


def _read_bool(text: str) -> bool:
    text = text.strip()
    if text in ("1", "true"):
        return True
    if text in ("0", "false"):
        return False
    raise ValueError(text)


def _read_double(text: str) -> float:
    text = text.strip()
    if not _DOUBLE.match(text):
        raise ValueError(text)
    return float(text)


def _read_datetime(text: str) -> datetime.datetime:
    m = _DATETIME.match(text.strip())
    if m is None:
        raise ValueError(text)
    micro = int((m["f"] or "0")[:6].ljust(6, "0"))
    value = datetime.datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), micro)
    tz = m["tz"]
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        offset = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        value -= sign * offset
    return value


def _read_base64(text: str) -> bytes:
    return base64.b64decode(_SPACE.sub("", text), validate=True)


_SCALARS = {
    "int": _read_int,
    "i4": _read_int,
    "i8": _read_int,
    "boolean": _read_bool,
    "string": lambda text: text,
    "double": _read_double,
    "dateTime.iso8601": _read_datetime,
    "base64": _read_base64,
}


# --- responses -----------------------------------------------------------------------

_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<methodResponse>'


class _Unwritable(Exception):
    """A value that XML-RPC cannot carry."""


# Characters XML 1.0 cannot carry, and lone surrogates (which UTF-8 cannot carry).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})


def _text(value: str) -> str:
    bad = _NOT_XML.search(value)
    if bad is not None:
        raise _Unwritable(f"a string holds {bad.group()!r} at index {bad.start()}, which XML 1.0 cannot carry")
    return value.translate(_ESCAPES)


def _write(v: Any, out: list[str], depth: int, active: set[int]) -> None:
    """Append `<value>...</value>` for `v` to `out`."""
    t = type(v)
    if t is str:
        out.append("<value><string>" + _text(v) + "</string></value>")
    elif t is bool:
        out.append("<value><boolean>1</boolean></value>" if v else "<value><boolean>0</boolean></value>")
    elif t is int:
        out.append(_int(v))
    elif t is float:
        out.append(f"<value><double>{v!r}</double></value>")
    elif v is None or v is _types.Undefined:
        out.append("<value><nil/></value>")
    elif isinstance(v, (dict, list, tuple, set, frozenset, array.array, _types.Table)):
        if depth >= MAX_DEPTH:
            raise _Unwritable(f"values nest deeper than {MAX_DEPTH} levels")
        key = id(v)
        if key in active:
            raise _Unwritable("a value contains itself")
        active.add(key)
        try:
            if isinstance(v, dict):
                _struct(v.items(), out, depth, active)
            elif isinstance(v, _types.Table):
                columns = v.columns
                out.append("<value><array><data>")
                for row in v.rows:
                    _struct(zip(columns, row), out, depth + 1, active)
                out.append("</data></array></value>")
            else:
                out.append("<value><array><data>")
                for item in v:
                    _write(item, out, depth + 1, active)
                out.append("</data></array></value>")
        finally:
            active.discard(key)
    else:
        _write_other(v, out, depth, active)


def _write_other(v: Any, out: list[str], depth: int, active: set[int]) -> None:
    if isinstance(v, bool):
        out.append("<value><boolean>1</boolean></value>" if v else "<value><boolean>0</boolean></value>")
    elif isinstance(v, int):
        out.append(_int(int(v)))
    elif isinstance(v, float):
        out.append(f"<value><double>{float(v)!r}</double></value>")
    elif isinstance(v, str):
        out.append("<value><string>" + _text(str(v)) + "</string></value>")
    elif isinstance(v, (bytes, bytearray, memoryview)):
        out.append("<value><base64>" + base64.b64encode(v).decode("ascii") + "</base64></value>")
    elif isinstance(v, datetime.datetime):
        v = naive_utc(v)
        out.append(_datetime(v.year, v.month, v.day, v.hour, v.minute, v.second))
    elif isinstance(v, datetime.date):
        out.append(_datetime(v.year, v.month, v.day, 0, 0, 0))
    elif isinstance(v, _types.Date):
        parts = split_millis(v.millis)
        out.append("<value><nil/></value>" if parts is None else _datetime(*parts[:6]))
    else:
        records = recordset_records(v)
        if records is not None:
            _write(records, out, depth, active)
            return
        members = object_members(v)
        if members is None:
            raise _Unwritable(f"{type(v).__qualname__} is not an XML-RPC value (register it with amfkit.register_class, or convert it)")
        if depth >= MAX_DEPTH:
            raise _Unwritable(f"values nest deeper than {MAX_DEPTH} levels")
        _struct(members.items(), out, depth, active)


def _int(v: int) -> str:
    if -0x8000_0000 <= v <= 0x7FFF_FFFF:
        return f"<value><int>{v}</int></value>"
    if -0x8000_0000_0000_0000 <= v <= 0x7FFF_FFFF_FFFF_FFFF:
        return f"<value><i8>{v}</i8></value>"
    raise _Unwritable(f"the int {v} does not fit XML-RPC's 64 bits")


def _datetime(year: int, month: int, day: int, hour: int, minute: int, second: int) -> str:
    return f"<value><dateTime.iso8601>{year_text(year)}{month:02d}{day:02d}T{hour:02d}:{minute:02d}:{second:02d}</dateTime.iso8601></value>"


def _struct(items: Any, out: list[str], depth: int, active: set[int]) -> None:
    out.append("<value><struct>")
    for key, value in items:
        if type(key) is not str:
            if isinstance(key, str):
                key = str(key)
            elif isinstance(key, int) and not isinstance(key, bool):
                key = str(int(key))
            else:
                raise _Unwritable(f"struct member names must be strings, not {type(key).__qualname__}")
        out.append("<member><name>" + _text(key) + "</name>")
        _write(value, out, depth + 1, active)
        out.append("</member>")
    out.append("</struct></value>")


def _fault_struct(code: int, message: str) -> str:
    text = _NOT_XML.sub("\ufffd", message).translate(_ESCAPES)
    return (
        "<value><struct>"
        f"<member><name>faultCode</name><value><int>{code}</int></value></member>"
        f"<member><name>faultString</name><value><string>{text}</string></value></member>"
        "</struct></value>"
    )


def _fault_response(code: int, message: str) -> bytes:
    return (_HEAD + "<fault>" + _fault_struct(code, message) + "</fault></methodResponse>").encode("utf-8")


# --- system.* ------------------------------------------------------------------------

_SYSTEM_DOCS = {
    "system.listMethods": "The names of the methods this server offers.",
    "system.methodHelp": "The documentation of a method, given its name.",
    "system.methodSignature": (
        "The signatures of a method, given its name: arrays of XML-RPC type names, the "
        "result's first; 'undef' when they cannot be listed."
    ),
    "system.multicall": (
        "Several calls in one request: an array of structs {methodName, params}; the answer "
        "is an array holding, per call, an array of its one result or a fault struct."
    ),
}
_SYSTEM_SIGNATURES: dict[str, Any] = {
    "system.listMethods": [["array"]],
    "system.methodHelp": [["string", "string"]],
    "system.methodSignature": [["array", "string"]],
    "system.multicall": [["array", "array"]],
}

# Python annotation names -> XML-RPC type names (introspection); others are "any".
_TYPE_NAMES = {
    "int": "int",
    "float": "double",
    "str": "string",
    "bool": "boolean",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "frozenset": "array",
    "List": "array",
    "Tuple": "array",
    "dict": "struct",
    "Dict": "struct",
    "Mapping": "struct",
    "bytes": "base64",
    "bytearray": "base64",
    "datetime": "dateTime.iso8601",
    "date": "dateTime.iso8601",
    "None": "nil",
    "NoneType": "nil",
}


def _type_name(annotation: str | None) -> str:
    if not annotation:
        return "any"
    name = annotation.split("[", 1)[0].strip().rpartition(".")[2]
    return _TYPE_NAMES.get(name, "any")


def _catalog(services: Services) -> dict[str, dict[str, Any]]:
    """Callable name -> the method's entry of `services.describe()`."""
    out: dict[str, dict[str, Any]] = {}
    for service in services.describe()["services"]:
        name = service["name"]
        for method in service["methods"]:
            target = f"{name}.{method['name']}"
            if method["name"] == name:
                try:  # a function registered as a service is called by its own name
                    services.lookup(name)
                    target = name
                except Fault:
                    pass
            out[target] = method
    return out


def _one_name(params: list[Any], what: str) -> str:
    if len(params) != 1 or not isinstance(params[0], str):
        raise Fault(f"{what} takes one string, a method name", code="Client.Argument")
    return params[0]


async def _list_methods(params: list[Any], services: Services, context: Context, debug: bool) -> list[str]:
    if params:
        raise Fault("system.listMethods takes no arguments", code="Client.Argument")
    return sorted(_catalog(services)) + sorted(_SYSTEM_DOCS)


def _described(services: Services, name: str) -> dict[str, Any]:
    """The discovery entry of method `name`; a fault when there is none."""
    method = _catalog(services).get(name)
    if method is None:
        raise Fault(f"no method {shown(name)}", code="Server.ResourceUnavailable")
    return method


async def _method_help(params: list[Any], services: Services, context: Context, debug: bool) -> str:
    name = _one_name(params, "system.methodHelp")
    if name in _SYSTEM_DOCS:
        return _SYSTEM_DOCS[name]
    return str(_described(services, name).get("doc") or "")


async def _method_signature(params: list[Any], services: Services, context: Context, debug: bool) -> Any:
    name = _one_name(params, "system.methodSignature")
    if name in _SYSTEM_SIGNATURES:
        return _SYSTEM_SIGNATURES[name]
    method = _described(services, name)
    result = _type_name(method.get("returns"))
    required: list[str] = []
    optional: list[str] = []
    for p in method["params"]:
        kind = p["kind"]
        if kind in ("var_positional", "var_keyword"):
            if kind == "var_positional":
                return "undef"
            continue
        if kind == "keyword_only":
            if "default" in p:
                continue
            return "undef"  # a required keyword-only parameter: not callable by position
        (optional if "default" in p or optional else required).append(_type_name(p.get("type")))
    return [[result, *required, *optional[:n]] for n in range(len(optional) + 1)]


async def _multicall(params: list[Any], services: Services, context: Context, debug: bool) -> Any:
    if len(params) != 1 or not isinstance(params[0], list):
        raise Fault("system.multicall takes one array of {methodName, params} structs", code="Client.Argument")
    return _Multi([await _one_of_many(call, services, context, debug) for call in params[0]])


class _Multi(list):
    """system.multicall's answer: each item is already-written XML."""


async def _one_of_many(call: Any, services: Services, context: Context, debug: bool) -> str:
    if not isinstance(call, dict) or not isinstance(call.get("methodName"), str) or not isinstance(call.get("params", []), list):
        return _fault_struct(INVALID_REQUEST, "each call is a struct {methodName: string, params: array}")
    method = call["methodName"]
    if method == "system.multicall":
        return _fault_struct(INVALID_REQUEST, "system.multicall cannot be nested")
    try:
        result = await _call(method, call.get("params", []), services, context, debug)
    except Exception as e:
        return _fault_struct(*_fault_of(e, debug))
    out = ["<value><array><data>"]
    try:
        out += await _written(result, debug, 1)
    except _Failure as f:
        return _fault_struct(f.code, f.message)
    except Exception as e:  # _Unwritable, RecursionError, an AMF round trip that fails
        return _fault_struct(INTERNAL_ERROR, clip(f"the result of {clip(method, MAX_SHOWN)} cannot be written as XML-RPC: {error_text(e)}"))
    out.append("</data></array></value>")
    return "".join(out)


_SYSTEM = {
    "system.listMethods": _list_methods,
    "system.methodHelp": _method_help,
    "system.methodSignature": _method_signature,
    "system.multicall": _multicall,
}

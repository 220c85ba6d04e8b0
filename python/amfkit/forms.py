"""AMF bytes in the forms people hold them: raw, hex, base64, a decimal byte list,
zlib/gzip/deflate-wrapped, or an HTTP message around them. `unwrap` finds the AMF
inside; `describe` names what bytes that are not AMF look like.

    >>> from amfkit import forms
    >>> forms.detect(b"00 03 00 00 00 00")
    'hex'
    >>> forms.unwrap(b"[0, 3, 0, 0, 0, 0]")
    b'\\x00\\x03\\x00\\x00\\x00\\x00'
    >>> forms.peel(b"AAMAAAAA").layers
    ['base64']
    >>> forms.describe(b"<!DOCTYPE html><html><body>Error 500</body></html>")
    'not AMF: this looks like an HTML page'

- `detect(data)`: the outer form of `data` (`"raw"`, `"hex"`, `"base64"`, `"list"`,
  `"zlib"`, `"gzip"`, `"deflate"`, `"http"`), or None when it looks like none of them.
  The order is in docs/cli.md ("Input forms"), what each costs in docs/benchmarks.md.
- `unwrap(data, form="auto", *, max_size=...)`: the AMF bytes inside: each layer taken
  off in turn (base64 of zlib, an HTTP response with a gzip body...) until raw bytes
  remain. `form` names the outer layer instead of detecting it (`"raw"`: the bytes as
  they are). No layer makes more than `max_size` bytes, so a small compressed bomb
  never becomes gigabytes. Raises `FormError` (a `ValueError`).
- `peel(...)`: the same, as an `Unwrapped`: the bytes and the layers taken off.
- `describe(data)`: one line naming what bytes that are not AMF look like ("not AMF:
  this looks like an HTML page").

The capture readers and `amfkit decode` find bytes with these; the bytes then go
through the decoders, with their limits, like any others.
"""

from __future__ import annotations

import array
import base64
import binascii
import http.client
import io
import json
import re
from dataclasses import dataclass, field
from typing import Union

from . import compression

__all__ = [
    "DEFAULT_MAX_SIZE",
    "FORMS",
    "MAX_LAYERS",
    "FormError",
    "Unwrapped",
    "describe",
    "detect",
    "peel",
    "unwrap",
]

#: The forms `detect` names and `unwrap` takes, in the order `detect` tries them.
FORMS = ("gzip", "http", "raw", "zlib", "list", "hex", "base64", "deflate")
#: The most bytes one layer may make (a decompressed or decoded body), by default.
DEFAULT_MAX_SIZE = 64 * 1024 * 1024
#: The most layers `unwrap` takes off one input.
MAX_LAYERS = 8
_TEXT_FORMS = ("hex", "base64", "list")

_Buffer = Union[bytes, bytearray, memoryview, str]


def _bytes(data: _Buffer) -> bytes:
    """Bytes of an input given as bytes or as text (hex, base64 or a list pasted into a
    str)."""
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


class FormError(ValueError):
    """Bytes that cannot be taken out of their form: `form` names the layer (`"zlib"`,
    `"hex"`, ...) and the message says what is wrong with it."""

    def __init__(self, form: str, message: str) -> None:
        super().__init__(message)
        self.form = form


@dataclass
class Unwrapped:
    """What `peel` found: the bytes inside, and the layers taken off, outermost first."""

    data: bytes
    layers: list[str] = field(default_factory=list)
    #: The Content-Type of an HTTP message's body, when one was unwrapped.
    content_type: str | None = None

    def describe(self) -> str:
        """`base64, zlib` (the layers), or `raw`."""
        return ", ".join(self.layers) if self.layers else "raw"


# -- detection -----------------------------------------------------------------------

_HTTP_START = re.compile(rb"\s*(?:[A-Z][A-Z-]{1,15} \S+ HTTP/\d(?:\.\d)?|HTTP/\d(?:\.\d)? \d{3}\b[^\r\n]*)\r?\n")
_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_B64_URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")
_DUMP_LINE = re.compile(r"\s*([0-9a-fA-F]{4,8}):?(?:[ \t]+(.*))?")
_SOL_MAGIC = b"\x00\xbf"
_MAGICS = (
    (b"FWS", "a Flash movie (SWF), not AMF"),
    (b"CWS", "a compressed Flash movie (SWF), not AMF"),
    (b"ZWS", "an LZMA-compressed Flash movie (SWF), not AMF"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"FLV\x01", "an FLV video (its metadata is AMF: extract the script data tag first)"),
)


def detect(data: _Buffer, *, text_forms: bool = True) -> str | None:
    """The outer form of `data`, or None when it looks like none (docs/cli.md, "Input
    forms", has the order). Cheap: it looks at the first bytes only (the first 4 KiB of
    a text form; `unwrap` reads the whole and refuses what is not that form after all).
    `text_forms=False` leaves hex, base64 and byte lists out (what a text form holds is
    not taken for text again: hex of hex is too easy to find by chance)."""
    data = _bytes(data)
    if not data:
        return None
    if data[:2] == b"\x1f\x8b":
        return "gzip"
    if _HTTP_START.match(data, 0, 256):
        return "http"
    if data[0] <= 0x11:
        # AMF markers are 0x00 to 0x11; a packet starts with 00 00, 00 01 or 00 03. A
        # .sol file starts 00 bf: not a body `decode` reads (`describe` says so).
        return None if _is_sol(data) else "raw"
    if compression.zlib_level_hint(data) is not None and _inflates(data, "zlib"):
        return "zlib"
    head = data[:_HEAD]
    if _text_head(head):
        if not text_forms:
            return None
        return _text_form(head.decode("utf-8", "ignore"), complete=len(data) <= _HEAD)
    if _inflates(data, "deflate"):
        return "deflate"
    return None


#: How much of a text form `detect` looks at.
_HEAD = 4096
# The bytes of printable ASCII and the white space of text, for the text test.
_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\r\f\v"


def _text_head(head: bytes) -> bool:
    """Whether the first bytes of an input are text (ASCII, or UTF-8 with letters beyond
    ASCII): no control character but white space."""
    rest = head.translate(None, _TEXT_BYTES)
    if not rest:
        return True
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 3:  # not only a character cut at the end of the head
            return False
        text = head[: e.start].decode("utf-8")
    return not any(c < " " and c not in "\t\n\r\f\v" for c in text)


def _text_form(head: str, *, complete: bool) -> str | None:
    """The text form whose beginning `head` is (all of it when `complete`)."""
    t = head.strip() if complete else head.lstrip()
    if not complete:
        # Up to the last separator: the head may end inside a number or a group.
        cut = max(t.rfind(c) for c in " ,;\n\t")
        t = t[:cut].rstrip() if cut > 0 else t
    if not t:
        return None
    if ("," in t or ";" in t or t.startswith("[")) and _LIST_HEAD.fullmatch(t):
        return "list"
    m = _DUMP_LINE.fullmatch(t.splitlines()[0].rstrip())
    if m is not None and int(m.group(1), 16) == 0 and m.group(2):
        return "hex"  # a dump: its first line's offset is 0
    cleaned = _HEX_SEPARATORS.sub(" ", t)
    if _HEX_ONLY.fullmatch(cleaned) and sum(c in _HEX_DIGITS for c in cleaned[:64]) >= 2:
        return "hex"
    if _base64_head(t, complete):
        return "base64"
    return None


_LIST_HEAD = re.compile(r"\[?\s*(?:-?\d{1,3}\s*[,;]\s*)*-?\d{0,3}\s*[,;]?\s*\]?")
_HEX_SEPARATORS = re.compile(r"0[xX](?=[0-9a-fA-F])|\\x|[:,\-]")
_HEX_ONLY = re.compile(r"[0-9a-fA-F\s]+")
_HEX_PREFIXES = re.compile(r"0[xX](?=[0-9a-fA-F])|\\x")
_SEPARATORS_TO_SPACE = str.maketrans(":,-", "   ")
_URL_SAFE = str.maketrans("-_", "+/")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _base64_head(t: str, complete: bool) -> bool:
    lines = t.splitlines()
    if any(line != line.strip() or " " in line or "\t" in line for line in lines if line):
        return False
    lines = [line for line in lines if line]
    if not lines:
        return False
    whole = lines if complete else lines[:-1] or lines
    if len(whole) > 1 and len({len(line) for line in whole[:-1]}) != 1:
        return False
    joined = "".join(lines)
    if complete:
        return _base64_bytes(t) is not None
    return bool(_B64.fullmatch(joined) or _B64_URL.fullmatch(joined)) and len(joined) >= 4


def _is_sol(data: bytes) -> bool:
    return data[:2] == _SOL_MAGIC and data[6:10] == b"TCSO"


def _inflates(data: bytes, fmt: str) -> bool:
    """Whether the first 64 KiB of `data` start a valid `fmt` stream that makes some
    output (what inflating it all would show costs more: that is left to `unwrap`)."""
    import zlib

    d = zlib.decompressobj(15 if fmt == "zlib" else -15)
    try:
        out = d.decompress(data[: 64 * 1024], 4096)
    except zlib.error:
        return False
    return bool(out) and (fmt == "zlib" or out[0] <= 0x11 or d.eof)


def _text(data: bytes) -> str | None:
    """`data` as text when it is printable UTF-8 (tabs and line breaks allowed)."""
    if not _text_head(data[:_HEAD]):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text[1:] if text.startswith("\ufeff") else text


def _is_list(t: str) -> bool:
    """A decimal byte list: `[0, 3, 0, 0]` (brackets or commas needed, else it is hex);
    signed bytes (-128 to -1, as Java prints them) are allowed."""
    return _list_bytes(t) is not None


def _list_bytes(t: str) -> bytes | None:
    """The bytes of a decimal byte list, or None when `t` is not one. (The standard
    library's JSON parser reads the numbers: a third of the time of `int` on each.)"""
    t = t.strip()
    if not t or ("," not in t and ";" not in t and not t.startswith("[")):
        return None
    inner = t[1:] if t.startswith("[") else t
    inner = (inner[:-1] if inner.endswith("]") else inner).replace(";", ",").rstrip()
    inner = inner[:-1] if inner.endswith(",") else inner  # a trailing separator
    if not _LIST_HEAD.fullmatch(inner[:256].rsplit(",", 1)[0]):
        return None
    try:
        values = json.loads("[" + inner + "]")
    except ValueError:
        return None
    if not values or not all(type(v) is int for v in values[:64]):
        return None
    try:
        return bytes(values)  # 0 to 255 each (checked by bytes itself)
    except (TypeError, ValueError):
        pass
    if not all(type(v) is int for v in values) or min(values) < -128 or max(values) > 255:
        return None
    if max(values) <= 127:
        return array.array("b", values).tobytes()
    return bytes(v & 0xFF for v in values)


def _hex_bytes(t: str) -> bytes | None:
    """Hex text: pairs of digits with or without separators (spaces, colons, commas,
    dashes, line breaks), `0x` or `\\x` prefixes, or a dump with offsets (xxd, hexdump
    -C, Wireshark, od -Ax -tx1); None when `t` is not hex."""
    t = t.strip()
    if not t:
        return None
    first = t.splitlines()[0].rstrip()
    if _DUMP_LINE.fullmatch(first):
        dumped = _dump_bytes(t)
        if dumped is not None:
            return dumped
    cleaned = t.translate(_SEPARATORS_TO_SPACE)
    if "x" in cleaned or "X" in cleaned:
        cleaned = _HEX_PREFIXES.sub(" ", cleaned)
    try:
        return bytes.fromhex(cleaned) or None
    except ValueError:
        return None


def _dump_bytes(t: str) -> bytes | None:
    """A hex dump whose lines start with their offset, each line's offset the number of
    bytes before it; an ASCII column after the hex is dropped (on the last line, at the
    column where the full lines have it)."""
    lines = [line for line in t.splitlines() if line.strip()]
    parsed: list[tuple[int, str]] = []
    for line in lines:
        if line.strip() == "*":
            parsed.append((-1, ""))  # hexdump and od: the line before, repeated
            continue
        m = _DUMP_LINE.fullmatch(line.rstrip())
        if m is None:
            return None
        parsed.append((int(m.group(1), 16), m.group(2) or ""))
    if not parsed or parsed[0][0] != 0:
        return None
    out = bytearray()
    column: int | None = None  # where the ASCII column starts in a line's rest
    last = b""
    repeat = False
    for i, (offset, rest) in enumerate(parsed):
        if offset == -1:
            repeat = True
            continue
        if repeat:
            repeat = False
            if not last or (offset - len(out)) % len(last) or offset - len(out) > DEFAULT_MAX_SIZE:
                return None
            out += last * ((offset - len(out)) // len(last))
        if offset != len(out):
            return None
        following = next((o for o, _ in parsed[i + 1 :] if o != -1), None)
        if i + 1 < len(parsed) and parsed[i + 1][0] == -1:
            following = offset + len(_dump_hex(rest if column is None else rest[:column], None)[0])
        if following is not None:
            want = following - offset
            got, end = _dump_hex(rest, want)
            if len(got) != want:
                return None
            if column is None and end < len(rest.rstrip()):
                column = end
        else:
            if not rest.strip():
                break  # `hexdump -C` and `od` end with a line holding only the length
            got, _ = _dump_hex(rest if column is None else rest[:column], None)
            if column is None:
                got = _drop_ascii_column(rest, got)
        out += got
        last = got
    return bytes(out) if out else None


def _dump_hex(rest: str, want: int | None) -> tuple[bytes, int]:
    """The hex tokens at the start of `rest` (`00`, or xxd's `0003`), up to `want`
    bytes, and where in `rest` the text after them starts."""
    got = bytearray()
    for m in re.finditer(r"\S+", rest):
        tok = m.group()
        if want is not None and len(got) >= want:
            return bytes(got), m.start()
        if len(tok) > 8 or not re.fullmatch(r"(?:[0-9a-fA-F]{2})+", tok):
            return bytes(got), m.start()
        got += bytes.fromhex(tok)
    return bytes(got), len(rest)


def _drop_ascii_column(rest: str, got: bytes) -> bytes:
    """A lone last line: when the text after its hex is an ASCII column of one
    character per byte, the hex is right; a column of hex digits read as hex is given
    back (the dump's width says nothing here)."""
    tokens = rest.split()
    n = 0  # the hex tokens at the start
    while n < len(tokens) and len(tokens[n]) <= 8 and re.fullmatch(r"(?:[0-9a-fA-F]{2})+", tokens[n]):
        n += 1
    while n > 0:
        taken = bytes.fromhex("".join(tokens[:n]))
        column = "".join(tokens[n:]).strip("|")
        if len(column) == len(taken):
            return taken
        n -= 1
    return got


def _base64_bytes(t: str) -> bytes | None:
    """Base64 (standard or URL-safe, padded or not, wrapped in lines of one length); None
    when `t` is not base64 (text with spaces or tabs inside a line is not)."""
    t = t.strip()
    if " " in t or "\t" in t:
        return None
    lines = t.splitlines()
    # Wrapped lines have one length (the last may be shorter): checked on the first ones.
    if len(lines) > 1 and len({len(line) for line in lines[:64][: len(lines) - 1]}) != 1:
        return None
    s = "".join(lines)
    if len(s) < 4:
        return None
    body = s.rstrip("=")
    if len(body) % 4 == 1 or len(s) - len(body) > 2:
        return None
    if "-" in body or "_" in body:  # the URL-safe alphabet (binascii checks the rest)
        if "+" in body or "/" in body:
            return None
        body = body.translate(_URL_SAFE)
    try:
        # validate=True: the strict alphabet on every supported CPython (a2b_base64's
        # strict_mode is new in 3.11).
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


# -- unwrapping ----------------------------------------------------------------------


def unwrap(data: _Buffer, form: str = "auto", *, max_size: int = DEFAULT_MAX_SIZE, max_layers: int = MAX_LAYERS) -> bytes:
    """The AMF bytes inside `data` (see `peel`)."""
    return peel(data, form, max_size=max_size, max_layers=max_layers).data


def peel(data: _Buffer, form: str = "auto", *, max_size: int = DEFAULT_MAX_SIZE, max_layers: int = MAX_LAYERS) -> Unwrapped:
    """Take the layers off `data` until raw bytes remain: `form` is the outer layer
    (`"auto"` detects it; `"raw"`: none), the inner ones are detected (a text form only
    outside any other text form: hex of base64 is taken apart once). A layer that
    detection cannot name ends the peeling, its bytes returned as they are (the decoder,
    or `describe`, says what they are). Raises FormError for a layer that is not what
    it claims (bad hex, a corrupt or too large zlib stream, a truncated HTTP body...)."""
    if form != "auto" and form not in FORMS:
        raise ValueError(f"unknown form {form!r} (auto, {', '.join(sorted(FORMS))})")
    out = Unwrapped(_bytes(data))
    current: str | None = form
    while True:
        text_forms = not any(layer in _TEXT_FORMS for layer in out.layers)
        kind = detect(out.data, text_forms=text_forms) if current == "auto" else current
        current = "auto"
        if kind is None or kind == "raw":
            return out
        if len(out.layers) >= max_layers:
            raise FormError(kind, f"more than {max_layers} layers of encoding (the last one {kind})")
        out.data = _take_off(kind, out, max_size)
        out.layers.append(kind)


def _take_off(kind: str, out: Unwrapped, max_size: int) -> bytes:
    data = out.data
    if kind in compression.FORMATS:
        try:
            return compression.inflate(data, kind, max_size)
        except compression.CompressionError as e:
            raise FormError(kind, str(e)) from None
    if kind == "http":
        body, content_type = _http_body(data, max_size)
        out.content_type = content_type
        return body
    text = _text(data)
    if text is None:
        raise FormError(kind, f"{kind} is text, and these bytes are not")
    t = text.strip()
    if kind == "list":
        listed = _list_bytes(t)
        if listed is None:
            raise FormError(kind, "not a decimal byte list such as [0, 3, 0, 0]")
        got = listed
    elif kind == "hex":
        hexed = _hex_bytes(t)
        if hexed is None:
            raise FormError(kind, "not hex: pairs of hex digits, with or without separators")
        got = hexed
    else:
        b64 = _base64_bytes(t)
        if b64 is None:
            raise FormError(kind, "not base64 (standard or URL-safe)")
        got = b64
    if len(got) > max_size:
        raise FormError(kind, f"{kind} text of more than {max_size} bytes")
    return got


class _Source:
    """What `http.client.HTTPResponse` reads a message from (it asks a socket for a file)."""

    def __init__(self, data: bytes) -> None:
        self._file = io.BytesIO(data)

    def makefile(self, mode: str) -> io.BytesIO:
        return self._file


def _http_body(data: bytes, max_size: int) -> tuple[bytes, str | None]:
    """The body of an HTTP/1.x request or response, de-chunked and content-decoded, and
    its Content-Type. The standard library's HTTP client reads it (headers, chunks,
    Content-Length); a request is given to it behind a made-up status line."""
    data = data.lstrip()
    first, _, rest = data.partition(b"\n")
    if not first.startswith(b"HTTP/"):
        rest = b"HTTP/1.1 200 OK\r\n" + rest
    else:
        rest = data
    response = http.client.HTTPResponse(_Source(rest))  # type: ignore[arg-type]
    try:
        response.begin()
        body = response.read(max_size + 1)
    except http.client.IncompleteRead as e:
        raise FormError("http", f"the HTTP body is cut short ({len(e.partial)} bytes of it are here)") from None
    except (http.client.HTTPException, ValueError) as e:
        raise FormError("http", f"not an HTTP message this reader takes: {type(e).__name__} {e}".strip()) from None
    if len(body) > max_size:
        raise FormError("http", f"an HTTP body of more than {max_size} bytes")
    if response.length:  # Content-Length said more than there is
        raise FormError("http", f"the HTTP body is cut short ({len(body)} bytes of it are here, {len(body) + response.length} announced)")
    content_type = response.getheader("Content-Type")
    encodings = [e.strip().lower() for e in (response.getheader("Content-Encoding") or "").split(",") if e.strip()]
    for enc in reversed(encodings):
        if enc == "identity":
            continue
        if enc in ("gzip", "x-gzip"):
            fmt = "gzip"
        elif enc == "deflate":
            # "deflate" means zlib (RFC 9110); some servers send raw deflate instead.
            fmt = "zlib" if compression.zlib_level_hint(body) is not None else "deflate"
        else:
            raise FormError("http", f"the body's Content-Encoding {enc!r} is not one amfkit reads (gzip, deflate)")
        try:
            body = compression.inflate(body, fmt, max_size)
        except compression.CompressionError as e:
            raise FormError("http", f"the body's Content-Encoding {enc}: {e}") from None
    return body, content_type


# -- describing ------------------------------------------------------------------------


def describe(data: _Buffer, *, max_size: int = DEFAULT_MAX_SIZE) -> str:
    """One line naming what `data`, which is not AMF, looks like."""
    return "not AMF: " + _looks_like(_bytes(data), max_size, 0)


def _looks_like(data: bytes, max_size: int, depth: int) -> str:
    if not data:
        return "empty input"
    if _is_sol(data):
        return "this is a local shared object (.sol) file: read it with `amfkit sol`"
    for magic, what in _MAGICS:
        if data.startswith(magic):
            return f"this looks like {what}"
    if data[:2] == b"\x1f\x8b" and depth < 2:
        try:
            inner = compression.inflate(data, "gzip", max_size)
        except compression.CompressionError as e:
            return f"this looks like gzip data that does not inflate ({e})"
        return "this looks like gzip data holding " + _inner(inner, max_size, depth)
    if _HTTP_START.match(data, 0, 256) and depth < 2:
        try:
            body, content_type = _http_body(data, max_size)
        except FormError as e:
            return f"this looks like an HTTP message whose body cannot be read ({e})"
        kind = "response" if data.lstrip().startswith(b"HTTP/") else "request"
        ct = f" ({content_type})" if content_type else ""
        return f"this looks like an HTTP {kind} whose body{ct} is " + _inner(body, max_size, depth)
    text = _text(data)
    if text is None:
        return f"this looks like binary data that is not AMF (it starts with {data[:8].hex(' ')})"
    t = text.lstrip()
    low = t[:512].lower()
    if low.startswith("<!doctype html") or low.startswith("<html") or "<html" in low[:200] or "<body" in low:
        return "this looks like an HTML page"
    if low.startswith("<?xml") or re.match(r"<[a-z_][\w.:-]*[\s/>]", low):
        if "<cross-domain-policy" in low:
            return "this looks like a crossdomain.xml policy file"
        return "this looks like an XML document"
    if t[:1] in "{[":
        try:
            json.loads(text)
            return "this looks like a JSON document"
        except ValueError:
            pass
    if not t.strip():
        return "the input is only white space"
    if _is_list(t.strip()):
        return "this looks like a decimal byte list (a text form: read it as one)"
    if _hex_bytes(t.strip()) is not None:
        return "this looks like hex text (a text form: read it as one)"
    if _base64_bytes(t.strip()) is not None:
        return "this looks like base64 text (a text form: read it as one)"
    first = t.strip().splitlines()[0]
    shown = first[:40] + ("…" if len(first) > 40 else "")
    return f"this looks like text ({shown!r}), and no hex, base64 or byte list"


def _inner(data: bytes, max_size: int, depth: int) -> str:
    if not data:
        return "empty"
    if data[0] <= 0x11 and not _is_sol(data):
        return "binary data that may be AMF"
    what = _looks_like(data, max_size, depth + 1)
    return what.removeprefix("this looks like ").removeprefix("this is ")

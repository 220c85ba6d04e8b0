"""CORS: which other origins may read the gateway's answers (docs/gateway.md, "Clients on
other origins"). A `CORSPolicy` is made once from the gateway's `cors=` options, with
every header list it adds ready: `preflight` answers an `OPTIONS` preflight, `actual`
(and its `raw` and `lines` forms) gives the headers of any other answer, and
`websocket_allowed` says whether a WebSocket handshake's `Origin` may open the channel.

Every interface uses it (ASGI, RSGI, WSGI, `amfkit serve`'s own HTTP protocol, the asset
routes, the messaging channels): a gateway's fast paths answer before any ASGI middleware
would run, so the policy is built in rather than wrapped around. Starlette's
`CORSMiddleware` is the reference behaviour (tests/remoting/test_cors_starlette.py sends
both the same requests); where amfkit differs it says so below.

- A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an
  allowed origin, for GET, HEAD or POST and request headers the policy allows, is
  answered 204 (Starlette: 200 "OK") with `Access-Control-Allow-Origin` (the origin
  echoed; "*" when every origin is allowed), `-Allow-Methods`, `-Allow-Headers` (the
  headers requested, when there were any: Starlette lists every allowed one), `-Max-Age`,
  `-Allow-Credentials` with credentials, and `Vary` naming `Origin` and the two request
  headers the answer depends on. Any other preflight is refused: 400 with a line naming
  what was refused, and no `Access-Control-*` header (Starlette adds the methods, headers
  and max age to a refusal too, and the origin when only the method or a header is
  refused). As Starlette's default, a preflight asking for private
  network access (`Access-Control-Request-Private-Network`) is refused.
- Every other answer carries `Vary: Origin` (as Starlette's), and, to a request from an
  allowed origin, `Access-Control-Allow-Origin` (the origin echoed, or "*") and
  `-Allow-Credentials: true` with credentials (Starlette adds that one for any origin).
  Starlette joins `Vary` values into one header; amfkit adds a `Vary` header of its own
  (HTTP reads them as one list).
- Credentials only with listed origins: `"*"` with `credentials=True` is refused, as
  the Fetch standard forbids the pair (Starlette echoes the origin instead).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Union

from .._text import shown

__all__ = [
    "ALLOWED_METHODS",
    "CORSPolicy",
    "DEFAULT_HEADERS",
    "DEFAULT_MAX_AGE",
    "SAFELISTED_HEADERS",
    "check_origin",
    "policy_of",
]

#: The methods the gateway answers (OPTIONS is the preflight itself).
ALLOWED_METHODS = ("GET", "HEAD", "POST")
#: Request headers a browser may send without asking (the Fetch standard's safelist).
SAFELISTED_HEADERS = ("accept", "accept-language", "content-language", "content-type")
#: The request headers allowed by default: the safelisted ones, and those the gateway
#: reads: HTTP Basic credentials (JSON-RPC, XML-RPC), a gzipped request body, and the
#: conditional and range requests of assets.
DEFAULT_HEADERS = SAFELISTED_HEADERS + (
    "authorization",
    "content-encoding",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "range",
)
#: Seconds a browser may keep a preflight's answer (Starlette's default).
DEFAULT_MAX_AGE = 600

Headers = tuple[tuple[str, str], ...]
#: The Vary header of a preflight's answer: what it depends on.
_PREFLIGHT_VARY = ("vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
RawHeaders = tuple[tuple[bytes, bytes], ...]
Response = tuple[int, list[tuple[str, str]], bytes]

#: An origin as browsers serialise it: scheme, host (a name, an IPv4 address or a
#: bracketed IPv6 one) and an optional port; no path, query, user or trailing slash.
_ORIGIN = re.compile(r"([a-z][a-z0-9+.\-]*)://([a-z0-9.\-]{1,253}|\[[0-9a-f:.]{2,45}\])(:[0-9]{1,5})?")
#: An HTTP header name (RFC 9110 token).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z\-]+")


def check_origin(origin: str) -> str:
    """`origin` as the policy keeps it (lowercase), or ValueError saying what is wrong."""
    if not isinstance(origin, str):
        raise TypeError(f"an origin is a string such as 'https://game.example', not {type(origin).__name__}")
    text = origin.strip().lower()
    if text == "null":
        raise ValueError("the origin 'null' is every sandboxed page and local file: it cannot be allowed")
    if _ORIGIN.fullmatch(text) is None:
        raise ValueError(f"{shown(origin)} is not an origin: scheme://host[:port], with no path (e.g. 'https://game.example')")
    scheme, _, rest = text.partition("://")
    if not rest.endswith("]") and ":" in rest:
        port = rest.rpartition(":")[2]
        if not 0 < int(port) < 65536:
            raise ValueError(f"{shown(origin)} has a port out of range")
        if _DEFAULT_PORTS.get(scheme) == port:  # browsers leave the default port out
            text = text[: -len(port) - 1]
    return text


class CORSPolicy:
    """Which origins may read the gateway's answers (see the module docstring).

    `origins`: `"*"` (every origin), or origins such as `"https://game.example"` and
    `"http://127.0.0.1:9000"` (one string or several). `credentials`: answers may be
    read by requests made with credentials (cookies, HTTP authentication): listed
    origins only. `max_age`: seconds a browser keeps a preflight's answer. `headers`:
    request headers to allow besides `DEFAULT_HEADERS`."""

    __slots__ = (
        "any",
        "origins",
        "credentials",
        "max_age",
        "allowed_headers",
        "_actual",
        "_raw",
        "_lines",
        "_none",
        "_none_raw",
        "_none_lines",
        "_preflight",
        "_refused",
    )

    def __init__(
        self,
        origins: str | Iterable[str],
        *,
        credentials: bool = False,
        max_age: int = DEFAULT_MAX_AGE,
        headers: Iterable[str] = (),
    ) -> None:
        listed = [origins] if isinstance(origins, str) else list(origins)
        if not listed:
            raise ValueError("cors needs '*' or at least one origin (None turns CORS off)")
        self.any = "*" in listed
        if self.any and len(listed) > 1:
            raise ValueError("cors='*' allows every origin: give it alone, not in a list of origins")
        if self.any and credentials:
            raise ValueError("cors_credentials needs listed origins: the Fetch standard forbids credentials with '*'")
        if isinstance(max_age, bool) or not isinstance(max_age, int) or max_age < 0:
            raise ValueError("cors_max_age must be a whole number of seconds, 0 or more")
        self.origins: frozenset[str] = frozenset() if self.any else frozenset(check_origin(o) for o in listed)
        self.credentials = bool(credentials)
        self.max_age = max_age
        extra = []
        for name in [headers] if isinstance(headers, str) else headers:
            if not isinstance(name, str) or not _TOKEN.fullmatch(name):
                raise ValueError(f"{shown(name)} is not a header name")
            extra.append(name.lower())
        self.allowed_headers: frozenset[str] = frozenset(DEFAULT_HEADERS) | frozenset(extra)
        # Every header list an answer carries, made here once.
        creds: Headers = (("access-control-allow-credentials", "true"),) if self.credentials else ()
        vary: Headers = (("vary", "Origin"),)
        self._none = vary
        self._actual: dict[str, Headers] = {}
        if self.any:
            self._actual["*"] = (("access-control-allow-origin", "*"), *vary)
        else:
            for origin in self.origins:
                self._actual[origin] = (("access-control-allow-origin", origin), *creds, *vary)
        self._raw: dict[bytes, RawHeaders] = {k.encode("latin-1"): _raw(v) for k, v in self._actual.items()}
        self._lines: dict[bytes, bytes] = {k.encode("latin-1"): _lines(v) for k, v in self._actual.items()}
        self._none_raw = _raw(self._none)
        self._none_lines = _lines(self._none)
        #: The headers of an allowed preflight but Allow-Origin and Allow-Headers.
        self._preflight: Headers = (
            ("access-control-allow-methods", ", ".join(ALLOWED_METHODS)),
            ("access-control-max-age", str(max_age)),
            *creds,
            _PREFLIGHT_VARY,
        )
        self._refused: Headers = (_PREFLIGHT_VARY,)

    def __repr__(self) -> str:
        shown_origins = "*" if self.any else sorted(self.origins)
        return f"CORSPolicy({shown_origins!r}, credentials={self.credentials})"

    # --- answers ---------------------------------------------------------------------

    def allows(self, origin: str | None) -> bool:
        """Whether a request's `Origin` may read the answers."""
        return origin is not None and (self.any or origin in self._actual)

    def actual(self, origin: str | None) -> Headers:
        """The CORS headers of an answer (not a preflight) to a request whose `Origin`
        header is `origin` (None: it had none)."""
        if origin is None:
            return self._none
        if self.any:
            return self._actual["*"]
        return self._actual.get(origin, self._none)

    def raw(self, origin: bytes | None) -> RawHeaders:
        """`actual` as ASGI header pairs, for `origin` as bytes."""
        if origin is None:
            return self._none_raw
        if self.any:
            return self._raw[b"*"]
        return self._raw.get(origin, self._none_raw)

    def lines(self, origin: bytes | None) -> bytes:
        """`actual` as HTTP/1.1 header lines (`name: value\\r\\n` each)."""
        if origin is None:
            return self._none_lines
        if self.any:
            return self._lines[b"*"]
        return self._lines.get(origin, self._none_lines)

    def preflight(self, origin: str, method: str, requested: str | None, private_network: bool = False) -> Response:
        """The answer to a preflight: `origin` its `Origin`, `method` its
        `Access-Control-Request-Method`, `requested` its `Access-Control-Request-Headers`
        (None when absent); `private_network`: it carried
        `Access-Control-Request-Private-Network` (refused)."""
        refused = []
        if not self.allows(origin):
            refused.append(f"origin {shown(origin)}")
        if method not in ALLOWED_METHODS:
            refused.append(f"method {shown(method)}")
        if private_network:
            refused.append("private network access")
        names = []
        if requested is not None:
            for item in requested.split(","):
                name = item.strip().lower()
                if not name:
                    continue
                if name not in self.allowed_headers:
                    refused.append(f"header {shown(name)}")
                    break
                names.append(name)
        if refused:
            text = f"CORS preflight refused: {', '.join(refused)} not allowed\n".encode()
            return 400, [("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(text))), *self._refused], text
        out = [("access-control-allow-origin", "*" if self.any else origin), *self._preflight]
        if names:
            out.insert(2, ("access-control-allow-headers", ", ".join(names)))
        return 204, out, b""

    def websocket_allowed(self, origin: str | None, host: str | None, scheme: str | None) -> bool:
        """Whether a WebSocket handshake may open the channel (`websocket_allowed` of the
        module says the rule)."""
        return websocket_allowed(self, origin, host, scheme)


def websocket_allowed(policy: CORSPolicy | None, origin: str | None, host: str | None, scheme: str | None) -> bool:
    """Whether a WebSocket handshake whose `Origin` is `origin` (None: it sent none, as
    clients outside browsers do) may open the channel of a gateway reached as `host`
    (its `Host` header) over `scheme` ("ws" or "wss"): no Origin, the gateway's own
    origin (the same host and port), or one `policy` allows. A browser always sends
    its page's origin, so a page elsewhere cannot use a visitor's connection to the
    gateway (cross-site WebSocket hijacking)."""
    if origin is None:
        return True
    if policy is not None and policy.allows(origin):
        return True
    return host is not None and _same_host(origin, host, scheme)


_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def _same_host(origin: str, host: str, scheme: str | None) -> bool:
    """Whether `origin` names the host and port of the `Host` header `host` (the
    default port of each side's scheme filled in)."""
    o_scheme, sep, rest = origin.lower().partition("://")
    if not sep:
        return False
    o_host, o_port = _split(rest, _DEFAULT_PORTS.get(o_scheme, ""))
    h_host, h_port = _split(host.lower(), _DEFAULT_PORTS.get(scheme or "ws", "80"))
    return bool(o_host) and o_host == h_host and o_port == h_port


def _split(netloc: str, default_port: str) -> tuple[str, str]:
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            return "", ""
        name, rest = netloc[: end + 1], netloc[end + 1 :]
        port = rest[1:] if rest.startswith(":") else default_port
        return name, port
    name, sep, port = netloc.partition(":")
    return name, port if sep else default_port


def policy_of(
    cors: CORSPolicy | str | Iterable[str] | None,
    *,
    credentials: bool = False,
    max_age: int = DEFAULT_MAX_AGE,
    headers: Iterable[str] = (),
) -> CORSPolicy | None:
    """The policy of a gateway's `cors=` options: None (off), a `CORSPolicy` as given, or
    a new one."""
    if cors is None:
        if credentials:
            raise ValueError("cors_credentials needs cors= (the origins allowed)")
        return None
    if isinstance(cors, CORSPolicy):
        return cors
    return CORSPolicy(cors, credentials=credentials, max_age=max_age, headers=headers)


def _raw(headers: Headers) -> RawHeaders:
    return tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers)


def _lines(headers: Headers) -> bytes:
    return "".join(f"{k}: {v}\r\n" for k, v in headers).encode("latin-1")


#: What `Gateway(cors=...)` takes.
CORSOption = Union[CORSPolicy, str, Iterable[str], None]

"""`/crossdomain.xml`: the policy file Flash Player, AIR and their projectors ask a host
for before a SWF from another domain may call it (docs/gateway.md, "Clients on other
origins"). Ruffle does not need it (it asks for CORS instead, and checks policy files only
when told to).

`CrossDomainPolicy(["game.example", "*.cdn.example"])` makes the file once: the master
policy of the host (`site-control` `master-only`: no other policy file on the host
counts), and one `allow-access-from` per domain. A domain is a host name, an IPv4 address,
a name under a wildcard (`*.cdn.example`: every host under cdn.example) or `*` (every
domain); each is checked, and the XML is written by the standard library's ElementTree,
which escapes what it writes. No `to-ports`: that attribute belongs to socket policy
files, which an HTTP gateway does not serve. An HTTPS gateway's policy lets SWFs loaded
over HTTPS in (Flash Player's rule without `secure="false"`, which amfkit never writes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from xml.etree import ElementTree

from .._text import shown

__all__ = ["CONTENT_TYPE", "PATH", "CrossDomainPolicy", "check_domain"]

#: Where Flash Player asks for the policy, and what it is served as.
PATH = "/crossdomain.xml"
CONTENT_TYPE = "text/x-cross-domain-policy"

_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_NAME = re.compile(rf"(\*\.)?{_LABEL}(\.{_LABEL})*")
_IPV4 = re.compile(r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}")

Response = tuple[int, list[tuple[str, str]], bytes]


def check_domain(domain: str) -> str:
    """`domain` as the policy writes it (lowercase), or ValueError saying what is wrong:
    a host name, an IPv4 address, `*.` and a name, or `*`."""
    if not isinstance(domain, str):
        raise TypeError(f"a crossdomain domain is a string such as 'game.example', not {type(domain).__name__}")
    text = domain.strip().lower()
    if text == "*" or _IPV4.fullmatch(text):
        return text
    if "://" in text or "/" in text or ":" in text:
        raise ValueError(f"{shown(domain)} is not a domain: a host name without a scheme, port or path (e.g. 'game.example')")
    if len(text) > 253 or _NAME.fullmatch(text) is None:
        raise ValueError(f"{shown(domain)} is not a domain: a host name, an IPv4 address, '*.name' or '*'")
    return text


class CrossDomainPolicy:
    """The `/crossdomain.xml` of a gateway: `domains` as `check_domain` takes them (one
    string or several)."""

    __slots__ = ("domains", "body", "_get", "_head")

    def __init__(self, domains: str | Iterable[str]) -> None:
        listed = [domains] if isinstance(domains, str) else list(domains)
        if not listed:
            raise ValueError("crossdomain needs at least one domain (None serves no policy file)")
        checked: list[str] = []
        for domain in listed:
            d = check_domain(domain)
            if d not in checked:
                checked.append(d)
        self.domains: tuple[str, ...] = tuple(checked)
        root = ElementTree.Element("cross-domain-policy")
        ElementTree.SubElement(root, "site-control", {"permitted-cross-domain-policies": "master-only"})
        for d in self.domains:
            ElementTree.SubElement(root, "allow-access-from", {"domain": d})
        ElementTree.indent(root)
        text = ElementTree.tostring(root, encoding="unicode")
        #: The file's bytes.
        self.body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE cross-domain-policy SYSTEM "http://www.adobe.com/xml/dtds/cross-domain-policy.dtd">\n' + text + "\n"
        ).encode("utf-8")
        headers = [("content-type", CONTENT_TYPE), ("content-length", str(len(self.body))), ("x-content-type-options", "nosniff")]
        self._get: Response = (200, headers, self.body)
        self._head: Response = (200, headers, b"")

    def __repr__(self) -> str:
        return f"CrossDomainPolicy({list(self.domains)!r})"

    def respond(self, method: str) -> Response:
        """The answer to a request for the file: GET and HEAD, else 405."""
        if method == "GET":
            return self._get
        if method == "HEAD":
            return self._head
        text = f"method {shown(method)} not allowed\n".encode()
        return 405, [("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(text))), ("allow", "GET, HEAD")], text


def policy_of(crossdomain: CrossDomainPolicy | str | Iterable[str] | None) -> CrossDomainPolicy | None:
    """The policy file of a gateway's `crossdomain=` option (None: none served)."""
    if crossdomain is None or isinstance(crossdomain, CrossDomainPolicy):
        return crossdomain
    return CrossDomainPolicy(crossdomain)

"""The service browser: a web page at `/` that lists a gateway's services and calls them
over AMF3, AMF0, Flex RemoteObject or JSON-RPC (docs/browser.md).

    from amfkit.browser import with_browser
    app = with_browser(gateway)     # ASGI: the page at / and /_browser/, the gateway elsewhere
"""

from __future__ import annotations

from .page import (
    CONTENT_SECURITY_POLICY,
    STATIC_DIR,
    STATIC_PREFIX,
    BrowserApp,
    BrowserPage,
    mount,
    with_browser,
)

__all__ = [
    "BrowserApp",
    "BrowserPage",
    "CONTENT_SECURITY_POLICY",
    "STATIC_DIR",
    "STATIC_PREFIX",
    "mount",
    "with_browser",
]

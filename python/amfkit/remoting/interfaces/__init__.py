"""The ways a `Gateway` is served, one module each; the gateway itself (`gateway`) is the
routing, and every interface hands it what it does not answer itself.

| module | the interface | `Gateway` face |
|---|---|---|
| `asgi` | ASGI 3 (uvicorn, hypercorn, ...): the short path, then the routing core through `http.asgi`; messaging's streaming and WebSocket | `gateway(scope, receive, send)` |
| `rsgi` | RSGI (granian): the short path, then the ASGI app through `amfkit.rsgi` | `gateway.__rsgi__` |
| `wsgi` | WSGI: the short path with no event loop, then the routing core through `http.WSGIAdapter` | `gateway.wsgi` |
| `fastroute` | `amfkit serve`'s HTTP protocol (amfkit.serving): plain calls answered with no ASGI task | `gateway.amf_fast_route` |
| `plain` | what the short paths share: which POST may take one, the answer made now, the plain response | |
| `served` | what the interfaces read from the gateway (`Served`; a `Gateway` is one) | |

The short path answers a plain AMF POST (the gateway's path, no query string, no
Content-Encoding) with the fewest steps each interface allows; its answer is the routing
core's, byte for byte. Where each builds its response headers: ASGI in `asgi.app`
(bytes pairs), RSGI and WSGI through `plain.ok` (and `plain.failure` for a refusal), the
fast route in `fastroute.AMFRoute.answer` (a cached response head); every other answer
comes from the routing core (`Gateway._respond`), or the asset server and the browser
page it routes to. docs/gateway.md ("HTTP") describes the behaviour.
"""

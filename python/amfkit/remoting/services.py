"""Services: what a gateway calls, whatever the protocol (docs/gateway.md, "Services").

    >>> from amfkit.remoting.services import Services
    >>> class Echo:
    ...     def echo(self, value):
    ...         return value
    >>> services = Services({"EchoService": Echo()})
    >>> import asyncio
    >>> asyncio.run(services.call("EchoService.echo", ["hi"]))
    'hi'
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._amfkit import StoreError
from .._text import clip, error_text, shown
from ..assets.names import InvalidAssetName
from ..assets.store import Asset, AssetNotFound, AssetTooLarge

#: Service errors are logged where the gateway logs.
_log = logging.getLogger("amfkit.gateway")

__all__ = ["INTERNAL_ERROR_MESSAGE", "Context", "Fault", "Method", "Principal", "Services", "requires", "with_asset_bytes"]


class Fault(Exception):
    """An error meant for the client: a code, a message and optional details.

    Raise it from a service to choose what the client sees; any other exception becomes
    a fault with code `Server.Processing` and a fixed message, its own message and
    traceback going to the log (and to the client only in debug mode): an exception's
    text can carry what a client must not see. The asset store's refusals are faults
    with their own message: `AssetNotFound` (code `Asset.NotFound`), `InvalidAssetName`
    (`Asset.InvalidName`) and `AssetTooLarge` (`Asset.TooLarge`).

    The message is cut to `amfkit._text.MAX_MESSAGE` characters (it may quote input).
    """

    def __init__(self, message: str, *, code: str = "Server.Processing", details: Any = None) -> None:
        if isinstance(message, str):
            message = clip(message)
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        #: On the client side, the fault as the server sent it (an onStatus object or an
        #: ErrorMessage); None for faults raised by services.
        self.raw: Any = None

    def __repr__(self) -> str:
        return f"Fault({self.message!r}, code={self.code!r})"

    @classmethod
    def of(cls, error: BaseException, *, debug: bool = False) -> "Fault":
        """The fault a client gets for `error`: a `Fault` as it is; any other exception
        logged (with its traceback) and answered `Server.Processing` with `INTERNAL_ERROR_MESSAGE`
        as the message, or with its own message in debug mode."""
        if isinstance(error, Fault):
            return error
        for kind, code in _ASSET_FAULTS:
            if isinstance(error, kind):
                _log.debug("asset fault %s: %s", code, error)
                return cls(error_text(error), code=code)
        if isinstance(error, StoreError):
            # The shared store of sessions and messaging (Redis restarting, say): a line in
            # the log, and a fault the client may retry on, not an internal error.
            _log.warning("the shared store failed: %s (answered %s)", error_text(error), STORE_UNAVAILABLE)
            return cls("the server's shared store cannot be reached now; try again", code=STORE_UNAVAILABLE)
        text = error_text(error)
        _log.error("error in a remoting call: %s", text, exc_info=error)
        return cls(text if debug else INTERNAL_ERROR_MESSAGE)


#: The fault of a request that found the shared store (sessions, messaging) unreachable.
STORE_UNAVAILABLE = "Server.Processing.Unavailable"

#: The asset store's refusals a client is told about, with their fault codes.
_ASSET_FAULTS = ((AssetNotFound, "Asset.NotFound"), (InvalidAssetName, "Asset.InvalidName"), (AssetTooLarge, "Asset.TooLarge"))


async def with_asset_bytes(value: Any) -> Any:
    """`value` with its `Asset`s replaced by their bytes (read from their store when not
    loaded): `value` itself, the items of a list or tuple, or the values of a dict; None
    when it holds none (nothing read). The protocols call it when a result cannot be
    encoded: `Services.call` already turned a result that is an Asset into bytes."""
    if isinstance(value, Asset):
        return await value.aread()
    kind = type(value)
    if kind is list or kind is tuple:
        if not any(isinstance(v, Asset) for v in value):
            return None
        items = [await v.aread() if isinstance(v, Asset) else v for v in value]
        return items if kind is list else tuple(items)
    if kind is dict:
        if not any(isinstance(v, Asset) for v in value.values()):
            return None
        return {k: await v.aread() if isinstance(v, Asset) else v for k, v in value.items()}
    return None


#: The most calls one request may carry (AMF bodies, a JSON-RPC batch, an XML-RPC
#: system.multicall): each is answered, so a request of many tiny calls would make a
#: large answer and hold the event loop (`Gateway(max_calls=...)`).
DEFAULT_MAX_CALLS = 1000

#: The fault message of an unexpected exception outside debug mode.
INTERNAL_ERROR_MESSAGE = "internal error (the server log has the details)"


@dataclasses.dataclass(frozen=True)
class Principal:
    """Who is calling: a name and roles, as an authenticator returns it."""

    name: str
    roles: frozenset[str] = frozenset()


@dataclasses.dataclass
class Context:
    """What a call knows about its request.

    `protocol` is "amf0", "amf3", "jsonrpc" or "xmlrpc"; `session` is the client's
    session dict (kept across requests by the gateway's session store); `principal` is
    set once the client has authenticated; `headers` are the request's AMF headers or
    HTTP headers, by name; `messaging` is the gateway's `amfkit.messaging.Messaging`
    (None without one), which `publish` uses.
    """

    protocol: str = "amf3"
    principal: Principal | None = None
    session: dict[str, Any] = dataclasses.field(default_factory=dict)
    headers: dict[str, Any] = dataclasses.field(default_factory=dict)
    client_id: str | None = None
    messaging: Any = dataclasses.field(default=None, repr=False, compare=False)

    def publish(
        self,
        destination: str,
        body: Any,
        *,
        headers: Mapping[str, Any] | None = None,
        subtopic: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Publish `body` to the subscribers of a messaging destination (the gateway's
        `messaging=`); returns the message id. See `amfkit.messaging.Messaging.publish`."""
        if self.messaging is None:
            raise RuntimeError("this gateway has no messaging (Gateway(..., messaging=Messaging([...])))")
        message_id: str = self.messaging.publish(destination, body, headers=headers, subtopic=subtopic, ttl=ttl)
        return message_id


def awaitable(value: Any) -> bool:
    """Whether a method's result must be awaited (coroutines, futures, tasks, any object
    with `__await__`); cheaper than `inspect.isawaitable` on the plain values most
    results are."""
    return hasattr(type(value), "__await__")


def requires(*roles: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a method: calling it needs a principal holding one of `roles`."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__amfkit_roles__ = frozenset(roles)  # type: ignore[attr-defined]
        return fn

    return mark


_SIMPLE_TYPES: dict[Any, tuple[type, ...]] = {
    int: (int,),
    float: (int, float),
    str: (str,),
    bool: (bool,),
    list: (list, tuple),
    dict: (dict,),
    bytes: (bytes, bytearray),
}


def _accepted(annotation: Any) -> tuple[type, ...] | None:
    """The runtime types a simple annotation accepts, or None when it is not checked."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(types, "UnionType", None)):
        out: list[type] = []
        for arg in typing.get_args(annotation):
            if arg is type(None):
                out.append(type(None))
                continue
            sub = _accepted(arg)
            if sub is None:
                return None
            out.extend(sub)
        return tuple(out)
    if origin is not None:
        annotation = origin
    return _SIMPLE_TYPES.get(annotation)


@dataclasses.dataclass
class Method:
    """A callable method of a service, with what is needed to check a call."""

    service: str
    name: str
    fn: Callable[..., Any]
    signature: inspect.Signature
    roles: frozenset[str]
    context_param: str | None
    checks: dict[str, tuple[type, ...]]
    is_async: bool
    doc: str
    #: For signatures of plain positional parameters (no *args, **kwargs, keyword-only,
    #: context): how many are required, how many allowed, and each one's check; `call`
    #: then skips `inspect.Signature.bind`.
    fast: tuple[int, int, tuple[tuple[type, ...] | None, ...] | None] | None = None

    def __post_init__(self) -> None:
        params = list(self.signature.parameters.values())
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        if plain and self.context_param is None:
            required = sum(1 for p in params if p.default is p.empty)
            checks = tuple(self.checks.get(p.name) for p in params)
            self.fast = (required, len(params), checks if any(c is not None for c in checks) else None)

    def accepts(self, args: list[Any] | tuple[Any, ...]) -> bool:
        """Whether positional `args` fit this method's plain signature (count and simple
        annotations) so that it can be called directly; False also when it is not a
        plain signature. `bind` says what is wrong when this says no."""
        fast = self.fast
        if fast is None:
            return False
        required, allowed, checks = fast
        if not required <= len(args) <= allowed:
            return False
        if checks is None:
            return True
        return all(c is None or (isinstance(a, c) and (bool in c or not isinstance(a, bool))) for a, c in zip(args, checks))

    @property
    def target(self) -> str:
        return f"{self.service}.{self.name}"

    def parameters(self) -> list[inspect.Parameter]:
        """The remote call's parameters (without the context one)."""
        return [p for p in self.signature.parameters.values() if p.name != self.context_param]

    def bind(self, args: Iterable[Any], kwargs: Mapping[str, Any] | None = None, context: Context | None = None) -> inspect.BoundArguments:
        args = list(args)
        kwargs = dict(kwargs or {})
        params = self.signature.parameters
        if kwargs and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            for key in kwargs:
                if key not in params:  # named here, since Python's message quotes it whole
                    raise Fault(f"{self.target}: got an unexpected keyword argument {shown(key)}", code="Client.Argument")
        if self.context_param:
            kwargs[self.context_param] = context if context is not None else Context()
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise Fault(f"{self.target}: {e}", code="Client.Argument") from None
        for name, value in bound.arguments.items():
            accepted = self.checks.get(name)
            if accepted is None:
                continue
            param = self.signature.parameters[name]
            values = value if param.kind is inspect.Parameter.VAR_POSITIONAL else (value,)
            for v in values:
                if isinstance(v, bool) and bool not in accepted:
                    ok = False
                else:
                    ok = isinstance(v, accepted)
                if not ok:
                    raise Fault(
                        f"{self.target}: argument {name!r} must be {_names(accepted)}, not {type(v).__name__}",
                        code="Client.Argument",
                    )
        return bound


#: The signature given to a callable whose own cannot be read: `(*args)`.
_ANY_ARGS = inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)])


def _names(types_: tuple[type, ...]) -> str:
    return " or ".join(sorted({t.__name__ if t is not type(None) else "None" for t in types_}))


@dataclasses.dataclass
class _Entry:
    name: str
    target: Any
    roles: frozenset[str]
    doc: str


class Services:
    """A registry of services by name."""

    def __init__(self, services: Mapping[str, Any] | None = None) -> None:
        self._entries: dict[str, _Entry] = {}
        self._methods: dict[str, Method] = {}
        for name, obj in (services or {}).items():
            self.register(name, obj)

    # --- registration --------------------------------------------------------------

    def register(self, name: str, obj: Any, *, roles: Iterable[str] | None = None) -> Any:
        """Register `obj` (an instance, a class instantiated once here, a function, or a
        module) under `name`. Returns `obj`."""
        # Dotted names are allowed ("com.example.Svc"): a target splits on its last dot.
        if not name or name.startswith("_"):
            raise ValueError(f"invalid service name {name!r}")
        target = obj() if isinstance(obj, type) else obj
        doc = inspect.getdoc(obj) or ""
        self._entries[name] = _Entry(name, target, frozenset(roles or ()), doc)
        self._methods = {k: v for k, v in self._methods.items() if v.service != name}
        return obj

    def service(self, name: str | None = None, *, roles: Iterable[str] | None = None) -> Callable[[Any], Any]:
        """Decorator form of `register`: `@services.service("EchoService")`."""

        def add(obj: Any) -> Any:
            return self.register(name or str(getattr(obj, "__name__", "")), obj, roles=roles)

        return add

    def names(self) -> list[str]:
        return sorted(self._entries)

    # --- lookup --------------------------------------------------------------------

    def lookup(self, target: str) -> Method:
        """The method for `"Service.method"` (or a function service's own name); a
        `Fault` with code `Server.ResourceUnavailable` when there is none."""
        cached = self._methods.get(target)
        if cached is not None:
            return cached
        method = self._resolve(target)
        self._methods[target] = method
        return method

    def _resolve(self, target: str) -> Method:
        entry = self._entries.get(target)
        if entry is not None and callable(entry.target) and not _is_namespace(entry.target):
            return self._method(entry, target, entry.target)
        service, dot, name = target.rpartition(".")
        entry = self._entries.get(service) if dot else None
        if entry is None:
            raise Fault(f"no service {shown(service or target)}", code="Server.ResourceUnavailable")
        missing = Fault(f"no method {shown(name)} on {shown(service)}", code="Server.ResourceUnavailable")
        if not name or name.startswith("_"):
            raise missing
        try:
            fn = getattr(entry.target, name, None)
        except Exception:  # a property (or __getattr__) that raises is no method either
            _log.debug("reading %s of service %s failed", shown(name), shown(service), exc_info=True)
            raise missing from None
        if fn is None or not callable(fn) or isinstance(fn, type):
            raise missing
        return self._method(entry, name, fn)

    def _method(self, entry: _Entry, name: str, fn: Callable[..., Any]) -> Method:
        try:
            sig = inspect.signature(fn)
        except (ValueError, TypeError):
            # A callable whose signature cannot be read (a builtin inherited from dict,
            # say) takes any positional arguments: it can still be called and described.
            sig = _ANY_ARGS
        try:
            hints = typing.get_type_hints(fn)
        except Exception:
            hints = {}
        context_param = None
        checks: dict[str, tuple[type, ...]] = {}
        for p in sig.parameters.values():
            ann = hints.get(p.name, p.annotation)
            if ann is Context:
                context_param = p.name
                continue
            accepted = _accepted(ann)
            if accepted is not None:
                checks[p.name] = accepted
        roles = entry.roles | getattr(fn, "__amfkit_roles__", frozenset())
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))
        return Method(entry.name, name, fn, sig, roles, context_param, checks, is_async, inspect.getdoc(fn) or "")

    # --- calls ---------------------------------------------------------------------

    async def call(
        self,
        target: str,
        args: Iterable[Any] = (),
        context: Context | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        """Look up, check access and arguments, and call; awaits async methods. A result
        that is an `Asset` comes back as its bytes (read from its store if needed)."""
        method = self.lookup(target)
        if method.roles:
            self.authorize(method, context)
        if method.fast is not None and not kwargs:
            args = args if isinstance(args, (list, tuple)) else list(args)
            if method.accepts(args):
                result = method.fn(*args)
            else:
                # bind() says precisely what is wrong (and raises the Fault)
                bound = method.bind(args, kwargs, context)
                result = method.fn(*bound.args, **bound.kwargs)
        else:
            bound = method.bind(args, kwargs, context)
            result = method.fn(*bound.args, **bound.kwargs)
        if method.is_async or awaitable(result):
            result = await result
        if isinstance(result, Asset):
            result = await result.aread()
        return result

    def authorize(self, method: Method, context: Context | None) -> None:
        if not method.roles:
            return
        principal = context.principal if context is not None else None
        if principal is None:
            raise Fault(f"{method.target} needs an authenticated client", code="Client.Authentication")
        if not method.roles & principal.roles:
            raise Fault(f"{shown(principal.name)} may not call {method.target}", code="Client.Authorization")

    # --- discovery -----------------------------------------------------------------

    def methods(self, name: str) -> list[Method]:
        """The public methods of one service. An attribute that cannot be read or
        looked up (a property that raises, say) is left out, and logged."""
        entry = self._entries[name]
        if callable(entry.target) and not _is_namespace(entry.target):
            return [self.lookup(name)]
        out: list[Method] = []
        try:
            attrs = sorted(a for a in dir(entry.target) if isinstance(a, str))
        except Exception:
            _log.error("cannot list the methods of service %s", shown(name), exc_info=True)
            return out
        for attr in attrs:
            if attr.startswith("_"):
                continue
            try:
                out.append(self.lookup(f"{name}.{attr}"))
            except Fault:  # not callable, a class, or a property that raises: no method
                continue
            except Exception:
                _log.error("cannot describe %s.%s", shown(name), shown(attr), exc_info=True)
        return out

    def describe(self) -> dict[str, Any]:
        """A discovery document: services, methods, parameters (name, type, default),
        docstrings and the roles a call needs."""
        services = []
        for name in self.names():
            entry = self._entries[name]
            methods = []
            for m in self.methods(name):
                params = []
                for p in m.parameters():
                    param: dict[str, Any] = {"name": p.name, "kind": p.kind.name.lower()}
                    if p.annotation is not inspect.Parameter.empty:
                        param["type"] = _type_name(p.annotation)
                    if p.default is not inspect.Parameter.empty:
                        param["default"] = _jsonable(p.default)
                    params.append(param)
                method: dict[str, Any] = {"name": m.name, "params": params, "doc": m.doc}
                if m.signature.return_annotation is not inspect.Signature.empty:
                    method["returns"] = _type_name(m.signature.return_annotation)
                if m.roles:
                    method["roles"] = sorted(m.roles)
                methods.append(method)
            services.append({"name": name, "doc": entry.doc, "methods": methods})
        return {"services": services}


def _is_namespace(obj: Any) -> bool:
    """An object whose methods are the service (anything but a plain function)."""
    return not (inspect.isfunction(obj) or inspect.isbuiltin(obj) or inspect.ismethod(obj))


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    try:
        return str(annotation).replace("typing.", "")
    except Exception:
        return type(annotation).__name__


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    try:
        return clip(repr(value))
    except Exception:
        return shown(value)


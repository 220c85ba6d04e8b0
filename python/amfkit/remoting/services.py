"""Services: what a gateway calls, whatever the protocol, and which of a service's
attributes are callable at all (docs/gateway.md, "Services").

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

import collections.abc
import dataclasses
import inspect
import logging
import os
import sys
import sysconfig
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._amfkit import StoreError
from .._text import clip, error_text, shown
from .._types import MixedArray
from ..assets.names import InvalidAssetName
from ..assets.store import Asset, AssetNotFound, AssetTooLarge

#: Service errors are logged where the gateway logs.
_log = logging.getLogger("amfkit.gateway")

__all__ = ["INTERNAL_ERROR_MESSAGE", "Context", "Fault", "Method", "Principal", "Services", "exposed", "requires", "with_asset_bytes"]


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
    tuple: (list, tuple),
    collections.abc.Sequence: (list, tuple),
    collections.abc.MutableSequence: (list, tuple),
    dict: (dict,),
    bytes: (bytes, bytearray),
}
#: The annotations of a parameter that takes an array (`list`, `list[T]`, `tuple`,
#: `Sequence[T]`...): an associative array with keys exactly 0..n-1 becomes a list.
_SEQUENCES = (list, tuple, collections.abc.Sequence, collections.abc.MutableSequence)


class _Listed:
    """How a parameter annotated as an array takes an associative array (an AMF0 ECMA
    array, or an AMF3 array with named members: a `MixedArray`) whose keys are exactly
    0..n-1, as Ruffle writes a dense ActionScript Array: as the list of its values, in
    key order; `items`, when its items are arrays too (`list[list[int]]`), the same for
    each item. Any other associative array is a fault naming the parameter."""

    __slots__ = ("items",)

    def __init__(self, items: _Listed | None) -> None:
        self.items = items

    def convert(self, value: Any, where: str) -> Any:
        if type(value) is MixedArray:
            value = _dense(value, where)
        items = self.items
        if items is None or not isinstance(value, (list, tuple)):
            return value
        out = None
        for i, item in enumerate(value):
            new = items.convert(item, f"{where}[{i}]")
            if new is not item:
                if out is None:
                    out = list(value)
                out[i] = new
        return value if out is None else out


def _dense(value: MixedArray, where: str) -> list[Any]:
    """The values of an associative array keyed exactly 0..n-1 (ints, or their canonical
    decimal text), in key order; a `Fault` naming `where` for any other."""
    n = len(value)
    out = []
    for i in range(n):
        if i in value:
            out.append(value[i])
            continue
        text = str(i)
        if text in value:
            out.append(value[text])
            continue
        extra = next((k for k in value if not (isinstance(k, int) and 0 <= k < n) and not (isinstance(k, str) and k.isdigit() and str(int(k)) == k and int(k) < n)), None)
        what = f"key {shown(str(extra))}" if extra is not None else f"no item {i}"
        raise Fault(f"{where} must be an array, not an associative array with {what} (its keys are not exactly 0..{n - 1})", code="Client.Argument")
    return out


def _listed(annotation: Any) -> _Listed | None:
    """How a parameter annotated `annotation` takes associative arrays (`_Listed`), or
    None when it is not annotated as an array."""
    if annotation is inspect.Parameter.empty or annotation is Any or isinstance(annotation, str):
        return None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(types, "UnionType", None)):
        for arg in typing.get_args(annotation):
            found = _listed(arg)
            if found is not None:
                return found
        return None
    kind = origin if origin is not None else annotation
    if kind not in _SEQUENCES:
        return None
    args = typing.get_args(annotation)
    items = None
    if args:
        # list[T], Sequence[T], tuple[T, ...]: T; tuple[A, B]: each alike or nothing.
        first = args[0]
        if kind is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            first = args[0] if all(a == args[0] for a in args) else None
        items = _listed(first) if first is not None else None
    return _Listed(items)


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
    #: The parameters annotated as arrays, by name: how each takes an associative array.
    arrays: dict[str, _Listed] = dataclasses.field(default_factory=dict)
    #: For signatures of plain positional parameters (no *args, **kwargs, keyword-only,
    #: context): how many are required, how many allowed, and each one's check; `call`
    #: then skips `inspect.Signature.bind`.
    fast: tuple[int, int, tuple[tuple[type, ...] | None, ...] | None] | None = None

    def __post_init__(self) -> None:
        params = list(self.signature.parameters.values())
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        # An array of arrays is looked at item by item: such a call takes `bind`.
        nested = any(listed.items is not None for listed in self.arrays.values())
        if plain and self.context_param is None and not nested:
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
        arrays = self.arrays
        for name, value in bound.arguments.items():
            listed = arrays.get(name) if arrays else None
            if listed is not None:
                param = self.signature.parameters[name]
                where = f"{self.target}: argument {name!r}"
                if param.kind is inspect.Parameter.VAR_POSITIONAL:
                    value = tuple(listed.convert(v, f"{where}[{i}]") for i, v in enumerate(value))
                else:
                    value = listed.convert(value, where)
                bound.arguments[name] = value
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
    #: The callable method names when `include` or `exclude` was given (None: `exposed`).
    only: frozenset[str] | None = None


def exposed(target: Any) -> list[str]:
    """The names of the methods a client may call on a service object `target` (a
    function service is called itself): for a module, the public functions it defines
    (`__module__` is the module: not what it imports); for any other object, the public
    functions that its class and that class's bases define in Python, as plain, static
    or class methods (or `functools.wraps` wrappers of a function). Never what comes
    from a built-in (C) class such as `object`, `dict` or `list`, nor from a class of
    the standard library (`UserDict`, `Thread`...), nor an attribute set on the
    instance itself. A name a class sets to something else (`clear = None`) hides its
    bases' method of that name."""
    if isinstance(target, types.ModuleType):
        module = target.__name__
        out = []
        for attr, value in vars(target).items():
            if attr.startswith("_") or not (inspect.isfunction(value) or inspect.isbuiltin(value)):
                continue
            if getattr(value, "__module__", None) == module:
                out.append(attr)
        return out
    seen: set[str] = set()
    out = []
    for cls in type(target).__mro__:
        if _foreign(cls):
            continue
        for attr, value in vars(cls).items():
            if attr in seen or not isinstance(attr, str):
                continue
            seen.add(attr)
            if not attr.startswith("_") and _python_function(value):
                out.append(attr)
    own = getattr(target, "__dict__", None)
    if isinstance(own, dict) and own:
        out = [a for a in out if a not in own]
    return out


def _defines(target: Any, name: str) -> bool:
    """Whether `name` is one of `exposed(target)` (without listing them all)."""
    if isinstance(target, types.ModuleType):
        value = vars(target).get(name)
        return (inspect.isfunction(value) or inspect.isbuiltin(value)) and getattr(value, "__module__", None) == target.__name__
    own = getattr(target, "__dict__", None)
    if isinstance(own, dict) and name in own:
        return False  # set on the instance: never a method
    for cls in type(target).__mro__:
        if _foreign(cls):
            continue
        if name in vars(cls):
            return _python_function(vars(cls)[name])
    return False


def _python_function(value: Any) -> bool:
    """Whether a class attribute is a function defined in Python: plain, static or
    class method, or a wrapper of one that says so (`__wrapped__`)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if inspect.isfunction(value):
        return True
    if isinstance(value, type) or not callable(value) or getattr(value, "__wrapped__", None) is None:
        return False
    try:
        return inspect.isfunction(inspect.unwrap(value))
    except ValueError:  # a cycle of __wrapped__
        return False


_FOREIGN: dict[type, bool] = {}


def _foreign(cls: type) -> bool:
    """Whether `cls`'s methods are never a service's: a built-in (static C) class
    (`object`, `dict`...) or a class of the standard library (`UserDict`, `Thread`...)."""
    known = _FOREIGN.get(cls)
    if known is None:
        if not cls.__flags__ & _HEAPTYPE:
            known = True  # a static type of C: object, dict, list...
        else:
            module = getattr(cls, "__module__", None)
            # A class made where no module name was set (exec, a doctest) says "builtins".
            known = isinstance(module, str) and module not in ("builtins", "__main__") and _stdlib(module)
        _FOREIGN[cls] = known
    return known


#: Py_TPFLAGS_HEAPTYPE: set on every class made at run time (a class statement), not on
#: the built-in types of C.
_HEAPTYPE = 1 << 9


def _stdlib(module: str) -> bool:
    """Whether the module named `module` is a built-in one or of the standard library
    (told by where it was loaded from: a project's own module may share a stdlib name)."""
    if module in sys.builtin_module_names:
        return True
    loaded = sys.modules.get(module)
    where = getattr(loaded, "__file__", None)
    if not where:
        return False  # made at run time (`type(...)`, a test's module), or a namespace package
    where = os.path.realpath(where)
    return any(where.startswith(root) for root in _STDLIB) and "-packages" not in where


#: Where the standard library's modules live (the real paths, with a separator).
_STDLIB = tuple(
    {os.path.join(os.path.realpath(sysconfig.get_paths()[key]), "") for key in ("stdlib", "platstdlib")}
)


def _restricted(entry: _Entry, include: Iterable[str] | None, exclude: Iterable[str] | None) -> frozenset[str]:
    if not _is_namespace(entry.target):
        raise ValueError(f"service {shown(entry.name)} is a function: include and exclude name methods of an object")
    if include is not None and exclude is not None:
        raise ValueError(f"service {shown(entry.name)}: give include or exclude, not both")
    return _checked_names(entry.name, entry.target, include, exclude)


def _checked_names(service: str, target: Any, include: Iterable[str] | None, exclude: Iterable[str] | None) -> frozenset[str]:
    """The callable method names of a service registered with `include` or `exclude`;
    ValueError for a name that is not a method to include or exclude."""
    if include is not None:
        names = _name_set("include", service, include)
        for name in names:
            if name.startswith("_"):
                raise ValueError(f"service {shown(service)}: include names {shown(name)}: names starting with '_' are never callable")
            value = getattr(target, name, None)
            if value is None or not callable(value) or isinstance(value, (type, types.ModuleType)):
                raise ValueError(f"service {shown(service)}: include names {shown(name)}, which is not a method of it")
        return names
    default = set(exposed(target))
    names = _name_set("exclude", service, exclude or ())
    for name in names:
        if name not in default:
            raise ValueError(f"service {shown(service)}: exclude names {shown(name)}, which is not one of its callable methods")
    return frozenset(default - names)


def _name_set(option: str, service: str, names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str):
        raise TypeError(f"service {shown(service)}: {option} is a list of method names, not one string")
    out = frozenset(names)
    for name in out:
        if not isinstance(name, str):
            raise TypeError(f"service {shown(service)}: {option} holds {type(name).__name__}, not a method name")
    return out


class Services:
    """A registry of services by name.

    `include` and `exclude` map service names to method names, as `register` takes
    them for one service (BlazeDS's include-methods and exclude-methods)."""

    def __init__(
        self,
        services: Mapping[str, Any] | None = None,
        *,
        include: Mapping[str, Iterable[str]] | None = None,
        exclude: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        self._entries: dict[str, _Entry] = {}
        self._methods: dict[str, Method] = {}
        services = services or {}
        for option, given in (("include", include), ("exclude", exclude)):
            for name in given or ():
                if name not in services:
                    raise ValueError(f"{option} names {shown(name)}, which is not a service here")
        for name, obj in services.items():
            self.register(name, obj, include=(include or {}).get(name), exclude=(exclude or {}).get(name))

    # --- registration --------------------------------------------------------------

    def register(
        self,
        name: str,
        obj: Any,
        *,
        roles: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
    ) -> Any:
        """Register `obj` (an instance, a class instantiated once here, a function, or a
        module) under `name`. Returns `obj`.

        What a client may call on it is `exposed`'s rule: the functions its class and
        that class's own bases define in Python (a module: the functions it defines),
        never what it inherits from `object`, `dict` or another built-in or standard
        library class, nor classes, modules or callables stored on the instance.
        `include`: exactly these methods instead (anything callable the object has but
        a class or a module; a name that is not one is a ValueError); `exclude`: all
        but these (each must be one of the callable methods)."""
        # Dotted names are allowed ("com.example.Svc"): a target splits on its last dot.
        if not name or name.startswith("_"):
            raise ValueError(f"invalid service name {name!r}")
        target = obj() if isinstance(obj, type) else obj
        doc = inspect.getdoc(obj) or ""
        entry = _Entry(name, target, frozenset(roles or ()), doc)
        if include is not None or exclude is not None:
            entry.only = _restricted(entry, include, exclude)
        self._entries[name] = entry
        self._methods = {k: v for k, v in self._methods.items() if v.service != name}
        return obj

    def restrict(self, name: str, *, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None) -> None:
        """Make only the methods `include` names callable on the registered service
        `name`, or all but those `exclude` names (as `register` takes them)."""
        entry = self._entries.get(name)
        if entry is None:
            raise ValueError(f"no service {shown(name)} to restrict")
        entry.only = _restricted(entry, include, exclude)
        self._methods = {k: v for k, v in self._methods.items() if v.service != name}

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
        if entry.only is not None:
            if name not in entry.only:
                raise missing
        elif not _defines(entry.target, name):
            raise missing
        try:
            fn = getattr(entry.target, name, None)
        except Exception:  # a property (or __getattr__) that raises is no method either
            _log.debug("reading %s of service %s failed", shown(name), shown(service), exc_info=True)
            raise missing from None
        if fn is None or not callable(fn) or isinstance(fn, (type, types.ModuleType)):
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
        arrays: dict[str, _Listed] = {}
        for p in sig.parameters.values():
            ann = hints.get(p.name, p.annotation)
            if ann is Context:
                context_param = p.name
                continue
            accepted = _accepted(ann)
            if accepted is not None:
                checks[p.name] = accepted
            listed = _listed(ann)
            if listed is not None:
                arrays[p.name] = listed
        roles = entry.roles | getattr(fn, "__amfkit_roles__", frozenset())
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))
        return Method(entry.name, name, fn, sig, roles, context_param, checks, is_async, inspect.getdoc(fn) or "", arrays=arrays)

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
        """The callable methods of one service (`exposed`, or its `include`), exactly
        what a client may call. One that cannot be described is left out, and logged."""
        entry = self._entries[name]
        if callable(entry.target) and not _is_namespace(entry.target):
            return [self.lookup(name)]
        out: list[Method] = []
        try:
            attrs = sorted(entry.only if entry.only is not None else exposed(entry.target))
        except Exception:
            _log.error("cannot list the methods of service %s", shown(name), exc_info=True)
            return out
        for attr in attrs:
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


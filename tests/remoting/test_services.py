"""Services: registration, lookup, privacy, argument checks, roles, context, discovery."""

from __future__ import annotations

import asyncio
from typing import Optional, Union

import pytest

from amfkit.remoting import Context, Fault, Principal, Services, requires


class Calc:
    """Arithmetic."""

    def add(self, a: int, b: int = 2) -> int:
        """Add two ints."""
        return a + b

    async def slow_add(self, a: float, b: float) -> float:
        await asyncio.sleep(0)
        return a + b

    def maybe(self, x: Optional[str] = None, y: Union[int, str] = 0) -> str:
        return f"{x}:{y}"

    def anything(self, *items):
        return list(items)

    def named(self, a, *, scale: int = 1):
        return a * scale

    def who(self, context: Context) -> Optional[str]:
        return context.principal.name if context.principal else None

    @requires("admin")
    def secret(self) -> int:
        return 42

    def _hidden(self) -> None:
        raise AssertionError("never called")

    def fails(self) -> None:
        raise ValueError("boom")


def call(services: Services, target: str, *args, context: Context | None = None, **kwargs):
    return asyncio.run(services.call(target, list(args), context, kwargs or None))


@pytest.fixture
def services() -> Services:
    return Services({"Calc": Calc})


def test_calls_sync_and_async_methods(services):
    assert call(services, "Calc.add", 1) == 3
    assert call(services, "Calc.add", 1, 5) == 6
    assert call(services, "Calc.slow_add", 1, 2.5) == 3.5
    assert call(services, "Calc.anything", 1, "a") == [1, "a"]
    assert call(services, "Calc.named", 3, scale=2) == 6


@pytest.mark.parametrize(
    "target, args, message",
    [
        ("Calc.add", [], "missing a required argument: 'a'"),
        ("Calc.add", [1, 2, 3], "too many positional arguments"),
        ("Calc.add", ["1"], "argument 'a' must be int, not str"),
        ("Calc.add", [True], "argument 'a' must be int, not bool"),
        ("Calc.slow_add", [1, None], "argument 'b' must be float or int, not NoneType"),
        ("Calc.maybe", [1], "argument 'x' must be None or str, not int"),
        ("Calc.maybe", ["a", 1.5], "argument 'y' must be int or str, not float"),
    ],
)
def test_arguments_are_checked_against_the_signature(services, target, args, message):
    with pytest.raises(Fault) as e:
        call(services, target, *args)
    assert e.value.code == "Client.Argument"
    assert message in str(e.value)


def test_floats_accept_ints_and_optionals_accept_none(services):
    assert call(services, "Calc.slow_add", 1, 2) == 3
    assert call(services, "Calc.maybe", None, "z") == "None:z"


@pytest.mark.parametrize("target", ["Calc._hidden", "Calc.__init__", "Calc.__class__", "Nope.add", "Calc.missing", "Calc", "Calc."])
def test_private_and_missing_names_are_not_callable(services, target):
    with pytest.raises(Fault) as e:
        call(services, target)
    assert e.value.code == "Server.ResourceUnavailable"


def test_roles(services):
    with pytest.raises(Fault) as e:
        call(services, "Calc.secret")
    assert e.value.code == "Client.Authentication"
    with pytest.raises(Fault) as e:
        call(services, "Calc.secret", context=Context(principal=Principal("bob", frozenset({"user"}))))
    assert e.value.code == "Client.Authorization"
    assert call(services, "Calc.secret", context=Context(principal=Principal("ann", frozenset({"admin"})))) == 42


def test_service_roles_apply_to_every_method():
    s = Services()
    s.register("Calc", Calc(), roles=["staff"])
    with pytest.raises(Fault, match="needs an authenticated client"):
        call(s, "Calc.add", 1)
    assert call(s, "Calc.add", 1, context=Context(principal=Principal("x", frozenset({"staff"})))) == 3


def test_context_is_given_to_the_parameter_that_asks_for_it(services):
    assert call(services, "Calc.who", context=Context(principal=Principal("ann"))) == "ann"
    assert call(services, "Calc.who") is None
    assert [p.name for p in services.lookup("Calc.who").parameters()] == []


def test_exceptions_pass_through_to_the_gateway(services):
    with pytest.raises(ValueError, match="boom"):
        call(services, "Calc.fails")


def test_functions_modules_and_the_decorator():
    s = Services()

    @s.service("hello")
    def hello(name: str) -> str:
        return f"hello {name}"

    @s.service()
    class Greeter:
        def hi(self):
            return "hi"

    assert call(s, "hello", "ann") == "hello ann"
    assert call(s, "Greeter.hi") == "hi"
    import math

    s.register("math", math)
    assert call(s, "math.sqrt", 16.0) == 4.0
    assert s.names() == ["Greeter", "hello", "math"]
    with pytest.raises(ValueError):
        s.register("_private", object())


def test_reregistering_replaces_the_service(services):
    services.lookup("Calc.add")
    services.register("Calc", {"add": None})  # an object with no such method
    with pytest.raises(Fault):
        services.lookup("Calc.add")


def test_discovery_document(services):
    doc = services.describe()
    (calc,) = doc["services"]
    assert calc["name"] == "Calc" and calc["doc"] == "Arithmetic."
    methods = {m["name"]: m for m in calc["methods"]}
    assert "_hidden" not in methods
    assert methods["add"]["params"] == [
        {"name": "a", "kind": "positional_or_keyword", "type": "int"},
        {"name": "b", "kind": "positional_or_keyword", "type": "int", "default": 2},
    ]
    assert methods["add"]["doc"] == "Add two ints." and methods["add"]["returns"] == "int"
    assert methods["secret"]["roles"] == ["admin"]
    assert methods["who"]["params"] == []


def test_accepts_is_the_fast_check(services):
    add = services.lookup("Calc.add")
    assert add.accepts([1]) and add.accepts([1, 2])
    assert not add.accepts([]) and not add.accepts(["x"]) and not add.accepts([True])
    assert not services.lookup("Calc.named").accepts([1])  # keyword-only: no fast path

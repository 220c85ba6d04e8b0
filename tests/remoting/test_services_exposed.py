"""Only the methods a service means to expose are callable (`services.exposed`): the
functions its class and that class's own bases define in Python; never builtins it
inherits from `dict`, `list`, `object` or a standard library class, nor classes, modules
or callables stored on it; `include=` / `exclude=` per service; the discovery document
lists exactly what is callable."""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import os
import sys
import threading

import pytest

from amfkit.demo.app import build
from amfkit.remoting import Gateway, Services
from amfkit.remoting.services import Fault, exposed


def call(services: Services, target: str, *args):
    return asyncio.run(services.call(target, list(args)))


def missing(services: Services, target: str) -> None:
    with pytest.raises(Fault) as e:
        call(services, target)
    assert e.value.code == "Server.ResourceUnavailable"


def listed(gateway: Gateway, service: str) -> list[str]:
    """The methods the discovery document lists for `service`, from a real GET."""
    status, _, body = asyncio.run(gateway.respond("GET", "/gateway", {}, b""))
    assert status == 200
    (entry,) = [s for s in json.loads(body)["services"] if s["name"] == service]
    return [m["name"] for m in entry["methods"]]


class Store(dict):
    """A service that is a dict: its own methods only."""

    def get_item(self, key: str):
        return self.get(key)

    def put_item(self, key: str, value):
        self[key] = value
        return len(self)


def test_a_dict_subclass_exposes_its_own_methods_not_the_dicts() -> None:
    store = Store(a=1)
    services = Services({"Store": store})
    assert call(services, "Store.put_item", "b", 2) == 2
    assert call(services, "Store.get_item", "b") == 2
    for builtin in ("clear", "pop", "popitem", "update", "setdefault", "keys", "items", "values", "copy", "get", "fromkeys"):
        missing(services, f"Store.{builtin}")
    assert store == {"a": 1, "b": 2}  # nothing was cleared
    assert sorted(exposed(store)) == ["get_item", "put_item"]
    assert listed(Gateway(services), "Store") == ["get_item", "put_item"]


class Items(list):
    def total(self) -> int:
        return sum(self)


def test_list_and_object_builtins_are_never_callable() -> None:
    services = Services({"Items": Items([1, 2]), "Plain": object()})
    assert call(services, "Items.total") == 3
    for builtin in ("append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort", "copy", "count", "index"):
        missing(services, f"Items.{builtin}")
    assert exposed(object()) == [] and [m.name for m in services.methods("Plain")] == []


class Helper:
    def run(self) -> str:
        return "helper"


class Base:
    def inherited(self) -> str:
        return "base"

    def hidden_later(self) -> str:
        return "not reachable"


def _wrapping(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


class Game(Base):
    Nested = Helper  # a class: never callable
    runner = Helper()  # a callable object on the class: not a function
    hidden_later = None  # hides the base's method of that name

    def __init__(self) -> None:
        self.callback = lambda: "stored on the instance"
        self.module = os
        self.kind = Helper
        self.bound = Helper().run

    def play(self) -> str:
        return "played"

    @staticmethod
    def version() -> int:
        return 2

    @classmethod
    def name(cls) -> str:
        return cls.__name__

    @_wrapping
    def wrapped(self) -> str:
        return "wrapped"

    @functools.lru_cache(maxsize=8)  # noqa: B019 - a C wrapper with __wrapped__
    def cached(self) -> str:
        return "cached"


def test_functions_defined_in_python_by_the_class_and_its_bases() -> None:
    services = Services({"Game": Game})  # a class: instantiated once
    assert call(services, "Game.play") == "played"
    assert call(services, "Game.inherited") == "base"
    assert call(services, "Game.version") == 2
    assert call(services, "Game.name") == "Game"
    assert call(services, "Game.wrapped") == "wrapped"
    assert call(services, "Game.cached") == "cached"
    for name in ("Nested", "runner", "hidden_later", "callback", "module", "kind", "bound", "mro"):
        missing(services, f"Game.{name}")
    assert sorted(m.name for m in services.methods("Game")) == ["cached", "inherited", "name", "play", "version", "wrapped"]


def test_a_class_made_where_no_module_name_is_set_is_still_python() -> None:
    """exec() and doctests make classes whose __module__ says "builtins"."""
    namespace: dict[str, object] = {}
    exec("class Calc(dict):\n    def add(self, a, b):\n        return a + b\n", namespace)
    calc = namespace["Calc"]
    assert calc.__module__ == "builtins"  # type: ignore[attr-defined]
    services = Services({"Calc": calc})
    assert call(services, "Calc.add", 1, 2) == 3
    missing(services, "Calc.clear")


def test_a_method_replaced_on_the_instance_is_not_callable() -> None:
    game = Game()
    game.play = lambda: "replaced"  # type: ignore[method-assign]
    services = Services({"Game": game})
    missing(services, "Game.play")
    assert "play" not in exposed(game)


class Settings(collections.UserDict):
    def theme(self) -> str:
        return "dark"


class Worker(threading.Thread):
    def status(self) -> str:
        return "idle"


def test_standard_library_bases_are_not_the_services() -> None:
    services = Services({"Settings": Settings(), "Worker": Worker()})
    assert call(services, "Settings.theme") == "dark"
    assert call(services, "Worker.status") == "idle"
    for name in ("clear", "pop", "update", "copy", "setdefault", "get", "keys"):
        missing(services, f"Settings.{name}")
    for name in ("start", "run", "join", "is_alive", "setDaemon", "getName"):
        missing(services, f"Worker.{name}")
    assert [m.name for m in services.methods("Worker")] == ["status"]


def test_a_module_exposes_the_functions_it_defines_not_what_it_imports(tmp_path, monkeypatch) -> None:
    (tmp_path / "game_api.py").write_text(
        "from os.path import join\nimport json\nfrom collections import OrderedDict\n"
        "def score(n: int) -> int:\n    return n * 10\n"
        "def _secret():\n    return 1\n"
        "class Board:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import game_api  # type: ignore[import-not-found]

    try:
        services = Services({"Api": game_api})
        assert call(services, "Api.score", 3) == 30
        for name in ("join", "json", "OrderedDict", "_secret", "Board"):
            missing(services, f"Api.{name}")
        assert [m.name for m in services.methods("Api")] == ["score"]
    finally:
        sys.modules.pop("game_api", None)


def test_include_exposes_exactly_the_methods_named() -> None:
    store = Store(a=1)
    services = Services()
    services.register("Store", store, include=["get_item", "keys"])  # a dict builtin, by choice
    assert call(services, "Store.get_item", "a") == 1
    assert list(call(services, "Store.keys")) == ["a"]
    missing(services, "Store.put_item")
    missing(services, "Store.clear")
    assert sorted(m.name for m in services.methods("Store")) == ["get_item", "keys"]


def test_exclude_takes_methods_away() -> None:
    services = Services({"Game": Game()}, exclude={"Game": ["play", "version"]})
    missing(services, "Game.play")
    missing(services, "Game.version")
    assert call(services, "Game.inherited") == "base"
    assert sorted(m.name for m in services.methods("Game")) == ["cached", "inherited", "name", "wrapped"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"include": ["nope"]}, "include names 'nope', which is not a method"),
        ({"include": ["_private"]}, "names starting with '_' are never callable"),
        ({"include": ["Nested"]}, "include names 'Nested', which is not a method"),
        ({"include": ["module"]}, "include names 'module', which is not a method"),
        ({"exclude": ["clear"]}, "exclude names 'clear', which is not one of its callable methods"),
        ({"include": ["play"], "exclude": ["name"]}, "give include or exclude, not both"),
    ],
)
def test_include_and_exclude_name_real_methods(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        Services().register("Game", Game(), **kwargs)


def test_include_and_exclude_refuse_a_lone_string_and_a_function_service() -> None:
    with pytest.raises(TypeError, match="a list of method names"):
        Services().register("Game", Game(), include="play")
    with pytest.raises(ValueError, match="is a function"):
        Services().register("echo", lambda x: x, include=["x"])
    with pytest.raises(ValueError, match="not a service here"):
        Services({"Game": Game()}, include={"Gmae": ["play"]})


def test_the_gateway_takes_include_and_exclude_per_service() -> None:
    gateway = Gateway({"Store": Store(), "Game": Game()}, include={"Store": ["get_item"]}, exclude={"Game": ["play"]})
    assert listed(gateway, "Store") == ["get_item"]
    assert "play" not in listed(gateway, "Game") and "inherited" in listed(gateway, "Game")
    services = Services({"Store": Store()})
    Gateway(services, include={"Store": ["put_item"]})  # a Services: restricted in place
    assert [m.name for m in services.methods("Store")] == ["put_item"]
    with pytest.raises(ValueError, match="no service 'Nope' to restrict"):
        Gateway(Services({"Store": Store()}), exclude={"Nope": ["x"]})


def test_the_discovery_document_lists_exactly_what_is_callable() -> None:
    gateway = Gateway({"Game": Game(), "Store": Store(), "Items": Items()})
    for service in ("Game", "Store", "Items"):
        for name in listed(gateway, service):
            asyncio.run(gateway.services.call(f"{service}.{name}", [] if service != "Store" else ["k"] + ([1] if name == "put_item" else [])))
    assert listed(gateway, "Items") == ["total"]


def test_the_demo_services_expose_what_they_did(tmp_path) -> None:
    gateway = build(tmp_path / "tiles.sqlite3")
    assert {s: listed(gateway, s) for s in gateway.services.names()} == {
        "AssetService": ["download", "list", "upload"],
        "ChatService": ["post"],
        "EchoService": ["echo", "fail"],
        "InstrumentPriceService": ["get", "getLarge", "getMedium", "getSmall"],
        "PageableResult": ["getRecords", "release"],
        "TileService": [
            "getTiles",
            "getTilesAsArray",
            "getTilesAsColumns",
            "getTilesAsPageableRecordSet",
            "getTilesAsRecordSet",
            "getTilesAsString",
            "getTilesAsTypedObjects",
        ],
    }

"""Replay's matching rules on calls made here: arguments compared by structure, the same
call recorded several times answered in order then the last again, recorded faults,
looser matching (target, order), and an unrecorded call's fault."""

from __future__ import annotations

from typing import Any

import pytest

from amfkit import MixedArray, TypedObject
from amfkit.capture import match
from amfkit.capture.calls import Call
from amfkit.capture.exchange import Exchange
from amfkit.capture.replay import Replay
from amfkit.remoting import Fault

EX = Exchange(0, "POST", "http://x/gateway")


def _call(i: int, target: str, args: list[Any], result: Any = None, fault: Any = None) -> Call:
    c = Call(i, EX, 3, "/1", target, args, answered=True, result=result, fault=fault)
    return c


def test_structural_keys() -> None:
    assert match.key([1, 2.0, "a"]) == match.key([1.0, 2, "a"])  # AMF3 integer or double
    assert match.key([MixedArray({"0": "a", "1": "b"})]) == match.key([["a", "b"]])  # ECMA vs strict array
    assert match.key({"a": 1, "b": [1]}) == match.key({"b": [1], "a": 1})
    assert match.key(TypedObject("com.x.P", {"a": 1})) != match.key({"a": 1})
    loop: dict[str, Any] = {}
    loop["self"] = loop
    other: dict[str, Any] = {}
    other["self"] = other
    assert match.key(loop) == match.key(other)  # a cycle terminates, the same shape gives the same key
    assert match.key([float("nan")]) == match.key([float("nan")])
    assert match.distance(match.key({"a": 1, "b": 2}), match.key({"a": 1, "b": 3})) == 1


def test_differences_name_paths_and_kinds_in_replay_terms() -> None:
    """Paths and kinds as `amfkit.diff` spells them, over what replay compares: what it
    holds equal (an integer and a double, an ECMA and a strict array) is no difference."""
    called = match.key([{"id": 3.0, "tags": MixedArray({"0": "a", "1": "b"}), "x y": [1, 2], "who": TypedObject("com.x.P", {"n": 1})}])
    recorded = match.key([{"id": 3, "tags": ["a", "b"], "x y": [1, 2, 3], "who": {"n": "1"}, "z": True}])
    found = [(d.path, d.kind, d.a, d.b) for d in match.differences(called, recorded)]
    assert found == [
        ("$[0].who", "class", "typed object 'com.x.P'", "object"),
        ("$[0].who.n", "type", "number 1", "string '1'"),
        ('$[0]["x y"]', "items", "2 items", "3 items"),
        ("$[0].z", "missing", "no such member", "boolean true"),
    ]
    assert match.distance(called, recorded) == 4
    assert match.differences(called, recorded, limit=1) == match.differences(called, recorded)[:1]
    assert match.differences(called, called) == [] and match.distance(called, called) == 0


def test_recorded_order_then_the_last_again() -> None:
    replay = Replay([_call(0, "Dice.roll", [6], 3), _call(1, "Dice.roll", [6], 5), _call(2, "Dice.roll", [20], 17)])
    assert [replay.answer("Dice.roll", [6]) for _ in range(4)] == [3, 5, 5, 5]
    assert replay.answer("Dice.roll", [20.0]) == 17


def test_recorded_faults_are_raised() -> None:
    replay = Replay([_call(0, "Bank.pay", [10], fault=("Bank.Poor", "not enough gold", {"have": 3}))])
    with pytest.raises(Fault) as info:
        replay.answer("Bank.pay", [10])
    assert (info.value.code, info.value.message, info.value.details) == ("Bank.Poor", "not enough gold", {"have": 3})


def test_unrecorded_call_names_the_nearest(caplog: pytest.LogCaptureFixture) -> None:
    replay = Replay([_call(0, "User.get", [{"id": 1, "full": True}], "a"), _call(1, "User.get", [{"id": 2, "full": False}], "b"), _call(2, "Shop.list", [], [])])
    with pytest.raises(Fault) as info, caplog.at_level("WARNING", logger="amfkit.replay"):
        replay.answer("User.get", [{"id": 3, "full": True}])
    assert info.value.code == "Replay.NotRecorded"
    assert info.value.details["nearest"][0] == "User.get(object (2 members))"
    # The first place where each nearest call of the target differs, called vs recorded.
    assert info.value.details["differences"] == ["$[0].id: number 3 vs number 1", "$[0].full: boolean true vs boolean false", None]
    assert "User.get(object (2 members)) [called vs recorded: $[0].id: number 3 vs number 1]; " in info.value.message
    assert [c.index for c in replay.nearest("User.get", [{"id": 3, "full": True}])] == [0, 1, 2]
    assert replay.missed == [("User.get", [{"id": 3, "full": True}])]
    assert "not recorded: User.get" in caplog.text
    assert replay.answer("User.get", [{"full": True, "id": 1}]) == "a"  # the next call is still answered


def test_looser_matching() -> None:
    calls = [_call(0, "A.x", [1], "first"), _call(1, "B.y", [], "second"), _call(2, "A.x", [2], "third")]
    by_target = Replay(calls, match="target")
    assert [by_target.answer("A.x", ["anything"]) for _ in range(3)] == ["first", "third", "third"]
    by_order = Replay(calls, match="order")
    assert [by_order.answer("Z.z", []) for _ in range(4)] == ["first", "second", "third", "third"]
    with pytest.raises(ValueError):
        Replay(calls, match="fuzzy")


def test_flex_commands_and_unanswered_calls_are_not_replayed() -> None:
    unanswered = _call(0, "A.x", [1], "lost")
    unanswered.answered = False
    replay = Replay([unanswered])
    with pytest.raises(Fault):
        replay.answer("A.x", [1])

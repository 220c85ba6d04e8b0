"""A small program written against PyAMF's API: a game back end's chores (a player
record in AMF3 and AMF0, a remoting call and its answer, a fault, a Flex collection, a
saved game in a .sol file, a class loader). Only its import lines name amfkit's door;
tests/compat/test_pyamf_program.py runs it as it is and again with `pyamf` (Py3AMF) in
their place, and compares what the two print.
"""

import datetime
import os
import sys
import tempfile

import amfkit.compat.pyamf as pyamf
from amfkit.compat.pyamf import remoting, sol
from amfkit.compat.pyamf.flex import ArrayCollection, ObjectProxy


class Player(object):
    class __amf__:
        static = ("name", "level")

    def __init__(self, name=None, level=0):
        self.name = name
        self.level = level


class Item(object):
    pass


def show(label, value):
    """One line per value: its type's name and its content, in a stable order."""
    print("%s: %s" % (label, describe(value)))


def describe(value, seen=None):
    seen = set() if seen is None else seen
    if id(value) in seen:
        return "<cycle>"
    if isinstance(value, (dict, list)):
        seen = seen | {id(value)}
    name = type(value).__name__
    if isinstance(value, dict):
        inner = ", ".join("%s=%s" % (k, describe(v, seen)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
        return "%s{%s}" % (name, inner)
    if isinstance(value, list):
        return "%s[%s]" % (name, ", ".join(describe(v, seen) for v in value))
    if isinstance(value, Player):
        return "Player(name=%r, level=%r, extra=%s)" % (value.name, value.level, describe(getattr(value, "extra", None), seen))
    if isinstance(value, Item):
        return "Item(%s)" % ", ".join("%s=%r" % kv for kv in sorted(vars(value).items()))
    if value is pyamf.Undefined:
        return "Undefined"
    return repr(value)


def main():
    pyamf.register_class(Player, "com.example.game.Player")

    # A player and a shared inventory, in AMF3 and AMF0: one object, referenced twice.
    inventory = {"gold": 120, "gems": [1, 2, 3]}
    ada = Player("Ada", 7)
    ada.extra = {"inventory": inventory, "again": inventory, "joined": datetime.datetime(2009, 2, 13, 23, 31, 30)}
    for encoding in (pyamf.AMF3, pyamf.AMF0):
        data = pyamf.encode(ada, encoding=encoding).getvalue()
        back = next(pyamf.decode(data, encoding=encoding))
        show("player amf%d" % encoding, back)
        print("shared inventory kept: %s" % (back.extra["inventory"] is back.extra["again"]))
        print("attribute access on an anonymous object: %s" % back.extra.inventory.gold)

    # Several values in one stream, sharing references.
    stream = pyamf.encode("hello", ["hello", inventory], inventory, encoding=pyamf.AMF3)
    values = list(pyamf.decode(stream.getvalue(), encoding=pyamf.AMF3))
    show("stream", values)
    print("references across the stream: %s" % (values[1][1] is values[2]))

    # Undefined, an associative array, a class nobody registered.
    show("undefined", next(pyamf.decode(pyamf.encode(pyamf.Undefined).getvalue())))
    mixed = pyamf.MixedArray({"a": 1, "b": 2})
    show("mixed amf0", next(pyamf.decode(pyamf.encode(mixed, encoding=pyamf.AMF0).getvalue(), encoding=pyamf.AMF0)))
    unknown = b"\n\x13\x1fcom.example.Gem\x05id\x04\x07"
    gem = next(pyamf.decode(unknown))
    print("unknown alias: %s %s %s" % (type(gem).__name__, gem.alias, dict(gem)))

    # A class loader of the program's own gives the class for an alias.
    def loader(alias):
        return Item if alias == "com.example.Gem" else None

    pyamf.register_class_loader(loader)
    item = next(pyamf.decode(unknown))
    show("loaded class", item)
    pyamf.unregister_class_loader(loader)

    # A remoting request, its answer, and a fault.
    request = remoting.Envelope(pyamf.AMF0)
    request["/1"] = remoting.Request("GameService.save", [ada, {"slot": 2}])
    incoming = remoting.decode(remoting.encode(request).getvalue())
    for name, message in incoming:
        print("request %s -> %s with %s" % (name, message.target, describe(message.body)))
    answer = remoting.Envelope(pyamf.AMF0)
    answer["/1"] = remoting.Response({"saved": True, "slot": 2})
    answer["/2"] = remoting.Response(
        remoting.ErrorFault(code="Game.Full", description="no free slot"), status=remoting.STATUS_ERROR
    )
    replies = remoting.decode(remoting.encode(answer).getvalue())
    print("answer /1: status %s, %s" % (replies["/1"].status, describe(replies["/1"].body)))
    fault = replies["/2"].body
    print("answer /2: %s %s %s" % (type(fault).__name__, fault.code, fault.description))

    # Flex collections, AMF3.
    collection = ArrayCollection([ada, "two"])
    proxy = ObjectProxy({"score": 99})
    back_collection, back_proxy = pyamf.decode(pyamf.encode(collection, proxy).getvalue())
    print("collection: %s of %d, first %s" % (type(back_collection).__name__, len(back_collection), describe(back_collection[0])))
    print("proxy: %s, score %s" % (type(back_proxy).__name__, back_proxy._amf_object["score"]))

    # A saved game in a .sol file, AMF0 as Flash Player 8 writes it.
    game = sol.SOL("savegame")
    game["player"] = "Ada"
    game["scores"] = [10, 20]
    game["options"] = {"sound": False}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "savegame.sol")
        game.save(path)
        loaded = sol.load(path)
        print("sol %s: %s (%d bytes)" % (loaded.name, describe(dict(loaded)), os.path.getsize(path)))

    # Once unregistered, a player reads back as a TypedObject keeping its alias.
    data = pyamf.encode(Player("Bob", 1)).getvalue()
    pyamf.unregister_class(Player)
    typed = next(pyamf.decode(data))
    print("unregistered: %s %s %s" % (type(typed).__name__, typed.alias, describe(dict(typed))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The codec experiment's object graphs, after AMFBench's four builders (simple, complex,
static, reference): each returns `(amf_graph, json_graph)`, the typed graph with its
shared references and its plain-dict twin for JSON-family peers (docs/benchmarks.md,
"The codec experiment").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = [
    "BUILDERS",
    "CLASSES",
    "ClassSpec",
    "GRAPH_NAMES",
    "Node",
    "SHARED_STRING",
    "Score",
    "build",
    "build_complex",
    "build_reference",
    "build_simple",
    "build_static",
    "to_plain",
]


class Node:
    """A dynamic typed object (alias `org.amfkit.bench.Node`): members live in `__dict__`."""

    def __init__(self, **members: Any) -> None:
        self.__dict__.update(members)

    def __repr__(self) -> str:
        return f"Node({self.__dict__!r})"


class Score:
    """A typed object with sealed members only (alias `org.amfkit.bench.Score`)."""

    def __init__(self, name: str | None = None, score: float | None = None, rank: int | None = None) -> None:
        self.name = name
        self.score = score
        self.rank = rank

    def __repr__(self) -> str:
        return f"Score(name={self.name!r}, score={self.score!r}, rank={self.rank!r})"


@dataclass(frozen=True)
class ClassSpec:
    """How a benchmark class is registered with each AMF library."""

    alias: str
    static: tuple[str, ...] = ()
    dynamic: bool = True


#: The classes every AMF peer registers before the run (and unregisters after).
CLASSES: dict[type, ClassSpec] = {
    Node: ClassSpec("org.amfkit.bench.Node"),
    Score: ClassSpec("org.amfkit.bench.Score", static=("name", "score", "rank"), dynamic=False),
}

#: The one string object every complex node refers to (AMF3 writes it once, then references).
SHARED_STRING = "a string every node shares"

#: A non-ASCII string (2- and 3-byte UTF-8 sequences) for every complex node.
_NON_ASCII = "ünïcødé ✓ Ωμέγα 東京"


def build_simple(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`n` flat anonymous dicts of scalars (no shared objects)."""
    items = [
        {
            "id": i,
            "count": 10,
            "ratio": i * 0.25,
            "active": i % 2 == 0,
            "label": f"item number {i}",
        }
        for i in range(n)
    ]
    return items, to_plain(items)


def build_complex(n: int) -> tuple[list[Node], list[dict[str, Any]]]:
    """`n` typed nodes mixing scalars, containers, a shared string and a doubly referenced sub-object."""
    nodes = []
    for i in range(n):
        child = Node(number=i)
        nodes.append(
            Node(
                nothing=None,
                tags=["alpha", "beta"],
                attrs={"kind": "leaf"},
                shared=SHARED_STRING,
                number=i,
                ratio=i + 0.5,
                text=_NON_ASCII,
                child=child,
                again=child,
            )
        )
    return nodes, to_plain(nodes)


def build_static(n: int) -> tuple[list[Score], list[dict[str, Any]]]:
    """`n` typed objects of a class registered with sealed members only."""
    scores = [Score(name=f"player {i}", score=i / 3, rank=i) for i in range(n)]
    return scores, to_plain(scores)


def build_reference(n: int, distinct: int = 5) -> tuple[list[Any], list[Any]]:
    """`n` entries that all point at `distinct` objects (mixed typed and anonymous, nested)."""
    shared_list = ["one", "two", "three"]
    pool: list[Any] = []
    for j in range(distinct):
        if j % 2 == 0:
            pool.append(Node(slot=j, name=f"shared node {j}", items=shared_list))
        else:
            pool.append({"slot": j, "name": f"shared dict {j}", "items": shared_list})
    items = [pool[i % distinct] for i in range(n)]
    return items, to_plain(items)


#: Builder name -> builder; the order is the order of the printed report.
BUILDERS: dict[str, Callable[[int], tuple[Any, Any]]] = {
    "simple": build_simple,
    "complex": build_complex,
    "static": build_static,
    "reference": build_reference,
}

GRAPH_NAMES: tuple[str, ...] = tuple(BUILDERS)


def build(name: str, n: int) -> tuple[Any, Any]:
    """Build graph `name` with `n` items; raises `KeyError` for an unknown name."""
    if n < 0:
        raise ValueError("graph size must be >= 0")
    return BUILDERS[name](n)


def to_plain(value: Any) -> Any:
    """A deep copy with typed objects turned into dicts and every shared object copied apart."""
    if isinstance(value, (Node, Score)):
        return {key: to_plain(member) for key, member in vars(value).items()}
    if isinstance(value, dict):
        return {key: to_plain(member) for key, member in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    return value

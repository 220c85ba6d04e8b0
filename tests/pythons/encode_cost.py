"""The AMF3 encoder's cost on this interpreter: the PyAMF speed article's "complex" graph
(10,000 typed nodes, each with a shared string, a list, a dict and a sub-object
referenced twice), best of N runs. `make test-pythons` prints it for every CPython.

    python tests/pythons/encode_cost.py [--nodes 10000] [--runs 30]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import amfkit
from amfkit import amf3


class Node:
    """A dynamic typed object: its members live in its `__dict__`."""

    def __init__(self, **members: object) -> None:
        self.__dict__.update(members)


SHARED = "a string every node shares"
NON_ASCII = "ünïcødé ✓ Ωμέγα 東京"


def complex_graph(n: int) -> list[Node]:
    nodes = []
    for i in range(n):
        child = Node(number=i)
        nodes.append(
            Node(
                nothing=None,
                tags=["alpha", "beta"],
                attrs={"kind": "leaf"},
                shared=SHARED,
                number=i,
                ratio=i + 0.5,
                text=NON_ASCII,
                child=child,
                again=child,
            )
        )
    return nodes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    amfkit.register_class(Node, "org.amfkit.bench.Node")
    graph = complex_graph(args.nodes)
    encoder = amf3.Encoder()
    size = len(encoder.encode(graph))
    best = float("inf")
    for _ in range(args.runs):
        t0 = time.perf_counter()
        encoder.encode(graph)
        best = min(best, time.perf_counter() - t0)
    print(
        f"{platform.python_implementation()} {platform.python_version()}: AMF3 encode of the complex "
        f"graph ({args.nodes} nodes, {size} bytes): best of {args.runs} {best * 1e3:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

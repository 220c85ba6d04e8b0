"""How the gateway's gzip defaults were chosen, kept as a runnable measurement.

    python tests/remoting/test_gateway_gzip.py         # prints the table quoted in docs/gateway.md

For each response (the Amfphp tiles article's rows as AMF0 objects, as AMF3 typed objects
inside a Flex AcknowledgeMessage, and as the comma-separated string, 1 to 5000 rows) it
measures the gzip size and the time to compress and to decompress at a zlib level, and
from them the *break-even link speed*: the bandwidth below which sending the gzipped body
(after compressing and decompressing it) is faster than sending it as is. The tests below
check the facts the defaults rest on, not the timings' exact values.
"""

from __future__ import annotations

import random
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import amfkit
from amfkit.remoting import http as gwhttp
from amfkit.remoting import packet
from amfkit.remoting.messages import AcknowledgeMessage, new_id


class Tile:
    """A typed tile row (registered only while building payloads)."""


def _rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    return [
        {
            "slot_number": i,
            "x": rnd.randrange(800),
            "y": rnd.randrange(600),
            "color": "%06X" % rnd.randrange(1 << 24),
            "rotation": rnd.choice((0, 90, 180, 270)),
        }
        for i in range(n)
    ]


def _response(version: int, value: Any) -> bytes:
    return packet.encode(packet.Envelope(version, bodies=[packet.Body("/1/onResult", "null", value)]))


def payloads(rows: int) -> dict[str, bytes]:
    """The three shapes of a `rows`-row tile answer, as the gateway would send them."""
    data = _rows(rows)
    amfkit.register_class(Tile, "amfkit.test.Tile")
    try:
        typed = []
        for r in data:
            t = Tile()
            t.__dict__.update(r)
            typed.append(t)
        ack = AcknowledgeMessage(body=typed, correlationId=new_id(), clientId=new_id(), headers={"DSId": new_id()})
        flex = _response(3, ack)
    finally:
        amfkit.unregister_class(Tile)
    text = "\n".join(f"{r['slot_number']},{r['x']},{r['y']},{r['color']},{r['rotation']}" for r in data)
    return {"amf3 typed (flex)": flex, "amf0 objects": _response(0, data), "string": _response(0, text)}


def _best(fn: Callable[[], Any], budget_bytes: int) -> float:
    """The best of five runs of the CPU time `fn` takes this thread (compressing is work
    on one thread: time other processes take from it on a busy machine is not counted)."""
    n = max(3, 200_000 // (budget_bytes + 100))
    best = float("inf")
    for _ in range(5):
        t = time.thread_time()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time() - t) / n)
    return best


@dataclass
class Figure:
    size: int
    gzipped: int
    compress_s: float
    decompress_s: float

    @property
    def ratio(self) -> float:
        return self.gzipped / self.size

    @property
    def break_even_mbit(self) -> float:
        """The link speed (Mbit/s) below which gzip makes the answer arrive sooner."""
        saved_bits = (self.size - self.gzipped) * 8
        return max(0.0, saved_bits / (self.compress_s + self.decompress_s) / 1e6)


def measure(data: bytes, level: int = gwhttp.DEFAULT_GZIP_LEVEL) -> Figure:
    z = gwhttp.gzip(data, level)
    return Figure(
        len(data),
        len(z),
        _best(lambda: gwhttp.gzip(data, level), len(data)),
        _best(lambda: zlib.decompress(z, 47), len(data)),
    )


def table(rows_list: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000), level: int = gwhttp.DEFAULT_GZIP_LEVEL) -> str:
    lines = [f"zlib level {level}; break-even = link speed below which gzip pays", ""]
    lines.append(f"{'rows':>5} {'shape':18} {'bytes':>7} {'gzip':>7} {'ratio':>5} {'compress':>9} {'inflate':>8} {'break-even':>11}")
    for rows in rows_list:
        for name, data in payloads(rows).items():
            f = measure(data, level)
            lines.append(
                f"{rows:5d} {name:18} {f.size:7d} {f.gzipped:7d} {f.ratio:5.2f} "
                f"{f.compress_s * 1e6:7.1f}us {f.decompress_s * 1e6:6.1f}us {f.break_even_mbit:6.0f} Mbit/s"
            )
    return "\n".join(lines)


# --- the facts the defaults rest on --------------------------------------------------------


def test_small_answers_gain_little() -> None:
    """Below the threshold a Flex acknowledgement or a short answer shrinks by less than
    a fifth, or grows."""
    for rows in (1, 2):
        for name, data in payloads(rows).items():
            assert len(data) < gwhttp.DEFAULT_GZIP_THRESHOLD
            if name != "amf0 objects":
                assert len(gwhttp.gzip(data)) > 0.8 * len(data), name


def test_answers_over_the_threshold_shrink_by_a_quarter() -> None:
    for rows in (20, 100, 1000):
        for name, data in payloads(rows).items():
            if len(data) >= gwhttp.DEFAULT_GZIP_THRESHOLD:
                assert len(gwhttp.gzip(data)) < 0.75 * len(data), (rows, name)


def test_level_6_saves_little_more_than_level_1() -> None:
    for name, data in payloads(1000).items():
        one = len(gwhttp.gzip(data, 1))
        six = len(gwhttp.gzip(data, 6))
        assert six < one
        # measured: 5-7 % fewer bytes for AMF3 and the string, 25 % for AMF0 objects
        assert six > (0.7 if name == "amf0 objects" else 0.88) * one, name


def test_level_6_costs_much_more_time() -> None:
    data = payloads(1000)["amf3 typed (flex)"]
    one = measure(data, 1).compress_s
    six = measure(data, 6).compress_s
    assert six > 2 * one  # about 7x on the development machine


def test_small_window_gives_the_same_bytes_as_zlib_defaults() -> None:
    """`gzip` sizes zlib's window and memory to the data; the output is no bigger than
    with the defaults (and decodes to the same bytes)."""
    for rows in (10, 50, 200, 1000):
        for name, data in payloads(rows).items():
            z = gwhttp.gzip(data)
            c = zlib.compressobj(1, zlib.DEFLATED, 31)
            default = c.compress(data) + c.flush()
            assert zlib.decompress(z, 31) == data
            assert len(z) <= len(default) * 1.02 + 8, (rows, name)


def test_break_even_link_speed_over_the_threshold() -> None:
    """From 1 KiB up gzip pays on links of 50 Mbit/s and slower (measured: 120 Mbit/s and
    more; the margin absorbs a loaded test machine)."""
    for name, data in payloads(50).items():
        assert len(data) >= gwhttp.DEFAULT_GZIP_THRESHOLD
        assert measure(data).break_even_mbit > 50, name


if __name__ == "__main__":  # pragma: no cover
    print(table())
    print()
    print(table((100, 1000), level=6))

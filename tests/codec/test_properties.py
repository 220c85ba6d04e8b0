"""Property tests: decode(encode(x)) equals x for generated graphs, with shared
references and cycles kept as references, in AMF0 and AMF3."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

import amfkit
from amfkit import amf0, amf3

from graphs import assert_isomorphic

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
    ),
    st.just(amfkit.Undefined),
)

trees = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=5),
    ),
    max_leaves=30,
)


@st.composite
def graphs(draw):
    """A tree, then some of its containers shared or made to contain themselves."""
    root = draw(st.lists(trees, min_size=1, max_size=4))
    containers: list = []

    def collect(v):
        if isinstance(v, (list, dict)):
            containers.append(v)
            for c in v.values() if isinstance(v, dict) else v:
                collect(c)

    collect(root)
    for _ in range(draw(st.integers(0, 4))):
        target = draw(st.sampled_from(containers))
        holder = draw(st.sampled_from(containers))
        if isinstance(holder, list):
            holder.append(target)
        else:
            holder[draw(st.text(min_size=1, max_size=4))] = target
    return root


@settings(max_examples=150)
@given(graphs())
def test_amf3_round_trip_keeps_values_and_sharing(graph):
    back = amf3.decode(amf3.encode(graph))
    assert_isomorphic(_normalise(graph, amf0=False), back)


@settings(max_examples=150)
@given(graphs())
def test_amf0_round_trip_keeps_values_and_sharing(graph):
    back = amf0.decode(amf0.encode(graph))
    assert_isomorphic(_normalise(graph, amf0=True), back)


def _normalise(x, amf0, memo=None):
    """What comes back: AMF3 ints outside 29 bits travel as doubles; AMF0 has only
    doubles, and integral ones (not -0, within 2^53) read as ints."""
    memo = {} if memo is None else memo
    if id(x) in memo:
        return memo[id(x)]
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, int):
        limit = 2**53 if amf0 else 2**28
        return x if -limit <= x < limit or (amf0 and x == limit) else float(x)
    if isinstance(x, float) and amf0:
        if x.is_integer() and abs(x) <= 2**53 and not (x == 0 and str(x).startswith("-")):
            return int(x)
        return x
    if isinstance(x, list):
        out: list = []
        memo[id(x)] = out
        out.extend(_normalise(v, amf0, memo) for v in x)
        return out
    if isinstance(x, dict):
        d: dict = {}
        memo[id(x)] = d
        for k, v in x.items():
            d[k] = _normalise(v, amf0, memo)
        return d
    return x


@settings(max_examples=100)
@given(graphs())
def test_encoding_is_deterministic_and_stable(graph):
    for codec in (amf0, amf3):
        data = codec.encode(graph)
        assert codec.encode(graph) == data
        assert codec.encode(codec.decode(data)) == data


@settings(max_examples=200)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_fail_cleanly(data):
    for codec in (amf0, amf3):
        try:
            codec.Decoder().decode_all(data)
        except amfkit.DecodeError as e:
            assert 0 <= e.offset <= len(data)

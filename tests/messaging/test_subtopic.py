"""Subtopics: what a subscription and a send may name, and which messages a pattern takes
(BlazeDS's `Subtopic` rules)."""

from __future__ import annotations

import doctest
import pickle
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import amfkit.messaging.subtopic as subtopic_module
from amfkit.messaging.subtopic import (
    MAX_SUBTOPIC_LENGTH,
    SEPARATOR,
    WILDCARD,
    Subtopic,
    SubtopicError,
    check_subtopic,
    subtopic_matches,
)


def test_constants():
    assert (SEPARATOR, WILDCARD, MAX_SUBTOPIC_LENGTH) == (".", "*", 1024)


@pytest.mark.parametrize("text", ["chat", "chat.fx", "chat.fx.eur", "a b.c-d", "é.ü", "x" * MAX_SUBTOPIC_LENGTH])
def test_valid_subtopics(text):
    assert check_subtopic(text, pattern=False) == text
    assert check_subtopic(text, pattern=True) == text


@pytest.mark.parametrize("text", ["*", "chat.*", "*.fx", "chat.*.eur", "*.*", "a.*.*"])
def test_wildcards_only_in_patterns(text):
    assert check_subtopic(text, pattern=True) == text
    with pytest.raises(SubtopicError, match="a sent subtopic cannot hold a wildcard"):
        check_subtopic(text, pattern=False)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "cannot be empty"),
        (".", "has an empty token"),
        ("a..b", "has an empty token"),
        (".a", "has an empty token"),
        ("a.", "has an empty token"),
        ("chat.f*", "'*' must be a whole token, found 'f*'"),
        ("*chat", "'*' must be a whole token"),
        ("a.**", "'*' must be a whole token"),
        ("x" * (MAX_SUBTOPIC_LENGTH + 1), f"exceeds the {MAX_SUBTOPIC_LENGTH} allowed"),
    ],
)
def test_invalid_subtopics(text, fragment):
    for pattern in (True, False) if WILDCARD not in text else (True,):
        with pytest.raises(SubtopicError, match=re.escape(fragment)):
            check_subtopic(text, pattern=pattern)


def test_bad_f_star_sent_says_wildcard():
    with pytest.raises(SubtopicError, match="cannot hold a wildcard"):
        check_subtopic("chat.f*", pattern=False)


@pytest.mark.parametrize("value", [None, 1, b"chat", ["chat"], object()])
def test_not_text_is_refused(value):
    with pytest.raises(SubtopicError, match="a subtopic is text"):
        check_subtopic(value, pattern=True)


def test_errors_are_value_errors_with_bounded_messages():
    for text in ("a" * 5000 + "..b", "x." * 400 + "f*", "*" * 900, "y" * 100_000):
        with pytest.raises(ValueError) as caught:
            check_subtopic(text, pattern=True)
        assert isinstance(caught.value, SubtopicError)
        assert len(str(caught.value)) < 250, str(caught.value)


def test_str_subclass_is_taken_as_plain_text():
    class Rude(str):
        def split(self, *args):
            raise RuntimeError("no")

        def __contains__(self, item):
            raise RuntimeError("no")

    checked = check_subtopic(Rude("chat.fx"), pattern=False)
    assert type(checked) is str and checked == "chat.fx"
    assert subtopic_matches(Rude("chat.*"), Rude("chat.fx"))


MATCHES = [
    # (pattern, subtopic, matches)
    ("chat", "chat", True),
    ("chat", "chat.fx", False),
    ("chat.fx", "chat", False),
    ("chat.fx", "chat.fx", True),
    ("chat.fx", "chat.eur", False),
    ("Chat", "chat", False),
    # a trailing * takes one or more tokens (BlazeDS Subtopic.matches)
    ("chat.*", "chat.fx", True),
    ("chat.*", "chat.fx.eur", True),
    ("chat.*", "chat", False),
    ("chat.*", "talk.fx", False),
    ("*", "chat", True),
    ("*", "chat.fx.eur", True),
    ("a.*.*", "a.b.c", True),
    ("a.*.*", "a.b.c.d", True),
    ("a.*.*", "a.b", False),
    # a * elsewhere takes exactly one token
    ("chatrooms.*.ca", "chatrooms.us.ca", True),
    ("chatrooms.*.ca", "chatrooms.us.ma", False),
    ("chatrooms.*.ca", "chatrooms.ca", False),
    ("chatrooms.*.ca", "chatrooms.us.west.ca", False),
    ("chatrooms.*.ca", "chatrooms.us.ca.x", False),
    ("*.fx", "chat.fx", True),
    ("*.fx", "fx", False),
    ("*.fx", "a.b.fx", False),
    ("*.*", "a", False),
    ("*.*", "a.b", True),
    ("*.*", "a.b.c", True),
    # a * in the sent subtopic is plain text (such sends are refused before matching)
    ("chat.fx", "chat.*", False),
    ("chat.*", "chat.*", True),
]


@pytest.mark.parametrize(("pattern", "subtopic", "expected"), MATCHES)
def test_matching(pattern, subtopic, expected):
    assert subtopic_matches(pattern, subtopic) is expected
    assert Subtopic(pattern).matches(subtopic.split(SEPARATOR)) is expected
    assert Subtopic(pattern).matches(tuple(subtopic.split(SEPARATOR))) is expected


@pytest.mark.parametrize(("pattern", "subtopic"), [(None, "a"), ("a", None), (None, None), ("a", 1), (["a"], "a")])
def test_no_subtopic_matches_nothing(pattern, subtopic):
    assert subtopic_matches(pattern, subtopic) is False


def test_subtopic_object():
    pattern = Subtopic("chat.*")
    assert pattern.text == "chat.*" and pattern.tokens == ("chat", "*") and pattern.wildcard
    sent = Subtopic("chat.fx", pattern=False)
    assert not sent.wildcard and sent.tokens == ("chat", "fx")
    assert sent.matches(["chat", "fx"]) and not sent.matches(["chat"])
    assert Subtopic("chat.*") == pattern and hash(Subtopic("chat.*")) == hash(pattern)
    assert pattern != sent and pattern != "chat.*"
    assert repr(pattern) == "Subtopic('chat.*')"
    with pytest.raises(AttributeError):
        pattern.text = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del pattern.tokens
    assert pickle.loads(pickle.dumps(pattern)) == pattern
    with pytest.raises(SubtopicError):
        Subtopic("chat.*", pattern=False)
    with pytest.raises(SubtopicError):
        Subtopic("chat..fx")


def test_module_doctests():
    assert doctest.testmod(subtopic_module).failed == 0


def reference(pattern: str, subtopic: str) -> bool:
    """The rule as a regular expression: `*` is one token, a trailing `*` one or more."""
    tokens = pattern.split(".")
    parts = [r"[^.]+" if t == "*" else re.escape(t) for t in tokens]
    if tokens[-1] == "*":
        parts[-1] = r"[^.]+(?:\.[^.]+)*"
    return re.fullmatch(r"\.".join(parts), subtopic) is not None


TOKEN = st.sampled_from(["a", "b", "chat", "fx"])
SENT = st.lists(TOKEN, min_size=1, max_size=5).map(".".join)
PATTERN = st.lists(st.one_of(TOKEN, st.just("*")), min_size=1, max_size=5).map(".".join)


@given(PATTERN, SENT)
def test_matching_agrees_with_the_rule(pattern, subtopic):
    check_subtopic(pattern, pattern=True)
    check_subtopic(subtopic, pattern=False)
    expected = reference(pattern, subtopic)
    assert subtopic_matches(pattern, subtopic) is expected
    assert Subtopic(pattern).matches(subtopic.split(".")) is expected


@given(st.text(max_size=40), st.booleans())
def test_random_text_raises_only_subtopic_error(text, pattern):
    try:
        checked = check_subtopic(text, pattern=pattern)
    except SubtopicError:
        return
    assert checked == text
    assert subtopic_matches(text, text) is True

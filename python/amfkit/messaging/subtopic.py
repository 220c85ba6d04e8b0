"""Flex message subtopics: dotted names a Producer sends to (`chat.fx.eur`) and the
patterns a Consumer subscribes with (`chat.*`), checked and matched as BlazeDS's
`flex.messaging.services.messaging.Subtopic` does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from .._text import shown

__all__ = [
    "MAX_SUBTOPIC_LENGTH",
    "SEPARATOR",
    "WILDCARD",
    "Subtopic",
    "SubtopicError",
    "check_subtopic",
    "subtopic_matches",
]

#: Separates the tokens of a hierarchical subtopic (BlazeDS's default `subtopic-separator`).
SEPARATOR = "."
#: Stands for one whole token of a pattern; a trailing one for one or more tokens.
WILDCARD = "*"
#: Characters allowed in one subtopic or pattern.
MAX_SUBTOPIC_LENGTH = 1024


class SubtopicError(ValueError):
    """A subtopic or subtopic pattern that BlazeDS would refuse (its error 10554 or 10556)."""


def check_subtopic(text: object, *, pattern: bool) -> str:
    """`text` if it is a valid subtopic; SubtopicError if not.

    With `pattern=True` (a Consumer's subscription) a token may be `*`; with
    `pattern=False` (the subtopic a Producer sends) no `*` is allowed at all.
    """
    plain = _plain_text(text)
    if plain is None:
        raise SubtopicError(f"a subtopic is text, found {shown(text)}")
    text = plain
    if not text:
        raise SubtopicError("a subtopic cannot be empty")
    if len(text) > MAX_SUBTOPIC_LENGTH:
        raise SubtopicError(f"subtopic of {len(text)} characters exceeds the {MAX_SUBTOPIC_LENGTH} allowed")
    tokens = text.split(SEPARATOR)
    if "" in tokens:
        raise SubtopicError(f"subtopic {shown(text)} has an empty token")
    if WILDCARD in text:
        if not pattern:
            raise SubtopicError(f"a sent subtopic cannot hold a wildcard, found {shown(text)}")
        for token in tokens:
            if token != WILDCARD and WILDCARD in token:
                raise SubtopicError(f"'*' must be a whole token, found {shown(token)} in {shown(text)}")
    return text


def _match_tokens(pattern: Sequence[str], subtopic: Sequence[str]) -> bool:
    """Token-wise match; `pattern` may hold wildcards, `subtopic` is taken literally."""
    n = len(pattern)
    m = len(subtopic)
    if m != n and (m < n or pattern[-1] != WILDCARD):
        return False
    for want, have in zip(pattern, subtopic):
        if want != have and want != WILDCARD:
            return False
    return True


def subtopic_matches(pattern: str, subtopic: str) -> bool:
    """Whether a subscription's `pattern` takes a message sent to `subtopic`.

    Both are texts `check_subtopic` accepted (`subtopic` with `pattern=False`). A `*`
    matches exactly one token, except a trailing `*`, which matches one or more: `chat.*`
    matches `chat.fx` and `chat.fx.eur` but not `chat`; `chat.*.eur` matches
    `chat.fx.eur` only. This is BlazeDS's `Subtopic.matches`. A `*` in `subtopic` is
    compared as plain text (BlazeDS never gets one there: it refuses such a send). A
    non-text on either side (None: no subtopic) matches nothing.

        >>> subtopic_matches("chat.*", "chat.fx.eur"), subtopic_matches("chat.*", "chat")
        (True, False)
    """
    pattern_text = _plain_text(pattern)
    subtopic_text = _plain_text(subtopic)
    if pattern_text is None or subtopic_text is None:
        return False
    if WILDCARD not in pattern_text:
        return pattern_text == subtopic_text
    return _match_tokens(pattern_text.split(SEPARATOR), subtopic_text.split(SEPARATOR))


def _plain_text(value: object) -> str | None:
    """`value` as a plain str (a str subclass's own text, whatever it overrides); None if
    it is not text."""
    if type(value) is str:
        return value
    if issubclass(type(value), str):
        return str.__str__(cast(str, value))
    return None


class Subtopic:
    """A checked subtopic or pattern, split once: hold one per subscription and match it
    against each message's tokens (`subtopic.split(SEPARATOR)`, split once per message).

        >>> Subtopic("chat.*").matches(("chat", "fx"))
        True
    """

    __slots__ = ("text", "tokens", "wildcard")

    text: str
    tokens: tuple[str, ...]
    #: Whether any token is `*`.
    wildcard: bool

    def __init__(self, text: object, *, pattern: bool = True) -> None:
        checked = check_subtopic(text, pattern=pattern)
        tokens = tuple(checked.split(SEPARATOR))
        object.__setattr__(self, "text", checked)
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "wildcard", WILDCARD in tokens)

    def matches(self, subtopic_tokens: Sequence[str]) -> bool:
        """Whether a message sent to the subtopic of these tokens matches (as
        `subtopic_matches`)."""
        if not self.wildcard:
            return len(subtopic_tokens) == len(self.tokens) and tuple(subtopic_tokens) == self.tokens
        return _match_tokens(self.tokens, subtopic_tokens)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Subtopic cannot be changed")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a Subtopic cannot be changed")

    def __reduce__(self) -> tuple[type[Subtopic], tuple[str]]:
        return (Subtopic, (self.text,))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Subtopic):
            return self.text == other.text
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Subtopic({shown(self.text)})"

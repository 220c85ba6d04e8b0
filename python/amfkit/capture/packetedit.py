"""Edited packet text back into bytes: `reencode(text, original)` takes the JSON form of
a packet (`packettext.to_json`) after a person edited it, and `assign(original,
["bodies[0].value[0].name=\\"Bob\\""])` sets values by path (`amfkit.valuepath`'s
syntax, over the JSON form).

Only what changed is written anew. Unchanged text gives the original bytes. A part
(header or body) whose value did not change keeps its bytes; a changed value is read
losslessly (`_amfkit.decode_values`, the AVM+ switch and the writer's encoding choices
kept), edited in place where the JSON differs, and written back the way it was read, so
one changed value changes only its own bytes (and the part's length field, when that
field held the real length). A value whose bytes the lossless reader cannot give back
unchanged is written as amfkit writes it, its values the same: an AMF0 container that
switches to AMF3 inside, and a Flex message (a class amfkit registers, whose traits a
lossless read does not keep).
Headers and bodies may be removed or added (written as amfkit writes them).
"""

from __future__ import annotations

import array
import json
import struct
from typing import Any

from .. import _amfkit
from .._text import clip, error_text
from ..jsonio import JSONInputError, from_json
from .calls import Limits
from .packettext import Part, json_doc, layout

__all__ = ["EditError", "assign", "reencode"]

#: The JSON form's own keys for values JSON has no type for (docs/cli.md, "JSON").
_TAGS = ("__bytes__", "__date__", "__float__", "__xml__", "__xmldocument__", "__ref__", "__dictionary__")
_META = ("__alias__", "__sealed__", "__dynamic__")


class EditError(ValueError):
    """Edited text that does not describe a packet; the message is one line."""


def reencode(text: str, original: bytes, *, limits: Limits = Limits()) -> bytes:
    """The bytes of the packet `text` describes (the JSON form of `original`, edited)."""
    try:
        edited = json.loads(text)
    except ValueError as e:
        raise EditError(f"not valid JSON: {e}") from None
    return _rebuild(edited, original, limits)


def assign(original: bytes, assignments: list[str], *, limits: Limits = Limits()) -> bytes:
    """`original` with each `PATH=JSON` of `assignments` set (paths over the JSON form:
    `bodies[0].value[0].body[1]`, `headers[0].value.userid`)."""
    from .. import valuepath
    from ..jsonio import dumps

    text_before = dumps(json_doc(_layout(original, limits)), indent=None)
    doc = json.loads(text_before)
    for text in assignments:
        try:
            steps, value_text = valuepath.parse_assignment(text)
            value = json.loads(value_text)
            valuepath.set_value(doc, steps, value)
        except valuepath.PathError as e:
            raise EditError(str(e)) from None
        except ValueError as e:
            raise EditError(f"{clip(text, 80)}: the value is not JSON ({e})") from None
    return _rebuild(doc, original, limits)


def _rebuild(edited: Any, original: bytes, limits: Limits) -> bytes:
    from ..jsonio import dumps

    p = _layout(original, limits)
    before = json.loads(dumps(json_doc(p), indent=None))
    if edited == before:
        return original
    if not isinstance(edited, dict) or not isinstance(edited.get("headers"), list) or not isinstance(edited.get("bodies"), list):
        raise EditError('the text must be an object with "version", "headers" and "bodies"')
    version = edited.get("version")
    if version not in (0, 1, 3):
        raise EditError(f"version must be 0, 1 or 3, not {clip(json.dumps(version), 40)}")
    try:
        converted = from_json(edited)
    except JSONInputError as e:
        raise EditError(str(e)) from None
    out = bytearray(struct.pack(">HH", version, len(edited["headers"])))
    for i, new in enumerate(edited["headers"]):
        old = p.headers[i] if i < len(p.headers) and version == p.version else None
        name, mu = _field(new, "name", str, f"headers[{i}]"), _field(new, "must_understand", bool, f"headers[{i}]")
        value = _value(old, before["headers"][i]["value"] if old else None, new, converted["headers"][i]["value"], original, version, limits, f"headers[{i}]")
        out += _utf(name) + bytes([1 if mu else 0]) + _length(old, value) + value
    out += struct.pack(">H", len(edited["bodies"]))
    for i, new in enumerate(edited["bodies"]):
        old = p.bodies[i] if i < len(p.bodies) and version == p.version else None
        target, response = _field(new, "target", str, f"bodies[{i}]"), _field(new, "response", str, f"bodies[{i}]")
        value = _value(old, before["bodies"][i]["value"] if old else None, new, converted["bodies"][i]["value"], original, version, limits, f"bodies[{i}]", body=True)
        out += _utf(target) + _utf(response) + _length(old, value) + value
    return bytes(out)


def _layout(original: bytes, limits: Limits) -> Any:
    try:
        return layout(original, limits)
    except ValueError as e:  # DecodeError
        raise EditError(f"the original body is not an AMF packet: {error_text(e)}") from None


def _field(part: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(part, dict) or "value" not in part:
        raise EditError(f"{where} must be an object with {key!r} and 'value'")
    v = part.get(key)
    if not isinstance(v, kind):
        raise EditError(f"{where}.{key} must be a {'string' if kind is str else 'boolean'}")
    return v


def _utf(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 0xFFFF:
        raise EditError(f"a name of {len(raw)} bytes is longer than a packet allows (65535)")
    return struct.pack(">H", len(raw)) + raw


def _length(old: Part | None, value: bytes) -> bytes:
    """The length field: the real length, unless the original field held something else
    (0, 1, -1: what writers put there), which is kept."""
    if old is not None and old.length != old.end - old.start:
        return struct.pack(">I", old.length)
    return struct.pack(">I", len(value) if len(value) <= 0xFFFFFFFF else 0xFFFFFFFF)


def _value(old: Part | None, j0: Any, part: dict[str, Any], new: Any, original: bytes, version: int, limits: Limits, where: str, *, body: bool = False) -> bytes:
    """The bytes of a part's value: the original's when unchanged, else the original
    value edited where its JSON changed and written back losslessly."""
    j1 = part["value"]
    if old is not None and j0 == j1:
        return original[old.start : old.end]
    if old is not None:
        patched = _lossless(original[old.start : old.end], j0, j1, new, limits)
        if patched is not None:
            return patched
    # A new part, or a value the lossless reader cannot give back: amfkit's way, the
    # packet writer's own (AMF3 behind the switch in the bodies of a version-3 packet).
    try:
        if body:
            # version, header count, body count, target, response, length
            data = _amfkit.encode_packet(version, [], [("", "", new)])
            return data[2 + 2 + 2 + 2 + 2 + 4 :]
        # version, header count, name, must-understand, length ... body count
        data = _amfkit.encode_packet(version, [("", False, new)], [])
        return data[2 + 2 + 2 + 1 + 4 : -2]
    except Exception as e:  # EncodeError, or a value a hook refuses
        raise EditError(f"{where}: {error_text(e)}") from None


def _lossless(raw: bytes, j0: Any, j1: Any, new: Any, limits: Limits) -> bytes | None:
    """`raw` (one part's value) with the edits from `j0` to `j1` applied, written with
    the choices it was read with; None when the lossless reader does not give `raw`
    back as it is."""
    prefix = b""
    switch = False
    stream = False
    body = raw
    if raw[:1] == b"\x11":  # the AVM+ switch: one AMF3 value
        switch = True
    elif raw[:1] == b"\x0a" and len(raw) > 5 and raw[5:6] == b"\x11":
        # A strict array of switched items (Flex, Py3AMF), one AMF3 context: a stream.
        prefix, body, stream, switch = raw[:5], raw[5:], True, True
    try:
        value, shape, inline, many = _amfkit.decode_values(
            body, 0, allow_stream=stream, max_depth=limits.max_depth, max_objects=limits.max_objects, max_size=limits.max_size
        )
        if stream and not many:
            value = [value]
        if _amfkit.encode_values(value, 0, stream=stream, layout=shape, inline_strings=inline, switch=switch) != body:
            return None
        holder = [value]  # for a stream, the JSON's array holds the stream's values
        _patch(holder, 0, j0, j1, new)
        value = holder[0]
        if stream and not isinstance(value, list):
            return None
        out = _amfkit.encode_values(value, 0, stream=stream, layout=shape, inline_strings=inline, switch=switch)
    except EditError:
        raise
    except Exception:
        return None
    if stream:
        prefix = prefix[:1] + struct.pack(">I", len(value))
    return prefix + out


def _is_tagged(j: Any) -> bool:
    return isinstance(j, dict) and "__alias__" not in j and any(t in j for t in _TAGS)


def _patch(holder: Any, key: Any, j0: Any, j1: Any, new: Any) -> None:
    """Change `holder[key]` (a value read losslessly, whose JSON was `j0`) so that its
    JSON is `j1`; `new` is `j1` converted (`jsonio.from_json`), whose parts replace what
    changed. Containers are edited in place, so they keep how they were written."""
    if j0 == j1:
        return
    old = _get(holder, key)
    if isinstance(j0, dict) and isinstance(j1, dict) and not _is_tagged(j0) and not _is_tagged(j1):
        if any(j0.get(m) != j1.get(m) for m in _META) or not _has_members(old):
            _set(holder, key, new)
            return
        names = _member_names(old)
        for k in [k for k in j0 if k not in _META and k not in j1]:
            _del_member(old, names.get(k, k))
        for k, v1 in j1.items():
            if k in _META:
                continue
            if k not in j0:
                _set_member(old, names.get(k, k), new[k])
            elif j0[k] != v1:
                _patch(_Members(old, names), k, j0[k], v1, new[k])
        return
    if isinstance(j0, list) and isinstance(j1, list) and isinstance(old, (list, array.array)):
        if len(j0) == len(j1):
            for i, (a, b) in enumerate(zip(j0, j1)):
                _patch(old, i, a, b, new[i])
            return
        items = [_same_kind(old[i] if i < len(old) else None, v) for i, v in enumerate(new)]
        if isinstance(old, array.array):
            old[:] = array.array(old.typecode, items)
        else:
            old[:] = items
        return
    _set(holder, key, _same_kind(old, new))


class _Members:
    """An object's members by their JSON names, as `_patch` reaches a list's items."""

    __slots__ = ("obj", "names")

    def __init__(self, obj: Any, names: dict[str, Any]) -> None:
        self.obj = obj
        self.names = names


def _get(holder: Any, key: Any) -> Any:
    if isinstance(holder, _Members):
        obj, k = holder.obj, holder.names.get(key, key)
        return obj[k] if isinstance(obj, dict) else getattr(obj, k)
    return holder[key]


def _set(holder: Any, key: Any, value: Any) -> None:
    if isinstance(holder, _Members):
        _set_member(holder.obj, holder.names.get(key, key), value)
    else:
        holder[key] = value


def _has_members(obj: Any) -> bool:
    return isinstance(obj, dict) or (hasattr(obj, "__dict__") and not isinstance(obj, (list, type)))


def _member_names(obj: Any) -> dict[str, Any]:
    """JSON member name -> the key the object holds (an AS2 array's int keys)."""
    from ..jsonio import _key_text

    if isinstance(obj, dict):
        return {_key_text(k): k for k in obj}
    return {k: k for k in vars(obj)}


def _set_member(obj: Any, key: Any, value: Any) -> None:
    if isinstance(obj, dict):
        obj[key] = _same_kind(obj.get(key), value)
    else:
        setattr(obj, key, _same_kind(getattr(obj, key, None), value))


def _del_member(obj: Any, key: Any) -> None:
    if isinstance(obj, dict):
        obj.pop(key, None)
    elif hasattr(obj, key):
        delattr(obj, key)


def _same_kind(old: Any, new: Any) -> Any:
    """A number put where a double was stays a double (JSON writes 2.0 as 2.0, but a
    person may type 2)."""
    if isinstance(old, float) and type(new) is int:
        return float(new)
    return new


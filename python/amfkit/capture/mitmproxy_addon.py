"""amfkit's mitmproxy addon: `mitmproxy -s "$(amfkit mitmproxy-addon)"` (docs/capture.md,
"mitmproxy").

- Content view "AMF" for `application/x-amf` bodies: the packet as `amfkit decode` prints
  it (version, headers, bodies, Flex messages by their class).
- Content view "AMF JSON": the packet's JSON form. On mitmproxy 12 and later it is
  interactive: edit the text and mitmproxy writes the bytes back (`reencode`).
- Commands, for mitmproxy 11 (whose views cannot be edited) and scripts:
  `amf.set FLOWS request|response PATH=JSON...` sets values by path over the JSON form
  (`bodies[0].value[0].name="Bob"`), `amf.json FLOWS request|response` logs the JSON
  form, `amf.edit FLOWS request|response` opens it in mitmproxy console's editor.
- Option `amf_set` (`--set amf_set='request:bodies[0].value[0]="x"'`, repeatable): set
  those values in every AMF request or response passing through.

Unchanged text gives the same bytes; one changed value changes only that value's bytes
(`amfkit.capture.packetedit`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from mitmproxy import command, ctx
from mitmproxy import contentviews as _views
from mitmproxy import flow as mflow
from mitmproxy.hooks import UpdateHook

from amfkit.capture.packetedit import EditError, assign, reencode
from amfkit.capture.packettext import RENDER, to_json

logger = logging.getLogger("amfkit.mitmproxy")

AMF_TYPE = "application/x-amf"


def _is_amf(content_type: str | None) -> bool:
    return bool(content_type) and content_type.split(";")[0].strip().lower() == AMF_TYPE  # type: ignore[union-attr]


def _message(flow: Any, part: str) -> Any:
    if part not in ("request", "response"):
        raise ValueError(f"part must be request or response, not {part!r}")
    message = flow.request if part == "request" else flow.response
    if message is None:
        raise ValueError(f"flow {flow.id} has no {part}")
    return message


def set_values(message: Any, assignments: Sequence[str]) -> None:
    """Set `PATH=JSON` values in an HTTP message's AMF body (its content coding kept)."""
    message.content = assign(message.content or b"", list(assignments))


def apply_text(message: Any, text: str) -> None:
    """Replace an HTTP message's AMF body with the bytes edited JSON text describes."""
    message.content = reencode(text, message.content or b"")


#: mitmproxy 12's editable view base (None on 11, whose views cannot be edited).
_INTERACTIVE: Any = getattr(_views, "InteractiveContentview", None)
_CONTENTVIEW: Any = getattr(_views, "Contentview", None)

if _INTERACTIVE is not None:

    class AMFView(_CONTENTVIEW):
        name = "AMF"

        def prettify(self, data: bytes, metadata: Any) -> str:
            return RENDER(data)

        def render_priority(self, data: bytes, metadata: Any) -> float:
            return 2.0 if data and _is_amf(metadata.content_type) else -1

    class AMFJSONView(_INTERACTIVE):
        name = "AMF JSON"
        syntax_highlight = "yaml"

        def prettify(self, data: bytes, metadata: Any) -> str:
            return to_json(data)

        def reencode(self, prettified: str, metadata: Any) -> bytes:
            original = metadata.original_data
            if original is None and metadata.http_message is not None:
                original = metadata.http_message.content
            return reencode(prettified, original or b"")

        def render_priority(self, data: bytes, metadata: Any) -> float:
            return 0.5 if data and _is_amf(metadata.content_type) else -1

    VIEWS: list[Any] = [AMFView(), AMFJSONView()]
    EDITABLE = True
else:  # mitmproxy 11: read-only views
    from mitmproxy.contentviews import View

    # Read from the module: mitmproxy 12 (CPython 3.12 and newer) has no format_text, and
    # mypy checks this branch against whichever mitmproxy is installed.
    format_text: Any = getattr(_views, "format_text")

    class AMFLegacyView(View):
        name = "AMF"

        def __call__(self, data: bytes, **metadata: Any) -> Any:
            return "AMF", format_text(RENDER(data))

        def render_priority(self, data: bytes, *, content_type: str | None = None, **metadata: Any) -> float:
            return 2.0 if data and _is_amf(content_type) else 0

    class AMFJSONLegacyView(View):
        name = "AMF JSON"

        def __call__(self, data: bytes, **metadata: Any) -> Any:
            return "AMF JSON", format_text(to_json(data))

        def render_priority(self, data: bytes, *, content_type: str | None = None, **metadata: Any) -> float:
            return 0.5 if data and _is_amf(content_type) else 0

    VIEWS = [AMFLegacyView(), AMFJSONLegacyView()]
    EDITABLE = False


class AMFAddon:
    """The commands and the `amf_set` option."""

    def load(self, loader: Any) -> None:
        from mitmproxy import contentviews

        for view in VIEWS:
            contentviews.add(view)
        loader.add_option(
            "amf_set",
            Sequence[str],
            [],
            "Set values in AMF bodies passing through: 'request:PATH=JSON' or 'response:PATH=JSON' "
            "(paths over the JSON form, e.g. bodies[0].value[0]). amfkit.",
        )

    def done(self) -> None:
        from mitmproxy import contentviews

        for view in VIEWS:
            try:
                contentviews.remove(view)
            except (ValueError, StopIteration, AssertionError):
                pass

    def _rules(self, part: str) -> list[str]:
        out = []
        for rule in ctx.options.amf_set:
            where, sep, assignment = rule.partition(":")
            if sep and where == part:
                out.append(assignment)
        return out

    def _rewrite(self, flow: Any, part: str) -> None:
        rules = self._rules(part)
        message = getattr(flow, part, None)
        if not rules or message is None or not _is_amf(message.headers.get("content-type")):
            return
        try:
            set_values(message, rules)
        except (EditError, ValueError) as e:
            logger.warning("amf_set: %s %s: %s", part, flow.request.pretty_url, e)

    def request(self, flow: Any) -> None:
        self._rewrite(flow, "request")

    def response(self, flow: Any) -> None:
        self._rewrite(flow, "response")


class AMFCommands:
    """amf.set, amf.json and amf.edit."""

    @command.command("amf.set")
    def set(self, flows: Sequence[mflow.Flow], part: str, assignments: Sequence[str]) -> None:
        """Set PATH=JSON values in the request or response AMF body of flows."""
        for f in flows:
            try:
                set_values(_message(f, part), assignments)
            except (EditError, ValueError) as e:
                logger.warning("amf.set: %s", e)
                continue
            ctx.master.addons.trigger(UpdateHook([f]))

    @command.command("amf.json")
    def json(self, flows: Sequence[mflow.Flow], part: str) -> None:
        """Log the JSON form of the request or response AMF body of flows."""
        for f in flows:
            logger.info("%s", to_json(_message(f, part).content or b""))

    @command.command("amf.edit")
    def edit(self, flows: Sequence[mflow.Flow], part: str) -> None:
        """Edit the JSON form of the AMF body in mitmproxy console's editor; the edited
        text is written back as bytes."""
        spawn = getattr(ctx.master, "spawn_editor", None)
        if spawn is None:
            raise ValueError("amf.edit needs mitmproxy's console (use amf.set elsewhere)")
        for f in flows:
            message = _message(f, part)
            text = spawn(to_json(message.content or b""))
            if text:
                apply_text(message, text if isinstance(text, str) else text.decode("utf-8"))
                ctx.master.addons.trigger(UpdateHook([f]))


addons = [AMFAddon(), AMFCommands()]

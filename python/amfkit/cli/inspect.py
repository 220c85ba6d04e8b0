"""`amfkit inspect CAPTURE...`: the AMF calls of captures (HAR, mitmproxy flows, pcap),
in order, paired with their answers, as a tree or JSON, filtered, summed up per target,
or (`--packets`) each exchange's packets as `amfkit decode` prints them (docs/capture.md)."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from typing import Any, TextIO

__all__ = ["add_parser", "cmd_inspect"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "inspect",
        help="list the AMF calls of a capture (HAR, mitmproxy flows, pcap/pcapng)",
        description=(
            "Print every AMF call of the capture files, in order: time, URL, HTTP status, "
            "target, response URI, arguments and result or fault (batches split into calls, "
            "Flex messages paired with their answers by messageId/correlationId). The kind "
            "of file is told by its content. What cannot be read is named in one line on "
            "standard error (exit 0 when some calls were read)."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="HAR, mitmproxy flow or pcap/pcapng files")
    p.add_argument("--json", action="store_true", help="print JSON (one object with the calls and problems)")
    p.add_argument("--target", metavar="GLOB", help="only calls whose target matches, e.g. 'UserService.*' or 'command *'")
    p.add_argument("--url", metavar="TEXT", help="only calls whose URL contains TEXT (or matches it as a glob)")
    p.add_argument("--status", metavar="S", help="only calls with this HTTP status (200, 5xx) or outcome (ok, fault, unanswered)")
    p.add_argument("--summary", action="store_true", help="print calls, faults and sizes per target instead of the calls")
    p.add_argument(
        "--packets",
        action="store_true",
        help="print each exchange's request and response packets as amfkit decode prints them, instead of the calls",
    )
    p.add_argument("--max-string", type=int, default=120, metavar="N", help="in the tree, cut strings after N characters (default 120)")
    p.set_defaults(func=cmd_inspect)


def cmd_inspect(args: argparse.Namespace) -> int:
    from .errors import CLIError, import_amfkit

    if args.packets and (args.json or args.summary):
        raise CLIError("--packets prints packets as text: it goes with neither --json nor --summary")
    import_amfkit()
    from .. import capture

    found = capture.Calls()
    for path in args.files:
        try:
            exchanges = capture.read(path)
        except capture.CaptureError as e:
            raise CLIError(str(e)) from None
        part = capture.calls_of(exchanges)
        for c in part.calls:
            c.index = len(found.calls)
            found.calls.append(c)
        found.problems += part.problems
        found.notes += part.notes
        found.skipped += part.skipped
        found.exchanges += part.exchanges
    calls = found.filtered(target=args.target, url=args.url, status=args.status)
    out = sys.stdout
    if args.json:
        _json(out, found, calls, summary=args.summary)
    elif args.summary:
        _summary_text(out, found, calls)
    elif args.packets:
        _packets(out, found, calls, args.max_string)
    else:
        _tree(out, found, calls, args.max_string)
    for note in found.notes:
        print(f"amfkit inspect: note: {note}", file=sys.stderr)
    for problem in found.problems:
        print(f"amfkit inspect: {problem}", file=sys.stderr)
    out.flush()
    if not found.calls and found.problems:
        return 1
    return 0


def _when(t: float | None) -> str:
    if t is None:
        return "-"
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sizes(call: Any) -> tuple[int, int]:
    ex = call.exchange
    return len(ex.request_body or b""), len(ex.response_body or b"")


def _tree(out: TextIO, found: Any, calls: list[Any], max_string: int) -> None:
    from ..tree import iter_lines

    out.write(f"# {len(calls)} of {len(found.calls)} AMF calls in {found.exchanges} HTTP exchanges\n")
    for c in calls:
        ex = c.exchange
        status = ex.status if ex.status is not None else "no answer"
        sent, got = _sizes(c)
        batch = f", body {c.response_uri} of {c.batch}" if c.batch > 1 else f", {c.response_uri}"
        out.write(f"#{c.index} {_when(ex.time)} {ex.method} {ex.url} {status} AMF{c.version}{batch}, {sent} B -> {got} B\n")
        ids = ""
        if c.message_id is not None:
            ids = f"  messageId {c.message_id}" + (f", correlationId {c.correlation_id}" if c.correlation_id else "")
        out.write(f"  {c.target} ({c.kind}){ids}\n")
        for i, a in enumerate(c.arguments):
            for line in iter_lines(a, version=c.version, label=f"[{i}]", max_string=max_string):
                out.write(f"    {line}\n")
        if c.fault is not None:
            code, message, details = c.fault
            out.write(f"  fault {code}: {message}\n")
        elif c.answered:
            for line in iter_lines(c.result, version=c.version, label="result", max_string=max_string):
                out.write(f"  {line}\n")
        else:
            out.write("  (no answer in the capture)\n")


def _packets(out: TextIO, found: Any, calls: list[Any], max_string: int) -> None:
    """Each exchange holding one of `calls`, once, in order: a line naming it, then its
    request and its response packet as `amfkit decode` prints them (read as the capture
    was: `amfkit.capture.packettext.render`, the mitmproxy view's text)."""
    from ..capture.packettext import render

    exchanges: dict[int, tuple[Any, list[Any]]] = {}
    for c in calls:
        exchanges.setdefault(id(c.exchange), (c.exchange, []))[1].append(c)
    out.write(f"# {len(exchanges)} HTTP exchanges holding {len(calls)} of {len(found.calls)} AMF calls\n")
    for ex, held in exchanges.values():
        status = ex.status if ex.status is not None else "no answer"
        which = ", ".join(f"#{c.index}" for c in held)
        out.write(f"## {_when(ex.time)} {ex.method} {ex.url} {status}: call{'s' if len(held) > 1 else ''} {which}\n")
        sent, got = held[0].packets or (None, None)
        for part, data in (("request", sent), ("response", got)):
            if data is None:
                out.write(f"### {part}: none read\n")
                continue
            out.write(f"### {part}\n")
            try:
                text = render(data, max_string=max_string)
            except ValueError as e:  # pragma: no cover - the bytes were read as a packet just before
                text = f"# cannot be printed: {e}"
            out.write(text + "\n")


def _per_target(calls: list[Any]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for c in calls:
        row = rows.setdefault(c.target, {"target": c.target, "calls": 0, "faults": 0, "unanswered": 0, "request_bytes": 0, "response_bytes": 0})
        row["calls"] += 1
        row["faults"] += c.outcome == "fault"
        row["unanswered"] += c.outcome == "unanswered"
        sent, got = _sizes(c)
        # A batch's packet is shared by its calls: each carries its share.
        row["request_bytes"] += sent // c.batch
        row["response_bytes"] += got // c.batch
    return sorted(rows.values(), key=lambda r: (-r["calls"], r["target"]))


def _summary_text(out: TextIO, found: Any, calls: list[Any]) -> None:
    rows = _per_target(calls)
    width = max([len(r["target"]) for r in rows] + [6])
    out.write(f"# {len(calls)} AMF calls, {sum(r['faults'] for r in rows)} faults, {found.exchanges} HTTP exchanges ({found.skipped} not AMF)\n")
    out.write(f"{'target':<{width}}  {'calls':>6}  {'faults':>6}  {'no answer':>9}  {'sent B':>9}  {'received B':>10}\n")
    for r in rows:
        out.write(f"{r['target']:<{width}}  {r['calls']:>6}  {r['faults']:>6}  {r['unanswered']:>9}  {r['request_bytes']:>9}  {r['response_bytes']:>10}\n")


def _json(out: TextIO, found: Any, calls: list[Any], *, summary: bool) -> None:
    from ..jsonio import iter_json

    doc: dict[str, Any] = {"exchanges": found.exchanges, "not_amf": found.skipped, "problems": list(found.problems), "notes": list(found.notes)}
    if summary:
        doc["targets"] = _per_target(calls)
    else:
        doc["calls"] = [_call_json(c) for c in calls]
    for piece in iter_json(doc, indent=2):
        out.write(piece)
    out.write("\n")


def _call_json(c: Any) -> dict[str, Any]:
    ex = c.exchange
    sent, got = _sizes(c)
    item: dict[str, Any] = {
        "index": c.index,
        "time": _when(ex.time) if ex.time is not None else None,
        "method": ex.method,
        "url": ex.url,
        "status": ex.status,
        "version": c.version,
        "kind": c.kind,
        "target": c.target,
        "response_uri": c.response_uri,
        "batch": c.batch,
        "message_id": c.message_id,
        "correlation_id": c.correlation_id,
        "arguments": c.arguments,
        "outcome": c.outcome,
        "request_bytes": sent,
        "response_bytes": got,
        "source": ex.source,
    }
    if c.fault is not None:
        code, message, details = c.fault
        item["fault"] = {"code": code, "message": message, "details": details}
    elif c.answered:
        item["result"] = c.result
    return item

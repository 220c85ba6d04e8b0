"""What amfkit reads from a real recording (tests/capture/conftest.py): the same calls
from the HAR file, the mitmproxy flows and the pcap, in the client's order, paired with
their answers; the pcap's requests are the ones tshark sees in the same file; and each
capture replayed answers the same client (with fresh ids) as the server did."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

import capture_client
from amfkit import capture
from amfkit.remoting import Gateway
from servers import HOST

KINDS = ["har", "flows", "pcap"]

#: The targets of the client's session, in order (tests/support/capture_client.py).
EXPECTED_TARGETS = [t for _, t, _ in capture_client.NETCONNECTION_CALLS] + [t for t, _ in capture_client.BATCH] + [
    "command ping",
    "EchoService.echo",
    "EchoService.fail",
]


def _path(recording: Any, kind: str) -> Path:
    return {"har": recording.har, "flows": recording.flows, "pcap": recording.pcap}[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_every_call_read_in_order_and_paired(recording: Any, kind: str) -> None:
    found = capture.calls_of(capture.read(_path(recording, kind)))
    assert found.problems == []
    assert [c.target for c in found.calls] == EXPECTED_TARGETS
    assert all(c.answered for c in found.calls)
    outcomes = [(c.outcome, c.result if c.fault is None else (c.fault[0], c.fault[1])) for c in found.calls]
    seen = recording.seen
    expected = seen["calls"] + seen["batch"] + [("ok", None)] + seen["flex"]
    assert outcomes == expected
    batch = found.calls[len(capture_client.NETCONNECTION_CALLS) : len(capture_client.NETCONNECTION_CALLS) + 3]
    assert [c.response_uri for c in batch] == ["/1", "/2", "/3"] and {c.batch for c in batch} == {3}
    flex = found.calls[-3:]
    assert all(c.message_id and c.message_id == c.correlation_id for c in flex)
    assert [c.version for c in found.calls[:2]] == [0, 0]


def test_the_three_captures_agree(recording: Any) -> None:
    reads = [capture.calls_of(capture.read(_path(recording, k))).calls for k in KINDS]
    shapes = [[(c.target, c.response_uri, c.message_id, c.outcome) for c in calls] for calls in reads]
    assert shapes[0] == shapes[1] == shapes[2]


def test_pcap_requests_are_those_tshark_sees(recording: Any) -> None:
    tshark = shutil.which("tshark")
    assert tshark, "tshark is needed (make system-deps installs it)"
    out = subprocess.run(
        [tshark, "-r", str(recording.pcap), "-o", "tcp.reassemble_out_of_order:TRUE", "-Y", "http.request",
         "-T", "fields", "-e", "tcp.srcport", "-e", "http.request.method", "-e", "http.request.uri", "-e", "http.content_length_header"],
        capture_output=True, check=True, text=True,
    ).stdout.split("\n")
    theirs = [tuple(line.split("\t")[1:]) for line in out if line.strip()]
    ours = capture.read(recording.pcap)
    mine = [(e.method, e.url.split(str(recording.server_port), 1)[1], e.header("content-length")) for e in ours]
    assert mine == theirs
    assert all(len(e.request_body or b"") == int(e.header("content-length") or 0) for e in ours)
    statuses = subprocess.run(
        [tshark, "-r", str(recording.pcap), "-Y", "http.response", "-T", "fields", "-e", "http.response.code"],
        capture_output=True, check=True, text=True,
    ).stdout.split()
    assert [str(e.status) for e in ours] == statuses


@pytest.fixture
def replayed(request: pytest.FixtureRequest, recording: Any) -> Iterator[str]:
    gateway = Gateway.from_capture(_path(recording, request.param))
    with _serve(gateway) as url:
        yield url


class _serve:
    """A uvicorn server in a thread on a free port (stopped on exit)."""

    def __init__(self, app: Any) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=0, log_level="warning"))

    def __enter__(self) -> str:
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the replay server did not start"
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://{HOST}:{port}/gateway"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.mark.parametrize("replayed", KINDS, indirect=True)
def test_replay_answers_the_client_again(recording: Any, replayed: str, caplog: pytest.LogCaptureFixture) -> None:
    # The client runs again with fresh messageIds (capture_client checks every
    # correlationId against them, and the DSId the replay gave), then makes a call
    # nobody recorded, then a recorded one.
    with caplog.at_level("WARNING", logger="amfkit.replay"):
        again = capture_client.run(replayed, extra=[("EchoService.echo", ["never recorded"]), ("EchoService.echo", [[1, "two", 3.0]])])
    seen = recording.seen
    assert again["calls"] == seen["calls"]
    assert again["batch"] == seen["batch"]
    assert again["flex"] == seen["flex"]
    assert again["dsid_given"]
    (code, message), after = again["extra"][0][1], again["extra"][1]
    assert again["extra"][0][0] == "fault" and code == "Replay.NotRecorded"
    assert message.startswith("EchoService.echo with these arguments was not recorded; nearest recorded: EchoService.echo(")
    assert after == ("ok", [1, "two", 3.0])
    assert any("not recorded: EchoService.echo(string 'never recorded')" in r.getMessage() for r in caplog.records)

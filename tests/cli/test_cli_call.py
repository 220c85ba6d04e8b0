"""`amfkit call` against the demo gateway over a real uvicorn server."""

from __future__ import annotations

import json
import subprocess

import pytest

from servers import serve_asgi


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory):
    from amfkit.demo.app import build

    gateway = build(tmp_path_factory.mktemp("demo") / "tiles.sqlite3")
    with serve_asgi(gateway) as server:
        yield server.url + "/gateway"


def run(python_exe, python_env, *args):
    return subprocess.run([python_exe, "-m", "amfkit", "call", *args], env=python_env, capture_output=True, text=True, timeout=60)


# Flex RemoteObject is AMF3 only, so three modes: NetConnection AMF3 and AMF0, Flex.
@pytest.mark.parametrize("version, flex", [("--amf3", []), ("--amf0", []), ("--amf3", ["--flex"])])
def test_call_prints_the_result(python_exe, python_env, demo_url, version, flex):
    r = run(python_exe, python_env, demo_url, "EchoService.echo", '{"a": [1, 2.5, "x"]}', version, *flex, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"a": [1, 2.5, "x"]}


def test_call_tiles_as_a_tree(python_exe, python_env, demo_url):
    r = run(python_exe, python_env, demo_url, "TileService.getTilesAsTypedObjects", "1", "--amf3")
    assert r.returncode == 0, r.stderr
    assert "org.amfkit.demo.Tile" in r.stdout and r.stdout.count("\n") > 1000


def test_call_non_json_arguments_are_strings(python_exe, python_env, demo_url):
    r = run(python_exe, python_env, demo_url, "EchoService.echo", "hello world", "--json")
    assert json.loads(r.stdout) == "hello world"


def test_a_fault_exits_1_with_its_code(python_exe, python_env, demo_url):
    r = run(python_exe, python_env, demo_url, "EchoService.fail", '"broken on purpose"')
    assert r.returncode == 1
    assert "fault Server.Processing: broken on purpose" in r.stderr
    r = run(python_exe, python_env, demo_url, "Nope.nothing")
    assert r.returncode == 1 and "Server.ResourceUnavailable" in r.stderr


def test_an_unreachable_gateway_is_one_line(python_exe, python_env):
    r = run(python_exe, python_env, "http://127.0.0.1:9/gateway", "EchoService.echo", "1", "--timeout", "5")
    assert r.returncode == 1 and r.stderr.count("\n") == 1

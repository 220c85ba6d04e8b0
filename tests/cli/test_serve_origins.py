"""`amfkit serve --cors ORIGIN --cors-credentials --crossdomain DOMAIN`: what is refused in
one line before any server starts (a bad origin or domain, credentials without origins or
with "*", an app that is not a gateway). Serving with them, on uvicorn and granian, is
tests/remoting/test_cors.py's; the demo's policy file, tests/remoting/test_crossdomain.py's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from amfkit.cli.main import main


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cors", "https://game.example/"], "is not an origin"),
        (["--cors", "null"], "sandboxed page"),
        (["--cors-credentials"], "--cors-credentials needs --cors"),
        (["--cors", "*", "--cors-credentials"], "forbids credentials with '*'"),
        (["--cors", "*", "--cors", "https://game.example"], "give it alone"),
        (["--crossdomain", "https://game.example"], "is not a domain"),
        (["--crossdomain", "game.example:8080"], "is not a domain"),
    ],
)
def test_refused_in_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "environ", dict(os.environ))  # `serve --demo` notes its folders there
    assert main(["serve", "--demo", "--port", "1", *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_app_that_is_not_a_gateway(tmp_path: Path, python_exe: str, python_env: dict[str, str]) -> None:
    (tmp_path / "plainapp.py").write_text("async def app(scope, receive, send):\n    pass\n")
    r = subprocess.run(
        [python_exe, "-m", "amfkit", "serve", "plainapp:app", "--cors", "https://game.example", "--port", "1"],
        cwd=tmp_path,
        env=python_env,
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 1
    assert b"--cors and --crossdomain need an amfkit Gateway; plainapp:app is a function" in r.stderr

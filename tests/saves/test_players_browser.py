"""The two console lines of docs/sol.md ("Saves between players") run in a real browser:
Debian's Chromium driven by Playwright, on a page served from 127.0.0.1 by the test.
Saves exported from a Flash Player folder with `amfkit sol export --to ruffle-web` are
put into the page's localStorage by the import line, read back by the export line after
a reload, and imported into a Flash Player folder again: the same files, byte for byte;
the page's other entries stay where they are and are not taken for saves.

Needs Chromium (`make system-deps`) and the `playwright` package (`make venv`); without
them the test fails, naming what to run.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from amfkit.cli.main import main

from chromium import launch
from repo import FIXTURES, ROOT
from servers import serve_asgi

SAMPLES = FIXTURES / "sol" / "samples"
PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>game</title></head>
<body data-ready="true"><p>A page of the game's origin.</p></body></html>"""


def snippets() -> tuple[str, str]:
    """The export and import lines, as docs/sol.md shows them."""
    text = (ROOT / "docs" / "sol.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"```js\n// (export|import):[^\n]*\n(.*?)\n```", text, flags=re.S))
    return blocks["export"], blocks["import"]


async def page_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/html; charset=utf-8")]})
    await send({"type": "http.response.body", "body": PAGE})


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launch() as launched:
        yield launched


def test_the_console_lines_move_saves_into_a_page_and_out_again(browser, tmp_path, capsys):
    export_line, import_line = snippets()
    assert "SAVES" in import_line and "TCSO" in export_line

    profile = tmp_path / "Flash_Player" / "#SharedObjects" / "K3Q9ZT2A"
    files = {
        "127.0.0.1/games/hero.swf/hero.sol": "AS3-Demo.sol",
        "127.0.0.1/games/hero.swf/#slots/one.sol": "AS3-ByteArray-Demo.sol",
        "127.0.0.1/old.swf/prefs.sol": "AS2-Demo.sol",
    }
    for rel, name in files.items():
        path = profile / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((SAMPLES / name).read_bytes())
    saves_json = tmp_path / "saves.json"
    assert main(["sol", "export", str(tmp_path / "Flash_Player"), "--to", "ruffle-web", "-o", str(saves_json)]) == 0

    with serve_asgi(page_app) as server:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.set_default_timeout(20_000)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server.url + "/game.html")
            page.wait_for_selector("body[data-ready=true]")
            page.evaluate("localStorage.setItem('theme', 'dark'); localStorage.setItem('notes', btoa('plain text'))")
            # The import line, with saves.json pasted in place of SAVES.
            page.evaluate(import_line.replace("SAVES", saves_json.read_text()))
            stored = page.evaluate("Object.fromEntries(Object.entries(localStorage))")
            assert stored == {**json.loads(saves_json.read_text()), "theme": "dark", "notes": stored["notes"]}
            # Ruffle's save manager would take them for saves (isB64SOL: "TCSO" at offset 6).
            assert page.evaluate("Object.keys(localStorage).filter(k => { try { return atob(localStorage[k]).slice(6, 10) === 'TCSO' } catch (e) { return false } }).length") == 3
            page.reload()
            page.wait_for_selector("body[data-ready=true]")
            exported = page.evaluate(export_line)
            assert errors == []
        finally:
            context.close()

    back_json = tmp_path / "back.json"
    back_json.write_text(exported)
    assert json.loads(exported) == json.loads(saves_json.read_text())  # the saves only, as they went in
    into = tmp_path / "again"
    capsys.readouterr()
    assert main(["sol", "import", str(back_json), "--to", "flash", "-o", str(into)]) == 0
    (made,) = os.listdir(into / "#SharedObjects")
    for rel, name in files.items():
        assert (into / "#SharedObjects" / made / rel).read_bytes() == (SAMPLES / name).read_bytes()

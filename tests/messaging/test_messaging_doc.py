"""docs/messaging.md runs as written: its `>>>` examples, and its server example."""

from __future__ import annotations

import doctest
import re

from amfkit.messaging import Destination


def test_messaging_doc_examples_run(repo_root):
    text = (repo_root / "docs" / "messaging.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert blocks
    test = doctest.DocTestParser().get_doctest("".join(blocks), {}, "docs/messaging.md", "docs/messaging.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted > 0


def test_messaging_doc_server_example_runs(repo_root):
    text = (repo_root / "docs" / "messaging.md").read_text(encoding="utf-8")
    server, destinations = re.findall(r"```python\n(.*?)```", text, flags=re.S)[:2]
    names: dict = {}
    exec(server, names)
    assert set(names["gateway"].messaging.destinations) == {"prices", "chat"}
    made = [eval(line.partition("  #")[0], {"Destination": Destination}) for line in destinations.splitlines() if line.strip()]
    assert [d.name for d in made] == ["prices", "orders", "alerts"]

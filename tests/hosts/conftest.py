"""The multi-host tests: `test_hosts_full` runs only when asked (`make test-hosts`, which
sets AMFKIT_HOSTS=full); otherwise it is deselected, not skipped: `make test` runs the
quick form alone."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("AMFKIT_HOSTS") == "full":
        return
    kept = [item for item in items if not item.name.startswith("test_hosts_full")]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept

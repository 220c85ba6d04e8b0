"""The `>>>` examples in the docstrings of the modules that read bytes others wrote
(`amfkit.forms`, `amfkit.payload`, `amfkit.wire`, `amfkit.differences` and the packet
printers `amfkit.decodetext` and `amfkit.tree`) are executed, so what they show is what they do."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["amfkit.forms", "amfkit.payload", "amfkit.wire", "amfkit.differences", "amfkit.decodetext", "amfkit.tree"])
def test_module_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0

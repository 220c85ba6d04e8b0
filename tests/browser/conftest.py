"""The service browser's tests drive Chromium (tests/support/chromium.py), one per module."""

from __future__ import annotations

from chromium import browser  # noqa: F401  (the module fixture: a headless Chromium)

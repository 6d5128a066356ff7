"""The `browser` fixture: one headless Chromium per test module, never skipped.

Must not: skip when Chromium is missing (the fixture fails with how to install it), or leave
Chromium running after the session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.cdp import Browser, find_chromium

MISSING = (
    "headless Chromium not found: install Debian's chromium (apt-get install chromium) "
    "or set LIBREYOLO_CHROMIUM"
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the `browser` fixture carries the `browser` marker."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


# Per module, not per session: an idle Chromium left running would share the CPUs with the
# timing-sensitive tests that run after the browser tests.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = find_chromium()
    if executable is None:
        pytest.fail(MISSING, pytrace=False)
    with Browser(executable) as started:
        yield started

"""Markers by folder: a test under an ``integration/`` folder runs against the local cloud, one under ``artifact/``
reads what ``sam build`` made; the rest are unit tests.

``make unit`` runs ``-m unit`` (seconds), ``make integration`` ``-m integration``, ``make artifact`` ``-m artifact``
after ``sam build``; ``make test`` runs them all.
The local cloud's fixtures live in :mod:`tests.fixtures.cloud`.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.fixtures.cloud", "tests.fixtures.logs"]


LONGEST_FIRST = (
    "test_demo.py",
    "test_demo_record.py",
    "test_many_calls.py",
    "test_whole_call.py",
    "test_streaming.py",
    "test_listen.py",
)
"""The integration files that keep a worker longest (``make integration`` names the slowest tests), started first:
``--dist loadfile`` hands files to the workers in collection order, and these, collected last by name, ran alone at the
end while the other workers stood idle (about a minute and a half of a seven-minute run). In this order, not longest
first: replaying one run's per-file times through loadfile's hand-out on four workers, the three of about 110 s and
test_whole_call.py (220 s) first, test_streaming.py and test_listen.py (about 275 s each) to the first workers free,
and the rest in collection order, ends at 393 s, against 405 s longest first."""


def _start_order(item: pytest.Item) -> int:
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A stable sort: every file's tests stay together and in their order.
    items.sort(key=_start_order)
    for item in items:
        parts = item.path.parts
        if "artifact" in parts:
            item.add_marker(pytest.mark.artifact)
        elif "integration" in parts:
            item.add_marker(pytest.mark.integration)
        else:
            item.add_marker(pytest.mark.unit)

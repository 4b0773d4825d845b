"""Markers by folder: a test under an ``integration/`` folder runs against the local cloud, one under ``artifact/``
reads what ``sam build`` made; the rest are unit tests.

``make unit`` runs ``-m unit`` (seconds), ``make integration`` ``-m integration``, ``make artifact`` ``-m artifact``
after ``sam build``; ``make test`` runs them all.
The local cloud's fixtures live in :mod:`tests.fixtures.cloud`.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.fixtures.cloud", "tests.fixtures.logs"]


CALLS = (
    "test_whole_call.py",
    "test_streaming.py",
    "test_listen.py",
    "test_demo.py",
    "test_demo_record.py",
    "test_flows_simulate.py",
    "test_converse.py",
    "test_flows_simulate_2026.py",
    "test_many_calls.py",
)
"""The integration files whose calls run at a line's pace, marked ``calls``: ``make integration`` runs them at the
machine's normal priority and the other integration tests (the emulators and services alone, which only use the CPU)
beside them at a lower one, so a call's timers are never late behind work that waits on nothing. Collected first,
in this order, which ``--dist loadfile`` hands out as workers come free: the three of about 270 s first with the
demo's two (about 110 s each) and the public flows behind them on the fourth worker, and the five calls at once last,
once the longest have ended — started beside them, the calls' CPU (0.73 of a core for the five calls, 0.41 for the
whole calls, 0.41 for the demo, 0.27 for the streaming sessions) came to 1.8 of the two cores, and a slower machine
made replies late (docs/development.md). A new file that runs calls in real time belongs in this list."""


def _start_order(item: pytest.Item) -> int:
    name = item.path.name
    return CALLS.index(name) if name in CALLS else len(CALLS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A stable sort: every file's tests stay together and in their order.
    items.sort(key=_start_order)
    for item in items:
        parts = item.path.parts
        if "artifact" in parts:
            item.add_marker(pytest.mark.artifact)
        elif "integration" in parts:
            item.add_marker(pytest.mark.integration)
            if item.path.name in CALLS:
                item.add_marker(pytest.mark.calls)
        else:
            item.add_marker(pytest.mark.unit)

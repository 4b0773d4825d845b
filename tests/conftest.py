"""Markers by folder: a test under an ``integration/`` folder runs against the local cloud, one under ``artifact/``
reads what ``sam build`` made; the rest are unit tests.

``make unit`` runs ``-m unit`` (seconds), ``make integration`` ``-m integration``, ``make artifact`` ``-m artifact``
after ``sam build``; ``make test`` runs them all.
The local cloud's fixtures live in :mod:`tests.fixtures.cloud`.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.fixtures.cloud", "tests.fixtures.logs"]


STARTED_FIRST = (
    "test_whole_call.py",
    "test_streaming.py",
    "test_listen.py",
    "test_many_calls.py",
    "test_demo.py",
    "test_demo_record.py",
    "test_flows_simulate.py",
)
"""The integration files that keep a worker longest (``make integration`` names the slowest tests), started first:
``--dist loadfile`` hands files to the workers in collection order, and these, collected last by name, ran alone at the
end while the other workers stood idle. In this order for the CPU the calls on the line take at once (each file alone,
in cores on average: the five calls 0.73, the whole calls 0.41, the demo 0.41, the streaming sessions 0.27, the demo's
record 0.23, the consumer's tests 0.12): the three of about 270 s with the five calls (1.5 of the two cores), then the
demo's two behind the five calls. The demo's two with the whole calls and the five calls first, as before, came to 1.8:
with one busy loop beside them a whole call's last sentence fell back to Connect's voice and the demo's record missed a
turn, and the same start on a slower machine is the likeliest reading of whole calls and the five calls failing
together (docs/development.md). A new file that keeps a worker more than a minute belongs in this list."""


def _start_order(item: pytest.Item) -> int:
    name = item.path.name
    return STARTED_FIRST.index(name) if name in STARTED_FIRST else len(STARTED_FIRST)


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

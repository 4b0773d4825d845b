"""Markers by folder: a test under an ``integration/`` folder runs against the local cloud, one under ``artifact/``
reads what ``sam build`` made; the rest are unit tests.

``make unit`` runs ``-m unit`` (seconds), ``make integration`` ``-m integration``, ``make artifact`` ``-m artifact``
after ``sam build``; ``make test`` runs them all.
The local cloud's fixtures live in :mod:`tests.fixtures.cloud`.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.fixtures.cloud", "tests.fixtures.logs"]


REAL_TIME = (
    "test_whole_call.py",
    "test_streaming.py",
    "test_listen.py",
    "test_demo.py",
    "test_demo_record.py",
    "test_flows_simulate.py",
    "test_converse.py",
    "test_flows_simulate_2026.py",
    "test_a2a_connect_emulator.py",
    "test_sonic_emulator.py",
    "test_synthesize_cartesia_api.py",
    "test_many_calls.py",
)
"""The integration files that run on the real clock, marked ``real_time``: calls at a line's pace, and the streams
whose tests time them (the Connect A2A client's playback, Sonic's concurrent streams, the Cartesia API's socket).
``make integration`` runs them at the machine's normal priority and the other integration tests (emulators and
services asked and answered, which only use the CPU) beside them at a lower one, so a call's timers are never late
behind work that waits on nothing. Collected first, in this order, which ``--dist loadfile`` hands out as workers come
free: the three of about 270 s first with the demo's two (about 110 s each) and the public flows behind them on the
fourth worker, and the five calls at once last, once the longest have ended — started beside them, the calls' CPU
(0.73 of a core for the five calls, 0.41 for the whole calls, 0.41 for the demo, 0.27 for the streaming sessions) came
to 1.8 of the two cores, and a slower machine made replies late (docs/development.md). A new file that runs on the
real clock belongs in this list."""


def _start_order(item: pytest.Item) -> int:
    name = item.path.name
    return REAL_TIME.index(name) if name in REAL_TIME else len(REAL_TIME)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A stable sort: every file's tests stay together and in their order.
    items.sort(key=_start_order)
    for item in items:
        parts = item.path.parts
        if "artifact" in parts:
            item.add_marker(pytest.mark.artifact)
        elif "integration" in parts:
            item.add_marker(pytest.mark.integration)
            if item.path.name in REAL_TIME:
                item.add_marker(pytest.mark.real_time)
        else:
            item.add_marker(pytest.mark.unit)

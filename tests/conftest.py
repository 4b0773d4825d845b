"""Markers by folder: a test under an ``integration/`` folder runs against the local cloud, one under ``artifact/``
reads what ``sam build`` made; the rest are unit tests.

``make unit`` runs ``-m unit`` (seconds), ``make integration`` ``-m integration``, ``make artifact`` ``-m artifact``
after ``sam build``; ``make test`` runs them all.
The local cloud's fixtures live in :mod:`tests.fixtures.cloud`.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.fixtures.cloud", "tests.fixtures.logs"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.parts
        if "artifact" in parts:
            item.add_marker(pytest.mark.artifact)
        elif "integration" in parts:
            item.add_marker(pytest.mark.integration)
        else:
            item.add_marker(pytest.mark.unit)

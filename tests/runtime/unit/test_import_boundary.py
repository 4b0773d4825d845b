"""The runtime stands alone: importing a handler loads nothing of the developer package, nor a library that the
functions' requirements leave out."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fixtures import ROOT
from tests.fixtures.imports import HANDLER_MODULES, loaded_modules

STDLIB = sys.stdlib_module_names
# boto3 and its own dependencies come with the Lambda runtime; the rest must be in src/runtime/requirements.txt.
LAMBDA_RUNTIME = {"boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six"}


@pytest.mark.parametrize("module", HANDLER_MODULES)
def test_a_handler_loads_no_module_of_the_developer_package(module: str) -> None:
    loaded = loaded_modules(module, path=[ROOT / "src" / "runtime"])
    assert [name for name in loaded if name.split(".")[0] == "voicebridge_dev"] == []


@pytest.mark.parametrize("module", HANDLER_MODULES)
def test_a_handler_loads_only_the_standard_library_the_lambda_runtime_and_its_requirements(module: str) -> None:
    requirements = (ROOT / "src" / "runtime" / "requirements.txt").read_text(encoding="utf-8")
    allowed = _importable_names(requirements) | LAMBDA_RUNTIME | STDLIB | {"voicebridge"}
    top_level = {name.split(".")[0] for name in loaded_modules(module, path=[ROOT / "src" / "runtime"])}
    assert sorted(name for name in top_level - allowed if not name.startswith("_")) == []


def _importable_names(requirements: str) -> set[str]:
    """Top-level import names of the listed distributions and of everything they depend on, as installed here."""
    script = """
import json, sys
from importlib import metadata
from packaging.requirements import Requirement
todo = [Requirement(line).name for line in sys.stdin.read().splitlines() if line.strip() and not line.startswith("#")]
seen, names = set(), set()
while todo:
    name = todo.pop().lower().replace("_", "-")
    if name in seen:
        continue
    seen.add(name)
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        continue
    top = dist.read_text("top_level.txt")
    names |= set(top.split()) if top else {p.parts[0].removesuffix(".py") for p in dist.files or [] if p.parts}
    for req in dist.requires or []:
        parsed = Requirement(req)
        if parsed.marker is None or parsed.marker.evaluate({"extra": "websockets"}):
            todo.append(parsed.name)
print(json.dumps(sorted(names)))
"""
    answer = subprocess.run(
        [sys.executable, "-c", script], input=requirements, capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(answer.stdout))

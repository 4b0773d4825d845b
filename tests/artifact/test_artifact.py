"""The Lambda artifacts as ``sam build`` makes them hold the runtime alone.

Run by ``make artifact`` after ``sam build`` (``VOICEBRIDGE_BUILD_DIR`` names the build folder). The functions are
built for arm64, so their compiled dependencies do not load on every machine: the handlers are imported from the
artifact's own ``voicebridge`` folder with this interpreter's dependencies behind it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.fixtures import ROOT
from tests.fixtures.imports import loaded_modules

RUNTIME = ROOT / "src" / "runtime" / "voicebridge"
DEVELOPER_WORDS = ("emulator", "simulator", "demo", "cli", "voicebridge_dev", "tests", "bench")


def _build_dir() -> Path:
    named = os.environ.get("VOICEBRIDGE_BUILD_DIR")
    if not named:
        pytest.skip("VOICEBRIDGE_BUILD_DIR is not set: run `make artifact`")
    build = (ROOT / named).resolve()
    assert (build / "template.yaml").is_file(), f"{named} holds no sam build output"
    return build


def _functions() -> dict[str, str]:
    template = yaml.load((ROOT / "template.yaml").read_text(encoding="utf-8"), Loader=_AnyTagLoader)
    return {
        name: resource["Properties"]["Handler"]
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }


class _AnyTagLoader(yaml.SafeLoader):
    """Reads CloudFormation's short-form tags (!Ref, !Sub…) as plain values."""


_AnyTagLoader.add_multi_constructor("!", lambda loader, suffix, node: None)
FUNCTIONS = _functions()


def _python_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.py")}


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_the_function_ships_the_runtime_package_exactly(function: str) -> None:
    shipped = _build_dir() / function / "voicebridge"
    assert _python_files(shipped) == _python_files(RUNTIME)


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_no_developer_code_is_in_the_function_folder(function: str) -> None:
    folder = _build_dir() / function
    installed = _installed_by_pip(folder)
    assert sorted(p.name for p in folder.iterdir() if p.name not in installed) == ["voicebridge"]
    named = [
        str(p.relative_to(folder))
        for p in (folder / "voicebridge").rglob("*")
        if any(word in p.stem for word in DEVELOPER_WORDS)
    ]
    assert named == []


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_the_shipped_handler_imports_no_developer_module(function: str, tmp_path: Path) -> None:
    shutil.copytree(_build_dir() / function / "voicebridge", tmp_path / "voicebridge")
    module = FUNCTIONS[function].rsplit(".", 1)[0]
    loaded = loaded_modules(module, path=[tmp_path])
    assert [name for name in loaded if name.split(".")[0] == "voicebridge_dev"] == []


def _installed_by_pip(folder: Path) -> set[str]:
    """Top-level names the distributions' RECORD files claim, their metadata folders, and sam's requirements copy."""
    names = {"requirements.txt"}
    for record in folder.glob("*.dist-info/RECORD"):
        names |= {line.split(",", 1)[0].split("/", 1)[0] for line in record.read_text(encoding="utf-8").splitlines()}
    return names

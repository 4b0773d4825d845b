"""The Lambda artifacts as ``sam build`` makes them hold the runtime alone, with bytecode for the runtime's Python.

Run by ``make artifact`` after ``sam build`` (``VOICEBRIDGE_BUILD_DIR`` names the build folder). The functions are
built for arm64, so their compiled dependencies do not load on every machine: the handlers are imported from the
artifact's own ``voicebridge`` folder with this interpreter's dependencies behind it.
"""

from __future__ import annotations

import _imp
import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.fixtures import ROOT
from tests.fixtures.imports import loaded_modules

RUNTIME = ROOT / "src" / "runtime" / "voicebridge"
DEVELOPER_WORDS = ("emulator", "simulator", "demo", "cli", "voicebridge_dev", "tests", "bench")
LAMBDA_BYTECODE_TAG = "cpython-313"
LAMBDA_MAGIC = (3571).to_bytes(2, "little") + b"\r\n"
"""What CPython 3.13 (the functions' runtime) writes first in a ``.pyc``: its bytecode version, then CR LF."""
CHECKED_HASH = 0b11
"""The ``.pyc`` flags of hash-based bytecode that the interpreter checks against its source (PEP 552)."""


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
def test_every_module_shipped_has_hash_checked_bytecode_for_the_lambda_runtime(function: str) -> None:
    folder = _build_dir() / function
    prefix = LAMBDA_MAGIC + CHECKED_HASH.to_bytes(4, "little")
    wrong = []
    for source in sorted(folder.rglob("*.py")):
        compiled = source.parent / "__pycache__" / f"{source.stem}.{LAMBDA_BYTECODE_TAG}.pyc"
        header = compiled.read_bytes()[:16] if compiled.is_file() else b""
        # The source hash is keyed by the bytecode version, as the runtime computes it when it checks the file.
        digest = _imp.source_hash(int.from_bytes(LAMBDA_MAGIC, "little"), source.read_bytes())
        if header != prefix + digest:
            wrong.append(str(source.relative_to(folder)))
    assert wrong == []


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_the_runtime_package_ships_no_bytecode_without_its_source(function: str) -> None:
    shipped = _build_dir() / function / "voicebridge"
    compiled = {str(p.relative_to(shipped)) for p in shipped.rglob("*.pyc")}
    assert compiled == {
        str(Path(name).parent / "__pycache__" / f"{Path(name).stem}.{LAMBDA_BYTECODE_TAG}.pyc")
        for name in _python_files(RUNTIME)
    }


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
    """Top-level names the distributions' RECORD files claim and their metadata folders; ``__pycache__`` too when it
    holds only the bytecode of top-level modules they claim."""
    names: set[str] = set()
    for record in folder.glob("*.dist-info/RECORD"):
        names |= {line.split(",", 1)[0].split("/", 1)[0] for line in record.read_text(encoding="utf-8").splitlines()}
    compiled = folder / "__pycache__"
    if compiled.is_dir() and all(f"{p.name.split('.', 1)[0]}.py" in names for p in compiled.iterdir()):
        names.add("__pycache__")
    return names


MODEL_FILES = {
    "silero_vad.onnx",
    "silero_vad.onnx.LICENSE",
    "smart-turn-v3.2-cpu.onnx",
    "smart-turn-v3.2-cpu.onnx.LICENSE",
}


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_only_the_listening_function_ships_the_voice_models_each_with_its_licence(function: str) -> None:
    folder = _build_dir() / function / "voicebridge" / "models"
    shipped = {path.name for path in folder.iterdir()} if folder.is_dir() else set()
    assert shipped == (MODEL_FILES if function == "TranscribeStreamFunction" else set())

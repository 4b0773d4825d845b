"""The local cloud for integration tests: moto's server and the emulators on ephemeral loopback ports."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from voicebridge.local.cloud import LocalCloud
from voicebridge.local.speech_engine import StandInSpeechEngine

ROOT = Path(__file__).resolve().parents[2]
EVENT: dict[str, Any] = json.loads((ROOT / "events" / "synthesize.json").read_text())


def event_with(**parameters: str) -> dict[str, Any]:
    """The sample Connect event with the block's parameters replaced."""
    event = copy.deepcopy(EVENT)
    event["Details"]["Parameters"] = parameters
    return event


def prompt_location(uri: str) -> tuple[str, str]:
    """(bucket, key) of a prompt URL ``https://<bucket>.s3.<region>.amazonaws.com/<key>``."""
    parsed = urlparse(uri)
    return (parsed.hostname or "").split(".s3.")[0], parsed.path.lstrip("/")


def fetch(cloud: LocalCloud, uri: str) -> bytes:
    """The prompt's bytes, read from the local bucket."""
    bucket, key = prompt_location(uri)
    return bytes(cloud.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


@pytest.fixture(scope="session")
def local_cloud() -> Iterator[LocalCloud]:
    cloud = LocalCloud(
        template=ROOT / "template.yaml",
        engine=StandInSpeechEngine(),
        sonic_time_to_first_byte_ms=20.0,
        sonic_realtime_factor=60.0,
    )
    with cloud:
        yield cloud


@pytest.fixture
def cloud_env(local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> LocalCloud:
    """The process environment pointed at the local cloud, per-container caches emptied, faults cleared."""
    for name, value in local_cloud.env().items():
        monkeypatch.setenv(name, value)
    _fresh_container()
    local_cloud.sonic.faults.clear()
    yield local_cloud  # type: ignore[misc]
    local_cloud.sonic.faults.clear()
    # A stream a test gave up on still ends in the emulator: let it, so no record lands in the next test.
    local_cloud.sonic.wait_idle(10)
    _fresh_container()


def _fresh_container() -> None:
    """What a new Lambda container starts with: no settings, clients or caches from an earlier test."""
    from voicebridge import aws, cartesia_key
    from voicebridge.config import settings
    from voicebridge.handlers import synthesize

    settings.cache_clear()
    aws.client.cache_clear()
    cartesia_key.api_key.cache_clear()
    synthesize.synthesizer.cache_clear()


Invoker = Callable[..., dict[str, str]]


@pytest.fixture
def invoke_function(cloud_env: LocalCloud) -> Invoker:
    """Run a template function on an event, as `voicebridge invoke` does, with optional env/parameter overrides."""
    from voicebridge.local.runner import invoke
    from voicebridge.local.template import function_spec, load_template

    template = load_template(ROOT / "template.yaml")

    def run(logical_id: str, event: dict[str, Any], *, env: dict[str, str] | None = None, **kw: Any) -> Any:
        spec = function_spec(template, logical_id, parameters=cloud_env.parameters())
        # Unlike sam's --env-vars, a test may also set variables the template leaves at their defaults.
        spec.environment.update(env or {})
        return invoke(spec, event, **kw)

    return run

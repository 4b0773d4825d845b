"""events/ works with sam local invoke as well as voicebridge invoke: the env-vars file names only variables the
template declares (SAM ignores others) and points them at `voicebridge local up`'s default ports and names."""

from __future__ import annotations

import json

import pytest

from tests.fixtures import ROOT
from voicebridge.connect.events import ContactFlowEvent
from voicebridge_dev.local.cloud import LOCAL_ENDPOINT_NAME
from voicebridge_dev.template import function_spec, load_template, local_physical_id

TEMPLATE = load_template(ROOT / "template.yaml")
ENV_VARS = json.loads((ROOT / "events" / "env.local.json").read_text())["Parameters"]
FUNCTIONS = ["SynthesizeFunction", "StartListeningFunction", "TranscribeStreamFunction", "AwaitTurnFunction"]
PORT_BASE = 4566  # voicebridge local up's default: moto, then Sonic, KVS, Ink and Lambda on the next ports


def test_every_variable_in_the_env_vars_file_is_declared_by_some_function() -> None:
    declared = {name for function in FUNCTIONS for name in function_spec(TEMPLATE, function).environment}
    assert set(ENV_VARS) <= declared


def test_the_env_vars_file_points_at_the_local_cloud_on_its_default_ports() -> None:
    url = {offset: f"http://127.0.0.1:{PORT_BASE + offset}" for offset in range(5)}
    assert ENV_VARS["AWS_ENDPOINT_URL_S3"] == ENV_VARS["AWS_ENDPOINT_URL_DYNAMODB"] == url[0]
    assert ENV_VARS["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] == ENV_VARS["SONIC_BASE_URL"] == url[1]
    assert ENV_VARS["AWS_ENDPOINT_URL_KINESIS_VIDEO"] == url[2]
    assert ENV_VARS["CARTESIA_BASE_URL"] == url[3]
    assert ENV_VARS["AWS_ENDPOINT_URL_LAMBDA"] == url[4]


def test_the_env_vars_file_names_the_local_resources() -> None:
    assert ENV_VARS["SONIC_ENDPOINT_NAME"] == LOCAL_ENDPOINT_NAME
    for variable, logical_id in [
        ("PROMPT_BUCKET", "PromptBucket"),
        ("TURN_TABLE", "TurnTable"),
        ("CARTESIA_API_KEY_SECRET_ARN", "CartesiaApiKeySecret"),
        ("TRANSCRIBE_FUNCTION_NAME", "TranscribeStreamFunction"),
    ]:
        assert ENV_VARS[variable] == local_physical_id(logical_id)


@pytest.mark.parametrize("name", ["synthesize", "start-listening", "await-turn"])
def test_sample_connect_events_parse(name: str) -> None:
    assert ContactFlowEvent.parse(json.loads((ROOT / "events" / f"{name}.json").read_text())).contact_id

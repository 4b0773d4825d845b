"""template.yaml read as sam local invoke reads it: handler, timeout, environment, intrinsics resolved locally."""

from __future__ import annotations

import pytest

from tests.fixtures import ROOT
from voicebridge_dev.template import TemplateError, function_spec, load_template, local_physical_id

TEMPLATE = load_template(ROOT / "template.yaml")


def test_synthesize_function_handler_and_environment_come_from_the_template() -> None:
    spec = function_spec(TEMPLATE, "SynthesizeFunction", parameters={"SonicEndpointName": "sonic-local"})
    assert spec.handler == "voicebridge.handlers.synthesize.handler"
    assert spec.timeout_s == 8
    assert spec.environment["SONIC_ENDPOINT_NAME"] == "sonic-local"
    assert spec.environment["PROMPT_BUCKET"] == local_physical_id("PromptBucket")
    assert spec.environment["POWERTOOLS_SERVICE_NAME"] == "voicebridge"


def test_a_memory_size_given_by_a_parameter_is_its_value_or_its_default() -> None:
    assert function_spec(TEMPLATE, "TranscribeStreamFunction").memory_mb == 1769
    chosen = function_spec(TEMPLATE, "TranscribeStreamFunction", parameters={"ConsumerMemorySize": "512"})
    assert chosen.memory_mb == 512


def test_every_function_handler_is_importable() -> None:
    from voicebridge_dev.local.runner import load_handler

    functions = [n for n, r in TEMPLATE["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]
    assert functions
    for name in functions:
        assert callable(load_handler(function_spec(TEMPLATE, name).handler))


def test_env_vars_file_overrides_as_sam_does() -> None:
    spec = function_spec(
        TEMPLATE,
        "SynthesizeFunction",
        overrides={
            "Parameters": {"SONIC_SAMPLE_RATE": "16000"},
            "SynthesizeFunction": {"PROMPT_BUCKET": "mine"},
        },
    )
    assert (spec.environment["SONIC_SAMPLE_RATE"], spec.environment["PROMPT_BUCKET"]) == ("16000", "mine")


def test_an_unknown_function_is_named_with_the_ones_that_exist() -> None:
    with pytest.raises(TemplateError, match="SynthesizeFunction"):
        function_spec(TEMPLATE, "NoSuchFunction")


def test_short_form_intrinsics_are_read() -> None:
    env = TEMPLATE["Resources"]["SynthesizeFunction"]["Properties"]["Environment"]["Variables"]
    assert env["PROMPT_BUCKET"] == {"Ref": "PromptBucket"}


def test_local_names_are_valid_bucket_names() -> None:
    assert local_physical_id("PromptBucket") == "voicebridge-local-prompt-bucket"

"""The Bedrock emulator's own reading of which model families refuse what, from the model id in a request's URL."""

from __future__ import annotations

import pytest

from voicebridge_dev.local.bedrock import DEFAULT_MODEL_ID, base_model_id, family_refusal
from voicebridge_dev.local.bedrock.requests import parse_converse_request
from voicebridge_dev.local.service import ApiError

HAIKU = "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.mark.parametrize(
    "model_id",
    [
        HAIKU,
        f"us.{HAIKU}",
        f"apac.{HAIKU}",
        f"arn:aws:bedrock:us-east-1::foundation-model/{HAIKU}",
        f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.{HAIKU}",
    ],
)
def test_an_id_a_profile_and_their_arns_name_one_model(model_id: str) -> None:
    assert base_model_id(model_id) == HAIKU


def test_an_arn_that_does_not_carry_a_model_id_is_its_own_name() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
    assert base_model_id(arn) == arn


@pytest.mark.parametrize("model_id", [DEFAULT_MODEL_ID, "deepseek.r1-v1:0", "amazon.nova-pro-v1:0"])
def test_a_model_the_page_names_no_refusal_for_is_refused_nothing(model_id: str) -> None:
    assert family_refusal(model_id, ["system", "toolConfig", "guardrailConfig"]) is None


def test_a_refusal_names_the_system_prompt_before_the_tools() -> None:
    refusal = family_refusal("amazon.titan-text-lite-v1", ["toolConfig", "system"])
    assert refusal is not None
    assert (refusal.status, refusal.error_type) == (400, "ValidationException")
    assert refusal.message == "This model doesn't support the system field. Remove system and try again."


def test_a_field_the_request_does_not_set_is_not_refused() -> None:
    assert family_refusal("meta.llama3-2-1b-instruct-v1:0", ["system", "guardrailConfig"]) is None


# --- latency-optimized inference ------------------------------------------------------------------------------------


def _asking(model_id: str, latency: str) -> None:
    body = {"messages": [{"role": "user", "content": [{"text": "hi"}]}], "performanceConfig": {"latency": latency}}
    parse_converse_request(model_id, body)


@pytest.mark.parametrize(
    "model_id",
    [
        f"us.{HAIKU}",
        "us.amazon.nova-pro-v1:0",
        "us.meta.llama3-1-70b-instruct-v1:0",
        f"arn:aws:bedrock:us-east-2:123456789012:inference-profile/us.{HAIKU}",
    ],
)
def test_latency_optimized_inference_is_taken_through_a_profile_of_a_model_that_offers_it(model_id: str) -> None:
    _asking(model_id, "optimized")


@pytest.mark.parametrize(
    "model_id", [HAIKU, "us.amazon.nova-lite-v1:0", "us.anthropic.claude-3-5-sonnet-20241022-v2:0"]
)
def test_latency_optimized_inference_is_refused_for_any_other_model(model_id: str) -> None:
    with pytest.raises(ApiError) as refused:
        _asking(model_id, "optimized")
    assert (refused.value.status, refused.value.error_type) == (400, "ValidationException")
    assert "performanceConfig" in refused.value.message


def test_standard_latency_is_taken_by_every_model() -> None:
    _asking("us.amazon.nova-lite-v1:0", "standard")


def test_a_latency_that_is_neither_is_a_constraint_violation() -> None:
    with pytest.raises(ApiError, match=r"performanceConfig.latency.*enum value set: \[standard, optimized\]"):
        _asking(f"us.{HAIKU}", "fastest")

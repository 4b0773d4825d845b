"""Which family a Bedrock ``modelId`` names, and a ConverseStream request holding only what that family accepts.

The families and what each accepts are the Bedrock User Guide's *Supported models and model features* table
(https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from voicebridge.conversation import Exchange
from voicebridge.converse.responder import TurnRequest
from voicebridge.converse.responders.bedrock import BedrockResponder
from voicebridge.converse.responders.bedrock_models import DEFAULT_FAMILY, model_family

# --- the table ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "Anthropic Claude 3.5 Haiku"),
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "Anthropic Claude 3"),
        ("anthropic.claude-3-7-sonnet-20250219-v1:0", "Anthropic Claude 3"),
        ("anthropic.claude-3-haiku-20240307-v1:0", "Anthropic Claude 3"),
        ("anthropic.claude-sonnet-4-20250514-v1:0", "Anthropic Claude 4"),
        ("anthropic.claude-opus-4-1-20250805-v1:0", "Anthropic Claude 4"),
        ("anthropic.claude-v2:1", "Anthropic Claude 2.x and earlier"),
        ("anthropic.claude-instant-v1", "Anthropic Claude 2.x and earlier"),
        ("amazon.nova-lite-v1:0", "Amazon Nova"),
        ("amazon.nova-micro-v1:0", "Amazon Nova"),
        ("amazon.titan-text-express-v1", "Amazon Titan"),
        ("amazon.titan-text-premier-v1:0", "Amazon Titan"),
        ("meta.llama3-1-70b-instruct-v1:0", "Meta Llama"),
        ("meta.llama3-2-3b-instruct-v1:0", "Meta Llama"),
        ("meta.llama3-8b-instruct-v1:0", "Meta Llama"),
        ("mistral.mistral-7b-instruct-v0:2", "Mistral AI Instruct"),
        ("mistral.mixtral-8x7b-instruct-v0:1", "Mistral AI Instruct"),
        ("mistral.mistral-large-2407-v1:0", "Mistral Large"),
        ("cohere.command-r-plus-v1:0", "Cohere Command R"),
        ("cohere.command-r-v1:0", "Cohere Command R"),
        ("ai21.jamba-1-5-mini-v1:0", "AI21 Labs Jamba 1.5"),
        ("ai21.jamba-instruct-v1:0", "AI21 Jamba-Instruct"),
    ],
)
def test_a_model_id_names_its_family(model_id: str, family: str) -> None:
    assert model_family(model_id).name == family


@pytest.mark.parametrize(
    "model_id",
    [
        "us.anthropic.claude-3-5-haiku-20241022-v1:0",
        "eu.anthropic.claude-3-5-haiku-20241022-v1:0",
        "global.anthropic.claude-3-5-haiku-20241022-v1:0",
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0",
        "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0",
        "arn:aws-us-gov:bedrock:us-gov-west-1:123456789012:inference-profile/"
        "us-gov.anthropic.claude-3-5-haiku-20241022-v1:0",
    ],
)
def test_an_inference_profile_or_an_arn_names_the_family_of_its_model(model_id: str) -> None:
    assert model_family(model_id).name == "Anthropic Claude 3.5 Haiku"


@pytest.mark.parametrize(
    "model_id",
    [
        "deepseek.r1-v1:0",
        "writer.palmyra-x5-v1:0",
        "voicebridge.emulated-bank-agent-v1:0",
        "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6",
        "arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abcdefghijkl",
    ],
)
def test_a_model_no_row_names_gets_the_default_which_withholds_nothing(model_id: str) -> None:
    family = model_family(model_id)
    assert family is DEFAULT_FAMILY
    assert (family.known, family.system, family.streaming_tools, family.guardrails) == (False, True, True, True)


@pytest.mark.parametrize(
    ("model_id", "system", "streaming_tools", "guardrails"),
    [
        ("amazon.nova-pro-v1:0", True, True, True),
        ("amazon.titan-text-express-v1", False, False, True),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", True, True, False),
        ("meta.llama3-1-8b-instruct-v1:0", True, False, True),
        ("mistral.mistral-7b-instruct-v0:2", False, False, True),
        ("cohere.command-r-v1:0", True, True, False),
    ],
)
def test_a_family_accepts_what_the_user_guide_says(
    model_id: str, system: bool, streaming_tools: bool, guardrails: bool
) -> None:
    family = model_family(model_id)
    assert (family.system, family.streaming_tools, family.guardrails) == (system, streaming_tools, guardrails)


# --- the request ------------------------------------------------------------------------------------------


def turn(**fields: Any) -> TurnRequest:
    return TurnRequest("3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f", 2, "what is my balance", **fields)


def request_for(model_id: str, **options: Any) -> dict[str, Any]:
    return BedrockResponder(object(), model_id=model_id, system_prompt="Be brief.", **options).request(turn())


def test_a_family_that_takes_everything_is_sent_everything() -> None:
    request = request_for("amazon.nova-lite-v1:0", guardrail=("gr1abc", "3"))
    assert {"toolConfig", "system", "guardrailConfig"} <= set(request)


def test_a_family_that_takes_no_tools_while_streaming_is_sent_no_tool_config() -> None:
    assert "toolConfig" not in request_for("us.meta.llama3-1-70b-instruct-v1:0")


def test_a_configured_guardrail_is_sent_even_where_the_table_says_the_family_takes_none() -> None:
    assert "guardrailConfig" in request_for("anthropic.claude-3-5-haiku-20241022-v1:0", guardrail=("gr1abc", "3"))


def test_a_family_that_takes_no_system_prompt_reads_it_at_the_head_of_the_first_user_message() -> None:
    history = [Exchange("hello", "Hello! How can I help?")]
    responder = BedrockResponder(object(), model_id="amazon.titan-text-express-v1", system_prompt="Be brief.")
    request = responder.request(turn(history=history))
    assert "system" not in request and "toolConfig" not in request
    assert [m["content"][0]["text"] for m in request["messages"]] == [
        "Be brief.\n\nhello",
        "Hello! How can I help?",
        "what is my balance",
    ]


def test_without_a_system_prompt_the_first_user_message_is_the_callers_words_alone() -> None:
    request = BedrockResponder(object(), model_id="mistral.mistral-7b-instruct-v0:2").request(turn())
    assert request["messages"] == [{"role": "user", "content": [{"text": "what is my balance"}]}]


def test_a_model_that_cannot_be_offered_tools_is_said_once_at_construction(
    log_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    responder = BedrockResponder(object(), model_id="meta.llama3-1-70b-instruct-v1:0")
    responder.request(turn())
    responder.request(turn())
    warned = [line for line in log_lines() if "cannot transfer the caller" in line["message"]]
    assert [(line["level"], line["family"]) for line in warned] == [("WARNING", "Meta Llama")]


def test_a_guardrail_the_model_takes_not_is_said_at_construction(
    log_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    BedrockResponder(object(), model_id="cohere.command-r-v1:0", guardrail=("gr1abc", "3"))
    assert [line["level"] for line in log_lines() if "takes no guardrail" in line["message"]] == ["WARNING"]


# --- latency-optimized inference ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "region"),
    [
        ("us.amazon.nova-pro-v1:0", "us-east-1"),
        ("us.amazon.nova-pro-v1:0", "us-east-2"),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", "us-east-2"),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", "us-west-2"),
        ("us.meta.llama3-1-405b-instruct-v1:0", "us-east-2"),
        ("us.meta.llama3-1-70b-instruct-v1:0", "us-west-2"),
        (
            "arn:aws:bedrock:us-east-2:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0",
            "us-east-2",
        ),
    ],
)
def test_latency_optimized_inference_is_asked_of_a_model_that_offers_it_in_the_region(
    model_id: str, region: str
) -> None:
    assert request_for(model_id, latency="optimized", region=region)["performanceConfig"] == {"latency": "optimized"}


@pytest.mark.parametrize(
    ("model_id", "region"),
    [
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", "us-east-1"),
        ("us.meta.llama3-1-405b-instruct-v1:0", "us-west-2"),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "us-east-2"),
        ("us.amazon.nova-lite-v1:0", "us-east-1"),
        ("us.anthropic.claude-3-5-sonnet-20241022-v2:0", "us-east-2"),
        ("eu.anthropic.claude-3-5-haiku-20241022-v1:0", "eu-west-1"),
    ],
)
def test_no_other_model_or_region_is_asked_for_it(model_id: str, region: str) -> None:
    assert "performanceConfig" not in request_for(model_id, latency="optimized", region=region)


def test_standard_latency_never_asks_for_it() -> None:
    assert "performanceConfig" not in request_for(
        "us.anthropic.claude-3-5-haiku-20241022-v1:0", latency="standard", region="us-east-2"
    )

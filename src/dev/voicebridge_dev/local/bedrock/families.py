"""What the emulated Bedrock refuses a model family in a ConverseStream request, as the real service refuses it.

The family is read from the ``modelId`` of the request's URL: a model id, a cross-Region inference profile id (its
geography first: ``us.``, ``eu.``, ``apac.``, ``us-gov.``, ``jp.``, ``au.``, ``ca.``, ``global.``), or the
foundation-model or inference-profile ARN of either. What each family takes is the Bedrock User Guide's table for
the Converse API, *Supported models and model features*
(https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html), its
columns **ConverseStream**, **System prompts**, **Streaming tool use** and **Guardrails**. This table is the
emulator's own reading of that page, written apart from the product's: the product decides what to send from its
table, the emulator refuses from this one, so a request one of them gets wrong fails a test instead of two copies of
one belief agreeing. It lists only what the page's rows say a model refuses; a model the page does not name (the
emulator's own ``voicebridge.`` bank agent among them) is refused nothing.

=========================================================  ====================================================
the page's row (model ids)                                 refused
=========================================================  ====================================================
AI21 Labs Jurassic-2 (``ai21.j2-``)                        the call: no ConverseStream
AI21 Jamba-Instruct (``ai21.jamba-instruct``)              ``toolConfig``, ``guardrailConfig``
Amazon Titan models (``amazon.titan-text``)                ``system``, ``toolConfig``
Anthropic Claude 2.x and earlier (``-v2``, ``-instant``)   ``toolConfig``
Anthropic Claude 3.5 Haiku                                 ``guardrailConfig``
Anthropic Claude Sonnet 4, Opus 4, Opus 4.1                ``guardrailConfig``
Cohere Command, Command Light (``-text``)                  the call: no chat with ConverseStream
Cohere Command R, Command R+                               ``guardrailConfig``
Meta Llama 2, 3, 3.1, 3.2 (``meta.llama``)                 ``toolConfig``
Mistral AI Instruct (Mistral 7B, Mixtral 8x7B)             ``system``, ``toolConfig``
Mistral Large, Mistral Large 2 (24.07)                     ``toolConfig``
=========================================================  ====================================================

``meta.llama`` covers Llama 3.3 and Llama 4 too, which the rows read do not list: Bedrock's refusal of tools while
streaming is reported publicly for Llama 4 (https://github.com/earendil-works/pi/issues/3739).

Each refusal is a ValidationException (HTTP 400), worded as Bedrock words it where the words could be found:

- ``toolConfig``: "This model doesn't support tool use in streaming mode." (reported in
  https://github.com/earendil-works/pi/issues/3739 and https://github.com/brave/brave-browser/issues/52955).
- no ConverseStream: "The model is unsupported for streaming." (reported in
  https://github.com/aws-samples/amazon-bedrock-client-for-mac/issues/112).
- ``system`` and ``guardrailConfig``: no public report of Bedrock's exact words was found. The message follows the
  form Bedrock uses for another field a model does not take, "This model doesn't support the
  toolConfig.toolChoice.any field. Remove toolConfig.toolChoice.any and try again."
  (https://github.com/strands-agents/harness-sdk/issues/1241).

When a request sets several fields a family refuses, ``system`` is named first, then ``toolConfig``, then
``guardrailConfig``; the page does not say which the service names.

**Latency-optimized inference.** ``performanceConfig: {"latency": "optimized"}`` is taken only by the models the
Bedrock User Guide's *Optimize model inference for latency* lists, "via cross-region inference"
(https://docs.aws.amazon.com/bedrock/latest/userguide/latency-optimized-inference.html): Amazon Nova Pro, Anthropic
Claude 3.5 Haiku, Meta Llama 3.1 405B and 70B Instruct, through a cross-Region inference profile (or its ARN). The
emulator refuses it for any other model, and for those models called by their own id, with a ValidationException:
what Bedrock answers there is not documented, and no public report of its words was found, so the message follows
the form above. The page also limits each model to some US Regions; the emulator has no Region, and checks only the
model. ``standard`` (the default: "By default all requests are routed to through “standard”") is taken by every
model.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Final

from voicebridge_dev.local.service import ApiError, validation_error

SYSTEM: Final = "system"
TOOLS: Final = "toolConfig"
GUARDRAIL: Final = "guardrailConfig"
REFUSABLE_FIELDS: Final = (SYSTEM, TOOLS, GUARDRAIL)
"""The request fields a family may not take, in the order a refusal names them."""
LATENCY_OPTIMIZED_MODELS: Final = (
    "amazon.nova-pro",
    "anthropic.claude-3-5-haiku",
    "meta.llama3-1-405b-instruct",
    "meta.llama3-1-70b-instruct",
)
"""The model-id prefixes whose models offer latency-optimized inference, through a cross-Region inference profile."""
_NO_STREAMING: Final = "streaming"

# Model-id prefixes, each with what the page's row says its models refuse.
_REFUSED: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("ai21.j2-", frozenset({_NO_STREAMING})),
    ("ai21.jamba-instruct", frozenset({TOOLS, GUARDRAIL})),
    ("amazon.titan-text", frozenset({SYSTEM, TOOLS})),
    ("anthropic.claude-v2", frozenset({TOOLS})),
    ("anthropic.claude-instant", frozenset({TOOLS})),
    ("anthropic.claude-3-5-haiku", frozenset({GUARDRAIL})),
    ("anthropic.claude-sonnet-4-20250514", frozenset({GUARDRAIL})),
    ("anthropic.claude-opus-4-20250514", frozenset({GUARDRAIL})),
    ("anthropic.claude-opus-4-1-20250805", frozenset({GUARDRAIL})),
    ("cohere.command-text", frozenset({_NO_STREAMING})),
    ("cohere.command-light-text", frozenset({_NO_STREAMING})),
    ("cohere.command-r", frozenset({GUARDRAIL})),
    ("meta.llama", frozenset({TOOLS})),
    ("mistral.mistral-7b-instruct", frozenset({SYSTEM, TOOLS})),
    ("mistral.mixtral-8x7b-instruct", frozenset({SYSTEM, TOOLS})),
    ("mistral.mistral-large", frozenset({TOOLS})),
)
_ARN: Final = re.compile(r"arn:aws(?:-[a-z-]+)?:bedrock:[a-z0-9-]*:[0-9]*:(?:foundation-model|inference-profile)/(.+)")
_GEOGRAPHIES: Final = frozenset({"us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"})
_MESSAGES: Final = {
    TOOLS: "This model doesn't support tool use in streaming mode.",
    _NO_STREAMING: "The model is unsupported for streaming.",
}


def base_model_id(model_id: str) -> str:
    """The model id ``model_id`` names: itself, the id in its ARN, or the model an inference profile id routes to."""
    arn = _ARN.fullmatch(model_id)
    model = arn.group(1) if arn else model_id
    geography, _, rest = model.partition(".")
    return rest if geography in _GEOGRAPHIES and "." in rest else model


def family_refusal(model_id: str, fields: Collection[str]) -> ApiError | None:
    """The ValidationException a ConverseStream request to ``model_id`` setting ``fields`` gets for its model's
    family, or None when the family takes them all."""
    model = base_model_id(model_id)
    refused = next((refusals for prefix, refusals in _REFUSED if model.startswith(prefix)), frozenset())
    if _NO_STREAMING in refused:
        return validation_error(_MESSAGES[_NO_STREAMING])
    field = next((name for name in REFUSABLE_FIELDS if name in fields and name in refused), None)
    if field is None:
        return None
    return validation_error(
        _MESSAGES.get(field, f"This model doesn't support the {field} field. Remove {field} and try again.")
    )


def latency_refusal(model_id: str, latency: str) -> ApiError | None:
    """The ValidationException a request asking ``latency`` of ``model_id`` gets, or None when the model takes it."""
    if latency != "optimized":
        return None
    arn = _ARN.fullmatch(model_id)
    profile = (arn.group(1) if arn else model_id).partition(".")[0] in _GEOGRAPHIES
    if profile and base_model_id(model_id).startswith(LATENCY_OPTIMIZED_MODELS):
        return None
    return validation_error(
        "This model doesn't support the performanceConfig.latency optimized value. Remove performanceConfig or use "
        "standard and try again."
    )

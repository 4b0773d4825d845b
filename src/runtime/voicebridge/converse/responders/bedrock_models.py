"""What each family of Bedrock models accepts in a ``ConverseStream`` request: a system prompt, tools, a guardrail.

The source is the Amazon Bedrock User Guide's table for the Converse API, *Supported models and model features*
(https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html). Of its
columns three matter to a responder that streams: **System prompts**, **Streaming tool use** (tools with
``ConverseStream``; the **Tool use** column is ``Converse``'s, and several models have one without the other) and
**Guardrails**. Its rows, grouped where they agree:

=====================================================================  ======  ==================  ==========
family (the page's rows)                                               system  tools, streaming    guardrails
=====================================================================  ======  ==================  ==========
AI21 Jamba-Instruct                                                    yes     no                  no
AI21 Labs Jamba 1.5 Large, Mini                                        yes     yes                 yes
Amazon Nova Premier, Pro, Lite, Micro                                  yes     yes                 yes
Amazon Titan models                                                    no      no                  yes
Anthropic Claude 2.x and earlier                                       yes     no                  yes
Anthropic Claude 3 models, 3.5 Sonnet, 3.5 Sonnet v2, 3.7 Sonnet       yes     yes                 yes
Anthropic Claude 3.5 Haiku                                             yes     yes                 no
Anthropic Claude Sonnet 4, Opus 4, Opus 4.1                            yes     yes                 no
Cohere Command R, Command R+                                           yes     yes                 no
Meta Llama 2, 3, 3.1, 3.2 (1B, 3B, 11B, 90B)                           yes     no                  yes
Mistral AI Instruct (Mistral 7B Instruct, Mixtral 8x7B Instruct)       no      no                  yes
Mistral Large, Mistral Large 2 (24.07)                                 yes     no                  yes
=====================================================================  ======  ==================  ==========

(Meta Llama 3.1 and 3.2 11B/90B have tool use with ``Converse`` only; so do both Mistral Large rows.) Where the
page is silent, this table says so and chooses:

- Claude 4.5 models (Sonnet 4.5, Haiku 4.5, Opus 4.5) are not among the rows read: taken as the Claude 4 rows.
- Meta Llama 3.3 and Llama 4 are not among the rows read: taken as the other Meta rows, all of which say no
  streaming tool use (for Llama 4, Bedrock's refusal "This model doesn't support tool use in streaming mode." is
  reported publicly: https://github.com/earendil-works/pi/issues/3739).
- Mistral Small and Pixtral Large are not among the rows read: taken as Mistral Large.
- AI21 Jurassic-2 and Cohere Command (Light) have no chat with ``ConverseStream`` at all, per the page: no row here.
- DeepSeek, Writer, OpenAI, Qwen and every other provider: no row read; they get the default below.

**The default**, for a model no row names: the request as the Converse API defines it, everything sent. A model
that refuses a part answers ``ValidationException`` naming it, which fails the turn with the message logged, so
the deployment sees the mismatch on its first call; nothing it configured (the transfer tool, a guardrail) is
dropped on a guess. The table only ever withholds what the page says a model refuses, and never a guardrail (the
responder sends a configured guardrail whatever the table says, and warns when the page says no).

**Latency-optimized inference** (``performanceConfig: {"latency": "optimized"}``) is the Bedrock User Guide's
*Optimize model inference for latency*
(https://docs.aws.amazon.com/bedrock/latest/userguide/latency-optimized-inference.html), a preview: offered "via
cross-region inference" for these models, in the Regions of the page's table (its prose also names US West (Oregon)
for Nova Pro and Llama 3.1 405B; the table, the narrower, is kept):

==============================  ======================
model                           Regions
==============================  ======================
Amazon Nova Pro                 us-east-1, us-east-2
Anthropic Claude 3.5 Haiku      us-east-2, us-west-2
Meta Llama 3.1 405B Instruct    us-east-2
Meta Llama 3.1 70B Instruct     us-east-2, us-west-2
==============================  ======================

:func:`offers_latency_optimized` says yes only for a US cross-Region inference profile (``us.…``, or its ARN) of
one of them, called in one of its Regions; every other request goes without ``performanceConfig``, which means
``standard``, the default. What Bedrock answers a model that does not offer it is not documented.

A ``modelId`` names its family however it is written: a model id (``anthropic.claude-3-5-haiku-20241022-v1:0``),
a cross-Region inference profile id (``us.anthropic.claude-3-5-haiku-20241022-v1:0``), or the ARN of either
(``arn:aws:bedrock:us-east-1::foundation-model/…``, ``arn:aws:bedrock:us-east-1:123456789012:inference-profile/…``).
An ARN that does not carry the model's id (a provisioned model, an application inference profile, a custom model)
gets the default::

    family = model_family("us.meta.llama3-1-70b-instruct-v1:0")
    family.name, family.system, family.streaming_tools, family.guardrails   # ("Meta Llama", True, False, True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT_FAMILY",
    "FAMILIES",
    "LATENCY_OPTIMIZED",
    "SOURCE",
    "ModelFamily",
    "model_family",
    "offers_latency_optimized",
]

SOURCE: Final = (
    "https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html"
)


@dataclass(frozen=True)
class ModelFamily:
    """What a family of models accepts with ``ConverseStream``."""

    name: str
    system: bool
    """Whether it takes a ``system`` prompt."""
    streaming_tools: bool
    """Whether it takes a ``toolConfig`` while streaming."""
    guardrails: bool
    """Whether it takes a ``guardrailConfig``."""
    known: bool = True
    """False for :data:`DEFAULT_FAMILY`: no row of the table names the model."""


DEFAULT_FAMILY: Final = ModelFamily("a model the table does not know", True, True, True, known=False)

# Tried in order, the first that matches deciding: a narrower pattern comes before its provider's wider one.
FAMILIES: Final[tuple[tuple[str, ModelFamily], ...]] = (
    (r"ai21\.jamba-instruct", ModelFamily("AI21 Jamba-Instruct", True, False, False)),
    (r"ai21\.jamba-1-5", ModelFamily("AI21 Labs Jamba 1.5", True, True, True)),
    (r"amazon\.nova-(?:premier|pro|lite|micro)", ModelFamily("Amazon Nova", True, True, True)),
    (r"amazon\.titan-text", ModelFamily("Amazon Titan", False, False, True)),
    (r"anthropic\.claude-(?:v2|instant)", ModelFamily("Anthropic Claude 2.x and earlier", True, False, True)),
    (r"anthropic\.claude-3-5-haiku", ModelFamily("Anthropic Claude 3.5 Haiku", True, True, False)),
    (r"anthropic\.claude-3", ModelFamily("Anthropic Claude 3", True, True, True)),
    (r"anthropic\.claude-(?:sonnet|opus|haiku)-4", ModelFamily("Anthropic Claude 4", True, True, False)),
    (r"cohere\.command-r", ModelFamily("Cohere Command R", True, True, False)),
    (r"meta\.llama", ModelFamily("Meta Llama", True, False, True)),
    (r"mistral\.(?:mistral-7b|mixtral-8x7b)", ModelFamily("Mistral AI Instruct", False, False, True)),
    (r"mistral\.", ModelFamily("Mistral Large", True, False, True)),
)
"""Patterns on the ``provider.model`` part of a model id, and the family each names."""

# The provider begins the id, or follows an inference profile's geography ("us.") or an ARN's resource type ("/").
_FAMILY_PATTERNS: Final = tuple((re.compile(rf"(?:^|[./]){pattern}"), family) for pattern, family in FAMILIES)


def model_family(model_id: str) -> ModelFamily:
    """The family ``model_id`` (an id, an inference profile id, or the ARN of either) belongs to."""
    lowered = model_id.strip().lower()
    return next((family for pattern, family in _FAMILY_PATTERNS if pattern.search(lowered)), DEFAULT_FAMILY)


LATENCY_OPTIMIZED: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    (r"amazon\.nova-pro", frozenset({"us-east-1", "us-east-2"})),
    (r"anthropic\.claude-3-5-haiku", frozenset({"us-east-2", "us-west-2"})),
    (r"meta\.llama3-1-405b", frozenset({"us-east-2"})),
    (r"meta\.llama3-1-70b", frozenset({"us-east-2", "us-west-2"})),
)
"""The models that offer latency-optimized inference, and the Regions where they do."""

# Through a US cross-Region inference profile only: its id, or an ARN ending in it.
_LATENCY_PATTERNS: Final = tuple(
    (re.compile(rf"(?:^|/)us\.{pattern}"), regions) for pattern, regions in LATENCY_OPTIMIZED
)


def offers_latency_optimized(model_id: str, region: str) -> bool:
    """Whether ``model_id``, called in ``region``, takes ``performanceConfig.latency = optimized``."""
    lowered = model_id.strip().lower()
    return any(pattern.search(lowered) and region in regions for pattern, regions in _LATENCY_PATTERNS)

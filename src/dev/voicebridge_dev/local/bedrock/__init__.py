"""EMULATOR of Amazon Bedrock Runtime ``ConverseStream`` answering from a scripted brain — a stand-in, not a model.

It speaks ``ConverseStream`` (rest-json, the response an AWS event stream) over loopback HTTP/1.1, so an unmodified
boto3 ``bedrock-runtime`` client pointed at it with ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` calls ``converse_stream`` and
botocore decodes the events itself. The wire format is botocore's ``bedrock-runtime`` service model
(``botocore/data/bedrock-runtime/2023-09-30/service-2.json``): the request and its validation in :mod:`~.requests`,
the events in :mod:`~.stream`, the route, error answers, pacing and ``/_emulator/...`` control plane in
:mod:`~.server`. What a model's family may not be sent (a ``system`` prompt to Titan, tools while streaming to Llama,
a guardrail to Claude 3.5 Haiku) is refused as Bedrock refuses it (:mod:`~.families`, from the Bedrock User Guide).

What it says comes from a brain (:mod:`~.brain`): rules mapping the conversation's last user message to a reply and
an optional tool call (``transfer_to_agent``, ``end_call``), the default one a small bank's agent. The reply is
streamed word by word after a configurable time to first token, at a configurable rate; a prefill is continued.
Faults (:mod:`~.faults`: throttling, a model not ready or the service unavailable before the stream, for the next
``count`` calls; an exception event mid-stream, a stall, a dropped connection; a stream ended with any of the nine
stop reasons) go through the shared fault queue; each call is recorded (:mod:`~.records`). Errors are
:mod:`~.errors`; the emulator itself, :class:`BedrockEmulator`, is :mod:`~.emulator`.

>>> with BedrockEmulator(time_to_first_token_ms=50, tokens_per_second=200) as emu:  # doctest: +SKIP
...     runtime = boto3.client("bedrock-runtime", endpoint_url=emu.url, region_name="us-east-1")
...     answer = runtime.converse_stream(modelId=emu.model_id, messages=[{"role": "user", "content": [{"text": "hi"}]}])
...     text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in answer["stream"] if "contentBlockDelta" in e)
"""

from voicebridge_dev.local.bedrock.brain import BANK_AGENT, Brain, Rule, ToolCall
from voicebridge_dev.local.bedrock.emulator import DEFAULT_MODEL_ID, BedrockEmulator
from voicebridge_dev.local.bedrock.errors import BrainError, EmulatorConfigError, FaultSpecError
from voicebridge_dev.local.bedrock.families import base_model_id, family_refusal
from voicebridge_dev.local.bedrock.faults import STOP_REASONS, STREAM_EXCEPTIONS, Fault, FaultKind
from voicebridge_dev.local.bedrock.records import LABEL, InvocationRecord
from voicebridge_dev.local.bedrock.requests import MAX_OUTPUT_TOKENS, ConverseRequest, parse_converse_request

__all__ = [
    "BANK_AGENT",
    "DEFAULT_MODEL_ID",
    "LABEL",
    "MAX_OUTPUT_TOKENS",
    "STOP_REASONS",
    "STREAM_EXCEPTIONS",
    "BedrockEmulator",
    "Brain",
    "BrainError",
    "ConverseRequest",
    "EmulatorConfigError",
    "Fault",
    "FaultKind",
    "FaultSpecError",
    "InvocationRecord",
    "Rule",
    "ToolCall",
    "base_model_id",
    "family_refusal",
    "parse_converse_request",
]

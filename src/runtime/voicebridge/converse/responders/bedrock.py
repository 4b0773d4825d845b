"""The ``bedrock`` responder: a model on Amazon Bedrock answers through ``ConverseStream``, streaming its text.

The call, per botocore's ``bedrock-runtime`` model (2023-09-30; HTTP ``POST /model/{modelId}/converse-stream``)::

    converse_stream(modelId, messages=[{role: user|assistant, content: [{text}]}, ...], system=[{text}],
                    inferenceConfig={maxTokens, temperature?, topP?},
                    toolConfig={tools: [{toolSpec: {name, description, inputSchema: {json}}}, ...]},
                    guardrailConfig?={guardrailIdentifier, guardrailVersion},
                    performanceConfig?={latency: optimized})
    -> {"stream": EventStream}, whose events are one-key dicts:
       messageStart {role}
       (contentBlockStart {start: {toolUse: {toolUseId, name}}, contentBlockIndex})?
       contentBlockDelta {delta: {text} | {toolUse: {input}}, contentBlockIndex}*
       contentBlockStop {contentBlockIndex}            ... once per content block
       messageStop {stopReason: end_turn | tool_use | max_tokens | stop_sequence | guardrail_intervened |
                    content_filtered | malformed_model_output | malformed_tool_use | model_context_window_exceeded}
       metadata {usage: {inputTokens, outputTokens, totalTokens}, metrics: {latencyMs}}

A tool's input arrives as fragments of JSON text across its block's deltas. A failure inside the stream is an
exception event (``throttlingException``, ``modelStreamErrorException``, ``validationException``,
``internalServerException``, ``serviceUnavailableException``), which botocore raises from the iteration as
``EventStreamError`` whose ``Error.Code`` is the event's name.

The model is offered three tools, ``transfer_to_agent``, ``end_call`` and ``collect_card_by_keypad`` (the flow takes
the card number on the keypad: :data:`TOOL_ATTRIBUTES`); calling one makes the reply's action
Transfer or Hangup (and a call with no text speaks a short configured line instead). When a guardrail intervenes,
the stream carries the guardrail's own message as text: that is the reply, and the action is Continue whatever the
model meant to do.

**What the model accepts.** Not every model takes ``system``, ``toolConfig`` (while streaming) or
``guardrailConfig``: :func:`~voicebridge.converse.responders.bedrock_models.model_family` says which its family
takes, and :meth:`BedrockResponder.request` sends ``system`` and ``toolConfig`` only to a family that takes them. A
model that takes no tools cannot transfer or end the call; one that takes no system prompt reads the prompt at the
head of the conversation's first user message. A configured guardrail is always sent (a warning at start-up says
when the table doubts the model takes one). ``performanceConfig`` asks for latency-optimized inference of a model
that offers it in the function's Region (``BEDROCK_LATENCY=optimized``, the default;
:func:`~voicebridge.converse.responders.bedrock_models.offers_latency_optimized`), and of no other.

**Language.** A contact in another language than English (:attr:`TurnRequest.language`) adds
:func:`language_instruction` to the system prompt, so the model answers in the caller's language.

**Stop reasons.** Every ``stopReason`` of botocore's ``StopReason`` has an outcome (:data:`STOP_REASONS`):
:data:`COMPLETE_STOPS` leave the reply as written, with the action of the tool called; :data:`GUARDRAIL_STOP` keeps
the guardrail's text and continues; :data:`UNFINISHED_STOPS` keep what was said and continue, and fail the turn when
nothing was. A reason botocore's model does not name yet is taken as an unfinished one.

**Retries.** The client never retries by itself (botocore's back-off would outlast the turn); the responder does,
within the turn's deadline. ``ThrottlingException``, ``ModelNotReadyException`` (both HTTP 429) and
``ServiceUnavailableException`` (503) before the stream, and the ``throttlingException``,
``serviceUnavailableException`` and ``modelStreamErrorException`` (botocore: "Retry your request.") events inside it
while no text has been yielded, are tried again after a full-jitter
back-off (:class:`~voicebridge.backoff.Backoff`), at most ``max_attempts`` calls in all, and only when the next call
can still answer before the deadline (``retry_reserve_s`` is what it is given at the least). What was said is never
asked again: a failure after the first text fails the turn. Each retry is logged with the error's code (never the
caller's words) and counted in the reply's :attr:`BedrockReply.retries`. When no retry is left, the turn fails as
the error would have failed it.

:class:`ConverseStreamReader` reads the events and does no I/O; :class:`BedrockResponder` makes the call::

    responder = BedrockResponder(container.client("bedrock-runtime", retries=0), model_id="amazon.nova-lite-v1:0",
                                 system_prompt="You are a friendly voice agent...")
    reply = responder.respond(TurnRequest("c1", 3, "Can I talk to a person?"), deadline=time.monotonic() + 8)
    "".join(reply.text()), reply.action          # ("Of course, one moment.", Action.TRANSFER)
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, EventStreamError
from urllib3.exceptions import HTTPError as Urllib3Error

from voicebridge.backoff import Backoff
from voicebridge.conversation import Action
from voicebridge.converse.responder import ResponderError, TurnRequest
from voicebridge.converse.responders.bedrock_models import ModelFamily, model_family, offers_latency_optimized
from voicebridge.converse.responders.refusals import error_code, refusal
from voicebridge.language import primary
from voicebridge.telemetry import logger

TOOL_ACTIONS: Mapping[str, Action] = {
    "transfer_to_agent": Action.TRANSFER,
    "end_call": Action.HANGUP,
    "collect_card_by_keypad": Action.CONTINUE,
}
"""The tools the model is offered, and the action calling each one asks of the flow."""
TOOL_ATTRIBUTES: Mapping[str, Mapping[str, str]] = {"collect_card_by_keypad": {"Collect": "card"}}
"""What calling a tool tells the flow besides its action: ``Collect=card`` has the voice-agent flow take the card
number on the keypad, encrypted (Connect's Store customer input), so it is never spoken, heard or transcribed."""
KEYPAD_TEXT = "Please type your card number on the keypad, then press the pound key."
"""Said when the model asks for the card on the keypad without a word of its own: the flow then waits for keys."""

TOOLS: list[dict[str, Any]] = [
    {
        "toolSpec": {
            "name": name,
            "description": description,
            "inputSchema": {
                "json": {
                    "type": "object",
                    "properties": {"reason": {"type": "string", "description": "Why, in a few words."}},
                }
            },
        }
    }
    for name, description in (
        (
            "transfer_to_agent",
            "Hand the caller over to a person. Use it when the caller asks for a person or when you cannot help.",
        ),
        ("end_call", "End the call. Use it once the caller has nothing more to ask and you have said goodbye."),
        (
            "collect_card_by_keypad",
            "Take the caller's card number on the telephone keypad instead of hearing it. Use it when the caller "
            "wants to pay by card or give card details, after telling them to type the number and press pound.",
        ),
    )
]

COMPLETE_STOPS = frozenset({"end_turn", "stop_sequence", "tool_use", "max_tokens"})
"""Stop reasons after which the reply stands as written (``max_tokens``: cut short, but what was said was said)."""
NATURAL_STOPS = frozenset({"end_turn", "stop_sequence", "tool_use"})
GUARDRAIL_STOP = "guardrail_intervened"
UNFINISHED_STOPS = frozenset(
    {"content_filtered", "malformed_model_output", "malformed_tool_use", "model_context_window_exceeded"}
)
"""Stop reasons of a reply the model or the service broke off: what was said stands, no tool is acted on."""
STOP_REASONS = COMPLETE_STOPS | {GUARDRAIL_STOP} | UNFINISHED_STOPS
"""Every ``stopReason`` of botocore's ``bedrock-runtime`` model (``StopReason``, nine values)."""
REASON_ATTRIBUTE = "ActionReason"
"""The attribute carrying the reason the model gave when it called a tool."""
MAX_ATTEMPTS = 3
"""The most calls one reply makes to Bedrock, retries included."""
RETRYABLE_REFUSALS = frozenset({"ThrottlingException", "ModelNotReadyException", "ServiceUnavailableException"})
"""Errors before the stream that a later call may not get (HTTP 429, 429 and 503 in botocore's model)."""
RETRYABLE_STREAM_ERRORS = frozenset({"throttlingException", "serviceUnavailableException", "modelStreamErrorException"})
"""Exception events inside the stream that a later call may not get."""
_EXPLAINED_REFUSALS = frozenset({"ValidationException", "AccessDeniedException", "ResourceNotFoundException"})
"""Refusals naming what is wrong with the deployment (model id, access, guardrail): their message is reported."""


@dataclass
class ToolCall:
    """A tool the model called, its input as the JSON text gathered so far."""

    name: str
    input_json: str = ""

    @property
    def reason(self) -> str:
        """The ``reason`` the model gave, or "" when it gave none (or its input is not the JSON asked for)."""
        try:
            parsed = json.loads(self.input_json or "{}")
        except ValueError:
            return ""
        reason = parsed.get("reason") if isinstance(parsed, dict) else None
        return reason.strip() if isinstance(reason, str) else ""


@dataclass
class ConverseStreamReader:
    """What a ``ConverseStream`` response says, read one event at a time (the dicts botocore yields).

    ::

        reader = ConverseStreamReader()
        for event in response["stream"]:
            speak(reader.feed(event))
        action, call = reader.finish()
    """

    stop_reason: str | None = None
    text_chars: int = 0
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Mapping[str, int] = field(default_factory=dict)
    latency_ms: int | None = None
    _calls_by_block: dict[int, ToolCall] = field(default_factory=dict, init=False, repr=False)

    def feed(self, event: Mapping[str, Any]) -> str:
        """The text ``event`` adds to the reply ("" for the events that add none)."""
        if "contentBlockDelta" in event:
            body = event["contentBlockDelta"]
            delta = body.get("delta", {})
            if "toolUse" in delta:
                call = self._calls_by_block.get(body.get("contentBlockIndex", 0))
                if call is not None:
                    call.input_json += delta["toolUse"].get("input", "")
            text = delta.get("text") or ""
            self.text_chars += len(text)
            return str(text)
        if "contentBlockStart" in event:
            body = event["contentBlockStart"]
            tool = body.get("start", {}).get("toolUse")
            if tool is not None:
                call = ToolCall(str(tool.get("name", "")))
                self._calls_by_block[body.get("contentBlockIndex", 0)] = call
                self.tool_calls.append(call)
        elif "messageStop" in event:
            self.stop_reason = str(event["messageStop"].get("stopReason", ""))
        elif "metadata" in event:
            self.usage = event["metadata"].get("usage", {})
            self.latency_ms = event["metadata"].get("metrics", {}).get("latencyMs")
        return ""

    def finish(self, *, continuing: bool = False) -> tuple[Action, ToolCall | None]:
        """The action the finished stream asks of the flow, and the tool call that asked for it.

        Only :data:`COMPLETE_STOPS` act on a tool call. ResponderError when the stream ended without an answer:
        before ``messageStop``, with nothing said (unless ``continuing`` a reply whose start was already spoken), or
        stopped by the model or the service (:data:`UNFINISHED_STOPS`, or a reason this code does not know) with
        nothing said."""
        if self.stop_reason is None:
            raise ResponderError("the model stream ended before messageStop")
        action, call = Action.CONTINUE, None
        if self.stop_reason in COMPLETE_STOPS:
            call = next((c for c in self.tool_calls if c.name in TOOL_ACTIONS), None)
            if call is not None:
                action = TOOL_ACTIONS[call.name]
        elif self.stop_reason != GUARDRAIL_STOP and not self.text_chars:
            raise ResponderError(f"the model stopped without an answer ({self.stop_reason})")
        keypad = call is not None and call.name in TOOL_ATTRIBUTES
        if action is Action.CONTINUE and not self.text_chars and not continuing and not keypad:
            raise ResponderError(f"the model's reply was empty ({self.stop_reason})")
        return action, call


def language_instruction(language: str) -> str:
    """What the system prompt gains for a contact in another language than English: the tag, which models read as
    well as a language's name, and no table of names to keep."""
    return f"The caller speaks the language with the BCP-47 tag {language}: always answer in that language."


def conversation(request: TurnRequest) -> list[dict[str, Any]]:
    """The ``messages`` for a turn: the history, the caller's turn, and what was already said of the reply.

    Bedrock takes messages that alternate between user and assistant, start with the user and hold no blank text:
    blank sides are left out, neighbours of one role joined, and an opening assistant message (the flow's greeting,
    said before the caller spoke) dropped. Text is stripped, as Bedrock refuses a final assistant message (the
    prefill) that ends in white space."""
    said: list[tuple[str, str]] = []
    for exchange in request.history:
        said += [("user", exchange.caller), ("assistant", exchange.agent)]
    said += [("user", request.transcript), ("assistant", request.spoken_prefix)]
    messages: list[dict[str, Any]] = []
    for role, raw in said:
        text = raw.strip()
        if not text:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"][0]["text"] += "\n" + text
        elif messages or role == "user":
            messages.append({"role": role, "content": [{"text": text}]})
    return messages


class RetryBudget:
    """The retries one turn may make: at most ``max_attempts`` calls in all, each retry after a full-jitter back-off,
    and a retry only when, after that wait, ``reserve_s`` is still left before ``deadline`` for the call to answer."""

    def __init__(
        self,
        *,
        deadline: float,
        max_attempts: int,
        reserve_s: float,
        backoff: Backoff,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
        turn: int,
    ) -> None:
        self.retries = 0
        self._deadline = deadline
        self._max_attempts = max_attempts
        self._reserve_s = reserve_s
        self._backoff = backoff
        self._sleep = sleep
        self._clock = clock
        self._turn = turn

    def retry(self, code: str) -> bool:
        """After a retryable failure (``code``): wait and return True when another call may be made, else False."""
        if self.retries + 1 >= self._max_attempts:
            return False
        delay = self._backoff.failure(self._clock())
        if self._clock() + delay + self._reserve_s > self._deadline:
            logger.info("no time left to retry the model", code=code, turn=self._turn, retries=self.retries)
            return False
        self.retries += 1
        logger.warning(
            "retrying the model", code=code, turn=self._turn, retry=self.retries, delay_ms=round(delay * 1000)
        )
        self._sleep(delay)
        return True


class BedrockReply:
    """A reply being streamed from ``ConverseStream``; its action and attributes are known once the text is.

    ``open_stream`` makes the call again (retrying it as the first was retried) when the stream fails, retryably,
    before any text."""

    def __init__(
        self,
        events: Any,
        *,
        open_stream: Callable[[], Any],
        budget: RetryBudget,
        request: TurnRequest,
        deadline: float,
        closing_lines: Mapping[Action, str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._events = events
        self._open_stream = open_stream
        self._budget = budget
        self._request = request
        self._deadline = deadline
        self._closing_lines = closing_lines
        self._clock = clock
        self._reader = ConverseStreamReader()
        self._action = Action.CONTINUE
        self._attributes: dict[str, str] = {}

    @property
    def action(self) -> Action:
        return self._action

    @property
    def attributes(self) -> Mapping[str, str]:
        return self._attributes

    @property
    def stop_reason(self) -> str | None:
        """The model's ``messageStop.stopReason``, once the text is exhausted."""
        return self._reader.stop_reason

    @property
    def input_tokens(self) -> int | None:
        """The model's count of the request's tokens, once the stream's ``metadata`` came (None before)."""
        value = self._reader.usage.get("inputTokens")
        return int(value) if isinstance(value, int) else None

    @property
    def output_tokens(self) -> int | None:
        """The model's count of the reply's tokens, once the stream's ``metadata`` came (None before)."""
        value = self._reader.usage.get("outputTokens")
        return int(value) if isinstance(value, int) else None

    @property
    def retries(self) -> int:
        """How many times the call was made again for this reply (throttled, the model not ready, unavailable)."""
        return self._budget.retries

    def text(self) -> Iterator[str]:
        while True:
            try:
                for event in self._events:
                    if self._clock() > self._deadline:
                        raise ResponderError("the model did not finish its reply in time")
                    delta = self._reader.feed(event)
                    if delta:
                        yield delta
                break
            except EventStreamError as exc:
                code = str(exc.response.get("Error", {}).get("Code"))
                # Text already yielded has been spoken: a second call would answer differently, so no retry then.
                if code not in RETRYABLE_STREAM_ERRORS or self._reader.text_chars or not self._budget.retry(code):
                    raise ResponderError(f"the model stream failed ({code})") from None
            except (BotoCoreError, Urllib3Error) as exc:
                raise ResponderError(f"the model stream was interrupted ({type(exc).__name__})") from None
            finally:
                self._events.close()
            self._reader = ConverseStreamReader()
            self._events = self._open_stream()
        yield from self._finish()

    def _finish(self) -> Iterator[str]:
        reader = self._reader
        self._action, call = reader.finish(continuing=bool(self._request.spoken_prefix.strip()))
        if call is not None and call.reason:
            self._attributes[REASON_ATTRIBUTE] = call.reason
        if call is not None:
            self._attributes.update(TOOL_ATTRIBUTES.get(call.name, {}))
        logger.info(
            "bedrock reply",
            turn=self._request.turn_index,
            stop_reason=reader.stop_reason,
            action=self._action.value,
            tool=None if call is None else call.name,
            text_chars=reader.text_chars,
            input_tokens=reader.usage.get("inputTokens"),
            output_tokens=reader.usage.get("outputTokens"),
            latency_ms=reader.latency_ms,
            retries=self.retries,
        )
        if reader.stop_reason not in NATURAL_STOPS:
            logger.warning("the model's reply was cut short or stopped", stop_reason=reader.stop_reason)
        line = (
            KEYPAD_TEXT
            if call is not None and call.name in TOOL_ATTRIBUTES
            else self._closing_lines.get(self._action, "")
        )
        if call is not None and not reader.text_chars and line:
            yield line


class BedrockResponder:
    """Answers with a model on Amazon Bedrock, through ``ConverseStream``."""

    name = "bedrock"
    speculative_safe = True
    """ConverseStream changes nothing outside the reply (retries included): it may be asked before the turn ends."""

    def __init__(
        self,
        client: Any,
        *,
        model_id: str,
        system_prompt: str = "",
        max_tokens: int = 400,
        temperature: float | None = None,
        top_p: float | None = None,
        guardrail: tuple[str, str] | None = None,
        latency: str = "optimized",
        region: str = "",
        transfer_text: str = "Let me connect you with a colleague.",
        hangup_text: str = "Thank you for calling. Goodbye.",
        max_attempts: int = MAX_ATTEMPTS,
        retry_reserve_s: float = 1.5,
        backoff_base_s: float = 0.2,
        backoff_cap_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``client`` is a ``bedrock-runtime`` client that does not retry by itself, whose read timeout bounds a stall
        in the stream; ``model_id`` a model id, inference profile id or ARN; ``guardrail`` an (identifier, version)
        pair. A turn makes at most ``max_attempts`` calls; a retry waits a full-jitter back-off of ``backoff_base_s``
        doubling up to ``backoff_cap_s`` (``sleep`` and ``rng`` making the wait, ``clock`` the deadline's clock) and
        is made only when ``retry_reserve_s`` is left, after the wait, before the turn's deadline."""
        self._client = client
        self.model_id = model_id
        self.family: ModelFamily = model_family(model_id)
        self.system_prompt = system_prompt.strip()
        inference: dict[str, Any] = {"maxTokens": max_tokens}
        if temperature is not None:
            inference["temperature"] = temperature
        if top_p is not None:
            inference["topP"] = top_p
        self._inference = inference
        self._guardrail = guardrail
        # Asked only of a model that offers it in this Region: the others would refuse the turn.
        self._latency_optimized = latency == "optimized" and offers_latency_optimized(model_id, region)
        self._closing_lines = {Action.TRANSFER: transfer_text, Action.HANGUP: hangup_text}
        self._max_attempts = max_attempts
        self._retry_reserve_s = retry_reserve_s
        self._backoff = (backoff_base_s, backoff_cap_s)
        self._sleep = sleep
        self._rng = rng
        self._clock = clock
        self._say_what_is_withheld()

    def _say_what_is_withheld(self) -> None:
        family = self.family
        if not family.known:
            logger.info(
                "the model's family is not in the capability table: the whole request is sent", model=self.model_id
            )
        if not family.streaming_tools:
            logger.warning(
                "the model takes no tools while streaming: it cannot transfer the caller or end the call",
                model=self.model_id,
                family=family.name,
            )
        if self.system_prompt and not family.system:
            logger.info("the model takes no system prompt: it leads the first user message", family=family.name)
        if self._guardrail is not None and not family.guardrails:
            # Never dropped on the table's word: a deployment that asked for a guardrail does not run without one.
            logger.warning(
                "the capability table says the model takes no guardrail; it is sent, and Bedrock may refuse each turn",
                family=family.name,
            )

    def request(self, turn: TurnRequest) -> dict[str, Any]:
        """The ``ConverseStream`` parameters that answer ``turn``, holding only what the model's family accepts.

        The tools go as ``toolConfig`` when the family takes tools while streaming. The system prompt goes as
        ``system``, or, to a family that takes none, at the head of the first user message, a blank line between it
        and what the caller said. A configured guardrail always goes as ``guardrailConfig``: a model that refuses it
        fails the turn loudly, which is better than answering callers without the guardrail asked for."""
        messages = conversation(turn)
        system_prompt = self.system_prompt
        if primary(turn.language) != "en":
            # The prompt is the deployment's, most likely English: the model is told the contact's language.
            system_prompt = f"{system_prompt}\n\n{language_instruction(turn.language)}".strip()
        parameters: dict[str, Any] = {
            "modelId": self.model_id,
            "messages": messages,
            "inferenceConfig": self._inference,
        }
        if self.family.streaming_tools:
            parameters["toolConfig"] = {"tools": TOOLS}
        if system_prompt and self.family.system:
            parameters["system"] = [{"text": system_prompt}]
        elif system_prompt and messages:
            first = messages[0]["content"][0]
            first["text"] = f"{system_prompt}\n\n{first['text']}"
        if self._guardrail is not None:
            identifier, version = self._guardrail
            parameters["guardrailConfig"] = {"guardrailIdentifier": identifier, "guardrailVersion": version}
        if self._latency_optimized:
            parameters["performanceConfig"] = {"latency": "optimized"}
        return parameters

    def respond(self, request: TurnRequest, *, deadline: float) -> BedrockReply:
        if not request.transcript.strip():
            raise ResponderError("the turn has no words to answer")
        if self._clock() >= deadline:
            raise ResponderError("no time left to ask the model")
        base_s, cap_s = self._backoff
        budget = RetryBudget(
            deadline=deadline,
            max_attempts=self._max_attempts,
            reserve_s=self._retry_reserve_s,
            backoff=Backoff(base_s=base_s, cap_s=cap_s, rng=self._rng),
            sleep=self._sleep,
            clock=self._clock,
            turn=request.turn_index,
        )
        parameters = self.request(request)

        def open_stream() -> Any:
            return self._open_stream(parameters, budget)

        return BedrockReply(
            open_stream(),
            open_stream=open_stream,
            budget=budget,
            request=request,
            deadline=deadline,
            closing_lines=self._closing_lines,
            clock=self._clock,
        )

    def _open_stream(self, parameters: Mapping[str, Any], budget: RetryBudget) -> Any:
        while True:
            try:
                return self._client.converse_stream(**parameters)["stream"]
            except ClientError as exc:
                code = error_code(exc)
                if code not in RETRYABLE_REFUSALS or not budget.retry(code):
                    raise ResponderError(refusal("Bedrock", exc, _EXPLAINED_REFUSALS)) from None
            except (BotoCoreError, Urllib3Error) as exc:
                raise ResponderError(f"Bedrock unreachable ({type(exc).__name__})") from None

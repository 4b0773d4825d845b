"""A ConverseStream request as Bedrock Runtime reads it, validated as the service validates it.

The shapes are botocore's ``bedrock-runtime`` service model (``botocore/data/bedrock-runtime/2023-09-30/
service-2.json``): ``ConverseStreamRequest`` is ``modelId`` (in the URI) and a JSON body of ``messages``
(``Message {role, content: [ContentBlock]}``), ``system`` (``[SystemContentBlock]``), ``inferenceConfig``
(``maxTokens`` ≥ 1, ``temperature`` and ``topP`` in 0..1, ``stopSequences``), ``toolConfig`` (``tools: [Tool]``, at
least one, each a ``toolSpec {name, description?, inputSchema: {json}}``; ``toolChoice``), ``guardrailConfig``
(``guardrailIdentifier``, ``guardrailVersion``, ``trace?``, ``streamProcessingMode?``),
``additionalModelRequestFields`` and ``performanceConfig`` (``latency``: ``standard`` or ``optimized``).
``ContentBlock``, ``Tool``, ``ToolChoice`` and ``ToolInputSchema`` are unions: exactly one member set.

botocore checks types, required members and minimums before sending; the maximums (``temperature`` ≤ 1, the model's
output limit), the patterns and everything about the conversation are the service's to refuse, with a
ValidationException (HTTP 400). The conversation rules are the service's: it starts with a user message, roles
alternate, a ``toolUse`` is answered by a ``toolResult`` in the next user message, tool blocks need a
``toolConfig``, and a last assistant message (a prefill the reply continues) does not end in white space.

The emulated model reads text, tool uses and tool results (and guardrail-tagged text); other content blocks (images,
documents, audio, video, reasoning) get the ValidationException a text-only model answers.

Last, the request is held to what the model's family takes (:mod:`~.families`, from the ``modelId`` in the URL): a
``system``, ``toolConfig`` or ``guardrailConfig`` the family does not take is refused, as the service refuses it,
and so is latency-optimized inference asked of a model that does not offer it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from voicebridge_dev.local.bedrock.families import REFUSABLE_FIELDS, family_refusal, latency_refusal
from voicebridge_dev.local.service import ApiError, finite_number, validation_error

MAX_OUTPUT_TOKENS: Final = 4096
"""The emulated model's output limit: ``inferenceConfig.maxTokens`` above it is refused."""

_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_TOOL_USE_ID: Final = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")
_GUARDRAIL_ID: Final = re.compile(r"[a-z0-9]+|arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail/[a-z0-9]+")
_GUARDRAIL_VERSION: Final = re.compile(r"[1-9][0-9]{0,7}|DRAFT")
_GUARDRAIL_TRACE: Final = ("enabled", "disabled", "enabled_full")
_STREAM_MODES: Final = ("sync", "async")
_UNSUPPORTED_BLOCKS: Final = frozenset(
    {
        "image",
        "document",
        "video",
        "audio",
        "reasoningContent",
        "citationsContent",
        "searchResult",
        "toolAddition",
        "toolRemoval",
    }
)
_CONTENT_BLOCKS: Final = (
    frozenset({"text", "toolUse", "toolResult", "guardContent", "cachePoint"}) | _UNSUPPORTED_BLOCKS
)
_START_WITH_USER: Final = (
    "A conversation must start with a user message. Try again with a conversation that starts with a user message."
)
_ALTERNATE: Final = (
    "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between "
    "user and assistant roles and try again."
)
_TOOL_CONFIG_NEEDED: Final = "The toolConfig field must be defined when using toolUse and toolResult content blocks."


@dataclass(frozen=True)
class Message:
    """One message of the conversation as the emulated model reads it."""

    role: str
    texts: tuple[str, ...]
    tool_uses: tuple[str, ...] = ()
    tool_results: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(self.texts)


_LANGUAGE_TAG = re.compile(r"\bBCP-47 tag ([A-Za-z]{2,3})(?:-[A-Za-z0-9]+)*")
"""How the responder names the caller's language in its prompt; only the tag's primary language is read."""


@dataclass(frozen=True)
class ConverseRequest:
    """A valid ConverseStream request: the conversation and what bounds the reply."""

    model_id: str
    messages: tuple[Message, ...]
    system: tuple[str, ...] = ()
    max_tokens: int | None = None
    stop_sequences: tuple[str, ...] = ()
    tools: frozenset[str] = frozenset()

    @property
    def prefill(self) -> str:
        """The text of a last assistant message, which the reply continues; empty when the user spoke last."""
        return self.messages[-1].text if self.messages[-1].role == "assistant" else ""

    @property
    def _answered(self) -> int:
        """The index of the user message the reply answers: the last one, or the one before a prefill."""
        return len(self.messages) - (2 if self.messages[-1].role == "assistant" else 1)

    @property
    def said(self) -> str | None:
        """The text of the user message the reply answers; None when it carries only tool results."""
        message = self.messages[self._answered]
        return None if not message.texts and message.tool_results else message.text

    @property
    def previous_reply(self) -> str | None:
        """The text of the assistant message before the one answered, if any."""
        index = self._answered - 1
        return self.messages[index].text if index >= 0 else None

    @property
    def language(self) -> str | None:
        """The primary language the prompt asks the answer in (``es`` of "the BCP-47 tag es-US"), None when it names
        none: the emulator's stand-in for a model reading the responder's language instruction (docs/responders.md,
        "Language")."""
        first_user = next((m.text for m in self.messages if m.role == "user"), "")
        found = _LANGUAGE_TAG.search("\n".join((*self.system, first_user)))
        return found.group(1).lower() if found else None

    @property
    def input_tokens(self) -> int:
        """The prompt's size, a token being a word here."""
        return sum(len(text.split()) for text in (*self.system, *(m.text for m in self.messages)))


def parse_converse_request(model_id: str, body: Any) -> ConverseRequest:
    """The request ``body`` (decoded JSON) makes for ``model_id``; :class:`ApiError` (ValidationException) otherwise."""
    if not isinstance(body, dict):
        raise validation_error("The request body must be a JSON object.")
    messages = _messages(body.get("messages"))
    tools = _tool_config(body.get("toolConfig"))
    _check_tool_blocks(messages, tools)
    system = _system(body.get("system"))
    max_tokens, stop_sequences = _inference_config(body.get("inferenceConfig"))
    _guardrail_config(body.get("guardrailConfig"))
    additional = body.get("additionalModelRequestFields")
    if additional is not None:
        _object(additional, "additionalModelRequestFields", "JSON")
    latency = _performance_config(body.get("performanceConfig"))
    refusal = family_refusal(model_id, [name for name in REFUSABLE_FIELDS if body.get(name)]) or latency_refusal(
        model_id, latency
    )
    if refusal is not None:
        raise refusal
    return ConverseRequest(
        model_id=model_id,
        messages=messages,
        system=system,
        max_tokens=max_tokens,
        stop_sequences=stop_sequences,
        tools=frozenset(tools or ()),
    )


def _performance_config(raw: Any) -> str:
    """The latency asked for (``standard`` when unset): botocore's ``PerformanceConfiguration``."""
    if raw is None:
        return "standard"
    config = _object(raw, "performanceConfig", "PerformanceConfiguration")
    _one_of(config, "latency", "performanceConfig", ("standard", "optimized"))
    return str(config.get("latency", "standard"))


def _constraint(path: str, value: Any, constraint: str) -> ApiError:
    """A constraint violation, worded as AWS's validation layer words them."""
    shown = value if isinstance(value, str | int | float) else type(value).__name__
    return validation_error(
        f"1 validation error detected: Value '{shown}' at '{path}' failed to satisfy constraint: {constraint}"
    )


def _object(raw: Any, path: str, shape: str) -> dict[str, Any]:
    """``raw``, when it is the JSON object a ``shape`` is."""
    if not isinstance(raw, dict):
        raise _constraint(path, raw, f"Member must be a {shape} object")
    return raw


def _matching(raw: dict[str, Any], member: str, path: str, pattern: re.Pattern[str], shown: str) -> str:
    """``raw``'s ``member``, when it is a string ``pattern`` matches (``shown`` as the service words it)."""
    value = raw.get(member)
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _constraint(f"{path}.{member}", value, f"Member must satisfy regular expression pattern: {shown}")
    return value


def _one_of(raw: dict[str, Any], member: str, path: str, values: Sequence[str]) -> None:
    """Refuse ``raw``'s ``member``, when it is set, unless it is one of ``values``."""
    if member in raw and raw[member] not in values:
        raise _constraint(f"{path}.{member}", raw[member], f"Member must satisfy enum value set: [{', '.join(values)}]")


def _messages(raw: Any) -> tuple[Message, ...]:
    if raw is None or raw == []:
        raise validation_error(_START_WITH_USER)
    if not isinstance(raw, list):
        raise _constraint("messages", raw, "Member must be a list of messages")
    messages = tuple(_message(item, f"messages.{index}") for index, item in enumerate(raw))
    if messages[0].role != "user":
        raise validation_error(_START_WITH_USER)
    if any(a.role == b.role for a, b in itertools.pairwise(messages)):
        raise validation_error(_ALTERNATE)
    last = messages[-1]
    if last.role == "assistant" and last.texts and last.texts[-1] != last.texts[-1].rstrip():
        raise validation_error(
            "The model returned the following errors: final assistant content cannot end with trailing whitespace"
        )
    return messages


def _message(raw: Any, path: str) -> Message:
    role = _object(raw, path, "Message").get("role")
    if role not in ("user", "assistant"):
        raise _constraint(f"{path}.role", role, "Member must satisfy enum value set: [user, assistant]")
    content = raw.get("content")
    if not isinstance(content, list):
        raise _constraint(f"{path}.content", content, "Member must not be null")
    if not content:
        raise validation_error(
            f"The content field in the Message object at {path} is empty. Add a ContentBlock "
            "object to the content field and try again."
        )
    texts: list[str] = []
    uses: list[str] = []
    results: list[str] = []
    for index, block in enumerate(content):
        where = f"{path}.content.{index}"
        member, value = _union_member(block, where, _CONTENT_BLOCKS, "ContentBlock")
        if member in _UNSUPPORTED_BLOCKS:
            raise validation_error(
                f"This model doesn't support the {member} content block that you provided. Try "
                "again with text, toolUse or toolResult content blocks."
            )
        if member == "text":
            texts.append(_text(value, where))
        elif member == "guardContent":
            texts.append(_guarded_text(value, f"{where}.guardContent"))
        elif member == "toolUse":
            if role != "assistant":
                raise validation_error(
                    f"The toolUse block at {where} is in a user message; only the assistant uses tools."
                )
            uses.append(_tool_use(value, f"{where}.toolUse"))
        elif member == "toolResult":
            if role != "user":
                raise validation_error(
                    f"The toolResult block at {where} is in an assistant message; tool results come from the user."
                )
            results.append(_tool_result(value, f"{where}.toolResult"))
    return Message(role, tuple(texts), tuple(uses), tuple(results))


def _union_member(raw: Any, path: str, members: frozenset[str], shape: str) -> tuple[str, Any]:
    """The one member a union object sets."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise validation_error(f"The {shape} object at {path} must set exactly one of its members.")
    ((member, value),) = raw.items()
    if member not in members:
        raise validation_error(f"The {shape} object at {path} has an unknown member {member!r}.")
    return member, value


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _constraint(f"{path}.text", value, "Member must be a string")
    if not value.strip():
        raise validation_error(
            f"The text field in the ContentBlock object at {path} is blank. Add text to the text field, and try again."
        )
    return value


def _guarded_text(value: Any, path: str) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("text"), dict):
        raise validation_error(f"The guardContent block at {path} carries no text; this model reads text only.")
    return _text(value["text"].get("text"), f"{path}.text")


def _tool_use(value: Any, path: str) -> str:
    block = _object(value, path, "ToolUseBlock")
    tool_use_id = _matching(block, "toolUseId", path, _TOOL_USE_ID, "[a-zA-Z0-9_.:-]+")
    _matching(block, "name", path, _NAME, "[a-zA-Z0-9_-]+")
    if "input" not in block:
        raise _constraint(f"{path}.input", None, "Member must not be null")
    return tool_use_id


def _tool_result(value: Any, path: str) -> str:
    block = _object(value, path, "ToolResultBlock")
    tool_use_id = _matching(block, "toolUseId", path, _TOOL_USE_ID, "[a-zA-Z0-9_.:-]+")
    if not isinstance(block.get("content"), list):
        raise _constraint(f"{path}.content", block.get("content"), "Member must not be null")
    _one_of(block, "status", path, ("success", "error"))
    return tool_use_id


def _check_tool_blocks(messages: Sequence[Message], tools: Sequence[str] | None) -> None:
    """Tool blocks need a toolConfig, and every toolUse is answered, by id, in the next user message."""
    if tools is None and any(m.tool_uses or m.tool_results for m in messages):
        raise validation_error(_TOOL_CONFIG_NEEDED)
    for index, message in enumerate(messages):
        if message.tool_uses:
            answered = messages[index + 1].tool_results if index + 1 < len(messages) else ()
            missing = [tool_use_id for tool_use_id in message.tool_uses if tool_use_id not in answered]
            if missing:
                raise validation_error(
                    f"Expected toolResult blocks at messages.{index + 1}.content for the following "
                    f"Ids: {', '.join(missing)}"
                )
        if message.tool_results:
            asked = messages[index - 1].tool_uses if index else ()
            unknown = [tool_use_id for tool_use_id in message.tool_results if tool_use_id not in asked]
            if unknown:
                raise validation_error(
                    f"The toolResult blocks at messages.{index}.content answer ids no toolUse block "
                    f"in the previous message has: {', '.join(unknown)}"
                )


def _system(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _constraint("system", raw, "Member must be a list of SystemContentBlock objects")
    texts = []
    for index, block in enumerate(raw):
        where = f"system.{index}"
        member, value = _union_member(
            block, where, frozenset({"text", "guardContent", "cachePoint"}), "SystemContentBlock"
        )
        if member == "text":
            if not isinstance(value, str) or not value:
                raise _constraint(f"{where}.text", value, "Member must have length greater than or equal to 1")
            texts.append(value)
        elif member == "guardContent":
            texts.append(_guarded_text(value, f"{where}.guardContent"))
    return tuple(texts)


def _number(raw: dict[str, Any], name: str, low: float, high: float) -> None:
    value = raw.get(name)
    if value is None:
        return
    path = f"inferenceConfig.{name}"
    if not finite_number(value):
        raise _constraint(path, value, "Member must be a number")
    if value < low:
        raise _constraint(path, value, f"Member must have value greater than or equal to {low:g}")
    if value > high:
        raise _constraint(path, value, f"Member must have value less than or equal to {high:g}")


def _inference_config(raw: Any) -> tuple[int | None, tuple[str, ...]]:
    if raw is None:
        return None, ()
    max_tokens = _object(raw, "inferenceConfig", "InferenceConfiguration").get("maxTokens")
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise _constraint("inferenceConfig.maxTokens", max_tokens, "Member must be an integer")
        if max_tokens < 1:
            raise _constraint(
                "inferenceConfig.maxTokens", max_tokens, "Member must have value greater than or equal to 1"
            )
        if max_tokens > MAX_OUTPUT_TOKENS:
            raise validation_error(
                f"The maximum tokens you requested exceeds the model limit of {MAX_OUTPUT_TOKENS}. "
                f"Try again with a maximum tokens value of at most {MAX_OUTPUT_TOKENS}."
            )
    _number(raw, "temperature", 0, 1)
    _number(raw, "topP", 0, 1)
    stops = raw.get("stopSequences", [])
    if not isinstance(stops, list) or len(stops) > 2500:
        raise _constraint("inferenceConfig.stopSequences", stops, "Member must have length less than or equal to 2500")
    for index, stop in enumerate(stops):
        if not isinstance(stop, str) or not stop:
            raise _constraint(
                f"inferenceConfig.stopSequences.{index}", stop, "Member must have length greater than or equal to 1"
            )
    return max_tokens, tuple(stops)


def _tool_config(raw: Any) -> list[str] | None:
    """The names of the tools declared; None without a toolConfig."""
    if raw is None:
        return None
    tools = _object(raw, "toolConfig", "ToolConfiguration").get("tools")
    if not isinstance(tools, list):
        raise _constraint("toolConfig.tools", tools, "Member must not be null")
    if not tools:
        raise _constraint("toolConfig.tools", "[]", "Member must have length greater than or equal to 1")
    names: list[str] = []
    for index, tool in enumerate(tools):
        where = f"toolConfig.tools.{index}"
        member, spec = _union_member(tool, where, frozenset({"toolSpec", "systemTool", "cachePoint"}), "Tool")
        if member == "systemTool":
            raise validation_error(f"This model doesn't support the system tool at {where}.")
        if member == "toolSpec":
            names.append(_tool_spec(spec, f"{where}.toolSpec"))
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise validation_error(
            f"The toolConfig field declares these tool names more than once: {', '.join(duplicated)}"
        )
    choice = raw.get("toolChoice")
    if choice is not None:
        member, value = _union_member(choice, "toolConfig.toolChoice", frozenset({"auto", "any", "tool"}), "ToolChoice")
        if member == "tool" and (not isinstance(value, dict) or value.get("name") not in names):
            chosen = value.get("name") if isinstance(value, dict) else value
            raise validation_error(
                f"The toolChoice field names a tool, {chosen!r}, that toolConfig.tools does not declare."
            )
    return names


def _tool_spec(raw: Any, path: str) -> str:
    shown = "[a-zA-Z0-9_-]+ and have length less than or equal to 64"
    name = _matching(_object(raw, path, "ToolSpecification"), "name", path, _NAME, shown)
    description = raw.get("description")
    if description is not None and (not isinstance(description, str) or not description):
        raise _constraint(f"{path}.description", description, "Member must have length greater than or equal to 1")
    schema = raw.get("inputSchema")
    if schema is None:
        raise _constraint(f"{path}.inputSchema", None, "Member must not be null")
    _, document = _union_member(schema, f"{path}.inputSchema", frozenset({"json"}), "ToolInputSchema")
    if not isinstance(document, dict):
        raise validation_error(f"The JSON schema at {path}.inputSchema.json must be an object.")
    if document.get("type", "object") != "object":
        raise validation_error(
            f"The model returned the following errors: {path}.inputSchema.json.type: Input should be 'object'"
        )
    return name


def _guardrail_config(raw: Any) -> None:
    if raw is None:
        return
    path = "guardrailConfig"
    identifier = "([a-z0-9]+)|(arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail/[a-z0-9]+)"
    _object(raw, path, "GuardrailStreamConfiguration")
    _matching(raw, "guardrailIdentifier", path, _GUARDRAIL_ID, identifier)
    _matching(raw, "guardrailVersion", path, _GUARDRAIL_VERSION, "(([1-9][0-9]{0,7})|(DRAFT))")
    _one_of(raw, "trace", path, _GUARDRAIL_TRACE)
    _one_of(raw, "streamProcessingMode", path, _STREAM_MODES)

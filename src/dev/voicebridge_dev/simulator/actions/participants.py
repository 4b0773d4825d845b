"""The input and Lex family of the flow simulator, what the caller (or the agent's workspace) answers:
``GetParticipantInput``, ``ConnectParticipantWithLexBot``, ``ConnectParticipantWithAgenticCX`` and ``ShowView``.

``GetParticipantInput`` plays its prompt, then waits ``InputTimeLimitSeconds`` for the keys the simulated caller
presses (:mod:`~voicebridge_dev.simulator.keypad`: a menu's key and its condition, or keys stored in
``$.StoredCustomerInput``); none in time takes its ``InputTimeLimitExceeded`` branch, else ``NoMatchingError`` (the
branch for any error no other matches, GetParticipantInput's page of Connect's flow language reference,
https://docs.aws.amazon.com/connect/latest/APIReference/participant-actions-getparticipantinput.html).
``ConnectParticipantWithLexBot`` sends the Lex emulator's bot what the caller says
(:mod:`~voicebridge_dev.simulator.lexbot`); ``ShowView`` is recorded and answered by the caller script's choice, or
left to its time limit (:mod:`~voicebridge_dev.simulator.standins`).

``ConnectParticipantWithAgenticCX`` hands the call to an Agentic CX application
(https://docs.aws.amazon.com/connect/latest/adminguide/agentic-cx-block.html: the block "routes the contact to a
branch based on the exit condition that the application returns"). No such application runs here: a stand-in hears
the caller's script turn by turn and takes it to an outcome. A turn that asks for a person takes the ``Escalation``
condition (its ``NoMatchingCondition`` branch when the flow has none); words and then silence end the conversation,
which takes the default branch; silence from the start takes ``InputTimeLimitExceeded``, the console's idle
timeout. What the application would say is not simulated (it is the application's), and how long it waits for a
silent caller is the simulator's choice (:data:`AGENTIC_IDLE_S`): no AWS text gives it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge_dev.flows import Action
from voicebridge_dev.flows.rules import template_value
from voicebridge_dev.simulator.actions.prompts import Prompt, play, prompt, speak
from voicebridge_dev.simulator.actions.recorded import resolved
from voicebridge_dev.simulator.call import Call
from voicebridge_dev.simulator.caller import Press, Say
from voicebridge_dev.simulator.events import BOT, CALLER, Noted
from voicebridge_dev.simulator.keypad import menu_key, stored_input
from voicebridge_dev.simulator.lexbot import (
    LexBotRef,
    bot_of,
    closed,
    lex_attributes,
    message_text,
    start_timeout_s,
)
from voicebridge_dev.simulator.outcomes import ActionFailed, Branch, branch_on, error_type

AI_AGENT_ATTRIBUTE = "x-amz-lex:q-in-connect:ai-agent-arn"
"""The Lex session attribute that hands the call to a Connect AI agent (docs/flows.md)."""

__all__ = ["agentic_cx", "get_input", "lex_bot", "view"]

_LEX_TURNS = 20
"""Turns of one Lex conversation before the simulator gives up on the bot closing an intent."""


AGENTIC_IDLE_S = 8.0
"""How long the Agentic CX stand-in waits for the caller's next turn; no AWS text gives the application's."""
_ASKS_FOR_A_PERSON = re.compile(r"\b(agent|human|person|representative|operator|someone)\b", re.IGNORECASE)


def agentic_cx(call: Call, action: Action) -> Branch:
    configuration = action.parameters.get("AgentConfiguration") or {}
    variables = configuration.get("ContextVariables") or {}
    call.log.record(
        Noted(
            call.clock.now(),
            action.identifier,
            action.type,
            {
                "application": configuration.get("ApplicationId"),
                "alias": configuration.get("Alias"),
                "context": {name: call.contact.value(str(value)) for name, value in variables.items()},
            },
        )
    )
    for turn in range(_LEX_TURNS):
        said = _listen(call, AGENTIC_IDLE_S, (Say, Press))
        if said is None and turn == 0:
            raise ActionFailed("the caller said nothing", error_type(action, "InputTimeLimitExceeded"))
        if said is None:
            return Branch("conversation ended", action.next_action)
        call.log.record(Noted(call.clock.now(), action.identifier, action.type, {"said": said}))
        if _ASKS_FOR_A_PERSON.search(said):
            return branch_on(action, "Escalation")
    return Branch("conversation ended", action.next_action)


def get_input(call: Call, action: Action) -> Branch:
    """DTMF from the scripted caller (:mod:`~.keypad`): a menu's key, or keys kept in ``$.StoredCustomerInput``."""
    params = action.parameters
    played = prompt(call, action)
    if played is not None:
        play(call, action, played)
    # Keys pressed to interrupt a queue's messages are what this block hears first, when there are any.
    buffered, call.key_buffer = call.key_buffer, None
    keys = buffered if buffered is not None else _listen(call, call.seconds(action, "InputTimeLimitSeconds"), Press)
    if str(params.get("StoreInput", "False")) == "True":
        entry = stored_input(keys, params)
        if entry.value is None:
            raise ActionFailed(entry.reason or "invalid input", error_type(action, entry.error))
        call.contact.stored_input = _encrypted(call, action, entry.value) if keys is not None else entry.value
        return Branch("stored" if keys is not None else "stored Timeout", action.next_action)
    if keys is None:
        # No key before InputTimeLimitSeconds. Without an InputTimeLimitExceeded branch it takes NoMatchingError,
        # the branch for any error no other matches (GetParticipantInput's page of Connect's flow language
        # reference).
        raise ActionFailed("no input before InputTimeLimitSeconds", error_type(action, "InputTimeLimitExceeded"))
    return branch_on(action, menu_key(keys))


def _encrypted(call: Call, action: Action, entered: str) -> str:
    """What ``$.StoredCustomerInput`` holds when ``InputEncryption`` is set: ciphertext, never the keys.

    Connect encrypts the input with the certificate in ``Key``, signed by the key ``EncryptionKeyId`` names, and
    stores what the AWS Encryption SDK decrypts (the admin guide's "Encrypt sensitive customer input"); both may be
    given dynamically. The simulator has no certificate to encrypt with: it stores an opaque stand-in that names the
    key and the number of keys pressed, so that a flow which speaks or passes on the stored input gives nothing
    away. A missing key or certificate takes the error branch, as a flow that cannot encrypt must not store."""
    encryption = action.parameters.get("InputEncryption")
    if not isinstance(encryption, Mapping):
        return entered
    key_id = call.contact.value(str(encryption.get("EncryptionKeyId", "")))
    certificate = call.contact.value(str(encryption.get("Key", "")))
    if not key_id or not certificate:
        raise ActionFailed("InputEncryption needs an EncryptionKeyId and a Key", error_type(action, "NoMatchingError"))
    return f"[encrypted with key {key_id}: {len(entered)} keys]"


def _listen(call: Call, limit_s: float, kind: type[Press] | type[Say] | tuple[type, ...]) -> str | None:
    """Give the caller its turn and wait up to ``limit_s`` for it to press keys or speak (``kind``): the keys or
    the words, once made; None when nothing of the kind came in time."""
    call.caller.bot_stopped(call.clock.now(), call.media)
    deadline = call.clock.now() + limit_s
    answer = call.caller.respond(kind, before=deadline)
    if answer is None:
        call.pass_time(deadline)
        return None
    step, _, end = answer
    call.pass_time(end)
    return step.digits if isinstance(step, Press) else step.clip.transcript


# -- a Lex V2 bot (:mod:`~.lexbot`)


def lex_bot(call: Call, action: Action) -> Branch:
    params = action.parameters
    played = prompt(call, action)
    if played is not None:
        play(call, action, played)
    attributes = {k: call.contact.value(str(v)) for k, v in (params.get("LexSessionAttributes") or {}).items()}
    # The agent's ARN may be a token its stack fills: that the block names one is what hands the call over.
    if AI_AGENT_ATTRIBUTE in (params.get("LexSessionAttributes") or {}) and call.agent is not None:
        return _hand_to_agent(call, action, attributes)
    if "LexV2Bot" not in params:
        raise ActionFailed("a Lex V1 bot (LexBot) is not in the local cloud")
    alias_arn = call.contact.value(str(params["LexV2Bot"].get("AliasArn", "")))
    bot = bot_of(alias_arn)
    if bot is None and call.templated and template_value(alias_arn) and call.lex_standin is not None:
        # A template's bot (its alias a token its stack fills) is the bot the Lex emulator serves.
        bot = call.lex_standin
        call.log.record(Noted(call.clock.now(), action.identifier, action.type, {"stand-in bot": bot.bot_id}))
    if bot is None:
        raise ActionFailed(f"LexV2Bot.AliasArn {alias_arn!r} is not a Lex V2 bot alias ARN")
    if call.lex is None:
        raise ActionFailed("no Lex runtime in this simulation")
    state: dict[str, Any] = {"sessionAttributes": attributes}
    for turn in range(_LEX_TURNS):
        dialog = state.get("dialogAction") or {}
        intent = (state.get("intent") or {}).get("name")
        timeout = start_timeout_s(state.get("sessionAttributes") or attributes, intent, dialog.get("slotToElicit"))
        said = _listen(call, timeout, (Say, Press))
        if said is None:
            raise ActionFailed("the caller said nothing", error_type(action, "InputTimeLimitExceeded"))
        # The flow's session attributes go with the first turn; the bot's session keeps them, and its dialog,
        # after that (sending a sessionState again would replace the dialog's).
        answer = _recognize(call, bot, said, attributes if turn == 0 else {})
        state = answer.get("sessionState") or {}
        call.contact.lex = lex_attributes(answer)
        words = message_text(answer)
        call.log.record(
            Noted(
                call.clock.now(),
                action.identifier,
                action.type,
                {
                    "said": said,
                    "intent": call.contact.lex["IntentName"],
                    "answer": words,
                    "dialog_action": (state.get("dialogAction") or {}).get("type"),
                },
            )
        )
        if words:
            play(call, action, Prompt(speak(call, words), "connect-voice", text=words))
        if closed(answer):
            return branch_on(action, str(call.contact.lex["IntentName"] or ""))
    raise ActionFailed(f"the bot did not close an intent in {_LEX_TURNS} turns")


def _hand_to_agent(call: Call, action: Action, attributes: Mapping[str, str]) -> Branch:
    """The Lex block hands the call to an external AI agent (immediate handoff, audio streaming): its session runs to
    its end, what was said during it goes on the call's recording, and the flow goes on with the outcome in
    ``$.Lex.SessionAttributes.Tool`` (``Complete``, ``Escalate``); a session that ended without one takes the
    block's error branch, as Connect's fallback path does."""
    assert call.agent is not None
    started = call.clock.now()
    handback = call.agent(call, attributes)
    for samples, text, clip, offset in handback.caller:
        call.media.play(CALLER, samples, "speech", at=started + offset, text=text, clip=clip)
    if handback.agent is not None and handback.agent.size:
        call.media.play(BOT, handback.agent, "prompt", at=started, text="(the external AI agent)")
    call.clock.sleep_until(started + handback.duration_s)
    call.log.record(
        Noted(call.clock.now(), action.identifier, action.type, {"agent": handback.tool, "detail": handback.detail})
    )
    if handback.tool is None:
        raise ActionFailed(f"the AI agent's session ended without an outcome: {handback.detail}")
    call.contact.lex = {
        "IntentName": None,
        "IntentConfidence": {"Score": None},
        "Slots": {},
        "SessionAttributes": {**attributes, "Tool": handback.tool},
    }
    return branch_on(action, "")


def _recognize(call: Call, bot: LexBotRef, text: str, attributes: Mapping[str, str]) -> dict[str, Any]:
    request: dict[str, Any] = {
        "botId": bot.bot_id,
        "botAliasId": bot.alias_id,
        "localeId": call.contact.language.replace("-", "_"),
        "sessionId": call.contact.contact_id,
        "text": text,
    }
    if attributes:
        request["sessionState"] = {"sessionAttributes": dict(attributes)}
    try:
        answer: dict[str, Any] = call.lex.recognize_text(**request)
    except (BotoCoreError, ClientError) as exc:
        raise ActionFailed(f"Lex: {exc}") from exc
    return answer


# -- a view in the agent's workspace


def view(call: Call, action: Action) -> Branch:
    """A view in the agent's workspace: shown (in the report), answered by the caller script's choice for it,
    else left unanswered until its time limit, when it takes ``TimeLimitExceeded``."""
    params = action.parameters
    shown = str((params.get("ViewResource") or {}).get("Id", ""))
    result = call.views.get(action.identifier, call.views.get(shown))
    detail: dict[str, Any] = {
        "view": shown,
        "data": resolved(params.get("ViewData") or {}, call.contact.interpolate),
    }
    call.log.record(Noted(call.clock.now(), action.identifier, action.type, {**detail, "result": result}))
    if result is None:
        call.pass_time(call.clock.now() + call.seconds(action, "InvocationTimeLimitSeconds", "0"))
        raise ActionFailed(f"view {shown} was not answered", error_type(action, "TimeLimitExceeded"))
    return branch_on(action, result)

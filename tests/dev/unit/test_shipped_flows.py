"""The shipped contact flows (``contact_flows/*.json``): valid, deployable, and shaped as the conversation needs.

``voice-agent.json`` is the conversation loop over ConverseFunction; ``echo.json`` awaits each turn with AwaitTurn
and says it back; ``listen-only.json`` transcribes a call an agent takes. The behaviour tests run the shipped flows
through a small interpreter of the actions they use (Loop counts per action and resets after DoneLooping, as Connect
documents; a queue that resolves to nothing, or an S3 prompt the call marks unplayable, takes the error branch), with
scripted Lambda results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fixtures.flows import (
    ECHO,
    FLOW_PARAMETERS,
    FUNCTIONS,
    LISTEN_ONLY,
    SHIPPED_FLOWS,
    STACK_OUTPUTS,
    VOICE_AGENT,
    flow_document,
    problems,
)
from voicebridge_dev.flows import ACTION_TYPES, Action, Flow, load_flow, parse_flow, render, validate

# --- the shipped flows --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SHIPPED_FLOWS, ids=lambda p: p.name)
def test_shipped_flow_is_valid(path: Path) -> None:
    assert problems(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", SHIPPED_FLOWS, ids=lambda p: p.name)
def test_shipped_flow_places_every_action_on_the_designer_canvas(path: Path) -> None:
    document = flow_document(path)
    positions = document["Metadata"]["ActionMetadata"]
    assert set(positions) == {a["Identifier"] for a in document["Actions"]}
    points = [(p["position"]["x"], p["position"]["y"]) for p in positions.values()]
    assert len(set(points)) == len(points)


@pytest.mark.parametrize("path", SHIPPED_FLOWS, ids=lambda p: p.name)
def test_shipped_flow_passes_through_fn_sub_with_only_template_placeholders(path: Path) -> None:
    placeholders = set(re.findall(r"\$\{([^}]*)\}", path.read_text(encoding="utf-8")))
    assert placeholders <= {f"{name}.Arn" for name in FUNCTIONS} | FLOW_PARAMETERS


@pytest.mark.parametrize("path", SHIPPED_FLOWS, ids=lambda p: p.name)
def test_shipped_flow_renders_to_a_valid_flow_with_concrete_arns(path: Path) -> None:
    rendered = render(path.read_text(encoding="utf-8"), STACK_OUTPUTS)
    assert "${" not in rendered
    assert validate(rendered) == []


@pytest.mark.parametrize("path", SHIPPED_FLOWS, ids=lambda p: p.name)
def test_every_action_that_can_fail_has_an_error_branch(path: Path) -> None:
    flow = load_flow(path)
    assert [a.identifier for a in flow.actions.values() if ACTION_TYPES[a.type].errors and not a.errors] == []


@pytest.mark.parametrize("path", SHIPPED_FLOWS, ids=lambda p: p.name)
def test_every_lambda_invocation_has_an_error_branch(path: Path) -> None:
    flow = load_flow(path)
    lambdas = flow.of_type("InvokeLambdaFunction")
    assert lambdas
    assert all(a.error_target("NoMatchingError") for a in lambdas)


@pytest.mark.parametrize("path", SHIPPED_FLOWS, ids=lambda p: p.name)
def test_media_streaming_is_stopped_on_every_way_to_the_hang_up(path: Path) -> None:
    flow = load_flow(path)
    (start,) = [
        a
        for a in flow.of_type("UpdateContactMediaStreamingBehavior")
        if a.parameters["MediaStreamingState"] == "Enabled"
    ]
    stops = {
        a.identifier
        for a in flow.of_type("UpdateContactMediaStreamingBehavior")
        if a.parameters["MediaStreamingState"] == "Disabled"
    }
    reached = reachable(flow, start.identifier, avoiding=stops)
    assert not any(flow[a].type == "DisconnectParticipant" for a in reached)


# --- graph helpers --------------------------------------------------------------------------------------------


def reachable(
    flow: Flow,
    start: str,
    *,
    avoiding: frozenset[str] | set[str] = frozenset(),
    through: Callable[[str], bool] | None = None,
) -> set[str]:
    """Actions reachable from ``start``'s targets without entering ``avoiding``; ``through`` limits which
    reached actions are walked past."""
    seen: set[str] = set()
    pending = [t for t in flow[start].targets() if t not in avoiding]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if through is None or through(current):
            pending += [t for t in flow[current].targets() if t not in avoiding]
    return seen


def lambda_name(flow: Flow, identifier: str) -> str:
    match = re.fullmatch(r"\$\{(\w+)\.Arn\}", flow[identifier].parameters["LambdaFunctionARN"])
    assert match
    return match.group(1)


def invokes(flow: Flow, function: str) -> list[str]:
    return [a.identifier for a in flow.of_type("InvokeLambdaFunction") if lambda_name(flow, a.identifier) == function]


def is_sonic_prompt(flow: Flow, identifier: str) -> bool:
    return flow[identifier].type == "MessageParticipant" and "Media" in flow[identifier].parameters


def next_lambdas(flow: Flow, start: str) -> set[str]:
    """Functions that can be the next one invoked after ``start``, whatever branches are taken."""
    reached = reachable(flow, start, through=lambda a: flow[a].type != "InvokeLambdaFunction")
    return {lambda_name(flow, a) for a in reached if flow[a].type == "InvokeLambdaFunction"}


def longest_prompt_free_chain(flow: Flow, start: str) -> int:
    """The most seconds of Lambda time Connect can spend from ``start`` before a prompt breaks the chain."""

    def longest(identifier: str, seen: frozenset[str]) -> int:
        current = flow[identifier]
        if current.type == "MessageParticipant":
            return 0
        own = int(current.parameters["InvocationTimeLimitSeconds"]) if current.type == "InvokeLambdaFunction" else 0
        return own + max((longest(t, seen | {t}) for t in current.targets() if t not in seen), default=0)

    return longest(start, frozenset({start}))


def is_silent_prompt(flow: Flow, identifier: str) -> bool:
    """A prompt that says nothing: the poll's own ``PromptUri`` from S3, or an SSML break in Connect's voice."""
    params = flow[identifier].parameters
    if flow[identifier].type != "MessageParticipant":
        return False
    if "Media" in params:
        return bool(params["Media"]["Uri"] == "$.External.PromptUri")
    return re.fullmatch(r'<speak><break time="\d+ms"/></speak>', params.get("SSML", "")) is not None


def mid_poll_path(flow: Flow, poll: str, result: str) -> set[str]:
    """Every action the flow can pass through from ``poll``'s ``result`` without polling again."""
    check = flow[flow[poll].next_action or ""]
    first = check.condition_target(result) or ""
    assert first, result
    return {first} | reachable(flow, first, avoiding={poll})


# --- the echo flow, by its graph: AwaitTurn and Synthesize in a flow of one's own ---------------------------


@pytest.fixture(scope="module")
def echo() -> Flow:
    return load_flow(ECHO, known_functions=FUNCTIONS)


def test_every_sonic_prompt_is_followed_by_await_turn_or_by_the_end_of_the_call(echo: Flow) -> None:
    prompts = [a for a in echo.actions if is_sonic_prompt(echo, a)]
    assert len(prompts) >= 4
    for prompt in prompts:
        assert next_lambdas(echo, prompt) <= {"AwaitTurnFunction"}, prompt


def test_conversation_prompts_hand_over_straight_to_await_turn_with_no_hold(echo: Flow) -> None:
    (await_turn,) = invokes(echo, "AwaitTurnFunction")
    conversation = [a for a in echo.actions if is_sonic_prompt(echo, a) and echo[a].next_action == await_turn]
    assert {"Play greeting", "Play reply", "Play still-there prompt"} <= set(conversation)
    assert not echo.of_type("GetParticipantInput")


def test_await_turn_fits_connects_eight_second_limit(echo: Flow) -> None:
    (await_turn,) = invokes(echo, "AwaitTurnFunction")
    params = echo[await_turn].parameters
    assert params["InvocationTimeLimitSeconds"] == "8"
    assert 0 < int(params["LambdaInvocationAttributes"]["MaxWaitMs"]) < 8000


def test_await_turn_asks_for_the_turn_after_the_one_last_handled(echo: Flow) -> None:
    (await_turn,) = invokes(echo, "AwaitTurnFunction")
    assert echo[await_turn].parameters["LambdaInvocationAttributes"]["AfterTurn"] == "$.Attributes.LastTurn"
    check = echo[echo[await_turn].next_action or ""]
    remember = echo[check.condition_target("Turn") or ""]
    assert remember.type == "UpdateContactAttributes"
    assert remember.parameters["Attributes"]["LastTurn"] == "$.External.TurnIndex"


def test_the_reply_is_synthesized_from_the_callers_transcript(echo: Flow) -> None:
    check = next(a for a in echo.of_type("Compare") if a.condition_target("Turn"))
    after_turn = reachable(
        echo,
        check.condition_target("Turn") or "",
        through=lambda a: echo[a].type != "InvokeLambdaFunction",
    )
    replies = [
        a
        for a in after_turn
        if echo[a].type == "InvokeLambdaFunction"
        and echo[a].parameters["LambdaInvocationAttributes"].get("Text") == "$.External.Transcript"
    ]
    assert replies == ["Synthesize reply"]
    assert lambda_name(echo, "Synthesize reply") == "SynthesizeFunction"
    assert echo["Synthesize reply"].parameters["LambdaInvocationAttributes"]["Prefix"]


def test_timeout_path_plays_a_prompt_before_awaiting_again(echo: Flow) -> None:
    (await_turn,) = invokes(echo, "AwaitTurnFunction")
    check = echo[echo[await_turn].next_action or ""]
    timeout = check.condition_target("Timeout") or ""
    prompts = {a.identifier for a in echo.of_type("MessageParticipant")}
    assert timeout and timeout not in prompts
    assert await_turn not in reachable(echo, timeout, avoiding=prompts)


@pytest.mark.parametrize(("name", "poll"), [("echo", "AwaitTurnFunction"), ("voice_agent", "ConverseFunction")])
def test_a_caller_still_speaking_hears_a_silent_prompt_and_is_polled_again(
    name: str, poll: str, request: pytest.FixtureRequest
) -> None:
    flow: Flow = request.getfixturevalue(name)
    (polling,) = invokes(flow, poll)
    check = flow[flow[polling].next_action or ""]
    pause = check.condition_target("Listening") or ""
    assert is_sonic_prompt(flow, pause) and is_silent_prompt(flow, pause)
    assert flow[pause].next_action == polling
    # Nothing on the way counts a silence or a failure, or says anything: the caller is mid-sentence.
    path = mid_poll_path(flow, polling, "Listening")
    assert all(is_silent_prompt(flow, a) for a in path), path
    assert flow[pause].error_target("NoMatchingError") in path
    assert {a for a in path if flow[a].next_action == polling} == path


def test_every_poll_is_separated_from_the_next_by_a_prompt(echo: Flow) -> None:
    (await_turn,) = invokes(echo, "AwaitTurnFunction")
    prompts = {a.identifier for a in echo.of_type("MessageParticipant")}
    assert await_turn not in reachable(echo, await_turn, avoiding=prompts)


def test_no_prompt_free_chain_of_lambdas_exceeds_connects_twenty_second_budget(echo: Flow) -> None:
    for start in echo.of_type("InvokeLambdaFunction"):
        assert longest_prompt_free_chain(echo, start.identifier) <= 20, start.identifier


def test_the_conversation_loop_counts_timeouts_and_rounds_with_loops(echo: Flow) -> None:
    loops = {a.identifier: a for a in echo.of_type("Loop")}
    assert {"Count silence", "Count rounds"} <= set(loops)
    for loop in loops.values():
        assert loop.condition_target("ContinueLooping") and loop.condition_target("DoneLooping")


# --- behaviour: the flows run against scripted Lambda results -----------------------------------------------

Responder = Callable[[str, dict[str, str]], dict[str, str]]
_REFERENCE = re.compile(r"\$\.(External|Attributes)\.(\w+)")


@dataclass
class Call:
    """One simulated contact: what the caller heard and what the flow did, in order."""

    flow: Flow
    respond: Responder
    attributes: dict[str, str] = field(default_factory=dict)
    external: dict[str, str] = field(default_factory=dict)
    loops: dict[str, int] = field(default_factory=dict)
    events: list[tuple[str, str]] = field(default_factory=list)
    unplayable: frozenset[str] = frozenset()
    """S3 prompts that fail to play: their block takes its error branch."""

    def resolve(self, text: str) -> str:
        namespaces = {"External": self.external, "Attributes": self.attributes}
        return _REFERENCE.sub(lambda m: namespaces[m.group(1)].get(m.group(2), ""), text)

    def run(self, max_steps: int = 5000) -> list[tuple[str, str]]:
        current: str | None = self.flow.start_action
        for _ in range(max_steps):
            if current is None:
                return self.events
            current = self.step(self.flow[current])
        raise AssertionError("the flow did not end")

    def step(self, act: Action) -> str | None:
        params = act.parameters
        if act.type == "InvokeLambdaFunction":
            function = re.sub(r"\$\{(\w+)\.Arn\}", r"\1", params["LambdaFunctionARN"])
            resolved = {k: self.resolve(v) for k, v in params.get("LambdaInvocationAttributes", {}).items()}
            self.events.append(("invoke", function))
            try:
                self.external = self.respond(function, resolved)
            except RuntimeError:
                return act.error_target("NoMatchingError")
            return act.next_action
        if act.type == "Compare":
            value = self.resolve(params["ComparisonValue"])
            return act.condition_target(value) or act.error_target("NoMatchingCondition")
        if act.type == "Loop":
            self.loops[act.identifier] = self.loops.get(act.identifier, 0) + 1
            if self.loops[act.identifier] <= int(params["LoopCount"]):
                return act.condition_target("ContinueLooping")
            self.loops[act.identifier] = 0
            return act.condition_target("DoneLooping")
        if act.type == "UpdateContactAttributes":
            self.attributes.update({k: self.resolve(v) for k, v in params["Attributes"].items()})
        elif act.type == "MessageParticipant":
            media = params.get("Media")
            if media and self.resolve(media["Uri"]) in self.unplayable:
                return act.error_target("NoMatchingError")
            self.events.append(
                ("sonic", self.resolve(media["Uri"]))
                if media
                else ("connect", self.resolve(params["Text"] if "Text" in params else params["SSML"]))
            )
        elif act.type == "UpdateContactMediaStreamingBehavior":
            self.events.append(("streaming", params["MediaStreamingState"]))
        elif act.type == "UpdateContactTargetQueue":
            queue = self.resolve(params["QueueId"])
            if not queue:
                return act.error_target("NoMatchingError")
            self.events.append(("queue", queue))
        elif act.type == "TransferContactToQueue":
            failure = self.respond("TransferContactToQueue", {}).get("Error")
            if failure:
                return act.error_target(failure)
            self.events.append(("queued", ""))
            return None
        elif act.type == "DisconnectParticipant":
            self.events.append(("disconnect", ""))
            return None
        return act.next_action


SILENT_PROMPT = "s3://prompts/silence-200ms.wav"
MID_TURN = "(still speaking)"
"""In ``scripted``'s turns: the wait ran out while the caller was still speaking."""


def scripted(
    turns: list[str],
    *,
    synthesize: Callable[[dict[str, str]], dict[str, str]] | None = None,
    start_listening: dict[str, str] | None = None,
    transfer: dict[str, str] | None = None,
) -> Responder:
    """Lambda results: AwaitTurn answers each entry of ``turns`` ("" = a timeout, ``MID_TURN`` = the caller is
    still speaking), then times out forever."""
    pending: Iterator[str] = iter(turns)
    index = -1

    def synthesize_ok(params: dict[str, str]) -> dict[str, str]:
        return {"Result": "OK", "PromptUri": "s3://" + params.get("Prefix", "") + params["Text"]}

    def respond(function: str, params: dict[str, str]) -> dict[str, str]:
        nonlocal index
        if function == "SynthesizeFunction":
            return (synthesize or synthesize_ok)(params)
        if function == "StartListeningFunction":
            return start_listening or {"Result": "OK"}
        if function == "TransferContactToQueue":
            return transfer or {}
        assert function == "AwaitTurnFunction"
        assert int(params["AfterTurn"]) == index
        transcript = next(pending, "")
        if not transcript:
            return {"Result": "Timeout"}
        if transcript == MID_TURN:
            return {"Result": "Listening", "SpeakingMs": "7000", "PromptUri": SILENT_PROMPT}
        index += 1
        return {"Result": "Turn", "Transcript": transcript, "TurnIndex": str(index)}

    return respond


def heard(events: list[tuple[str, str]]) -> list[str]:
    return [what for kind, what in events if kind in ("sonic", "connect")]


def test_the_echo_says_back_each_turn_and_hangs_up_after_three_silences(echo: Flow) -> None:
    events = Call(echo, scripted(["hello", "what time is it"])).run()
    assert heard(events) == [
        "s3://Hello! Thanks for calling. How can I help you today?",
        "s3://You said: hello",
        "s3://You said: what time is it",
        "s3://Are you still there? I'm listening.",
        "s3://Are you still there? I'm listening.",
        "s3://I haven't heard anything for a while, so I'll hang up now. Goodbye!",
    ]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_echo_starts_streaming_and_listening_before_the_greeting(echo: Flow) -> None:
    events = Call(echo, scripted([])).run()
    assert events[:3] == [
        ("streaming", "Enabled"),
        ("invoke", "StartListeningFunction"),
        ("invoke", "SynthesizeFunction"),
    ]
    (start_listening,) = invokes(echo, "StartListeningFunction")
    # The flow answers the caller itself: the consumer only transcribes.
    assert "Converse" not in echo[start_listening].parameters["LambdaInvocationAttributes"]


def test_an_echo_turn_resets_the_count_of_consecutive_silences(echo: Flow) -> None:
    events = Call(echo, scripted(["one", "", "", "two", "", "", "three"])).run()
    assert heard(events).count("s3://Are you still there? I'm listening.") == 6
    assert [h for h in heard(events) if "You said" in h] == [
        "s3://You said: one",
        "s3://You said: two",
        "s3://You said: three",
    ]


def test_the_echo_ends_politely_after_twenty_rounds(echo: Flow) -> None:
    events = Call(echo, scripted([f"turn {i}" for i in range(30)])).run()
    assert sum("You said" in h for h in heard(events)) == 20
    assert heard(events)[-1] == "s3://Thanks for talking with me. That's all we have time for today. Goodbye!"
    assert events[-1] == ("disconnect", "")


def test_an_echo_synthesis_fallback_is_spoken_with_connects_own_voice(echo: Flow) -> None:
    def fallback(params: dict[str, str]) -> dict[str, str]:
        return {"Result": "Fallback", "Text": params.get("Prefix", "") + params["Text"]}

    events = Call(echo, scripted(["hello"], synthesize=fallback)).run()
    assert heard(events)[:2] == ["Hello! Thanks for calling. How can I help you today?", "You said: hello"]
    assert not any(kind == "sonic" for kind, _ in events)


def test_an_echo_synthesis_error_is_answered_with_connects_own_voice(echo: Flow) -> None:
    def broken(params: dict[str, str]) -> dict[str, str]:
        raise RuntimeError("Lambda failed")

    events = Call(echo, scripted(["hello"], synthesize=broken)).run()
    assert heard(events)[:2] == ["Hello! Thanks for calling. How can I help you today?", "You said: hello"]


def test_an_echo_call_that_cannot_be_transcribed_ends_with_an_apology(echo: Flow) -> None:
    events = Call(echo, scripted([], start_listening={"Result": "Error", "ErrorCode": "NoMediaStream"})).run()
    assert heard(events) == ["Sorry, we're having technical difficulties. Please call again later. Goodbye."]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_repeated_await_turn_failures_end_the_echo_call(echo: Flow) -> None:
    def failing(function: str, params: dict[str, str]) -> dict[str, str]:
        if function == "AwaitTurnFunction":
            return {"Result": "Error", "ErrorCode": "StorageError"}
        return scripted([])(function, params)

    events = Call(echo, failing).run()
    assert heard(events)[1:] == ["Sorry, I missed that. Could you say it again?"] * 2 + [
        "Sorry, we're having technical difficulties. Please call again later. Goodbye."
    ]


def test_an_echo_caller_who_speaks_past_the_wait_hears_silence_not_a_still_there_prompt(echo: Flow) -> None:
    events = Call(echo, scripted(["hello", MID_TURN, MID_TURN, MID_TURN, "a long story"])).run()
    assert heard(events)[:6] == [
        "s3://Hello! Thanks for calling. How can I help you today?",
        "s3://You said: hello",
        SILENT_PROMPT,
        SILENT_PROMPT,
        SILENT_PROMPT,
        "s3://You said: a long story",
    ]
    assert heard(events)[6:] == [
        "s3://Are you still there? I'm listening.",
        "s3://Are you still there? I'm listening.",
        "s3://I haven't heard anything for a while, so I'll hang up now. Goodbye!",
    ]


def test_a_long_turn_counts_neither_as_silence_nor_as_a_failure_in_the_echo(echo: Flow) -> None:
    # More waits run out than the silences (3) and the failures (3) a call may have, and the call goes on.
    events = Call(echo, scripted(["", MID_TURN, MID_TURN, "", *[MID_TURN] * 6, "hello"])).run()
    assert heard(events)[1:6] == [
        "s3://Are you still there? I'm listening.",
        SILENT_PROMPT,
        SILENT_PROMPT,
        "s3://Are you still there? I'm listening.",
        SILENT_PROMPT,
    ]
    assert "s3://You said: hello" in heard(events)
    assert "Sorry, I missed that. Could you say it again?" not in heard(events)


def test_an_echo_silent_prompt_that_will_not_play_is_a_pause_in_connects_voice(echo: Flow) -> None:
    events = Call(echo, scripted(["hello", MID_TURN, "again"]), unplayable=frozenset({SILENT_PROMPT})).run()
    assert heard(events)[1:4] == [
        "s3://You said: hello",
        '<speak><break time="200ms"/></speak>',
        "s3://You said: again",
    ]
    assert "Sorry, I missed that. Could you say it again?" not in heard(events)


# --- the voice agent: the conversation loop over ConverseFunction --------------------------------------------

GREETING = "Hello! Thanks for calling. How can I help you today?"
STILL_THERE = "Are you still there? I'm listening."
SILENCE_GOODBYE = "I haven't heard anything for a while, so I'll hang up now. Goodbye!"
TECHNICAL_GOODBYE = "Sorry, we're having technical difficulties. Please call again later. Goodbye."
NO_AGENT_GOODBYE = "Sorry, I can't connect you with a colleague right now. Please call again later. Goodbye."
BUSY_GOODBYE = "All of our colleagues are busy right now. Please call again later. Goodbye."


@pytest.fixture(scope="module")
def voice_agent() -> Flow:
    return load_flow(VOICE_AGENT, known_functions=FUNCTIONS)


def test_the_voice_agent_streams_both_directions_and_starts_a_conversing_consumer(voice_agent: Flow) -> None:
    (start_listening,) = invokes(voice_agent, "StartListeningFunction")
    assert voice_agent[start_listening].parameters["LambdaInvocationAttributes"] == {
        "Converse": "true",
        "Language": "$.Attributes.Language",
    }
    (start,) = [
        a
        for a in voice_agent.of_type("UpdateContactMediaStreamingBehavior")
        if a.parameters["MediaStreamingState"] == "Enabled"
    ]
    assert start.parameters["Participants"] == [{"ParticipantType": "Customer", "MediaDirections": ["From", "To"]}]


def test_the_voice_agent_listens_and_speaks_in_the_language_a_flow_before_it_set(voice_agent: Flow) -> None:
    for function in ("StartListeningFunction", "SynthesizeFunction"):
        for action in invokes(voice_agent, function):
            assert voice_agent[action].parameters["LambdaInvocationAttributes"]["Language"] == "$.Attributes.Language"


def test_the_voice_agent_never_awaits_turns_itself_and_takes_keys_only_for_a_card_encrypted(
    voice_agent: Flow,
) -> None:
    assert invokes(voice_agent, "AwaitTurnFunction") == []
    (keypad,) = voice_agent.of_type("GetParticipantInput")
    params = keypad.parameters
    assert (params["StoreInput"], params["InputValidation"]) == ("True", {"CustomValidation": {"MaximumLength": "19"}})
    assert params["InputEncryption"] == {
        "EncryptionKeyId": "$.Attributes.CardKeyId",
        "Key": "$.Attributes.CardCertificate",
    }
    # Flow logs would hold the keys: logging is off around the block, on again on either way out.
    before = [a for a in voice_agent.actions if voice_agent[a].next_action == keypad.identifier]
    assert [voice_agent[a].parameters for a in before] == [{"FlowLoggingBehavior": "Disabled"}]
    after = [keypad.next_action, *(e.next_action for e in keypad.errors)]
    assert {voice_agent[a or ""].parameters["FlowLoggingBehavior"] for a in after} == {"Enabled"}


def test_converse_is_called_from_one_block_that_fits_connects_eight_second_limit(voice_agent: Flow) -> None:
    (converse,) = invokes(voice_agent, "ConverseFunction")
    params = voice_agent[converse].parameters
    assert params["InvocationTimeLimitSeconds"] == "8"
    attributes = params["LambdaInvocationAttributes"]
    assert (attributes["TurnIndex"], attributes["Segment"]) == ("$.Attributes.TurnIndex", "$.Attributes.Segment")
    # Connect's 8 s include a cold start, which the function's own remaining time does not: two seconds are left.
    assert int(attributes["MaxWaitMs"]) <= 6000


def test_the_conversation_starts_before_the_first_turn_and_remembers_where_each_answer_left_it(
    voice_agent: Flow,
) -> None:
    (initialise,) = [
        a for a in voice_agent.of_type("UpdateContactAttributes") if "AgentQueue" in a.parameters["Attributes"]
    ]
    assert (initialise.parameters["Attributes"]["TurnIndex"], initialise.parameters["Attributes"]["Segment"]) == (
        "-1",
        "-1",
    )
    (converse,) = invokes(voice_agent, "ConverseFunction")
    check = voice_agent[voice_agent[converse].next_action or ""]
    for result in ("Speak", "Fallback"):
        remember = voice_agent[check.condition_target(result) or ""]
        assert remember.type == "UpdateContactAttributes"
        assert remember.parameters["Attributes"]["TurnIndex"] == "$.External.TurnIndex"
        assert remember.parameters["Attributes"]["Segment"] == "$.External.Segment"


def test_every_prompt_of_the_conversation_hands_over_straight_to_converse(voice_agent: Flow) -> None:
    (converse,) = invokes(voice_agent, "ConverseFunction")
    for prompt in ("Play line", "Play reply segment", "Say reply segment text", "Play silent prompt"):
        reached = reachable(voice_agent, prompt, through=lambda a: voice_agent[a].type not in {"InvokeLambdaFunction"})
        assert converse in reached, prompt
        assert next_lambdas(voice_agent, prompt) <= {"ConverseFunction", "SynthesizeFunction"}, prompt


def test_a_reply_segment_is_played_from_s3_or_spoken_with_connects_voice(voice_agent: Flow) -> None:
    assert voice_agent["Play reply segment"].parameters["Media"]["Uri"] == "$.External.PromptUri"
    assert voice_agent["Say reply segment text"].parameters == {"Text": "$.External.Text"}


def test_a_timeout_plays_a_prompt_before_conversing_again(voice_agent: Flow) -> None:
    (converse,) = invokes(voice_agent, "ConverseFunction")
    check = voice_agent[voice_agent[converse].next_action or ""]
    timeout = check.condition_target("Timeout") or ""
    prompts = {a.identifier for a in voice_agent.of_type("MessageParticipant")}
    assert timeout and timeout not in prompts
    assert converse not in reachable(voice_agent, timeout, avoiding=prompts)


def test_no_prompt_free_chain_of_the_voice_agents_lambdas_exceeds_connects_twenty_second_budget(
    voice_agent: Flow,
) -> None:
    for start in voice_agent.of_type("InvokeLambdaFunction"):
        assert longest_prompt_free_chain(voice_agent, start.identifier) <= 20, start.identifier


def test_converse_is_told_which_turn_the_flow_last_held(voice_agent: Flow) -> None:
    (converse,) = invokes(voice_agent, "ConverseFunction")
    assert voice_agent[converse].parameters["LambdaInvocationAttributes"]["HeldTurn"] == "$.Attributes.HeldTurn"
    (initialise,) = [
        a for a in voice_agent.of_type("UpdateContactAttributes") if "AgentQueue" in a.parameters["Attributes"]
    ]
    assert initialise.parameters["Attributes"]["HeldTurn"] == "-1"


def test_a_reply_in_the_making_is_held_with_one_line_or_waited_for_in_silence(voice_agent: Flow) -> None:
    (converse,) = invokes(voice_agent, "ConverseFunction")
    check = voice_agent[voice_agent[converse].next_action or ""]
    hold = voice_agent[check.condition_target("Thinking") or ""]
    assert hold.type == "Compare" and hold.parameters["ComparisonValue"] == "$.External.Hold"
    # Hold=false (or anything else): the same silent prompt as a caller still speaking gets.
    pause = check.condition_target("Listening")
    assert hold.next_action == hold.error_target("NoMatchingCondition") == pause
    # Hold=true: the holding line through the flow's own say-a-line path, which returns to Converse.
    holding = voice_agent[hold.condition_target("true") or ""]
    assert holding.type == "UpdateContactAttributes"
    assert holding.parameters["Attributes"] == {
        "Line": "One moment.",
        "Then": "Converse",
        "HeldTurn": "$.External.TurnIndex",
    }
    assert holding.next_action == "Synthesize line"
    assert voice_agent["Route after line"].condition_target("Converse") == converse


def test_waiting_for_a_turn_or_a_reply_never_counts_a_silence(voice_agent: Flow) -> None:
    (converse,) = invokes(voice_agent, "ConverseFunction")
    for result in ("Listening", "Thinking"):
        path = mid_poll_path(voice_agent, converse, result)
        counting = {
            a
            for a in path
            if voice_agent[a].type == "UpdateContactAttributes"
            and "Silences" in voice_agent[a].parameters["Attributes"]
        }
        assert counting == set(), result
        assert "Count silence" not in path, result
        # Only the holding line is said on the way: never "Are you still there?".
        lines = {
            voice_agent[a].parameters["Attributes"].get("Line")
            for a in path
            if voice_agent[a].type == "UpdateContactAttributes"
        }
        assert lines.isdisjoint({"Are you still there? I'm listening.", SILENCE_GOODBYE}), result


@pytest.mark.parametrize("result", ["Timeout", "Listening", "Thinking"])
def test_a_wait_that_ran_out_is_followed_by_a_prompt_before_conversing_again(voice_agent: Flow, result: str) -> None:
    (converse,) = invokes(voice_agent, "ConverseFunction")
    check = voice_agent[voice_agent[converse].next_action or ""]
    first = check.condition_target(result) or ""
    prompts = {a.identifier for a in voice_agent.of_type("MessageParticipant")}
    assert first
    assert first in prompts or converse not in reachable(voice_agent, first, avoiding=prompts)


@pytest.mark.parametrize("path", [ECHO, VOICE_AGENT], ids=lambda p: p.name)
def test_no_chain_of_the_conversation_flows_is_longer_than_sixteen_seconds(path: Path) -> None:
    # What the docs promise (docs/functions.md, docs/protocols.md): a poll, then at most one Synthesize.
    flow = load_flow(path, known_functions=FUNCTIONS)
    assert max(longest_prompt_free_chain(flow, a.identifier) for a in flow.of_type("InvokeLambdaFunction")) <= 16


def test_a_transfer_stops_media_streaming_before_the_caller_is_queued(voice_agent: Flow) -> None:
    (transfer,) = voice_agent.of_type("TransferContactToQueue")
    stops = {
        a.identifier
        for a in voice_agent.of_type("UpdateContactMediaStreamingBehavior")
        if a.parameters["MediaStreamingState"] == "Disabled"
    }
    (start,) = [a for a in voice_agent.of_type("UpdateContactMediaStreamingBehavior") if a.identifier not in stops]
    assert transfer.identifier not in reachable(voice_agent, start.identifier, avoiding=stops)


def test_the_agent_queue_comes_from_the_template_through_a_contact_attribute(voice_agent: Flow) -> None:
    (queue,) = voice_agent.of_type("UpdateContactTargetQueue")
    assert queue.parameters == {"QueueId": "$.Attributes.AgentQueue"}
    (initialise,) = [
        a for a in voice_agent.of_type("UpdateContactAttributes") if "AgentQueue" in a.parameters["Attributes"]
    ]
    # Empty when the stack has no queue: the flow is valid either way, and the transfer takes its error branch.
    assert initialise.parameters["Attributes"]["AgentQueue"] == "${AgentQueueArn}"


def speak(turn: int, segment: int, *, more: bool, action: str = "Continue") -> dict[str, str]:
    """ConverseFunction's answer for a segment with a prompt."""
    return {
        "Result": "Speak",
        "PromptUri": f"s3://reply/{turn}/{segment}",
        "TurnIndex": str(turn),
        "Segment": str(segment),
        "More": "true" if more else "false",
        "Transcript": f"turn {turn}",
        "Action": action,
    }


def fallback(turn: int, segment: int, text: str, *, more: bool = False, action: str = "Continue") -> dict[str, str]:
    """ConverseFunction's answer for a segment Sonic could not speak."""
    answer = speak(turn, segment, more=more, action=action)
    del answer["PromptUri"]
    return {**answer, "Result": "Fallback", "Text": text}


TIMEOUT = {"Result": "Timeout"}
LISTENING = {"Result": "Listening", "SpeakingMs": "6500", "PromptUri": SILENT_PROMPT}
HOLDING_LINE = "One moment."

Answer = dict[str, str] | Callable[[dict[str, str]], dict[str, str]]


def thinking(turn: int, *, hold: bool) -> dict[str, str]:
    """ConverseFunction's answer when the wait ran out while the reply to ``turn`` was still being made."""
    return {
        "Result": "Thinking",
        "TurnIndex": str(turn),
        "ThinkingMs": "6500",
        "Hold": "true" if hold else "false",
        "PromptUri": SILENT_PROMPT,
    }


def thinking_about(turn: int) -> Callable[[dict[str, str]], dict[str, str]]:
    """``thinking`` past the hold time, as ConverseFunction says it: ``Hold`` only for a turn not held yet."""
    return lambda params: thinking(turn, hold=params["HeldTurn"] != str(turn))


@dataclass
class Conversation:
    """Lambda results for the voice agent: ConverseFunction answers ``answers`` in order (an answer may be made
    from what the flow sent), then times out forever."""

    answers: list[Answer]
    synthesize: Callable[[dict[str, str]], dict[str, str]] | None = None
    start_listening: dict[str, str] | None = None
    transfer: dict[str, str] | None = None
    asked: list[tuple[str, str]] = field(default_factory=list)
    """Where each ConverseFunction call said the flow was: (TurnIndex, Segment)."""
    held: list[str] = field(default_factory=list)
    """The HeldTurn each ConverseFunction call was sent."""

    def __call__(self, function: str, params: dict[str, str]) -> dict[str, str]:
        if function == "ConverseFunction":
            self.asked.append((params["TurnIndex"], params["Segment"]))
            self.held.append(params["HeldTurn"])
            answer = self.answers.pop(0) if self.answers else TIMEOUT
            return answer(params) if callable(answer) else answer
        if function == "SynthesizeFunction" and self.synthesize is not None:
            return self.synthesize(params)
        if function == "StartListeningFunction" and self.start_listening is not None:
            return self.start_listening
        if function == "TransferContactToQueue":
            return self.transfer or {}
        assert function in ("SynthesizeFunction", "StartListeningFunction"), function
        return scripted([])(function, params)


def silence_end() -> list[str]:
    return [f"s3://{STILL_THERE}", f"s3://{STILL_THERE}", f"s3://{SILENCE_GOODBYE}"]


def test_a_conversation_greets_then_plays_each_segment_of_each_reply(voice_agent: Flow) -> None:
    replies = Conversation([speak(0, 0, more=True), speak(0, 1, more=False), TIMEOUT, speak(1, 0, more=False)])
    events = Call(voice_agent, replies).run()
    assert heard(events) == [
        f"s3://{GREETING}",
        "s3://reply/0/0",
        "s3://reply/0/1",
        f"s3://{STILL_THERE}",
        "s3://reply/1/0",
        *silence_end(),
    ]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_each_converse_call_says_where_the_last_answer_left_the_flow(voice_agent: Flow) -> None:
    # The caller spoke again while turn 0's reply was being played: ConverseFunction hands out turn 1's first segment.
    replies = Conversation([speak(0, 0, more=True), TIMEOUT, speak(1, 0, more=False)])
    Call(voice_agent, replies).run()
    assert replies.asked[:4] == [("-1", "-1"), ("0", "0"), ("0", "0"), ("1", "0")]


def test_the_voice_agent_starts_streaming_and_conversing_before_the_greeting(voice_agent: Flow) -> None:
    events = Call(voice_agent, Conversation([])).run()
    assert events[:4] == [
        ("streaming", "Enabled"),
        ("invoke", "StartListeningFunction"),
        ("invoke", "SynthesizeFunction"),
        ("sonic", f"s3://{GREETING}"),
    ]
    assert events[4] == ("invoke", "ConverseFunction")


def test_a_reply_that_asks_for_a_transfer_stops_streaming_and_queues_the_caller(voice_agent: Flow) -> None:
    events = Call(voice_agent, Conversation([speak(0, 0, more=False, action="Transfer")])).run()
    assert heard(events)[-1] == "s3://reply/0/0"
    assert events[-3:] == [("streaming", "Disabled"), ("queue", "${AgentQueueArn}"), ("queued", "")]


def test_a_transfer_decided_once_the_last_segment_was_played_arrives_as_ok(voice_agent: Flow) -> None:
    events = Call(voice_agent, Conversation([speak(0, 0, more=True), {"Result": "OK", "Action": "Transfer"}])).run()
    assert heard(events)[-1] == "s3://reply/0/0"
    assert events[-1] == ("queued", "")


def test_a_segment_with_more_to_come_never_acts_on_its_action(voice_agent: Flow) -> None:
    # A segment handed out while the reply was still being written says More=true: its Action is not final yet.
    events = Call(voice_agent, Conversation([speak(0, 0, more=True, action="Transfer"), speak(0, 1, more=False)])).run()
    assert "s3://reply/0/1" in heard(events)
    assert ("queued", "") not in events


def test_a_reply_that_ends_the_call_hangs_up_with_no_word_of_its_own(voice_agent: Flow) -> None:
    events = Call(voice_agent, Conversation([speak(0, 0, more=False, action="Hangup")])).run()
    assert heard(events) == [f"s3://{GREETING}", "s3://reply/0/0"]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_a_hang_up_decided_after_the_last_segment_ends_the_call(voice_agent: Flow) -> None:
    events = Call(voice_agent, Conversation([speak(0, 0, more=True), {"Result": "OK", "Action": "Hangup"}])).run()
    assert heard(events) == [f"s3://{GREETING}", "s3://reply/0/0"]
    assert events[-1] == ("disconnect", "")


def test_a_segment_sonic_could_not_speak_is_spoken_with_connects_voice(voice_agent: Flow) -> None:
    replies = Conversation([fallback(0, 0, "Your balance is forty dollars.", more=True), speak(0, 1, more=False)])
    events = Call(voice_agent, replies).run()
    assert ("connect", "Your balance is forty dollars.") in events
    assert heard(events)[1:3] == ["Your balance is forty dollars.", "s3://reply/0/1"]
    assert replies.asked[1:3] == [("0", "0"), ("0", "1")]


def test_three_silences_in_a_row_end_the_call_politely(voice_agent: Flow) -> None:
    events = Call(voice_agent, Conversation([])).run()
    assert heard(events) == [f"s3://{GREETING}", *silence_end()]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_a_reply_resets_the_count_of_consecutive_silences(voice_agent: Flow) -> None:
    events = Call(voice_agent, Conversation([TIMEOUT, TIMEOUT, speak(0, 0, more=False)])).run()
    assert heard(events) == [
        f"s3://{GREETING}",
        f"s3://{STILL_THERE}",
        f"s3://{STILL_THERE}",
        "s3://reply/0/0",
        *silence_end(),
    ]


@pytest.mark.parametrize(
    "answer",
    [{"Result": "Error", "ErrorCode": "NotListening", "ErrorMessage": "the consumer stopped"}, {"Result": "Turn"}],
)
def test_a_conversation_that_cannot_go_on_ends_with_an_apology(voice_agent: Flow, answer: dict[str, str]) -> None:
    events = Call(voice_agent, Conversation([speak(0, 0, more=False), answer])).run()
    assert heard(events)[-1] == TECHNICAL_GOODBYE
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


class Failing(Conversation):
    """ConverseFunction's invocations fail (the block's error branch: a timeout, a function error) where ``fails``
    says, by call number from 0; the rest are answered as :class:`Conversation` answers them."""

    def __init__(self, answers: list[Answer], fails: Callable[[int], bool]) -> None:
        super().__init__(answers)
        self.calls = 0
        self._fails = fails

    def __call__(self, function: str, params: dict[str, str]) -> dict[str, str]:
        if function == "ConverseFunction":
            self.calls += 1
            if self._fails(self.calls - 1):
                raise RuntimeError("Lambda failed")
        return super().__call__(function, params)


SILENT_BREAK = '<speak><break time="200ms"/></speak>'


def test_a_converse_invocation_that_fails_twice_in_a_row_ends_with_an_apology(voice_agent: Flow) -> None:
    events = Call(voice_agent, Failing([], fails=lambda n: True)).run()
    # Tried once more, after a silent pause, before the apology.
    assert heard(events) == [f"s3://{GREETING}", SILENT_BREAK, TECHNICAL_GOODBYE]


def test_a_converse_invocation_that_fails_once_is_tried_again_after_a_silent_pause(voice_agent: Flow) -> None:
    replies = Failing([speak(0, 0, more=False)], fails=lambda n: n == 0)
    events = Call(voice_agent, replies).run()
    assert heard(events)[:3] == [f"s3://{GREETING}", SILENT_BREAK, "s3://reply/0/0"]
    # The retry asks for what the failed call asked for.
    assert replies.asked[0] == ("-1", "-1")


def test_a_played_segment_earns_the_conversation_another_retry(voice_agent: Flow) -> None:
    replies = Failing([speak(0, 0, more=True), speak(0, 1, more=False)], fails=lambda n: n in (0, 2))
    events = Call(voice_agent, replies).run()
    assert heard(events)[:5] == [f"s3://{GREETING}", SILENT_BREAK, "s3://reply/0/0", SILENT_BREAK, "s3://reply/0/1"]
    assert TECHNICAL_GOODBYE not in heard(events)


def test_a_voice_agent_call_that_cannot_be_transcribed_ends_with_an_apology(voice_agent: Flow) -> None:
    replies = Conversation([], start_listening={"Result": "Error", "ErrorCode": "NoMediaStream"})
    events = Call(voice_agent, replies).run()
    assert heard(events) == [TECHNICAL_GOODBYE]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]
    assert replies.asked == []


@pytest.mark.parametrize("synthesis", ["Fallback", "failure"])
def test_the_agents_own_lines_fall_back_to_connects_voice(voice_agent: Flow, synthesis: str) -> None:
    def synthesize(params: dict[str, str]) -> dict[str, str]:
        if synthesis == "failure":
            raise RuntimeError("Lambda failed")
        return {"Result": "Fallback", "Text": params["Text"]}

    events = Call(voice_agent, Conversation([], synthesize=synthesize)).run()
    assert heard(events) == [GREETING, STILL_THERE, STILL_THERE, SILENCE_GOODBYE]


def test_a_full_queue_is_told_to_the_caller_before_the_call_ends(voice_agent: Flow) -> None:
    replies = Conversation([speak(0, 0, more=False, action="Transfer")], transfer={"Error": "QueueAtCapacity"})
    events = Call(voice_agent, replies).run()
    assert heard(events)[-1] == f"s3://{BUSY_GOODBYE}"
    assert events[-1] == ("disconnect", "")


def test_without_an_agent_queue_a_transfer_apologises_and_hangs_up(voice_agent: Flow) -> None:
    # As CloudFormation fills the flow when AgentQueueArn is empty.
    without_queue = parse_flow(VOICE_AGENT.read_text(encoding="utf-8").replace("${AgentQueueArn}", ""))
    events = Call(without_queue, Conversation([speak(0, 0, more=False, action="Transfer")])).run()
    assert heard(events)[-1] == f"s3://{NO_AGENT_GOODBYE}"
    assert ("queued", "") not in events
    assert events[-1] == ("disconnect", "")


def test_a_caller_who_speaks_past_the_wait_hears_silence_then_the_reply(voice_agent: Flow) -> None:
    replies = Conversation([LISTENING, LISTENING, LISTENING, speak(0, 0, more=False)])
    events = Call(voice_agent, replies).run()
    assert heard(events) == [
        f"s3://{GREETING}",
        SILENT_PROMPT,
        SILENT_PROMPT,
        SILENT_PROMPT,
        "s3://reply/0/0",
        *silence_end(),
    ]
    assert replies.asked[:5] == [("-1", "-1")] * 4 + [("0", "0")]


def test_a_slow_reply_is_held_once_with_one_moment_then_waited_for_in_silence(voice_agent: Flow) -> None:
    replies = Conversation(
        [thinking(0, hold=False), thinking(0, hold=True), thinking(0, hold=False), speak(0, 0, more=False)]
    )
    events = Call(voice_agent, replies).run()
    assert heard(events) == [
        f"s3://{GREETING}",
        SILENT_PROMPT,
        f"s3://{HOLDING_LINE}",
        SILENT_PROMPT,
        "s3://reply/0/0",
        *silence_end(),
    ]
    # The holding line records the turn it held, and leaves where the flow is in the replies as it was.
    assert replies.held[:5] == ["-1", "-1", "0", "0", "0"]
    assert replies.asked[:5] == [("-1", "-1")] * 4 + [("0", "0")]


def test_each_turn_is_held_at_most_once_however_long_its_reply_takes(voice_agent: Flow) -> None:
    answers: list[Answer] = [
        *[thinking_about(0)] * 4,
        speak(0, 0, more=False),
        LISTENING,
        *[thinking_about(1)] * 3,
        speak(1, 0, more=False),
    ]
    events = Call(voice_agent, Conversation(answers)).run()
    assert heard(events) == [
        f"s3://{GREETING}",
        f"s3://{HOLDING_LINE}",
        *[SILENT_PROMPT] * 3,
        "s3://reply/0/0",
        SILENT_PROMPT,
        f"s3://{HOLDING_LINE}",
        *[SILENT_PROMPT] * 2,
        "s3://reply/1/0",
        *silence_end(),
    ]


def test_waiting_for_the_caller_or_the_reply_counts_no_silence(voice_agent: Flow) -> None:
    # Two silences, then more waits than the call's third silence: the call goes on to the reply.
    answers: list[Answer] = [TIMEOUT, LISTENING, thinking(0, hold=False), TIMEOUT, LISTENING, thinking(0, hold=True)]
    events = Call(voice_agent, Conversation([*answers, thinking(0, hold=False), speak(0, 0, more=False)])).run()
    assert heard(events) == [
        f"s3://{GREETING}",
        f"s3://{STILL_THERE}",
        SILENT_PROMPT,
        SILENT_PROMPT,
        f"s3://{STILL_THERE}",
        SILENT_PROMPT,
        f"s3://{HOLDING_LINE}",
        SILENT_PROMPT,
        "s3://reply/0/0",
        *silence_end(),
    ]


def test_the_holding_line_falls_back_to_connects_voice(voice_agent: Flow) -> None:
    def synthesize(params: dict[str, str]) -> dict[str, str]:
        return {"Result": "Fallback", "Text": params["Text"]}

    replies = Conversation([thinking(0, hold=True), speak(0, 0, more=False)], synthesize=synthesize)
    events = Call(voice_agent, replies).run()
    assert heard(events)[:3] == [GREETING, HOLDING_LINE, "s3://reply/0/0"]


def test_a_silent_prompt_that_will_not_play_is_a_pause_in_connects_voice(voice_agent: Flow) -> None:
    replies = Conversation([LISTENING, thinking(0, hold=False), speak(0, 0, more=False)])
    events = Call(voice_agent, replies, unplayable=frozenset({SILENT_PROMPT})).run()
    pause = '<speak><break time="200ms"/></speak>'
    assert heard(events)[:4] == [f"s3://{GREETING}", pause, pause, "s3://reply/0/0"]


# --- the listen-only flow --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def listen_only() -> Flow:
    return load_flow(LISTEN_ONLY, known_functions=FUNCTIONS)


def test_listen_only_streams_both_directions_and_transfers_to_the_queue(listen_only: Flow) -> None:
    events = Call(listen_only, scripted([])).run()
    assert events == [
        ("streaming", "Enabled"),
        ("invoke", "StartListeningFunction"),
        ("connect", "Thanks for calling. Connecting you with an agent now."),
        ("queue", "${AgentQueueArn}"),
        ("queued", ""),
    ]
    (start_listening,) = invokes(listen_only, "StartListeningFunction")
    assert listen_only[start_listening].parameters["LambdaInvocationAttributes"] == {"Tracks": "both"}
    (start,) = [
        a
        for a in listen_only.of_type("UpdateContactMediaStreamingBehavior")
        if a.parameters["MediaStreamingState"] == "Enabled"
    ]
    assert start.parameters["Participants"] == [{"ParticipantType": "Customer", "MediaDirections": ["From", "To"]}]


def test_listen_only_still_reaches_an_agent_when_listening_fails(listen_only: Flow) -> None:
    events = Call(listen_only, scripted([], start_listening={"Result": "Error"})).run()
    assert ("streaming", "Disabled") in events
    assert events[-1] == ("queued", "")


def test_listen_only_says_goodbye_when_the_queue_is_full(listen_only: Flow) -> None:
    events = Call(listen_only, scripted([], transfer={"Error": "QueueAtCapacity"})).run()
    assert heard(events)[-1] == "All of our agents are busy right now. Please call again later. Goodbye."
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]

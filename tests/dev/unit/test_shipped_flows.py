"""The shipped contact flows (``contact_flows/*.json``): valid, deployable, and shaped as the conversation needs.

The behaviour tests at the end run the shipped flows through a small interpreter of the actions they use
(Loop counts per action and resets after DoneLooping, as Connect documents), with scripted Lambda results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fixtures.flows import FUNCTIONS, LISTEN_ONLY, STACK_OUTPUTS, VOICE_AGENT, flow_document, problems
from voicebridge_dev.flows import ACTION_TYPES, Action, Flow, load_flow, render, validate

# --- the shipped flows --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_shipped_flow_is_valid(path: Path) -> None:
    assert problems(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_shipped_flow_places_every_action_on_the_designer_canvas(path: Path) -> None:
    document = flow_document(path)
    positions = document["Metadata"]["ActionMetadata"]
    assert set(positions) == {a["Identifier"] for a in document["Actions"]}
    points = [(p["position"]["x"], p["position"]["y"]) for p in positions.values()]
    assert len(set(points)) == len(points)


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_shipped_flow_passes_through_fn_sub_with_only_template_placeholders(path: Path) -> None:
    placeholders = set(re.findall(r"\$\{([^}]*)\}", path.read_text(encoding="utf-8")))
    assert placeholders <= {f"{name}.Arn" for name in FUNCTIONS} | {"AgentQueueArn"}


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_shipped_flow_renders_to_a_valid_flow_with_concrete_arns(path: Path) -> None:
    rendered = render(path.read_text(encoding="utf-8"), STACK_OUTPUTS)
    assert "${" not in rendered
    assert validate(rendered) == []


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_every_action_that_can_fail_has_an_error_branch(path: Path) -> None:
    flow = load_flow(path)
    assert [a.identifier for a in flow.actions.values() if ACTION_TYPES[a.type].errors and not a.errors] == []


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_every_lambda_invocation_has_an_error_branch(path: Path) -> None:
    flow = load_flow(path)
    lambdas = flow.of_type("InvokeLambdaFunction")
    assert lambdas
    assert all(a.error_target("NoMatchingError") for a in lambdas)


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
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


# --- the voice-agent conversation, by its graph -------------------------------------------------------------


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


@pytest.fixture(scope="module")
def voice_agent() -> Flow:
    return load_flow(VOICE_AGENT, known_functions=FUNCTIONS)


def test_every_sonic_prompt_is_followed_by_await_turn_or_by_the_end_of_the_call(voice_agent: Flow) -> None:
    prompts = [a for a in voice_agent.actions if is_sonic_prompt(voice_agent, a)]
    assert len(prompts) >= 4
    for prompt in prompts:
        assert next_lambdas(voice_agent, prompt) <= {"AwaitTurnFunction"}, prompt


def test_conversation_prompts_hand_over_straight_to_await_turn_with_no_hold(voice_agent: Flow) -> None:
    (await_turn,) = invokes(voice_agent, "AwaitTurnFunction")
    conversation = [
        a for a in voice_agent.actions if is_sonic_prompt(voice_agent, a) and voice_agent[a].next_action == await_turn
    ]
    assert {"Play greeting", "Play reply", "Play still-there prompt"} <= set(conversation)
    assert not voice_agent.of_type("GetParticipantInput")


def test_await_turn_fits_connects_eight_second_limit(voice_agent: Flow) -> None:
    (await_turn,) = invokes(voice_agent, "AwaitTurnFunction")
    params = voice_agent[await_turn].parameters
    assert params["InvocationTimeLimitSeconds"] == "8"
    assert 0 < int(params["LambdaInvocationAttributes"]["MaxWaitMs"]) < 8000


def test_await_turn_asks_for_the_turn_after_the_one_last_handled(voice_agent: Flow) -> None:
    (await_turn,) = invokes(voice_agent, "AwaitTurnFunction")
    assert voice_agent[await_turn].parameters["LambdaInvocationAttributes"]["AfterTurn"] == "$.Attributes.LastTurn"
    check = voice_agent[voice_agent[await_turn].next_action or ""]
    remember = voice_agent[check.condition_target("Turn") or ""]
    assert remember.type == "UpdateContactAttributes"
    assert remember.parameters["Attributes"]["LastTurn"] == "$.External.TurnIndex"


def test_the_reply_is_synthesized_from_the_callers_transcript(voice_agent: Flow) -> None:
    check = next(a for a in voice_agent.of_type("Compare") if a.condition_target("Turn"))
    after_turn = reachable(
        voice_agent,
        check.condition_target("Turn") or "",
        through=lambda a: voice_agent[a].type != "InvokeLambdaFunction",
    )
    replies = [
        a
        for a in after_turn
        if voice_agent[a].type == "InvokeLambdaFunction"
        and voice_agent[a].parameters["LambdaInvocationAttributes"].get("Text") == "$.External.Transcript"
    ]
    assert replies == ["Synthesize reply"]
    assert lambda_name(voice_agent, "Synthesize reply") == "SynthesizeFunction"
    assert voice_agent["Synthesize reply"].parameters["LambdaInvocationAttributes"]["Prefix"]


def test_timeout_path_plays_a_prompt_before_awaiting_again(voice_agent: Flow) -> None:
    (await_turn,) = invokes(voice_agent, "AwaitTurnFunction")
    check = voice_agent[voice_agent[await_turn].next_action or ""]
    timeout = check.condition_target("Timeout") or ""
    prompts = {a.identifier for a in voice_agent.of_type("MessageParticipant")}
    assert timeout and timeout not in prompts
    assert await_turn not in reachable(voice_agent, timeout, avoiding=prompts)


def test_no_prompt_free_chain_of_lambdas_exceeds_connects_twenty_second_budget(voice_agent: Flow) -> None:
    def longest(identifier: str, seen: frozenset[str]) -> int:
        current = voice_agent[identifier]
        if current.type == "MessageParticipant":
            return 0
        own = int(current.parameters["InvocationTimeLimitSeconds"]) if current.type == "InvokeLambdaFunction" else 0
        return own + max((longest(t, seen | {t}) for t in current.targets() if t not in seen), default=0)

    for start in voice_agent.of_type("InvokeLambdaFunction"):
        assert longest(start.identifier, frozenset({start.identifier})) <= 20, start.identifier


def test_the_conversation_loop_counts_timeouts_and_rounds_with_loops(voice_agent: Flow) -> None:
    loops = {a.identifier: a for a in voice_agent.of_type("Loop")}
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
            self.events.append(
                ("sonic", self.resolve(media["Uri"])) if media else ("connect", self.resolve(params["Text"]))
            )
        elif act.type == "UpdateContactMediaStreamingBehavior":
            self.events.append(("streaming", params["MediaStreamingState"]))
        elif act.type == "UpdateContactTargetQueue":
            self.events.append(("queue", params["QueueId"]))
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


def scripted(
    turns: list[str],
    *,
    synthesize: Callable[[dict[str, str]], dict[str, str]] | None = None,
    start_listening: dict[str, str] | None = None,
    transfer: dict[str, str] | None = None,
) -> Responder:
    """Lambda results: AwaitTurn answers each entry of ``turns`` ("" = a timeout), then times out forever."""
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
        index += 1
        return {"Result": "Turn", "Transcript": transcript, "TurnIndex": str(index)}

    return respond


def heard(events: list[tuple[str, str]]) -> list[str]:
    return [what for kind, what in events if kind in ("sonic", "connect")]


def test_a_call_greets_replies_to_each_turn_and_hangs_up_after_three_silences(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted(["hello", "what time is it"])).run()
    assert heard(events) == [
        "s3://Hello! Thanks for calling. How can I help you today?",
        "s3://You said: hello",
        "s3://You said: what time is it",
        "s3://Are you still there? I'm listening.",
        "s3://Are you still there? I'm listening.",
        "s3://I haven't heard anything for a while, so I'll hang up now. Goodbye!",
    ]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_media_streaming_and_listening_start_before_the_greeting(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted([])).run()
    assert events[:3] == [
        ("streaming", "Enabled"),
        ("invoke", "StartListeningFunction"),
        ("invoke", "SynthesizeFunction"),
    ]


def test_a_turn_resets_the_count_of_consecutive_silences(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted(["one", "", "", "two", "", "", "three"])).run()
    assert heard(events).count("s3://Are you still there? I'm listening.") == 6
    assert [h for h in heard(events) if "You said" in h] == [
        "s3://You said: one",
        "s3://You said: two",
        "s3://You said: three",
    ]


def test_the_conversation_ends_politely_after_twenty_rounds(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted([f"turn {i}" for i in range(30)])).run()
    assert sum("You said" in h for h in heard(events)) == 20
    assert heard(events)[-1] == "s3://Thanks for talking with me. That's all we have time for today. Goodbye!"
    assert events[-1] == ("disconnect", "")


def test_a_synthesis_fallback_is_spoken_with_connects_own_voice(voice_agent: Flow) -> None:
    def fallback(params: dict[str, str]) -> dict[str, str]:
        return {"Result": "Fallback", "Text": params.get("Prefix", "") + params["Text"]}

    events = Call(voice_agent, scripted(["hello"], synthesize=fallback)).run()
    assert heard(events)[:2] == ["Hello! Thanks for calling. How can I help you today?", "You said: hello"]
    assert not any(kind == "sonic" for kind, _ in events)


def test_a_synthesis_error_is_answered_with_connects_own_voice(voice_agent: Flow) -> None:
    def broken(params: dict[str, str]) -> dict[str, str]:
        raise RuntimeError("Lambda failed")

    events = Call(voice_agent, scripted(["hello"], synthesize=broken)).run()
    assert heard(events)[:2] == ["Hello! Thanks for calling. How can I help you today?", "You said: hello"]


def test_a_call_that_cannot_be_transcribed_ends_with_an_apology(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted([], start_listening={"Result": "Error", "ErrorCode": "NoMediaStream"})).run()
    assert heard(events) == ["Sorry, we're having technical difficulties. Please call again later. Goodbye."]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_repeated_await_turn_failures_end_the_call(voice_agent: Flow) -> None:
    def failing(function: str, params: dict[str, str]) -> dict[str, str]:
        if function == "AwaitTurnFunction":
            return {"Result": "Error", "ErrorCode": "StorageError"}
        return scripted([])(function, params)

    events = Call(voice_agent, failing).run()
    assert heard(events)[1:] == ["Sorry, I missed that. Could you say it again?"] * 2 + [
        "Sorry, we're having technical difficulties. Please call again later. Goodbye."
    ]


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

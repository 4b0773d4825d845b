"""Five calls on the line at once, through contact_flows/voice-agent.json on one local cloud: every caller turn is
stored once as what was said and answered once, and no call stops on an error.

The calls are the demo's ``--calls 5 --interval-ms 5000``, in real time as on a line, each service in a process of
its own as in the demo: in this process with the calls, moto's and the emulators' work queued behind theirs on a
loaded machine, and a reply could come past ConverseFunction's 8 s. Five seconds apart rather than the demo's three:
on a shared two-core machine a burst of cold starts can starve a reply past that too, which is the machine's limit,
not the product's. A call of the scenario lasts longer than the twenty seconds over which they are placed, so all five
are on the line together: each call's consumer and long-polling ConverseFunction run in containers of their own beside
the others', and the figures' percentiles are taken over five calls' turns. The latencies under this load are reported
by the demo, not asserted here.

Not on virtual clocks, which would take half the time: a skipped prompt reaches the consumer as a burst of the silence
under it, which Ink takes no faster than real time and the consumer catches up on only in the caller's pauses, and a
turn ended seconds late on the call's clock (6.5 s for one call's last turn on a quiet machine, against 0.54–0.76 s for
every turn of five calls in real time); no call on a line has that delay. Larger on a loaded machine, it is the
likeliest reading of the calls seen failing in five of about a dozen fresh runs of the suite: two polls in a row waiting
their whole 6 s for a reply still to come and, with the emulator's own time, answering past Connect's 8 s (the flow gave
up); a call still polling when the fixture's time ran out.
"""

from __future__ import annotations

import pytest

from voicebridge_dev.demo import place_calls
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.simulator import SCENARIOS, RealClock, load_clips, turn_story
from voicebridge_dev.simulator.engine import CallResult
from voicebridge_dev.simulator.load import LoadRun, delivery, load_figures, load_table

CALLS = 5
LONGEST_CALL_S = 120.0
"""A call of the scenario lasts about 85 s; one still going at 120 s is stuck (a turn never answered, its polls
answered ``Listening`` or ``Thinking`` on and on), and ends there as an error, with its story."""

# The last call is placed 20 s after the first, and the fixture starts a local cloud first: a stuck call must end on
# its own limit before pytest's, to be reported.
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def run() -> LoadRun:
    scenario = SCENARIOS["normal"]
    result, _ = place_calls(
        CALLS,
        scenario,
        scenario.script(load_clips()),
        StandInSpeechEngine(),
        interval_s=5.0,
        clock=RealClock,
        max_call_s=LONGEST_CALL_S,
    )
    return result


def why(result: CallResult) -> str:
    """What a call that went wrong ended with: its end, its last Lambda invocations, and the story of each turn the
    flow was handed no reply to (what the product kept of it, and what the flow was given)."""
    calls = [
        (c.function, c.result, round(c.start, 1), round(c.end, 1), c.error, (c.response or {}).get("ErrorMessage"))
        for c in result.lambda_calls[-4:]
    ]
    handed = {str(c.response.get("TurnIndex")) for c in result.lambda_calls if c.response and "Segment" in c.response}
    unanswered = [t.index for t in result.records.turns if t.track == "customer" and str(t.index) not in handed]
    stories = "".join(f"\n{turn_story(result, turn)}" for turn in unanswered)
    return f"{result.contact_id} ended {result.ended_by} ({result.detail}); last invocations: {calls}{stories}"


def test_every_call_ends_where_the_caller_asked_to_go(run: LoadRun) -> None:
    assert len(run.results) == CALLS
    # A call that took an error branch is explained by the logs of the invocations that failed, kept by the run.
    failures = [(failed.function, failed.error, failed.summary()["log_tail"]) for failed in run.failed]
    assert [why(result) for result in run.results if result.ended_by != "transferred"] == [], failures
    assert len({result.contact_id for result in run.results}) == CALLS


def test_every_turn_of_every_call_is_delivered_exactly_once(run: LoadRun) -> None:
    utterances = len(SCENARIOS["normal"].steps)

    for result in run.results:
        call = delivery(result)
        assert (call.utterances, call.stored, call.heard_as_said) == (utterances,) * 3, why(result)
        assert (call.duplicates, call.lost) == (0, 0), result.contact_id
        # A turn the caller followed up before its reply began is answered with the next one (barge-in).
        assert call.answered + call.superseded == utterances and call.once == utterances, why(result)


def test_the_figures_count_every_turn_and_give_percentiles_of_each_latency(run: LoadRun) -> None:
    figures = load_figures(run)
    turns = figures["turns"]

    assert turns["exactly_once"] == turns["utterances"] == CALLS * len(SCENARIOS["normal"].steps)
    stop_to_turn_end = figures["percentiles_ms"]["stop_to_turn_end"]
    assert 0 < stop_to_turn_end["p50"] <= stop_to_turn_end["p90"] <= stop_to_turn_end["p99"]


def test_the_figures_say_where_the_cpu_went_per_call_minute(run: LoadRun) -> None:
    cpu = load_figures(run)["cpu"]
    assert cpu["call_minutes"] > 0
    components = cpu["components"]
    used = {
        "ConverseFunction (its containers)",
        "TranscribeStreamFunction (its containers)",
        "moto for DynamoDB (its process)",
        "KVS emulator (its process)",
        "Ink emulator (its process)",
        "Sonic emulator (its process)",
        "this process: the simulated calls and the Lambda emulator's front",
    }
    assert used <= set(components)
    # The services a call does not use (the Lex emulator; moto's third server, for Secrets Manager and CloudWatch)
    # may do nothing that a process's clock can count.
    for name, figure in components.items():
        assert figure["cpu_s"] > 0 if name in used else figure["cpu_s"] >= 0
        assert figure["per_call_minute_s"] == pytest.approx(figure["cpu_s"] / cpu["call_minutes"], abs=0.02)
    assert "per call-minute" in load_table(load_figures(run))

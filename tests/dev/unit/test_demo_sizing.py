"""What a run of many calls gives the Lambda emulator, and the speech engine a service process is told to load."""

from __future__ import annotations

import pytest

from voicebridge_dev.demo import containers_for
from voicebridge_dev.local.lambda_.emulator import DEFAULT_CONCURRENCY
from voicebridge_dev.local.speech_engine import (
    PiperSpeechEngine,
    StandInSpeechEngine,
    UnknownSpeechEngine,
    engine_choice,
)


@pytest.mark.parametrize(("calls", "containers"), [(1, DEFAULT_CONCURRENCY), (10, 12), (15, 17), (20, 22)])
def test_each_function_gets_a_container_per_call_and_two_for_hand_overs(calls: int, containers: int) -> None:
    # With fewer, the latest calls' consumers wait as queued Event invocations, and those calls have no transcriber.
    assert containers_for(calls) == containers


def test_an_engine_is_named_by_the_choice_that_makes_it_again_in_another_process() -> None:
    assert engine_choice(StandInSpeechEngine()) == "standin"
    assert engine_choice(PiperSpeechEngine.__new__(PiperSpeechEngine)) == "piper"

    class Other:
        name = "someone else's"

    with pytest.raises(UnknownSpeechEngine, match="someone else's"):
        engine_choice(Other())  # type: ignore[arg-type]

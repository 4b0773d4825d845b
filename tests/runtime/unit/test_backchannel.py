"""The flows path tells a backchannel from a turn by the agent's own track: a short "uh-huh" the agent's voice ran on
over is one; a caller who spoke long enough, into a gap between prompts, or over the agent's last words, took a turn."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from tests.fixtures.tracks import quiet, voice
from voicebridge.call.backchannel import AgentVoice, holding_back
from voicebridge.call.consumer import _deliver
from voicebridge.call.record import build_record
from voicebridge.ink.transcriber import MetricSink
from voicebridge.kvs.fragments import Audio
from voicebridge.redaction import BuiltinRedactor
from voicebridge.store.replies import ReplyStatus
from voicebridge.store.turns import AGENT, CHECKPOINT

EPOCH_MS = 1_764_000_000_000.0


def heard(*parts: tuple[str, int], frame_ms: int = 20, backchannel_ms: int = 600) -> AgentVoice:
    """The agent's track from ``EPOCH_MS``: (``voice`` | ``quiet``, ms) parts, fed in frames of ``frame_ms``."""
    audio = b"".join(voice(ms) if kind == "voice" else quiet(ms) for kind, ms in parts)
    agent = AgentVoice(backchannel_ms=backchannel_ms)
    step = frame_ms * 16
    for offset in range(0, len(audio), step):
        piece = audio[offset : offset + step]
        agent.feed(piece, EPOCH_MS + (offset + len(piece)) / 16)
    return agent


def through(
    agent: AgentVoice,
    durations: list[int | None],
    began_ms: float,
    after_ms: float = 100,
    ended_ms: float | None = None,
) -> tuple[int, float] | None:
    heard = agent.heard_through(
        durations,
        after_ms=EPOCH_MS + after_ms,
        began_ms=EPOCH_MS + began_ms,
        ended_ms=None if ended_ms is None else EPOCH_MS + ended_ms,
    )
    return None if heard is None else (heard[0], heard[1] - EPOCH_MS)


# A reply of three prompts as the flow plays them once the caller it answers is done (at 100 ms): the first (a
# second long) from 500 ms, the second (four seconds, a comma's pause in it) from 1,750 ms, the third (two seconds)
# from 6,000 ms; each ends in a little quiet of its own, and the flow takes a quarter of a second to ask for the next.
# (The track is judged in 20 ms frames: the second prompt's voice is found from 1,740 ms.)
REPLY_TRACK = (
    ("quiet", 500),
    ("voice", 950),
    ("quiet", 300),
    ("voice", 1250),
    ("quiet", 250),
    ("voice", 2450),
    ("quiet", 300),
    ("voice", 1950),
    ("quiet", 1000),
)
REPLY: list[int | None] = [1000, 4000, 2000]


def test_the_agents_track_says_which_prompt_of_a_reply_played_when_the_caller_began() -> None:
    agent = heard(*REPLY_TRACK)
    # Before the first prompt the caller heard none of it (ConverseFunction holds it over them); over a prompt, that
    # prompt (it plays to its end); the comma's pause is inside the second; all of it, once it had played.
    heard_then = {began: through(agent, REPLY, began) for began in (150, 1000, 1400, 3100, 5500, 6500, 8600)}
    assert heard_then == {
        150: (0, 100),
        1000: (1, 1500),
        1400: (1, 1500),
        3100: (2, 5740),
        5500: (2, 5740),
        6500: (3, 8000),
        8600: (3, 8000),
    }


def test_a_prompt_that_began_as_the_caller_did_was_handed_out_before_they_were_marked_and_is_heard() -> None:
    agent = heard(*REPLY_TRACK)
    # The second prompt's voice came 150 ms after the caller's, the third's 200 ms after: the flow had them already.
    assert through(agent, REPLY, 1600) == (2, 5740)
    assert through(agent, REPLY, 5800) == (3, 8000)
    # 350 ms after it: held.
    assert through(agent, REPLY, 150 - 200) == (0, 100)


def test_a_prompt_that_began_while_the_caller_still_spoke_was_handed_out_before_the_hold_and_is_heard() -> None:
    agent = heard(*REPLY_TRACK)
    # The caller spoke from 1.0 s over the first prompt, to 1.8 s: the second prompt's voice came at 1.74 s, so the
    # flow had it before they were marked (no answer to their voice could play before it ended).
    assert through(agent, REPLY, 1000, ended_ms=1800) == (2, 5740)
    assert through(agent, REPLY, 1000, ended_ms=1300) == (1, 1500)
    assert through(agent, REPLY, 3100, ended_ms=6100) == (3, 8000)
    # Not told before the track has been read to the voice's end.
    assert through(agent, REPLY, 3100, ended_ms=9000) is None


def test_the_track_tells_nothing_where_it_was_not_read_or_a_prompts_length_is_not_known() -> None:
    agent = heard(*REPLY_TRACK)
    assert through(agent, REPLY, 8700) is None
    assert through(AgentVoice(backchannel_ms=600), REPLY, 1000) is None
    assert through(agent, REPLY, 1000, after_ms=-100) is None
    # Connect's own voice read the second sentence (Sonic could not): how long it took is not known.
    assert through(agent, [1000, None, 2000], 1000) == (1, 1500)
    assert through(agent, [1000, None, 2000], 6500) is None


def test_at_the_calls_end_the_track_says_how_much_of_the_reply_had_played() -> None:
    # The caller hung up 3 s in, during the second prompt (found from 1.74 s, four seconds long).
    cut = heard(*REPLY_TRACK[:4])
    # Measured from its first voice less the quiet a prompt may begin with.
    assert cut.played(REPLY, after_ms=EPOCH_MS + 100) == (2, (3000 - 1740 + 150) / 4000)
    # Between two prompts: the first whole, the second never begun.
    between = heard(*REPLY_TRACK[:3])
    assert between.played(REPLY, after_ms=EPOCH_MS + 100) == (1, 1.0)
    assert heard(*REPLY_TRACK).played(REPLY, after_ms=EPOCH_MS + 100) == (3, 1.0)
    assert heard(*REPLY_TRACK).played(REPLY, after_ms=EPOCH_MS - 100) is None


def test_a_prompt_handed_out_with_no_quiet_after_the_one_before_is_found_by_that_ones_length() -> None:
    # "Of course." (700 ms, from 500 ms), then at once "Let me connect you with one of my colleagues." (3.15 s): 40 ms
    # of quiet between their voices; streaming stops as the second ends, or the caller hangs up at 2 s.
    whole = heard(("quiet", 500), ("voice", 680), ("quiet", 40), ("voice", 3100), ("quiet", 50))
    assert whole.played([700, 3150], after_ms=EPOCH_MS + 100) == (2, 1.0)
    cut = heard(("quiet", 500), ("voice", 680), ("quiet", 40), ("voice", 780))
    assert cut.played([700, 3150], after_ms=EPOCH_MS + 100) == (2, (2000 - 1200 + 150) / 3150)


def test_the_first_prompt_is_looked_for_after_what_played_when_its_turn_ended() -> None:
    # The caller's question ended at 1,000 ms, over an earlier reply's prompt that went on (with a pause) to 2,500 ms;
    # the answer played from 2,800 ms.
    agent = heard(("voice", 1500), ("quiet", 200), ("voice", 800), ("quiet", 300), ("voice", 1500), ("quiet", 500))
    assert through(agent, [1400], 3000, after_ms=2500) == (1, 4200)
    # Looked for from the question's end alone, the pause in the earlier prompt is taken for the answer's start: the
    # answer would seem over before it was (and the next turn's reply looked for too early).
    assert through(agent, [1400], 3000, after_ms=1000) == (1, 3100)


def over(agent: AgentVoice, start_ms: float, end_ms: float, more_to_say: Callable[[], bool] = lambda: False) -> bool:
    return agent.went_on_over(EPOCH_MS + start_ms, EPOCH_MS + end_ms, more_to_say)


def test_a_short_voice_in_the_middle_of_a_prompt_is_a_backchannel() -> None:
    agent = heard(("quiet", 500), ("voice", 5000), ("quiet", 1000))
    assert over(agent, 2000, 2450)


def test_a_voice_as_long_as_the_limit_is_a_turn_though_the_prompt_went_on() -> None:
    agent = heard(("voice", 6000))
    assert not over(agent, 2000, 2600)
    assert over(agent, 2000, 2590)


def test_a_caller_who_speaks_over_the_last_words_of_a_reply_takes_a_turn() -> None:
    # "Anything else?" "No." — said as the agent finished, with nothing more to say.
    agent = heard(("voice", 3000), ("quiet", 2000))
    assert not over(agent, 2700, 2900)
    assert not over(agent, 3200, 3500)
    assert over(agent, 2500, 2790)


def test_a_short_voice_that_outlasts_a_prompt_of_a_reply_with_more_to_say_is_a_backchannel() -> None:
    # The reply's short first clause ends under the caller's "uh-huh"; the flow waits to play the next sentence.
    agent = heard(("voice", 1200), ("quiet", 2000))
    asked: list[bool] = []

    def more_to_say() -> bool:
        asked.append(True)
        return True

    assert over(agent, 1000, 1450, more_to_say)
    assert over(agent, 1300, 1700, more_to_say)
    assert len(asked) == 2


def test_the_reply_is_not_asked_about_a_voice_that_began_when_the_agent_was_quiet() -> None:
    agent = heard(("voice", 2000), ("quiet", 700), ("voice", 3000))

    def more_to_say() -> bool:
        raise AssertionError("asked")

    assert not over(agent, 2450, 2650, more_to_say)


def test_a_short_voice_begun_while_the_agent_spoke_may_pause_the_hold_a_long_one_or_one_begun_in_silence_not() -> None:
    agent = heard(("voice", 1200), ("quiet", 2000))
    # "Uh-huh" across the end of the first clause: it began over the agent.
    assert agent.began_over(EPOCH_MS + 1000, EPOCH_MS + 1450)
    # Within a pause between the agent's words.
    assert agent.began_over(EPOCH_MS + 1500, EPOCH_MS + 1800)
    assert not agent.began_over(EPOCH_MS + 1000, EPOCH_MS + 1600)  # as long as the limit
    assert not agent.began_over(EPOCH_MS + 1700, EPOCH_MS + 1900)  # the agent had been quiet 500 ms


def test_the_agents_pauses_between_words_do_not_end_its_voice() -> None:
    agent = heard(("voice", 1000), ("quiet", 300), ("voice", 1000), ("quiet", 390), ("voice", 1000))
    assert over(agent, 900, 1400)
    assert over(agent, 2100, 2600)


def test_frames_shorter_than_the_detectors_are_joined() -> None:
    agent = heard(("voice", 3000), frame_ms=10)
    assert over(agent, 1000, 1400)


def test_audio_read_again_after_a_reconnect_changes_nothing() -> None:
    agent = heard(("voice", 4000))
    # GetMedia resumes a fragment early: its first second comes again while the caller's turn is judged.
    for offset in range(0, 1000 * 16, 320):
        agent.feed(voice(20), EPOCH_MS + offset / 16 + 20)
    assert over(agent, 2000, 2300)


def test_frames_without_connects_time_tell_nothing() -> None:
    agent = AgentVoice(backchannel_ms=600)
    agent.feed(voice(5000), None)
    assert not over(agent, 1000, 1300)


def test_a_limit_of_zero_answers_every_turn() -> None:
    agent = heard(("voice", 5000), backchannel_ms=0)
    assert not over(agent, 1000, 1100)


def test_the_record_marks_a_backchannel_turn_and_gives_it_no_reply() -> None:
    turns = [
        {"TurnKey": "customer#000000000", "Track": "customer", "Seq": 0, "Transcript": "uh huh", "Backchannel": True},
        {"TurnKey": "customer#000000001", "Track": "customer", "Seq": 1, "Transcript": "what is my balance"},
    ]
    record = build_record("c1", [{"TurnKey": CHECKPOINT}, *turns], BuiltinRedactor(), generation=0)
    assert [(turn["heard"], turn.get("backchannel")) for turn in record["turns"]] == [
        ("uh huh", True),
        ("what is my balance", None),
    ]
    assert "reply" not in record["turns"][0]


def test_the_consumer_hands_the_agents_track_to_the_agent_voice_and_transcribes_nothing_of_it() -> None:
    agent = AgentVoice(backchannel_ms=600)
    for offset in range(0, 3000 * 16, 1024):
        frame = Audio(AGENT, "91", offset, voice(64), EPOCH_MS + offset / 16 + 64)
        assert not _deliver(frame, {}, MetricSink(threading.Lock()), agent)
    assert over(agent, 1000, 1400)


def test_a_sentence_held_back_of_the_latest_reply_means_it_has_more_to_say() -> None:
    assert holding_back(ReplyStatus(3, 4, done=True, held_back=(3, 2)))
    # A mark left for an earlier reply says nothing of the one a newer turn began.
    assert not holding_back(ReplyStatus(4, 1, done=False, held_back=(3, 2)))
    assert not holding_back(ReplyStatus(3, 4, done=True))
    assert not holding_back(None)


def test_a_sentence_handed_out_over_the_pause_of_the_turn_being_judged_means_the_reply_went_on() -> None:
    assert holding_back(ReplyStatus(3, 4, done=True, speaking_since_ms=1, speaking_turn=5, went_on_for=5))
    # Handed out over an earlier turn's pause: says nothing of this one.
    assert not holding_back(ReplyStatus(3, 4, done=True, speaking_since_ms=1, speaking_turn=6, went_on_for=5))


def test_a_steady_noise_on_the_agents_track_is_not_its_voice() -> None:
    # Comfort noise or a hiss between prompts, louder than a level threshold alone would allow.
    rng = np.random.default_rng(7)
    hiss = (rng.normal(0, 0.03, 8 * 6000) * 32767).astype("<i2").tobytes()
    agent = AgentVoice(backchannel_ms=600)
    for offset in range(0, len(hiss), 320):
        agent.feed(hiss[offset : offset + 320], EPOCH_MS + (offset + 320) / 16)
    # "Yes", said after the agent finished: a turn, not a backchannel.
    assert not over(agent, 4000, 4400, lambda: True)

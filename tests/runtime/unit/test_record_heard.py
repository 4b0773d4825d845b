"""What the caller heard of a reply they talked over, as the call record keeps it beside the sentences made."""

from __future__ import annotations

from typing import Any

from voicebridge.call.record import build_record, redacted_item
from voicebridge.redaction import BuiltinRedactor
from voicebridge.store.turns import CHECKPOINT, CUSTOMER

SENTENCES = ["Your card 4111 1111 1111 1111 is blocked.", "I can send a new one.", "Shall I?"]


def items(**turn: Any) -> list[dict[str, Any]]:
    caller = {
        "TurnKey": f"{CUSTOMER}#000000000",
        "Track": CUSTOMER,
        "Seq": 0,
        "Transcript": "is my card blocked",
        "AudioStartMs": 1000,
        "AudioEndMs": 2000,
        "EndedAt": 1_764_000_000_000,
        **turn,
    }
    segments = [
        {"TurnKey": f"reply#000000000#{index:03d}", "Segment": index, "Text": text, "PromptUri": f"a2a://{index}"}
        for index, text in enumerate(SENTENCES)
    ]
    return [{"TurnKey": CHECKPOINT}, caller, *segments]


def reply(turn_items: list[dict[str, Any]]) -> dict[str, Any]:
    record = build_record("c1", turn_items, BuiltinRedactor(), generation=0)
    (turn,) = record["turns"]
    return dict(turn["reply"])


def test_a_reply_cut_short_keeps_what_the_caller_heard_of_it_redacted() -> None:
    kept = reply(items(ReplyHeard="Your card 4111 1111 1111 1111 is blocked. I can"))
    assert len(kept["said"]) == 3
    assert kept["heard"] == "Your card [CARD] is blocked. I can", kept
    assert "4111" not in str(kept)


def test_a_reply_heard_whole_says_only_what_was_made() -> None:
    assert "heard" not in reply(items())


def test_what_was_heard_is_redacted_in_the_table_too() -> None:
    caller = items(ReplyHeard="Your card 4111 1111 1111 1111 is blocked.")[1]
    redacted = redacted_item(caller, BuiltinRedactor())
    assert redacted is not None and "4111" not in redacted["ReplyHeard"]


def test_a_reply_held_back_over_the_caller_on_the_flows_path_was_heard_up_to_the_sentence_held() -> None:
    kept = reply(items(ReplyHeldAt=1))
    assert kept["heard"] == "Your card [CARD] is blocked."
    assert reply(items(ReplyHeldAt=0))["heard"] == ""


def test_a_mark_past_the_replys_last_sentence_says_it_was_heard_whole() -> None:
    # The flow left the reply after its last sentence made (the rest was never made): nothing unheard to say.
    assert "heard" not in reply(items(ReplyHeldAt=3))

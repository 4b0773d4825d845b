"""Converse-path benchmark: a reply's first prompt, for one sentence and for five, against a whole-reply peer.

On the local cloud in its own process (Sonic emulator: 40 ms to first byte, then 20x real time; moto's S3 and DynamoDB;
loopback HTTP), a caller's turn is answered by a responder that streams its text as the Bedrock emulator does by
default (first words after 300 ms, then 60 words a second), in-process so the figures are the bridge's and not a
second emulator's. Two replies share their first sentence: one of one sentence, one of five.

- **ours** — :class:`~voicebridge.converse.worker.ReplyWorker` as TranscribeStreamFunction builds it: each sentence
  spoken with the Speak path's synthesizer and stored as a segment the moment its prompt is in S3. Timed from the
  turn's submission to segment 0 in the turn table (what ConverseFunction then hands the flow), and, for the five,
  each later segment's *slack*: how long before the previous segment would have finished playing it was stored
  (negative: Connect would wait for it).
- **whole reply** — the peer most bridges implement, and this project's own path before conversations (AwaitTurn,
  then Synthesize): the responder's text collected to its end, then spoken as one prompt. Timed from the turn to that
  prompt in S3.

Target: the five-sentence reply's first prompt within 50 ms of the one-sentence reply's (ours); the peer's grows with
the reply.

**Speculation on vs off**, on the same turns and emulator settings: Ink's ``turn.eager_end`` comes ``lead`` before
its ``turn.end``, the lead the Ink emulator's documented thresholds give with the template's
``InkEagerEndThreshold`` (it ends a turn ``end_after_ms`` after the last voiced frame; the eager end comes where its
falling speaking probability crosses the eager threshold). Each turn is timed from its end to the moment the status
names its first segment (what ConverseFunction then hands the flow):

- **off** — the reply starts at the turn end (``SPECULATIVE_REPLIES=off``);
- **on, right** — the reply started at the eager end on the words the turn then ends with: committed at the turn end;
- **on, wrong** — the eager words are not the turn's: the speculation is cancelled at the turn end and the turn
  answered anew. Its waste (tokens and Sonic time discarded) is reported.

Targets: *on, right* earlier than *off* by at least the lead less 50 ms; *on, wrong* no later than *off*. Run
``python bench/bench_converse.py`` or ``voicebridge bench --only converse``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import statistics
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from voicebridge import container
from voicebridge.conversation import Action
from voicebridge.converse.making import ReplySettings, Spoken
from voicebridge.converse.responder import TurnRequest
from voicebridge.converse.worker import ReplyWorker
from voicebridge.sonic.request import SpeechRequest
from voicebridge.store.replies import speculation_key
from voicebridge.store.turns import CUSTOMER, Turn, plain_item
from voicebridge_dev.local.cloud import LOCAL_ENDPOINT_NAME, local_cloud_process
from voicebridge_dev.local.ink.turns import TurnSettings
from voicebridge_dev.local.runner import environment
from voicebridge_dev.template import function_spec, load_template

ROOT = Path(__file__).resolve().parents[1]
FIRST = "I'm sorry to hear that your card was charged twice this month."
MORE = (
    "To dispute a charge, find the transaction in the app and note its date and amount.",
    "Then choose the transaction and select dispute, or tell me and I can raise it for you.",
    "We may give you a temporary credit while we look into it, which usually takes ten business days.",
    "If someone used your card without your permission, we will freeze it and send you a new one.",
)
REPLIES = {"one sentence": (FIRST,), "five sentences": (FIRST, *MORE)}
TIME_TO_FIRST_TOKEN_S = 0.3
WORDS_PER_SECOND = 60.0
ROUNDS = 8
SPECULATION_MODES = ("off", "on, right", "on, wrong")
MULAW_BYTES_PER_SECOND = 8000


class _Streamed:
    """A reply's text in words, paced as a model writes it."""

    def __init__(self, sentences: tuple[str, ...]) -> None:
        self._words = " ".join(sentences).split(" ")

    def text(self) -> Iterator[str]:
        time.sleep(TIME_TO_FIRST_TOKEN_S)
        for n, word in enumerate(self._words):
            if n:
                time.sleep(1 / WORDS_PER_SECOND)
            yield word if n == 0 else f" {word}"

    @property
    def action(self) -> Action:
        return Action.CONTINUE

    @property
    def attributes(self) -> Mapping[str, str]:
        return {}


class _PacedResponder:
    name = "scripted"
    speculative_safe = True

    def __init__(self, sentences: tuple[str, ...], *, per_transcript: bool = False) -> None:
        self._sentences = sentences
        self._per_transcript = per_transcript

    def respond(self, request: TurnRequest, *, deadline: float) -> _Streamed:
        if not self._per_transcript:
            return _Streamed(self._sentences)
        # Other words, another answer: a reply to the eager words is no prompt the turn's reply finds in the cache.
        return _Streamed(
            (f"Reference {uuid.uuid5(uuid.NAMESPACE_OID, request.transcript).int % 10**6},", *self._sentences)
        )


def _speak(text: str, deadline: float, cancel: threading.Event | None = None, *, reply: object = None) -> Spoken:
    prompt = container.synthesizer().synthesize(
        SpeechRequest.from_parameters({"Text": text}, container.request_settings()), deadline=deadline, cancel=cancel
    )
    return Spoken(prompt.uri, prompt.synthesis_ms, prompt.first_byte_at)


def eager_lead_ms() -> float:
    """How long before the Ink emulator's turn end its eager end comes, with the template's InkEagerEndThreshold:
    its speaking probability falls linearly from 1 at the last voiced frame to ``end_threshold`` ``end_after_ms``
    later, and the eager end is where it crosses the eager threshold."""
    threshold = float(load_template(ROOT / "template.yaml")["Parameters"]["InkEagerEndThreshold"]["Default"])
    turns = TurnSettings().with_client_values({"eager_end_threshold": threshold})
    at_eager = (1 - turns.eager_end_threshold) / (1 - turns.end_threshold) * turns.end_after_ms
    return turns.end_after_ms - at_eager


def _named_after(contact_id: str, since: float, timeout_s: float = 30.0) -> float:
    """Milliseconds from ``since`` (``time.monotonic()``) until the status names turn 0's first segment."""
    replies = container.reply_store()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = replies.status(contact_id)
        if status is not None and status.turn == 0 and status.segments >= 1:
            return (time.monotonic() - since) * 1000
        time.sleep(0.002)
    raise AssertionError("the reply's first segment was never named")


def _speculation(mode: str, sentences: tuple[str, ...], lead_s: float, tag: str) -> dict[str, Any]:
    """One turn answered with speculation off, on with the right eager words, or on with wrong ones."""
    settings = dataclasses.replace(container.settings(), speculative_replies="off" if mode == "off" else "on")
    contact_id = str(uuid.uuid4())
    container.turn_store().claim(contact_id, "arn:stream", "100", [CUSTOMER], converse=True)
    worker = ReplyWorker(
        contact_id,
        responder=_PacedResponder(sentences, per_transcript=True),
        speak=_speak,
        replies=container.reply_store(),
        settings=ReplySettings.of(settings),
    )
    words = f"my card was charged twice {tag}"
    eager_words = words if mode != "on, wrong" else f"my card was {tag}"
    worker.eager_end(0, eager_words)
    time.sleep(lead_s)
    ended = time.monotonic()
    now = int(time.time() * 1000)
    worker.submit(Turn(contact_id, CUSTOMER, 0, words, 0, 1000, now, latency_ms=0))
    named_ms = _named_after(contact_id, ended)
    assert worker.drain(60), "the reply did not finish"
    worker.close(1.0)
    counted = _counted(contact_id)
    return {
        "first_ms": named_ms,
        "waste_tokens": int(counted.get("WasteTokens", 0)),
        "waste_sonic_ms": float(counted.get("WasteSonicMs", 0)),
    }


def _counted(contact_id: str) -> dict[str, Any]:
    store = container.turn_store()
    found = store.call(
        "get_item",
        TableName=store.table,
        Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": speculation_key(0)}},
        ConsistentRead=True,
    ).get("Item")
    return {} if found is None else plain_item(found)


def _unique(sentences: tuple[str, ...], tag: str) -> tuple[str, ...]:
    """The sentences with a tag on the first, so no prompt comes from the cache."""
    return (f"{sentences[0][:-1]}, {tag}.", *sentences[1:])


def _ours(sentences: tuple[str, ...]) -> dict[str, Any]:
    config = container.settings()
    contact_id = str(uuid.uuid4())
    container.turn_store().claim(contact_id, "arn:stream", "100", [CUSTOMER], converse=True)
    worker = ReplyWorker(
        contact_id,
        responder=_PacedResponder(sentences),
        speak=_speak,
        replies=container.reply_store(),
        settings=ReplySettings.of(config),
    )
    now = int(time.time() * 1000)
    turn = Turn(contact_id, CUSTOMER, 0, "my card was charged twice", 0, 1000, now, latency_ms=0)
    started = time.time()
    worker.submit(turn)
    assert worker.drain(60), "the reply did not finish"
    worker.close(1.0)
    segments = container.reply_store().segments(contact_id, 0)
    assert " ".join(s.text for s in segments).split() == " ".join(sentences).split(), [s.text for s in segments]
    ready = [s.ready_at_ms / 1000 - started for s in segments]
    slack = [(ready[k] + _duration_s(segments[k].prompt_uri) - ready[k + 1]) * 1000 for k in range(len(segments) - 1)]
    return {"first_ms": ready[0] * 1000, "slack_ms": slack}


def _duration_s(uri: str | None) -> float:
    """How long a prompt plays (its µ-law data at 8 kHz)."""
    assert uri is not None
    bucket, key = uri.split("://", 1)[1].split(".s3.", 1)[0], uri.split(".amazonaws.com/", 1)[1]
    size = int(container.client("s3").head_object(Bucket=bucket, Key=key)["ContentLength"])
    return (size - 58) / MULAW_BYTES_PER_SECOND


def _whole_reply(sentences: tuple[str, ...]) -> float:
    started = time.perf_counter()
    text = "".join(_Streamed(sentences).text())
    _speak(text, time.monotonic() + 30)
    return (time.perf_counter() - started) * 1000


def run() -> dict[str, Any]:
    options = ["--engine", "standin", "--sonic-ttfb-ms", "40", "--sonic-speed", "20"]
    with local_cloud_process(template=ROOT / "template.yaml", options=options) as env, environment(env):
        spec = function_spec(
            load_template(ROOT / "template.yaml"),
            "TranscribeStreamFunction",
            parameters={"SonicEndpointName": LOCAL_ENDPOINT_NAME},
        )
        saved = dict(os.environ)
        # The function's settings, its endpoints left as the local cloud set them.
        os.environ.update({k: v for k, v in spec.environment.items() if not k.startswith("AWS_ENDPOINT_URL_")})
        os.environ["AWS_REGION"] = env["AWS_DEFAULT_REGION"]
        logging.getLogger("voicebridge").setLevel(logging.WARNING)
        container.reset()
        ours: dict[str, list[float]] = {name: [] for name in REPLIES}
        slack: list[float] = []
        peer: dict[str, list[float]] = {name: [] for name in REPLIES}
        lead_ms = eager_lead_ms()
        speculation: dict[str, list[dict[str, Any]]] = {mode: [] for mode in SPECULATION_MODES}
        # The synthesizer writes each stream's metric to stdout, as Lambda's log takes it: not for the screen.
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                _speak("Warm up the container.", time.monotonic() + 30)
                for i in range(ROUNDS):
                    for name, sentences in REPLIES.items():
                        measured = _ours(_unique(sentences, f"ours {name} {i}"))
                        ours[name].append(measured["first_ms"])
                        if len(sentences) > 1:
                            slack.extend(measured["slack_ms"])
                        peer[name].append(_whole_reply(_unique(sentences, f"peer {name} {i}")))
                    # The modes take turns within a round, so a busy moment of the machine weighs on each alike.
                    for mode in SPECULATION_MODES:
                        speculation[mode].append(
                            _speculation(mode, REPLIES["five sentences"], lead_ms / 1000, f"{mode} {i}")
                        )
        finally:
            os.environ.clear()
            os.environ.update(saved)
            container.reset()

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 1)

    return {
        "rounds": ROUNDS,
        "responder": {"time_to_first_token_ms": TIME_TO_FIRST_TOKEN_S * 1000, "words_per_second": WORDS_PER_SECOND},
        "first_prompt_ms": {
            "ours": {name: median(values) for name, values in ours.items()},
            "whole reply": {name: median(values) for name, values in peer.items()},
        },
        "five_minus_one_ms": {
            "ours": round(median(ours["five sentences"]) - median(ours["one sentence"]), 1),
            "whole reply": round(median(peer["five sentences"]) - median(peer["one sentence"]), 1),
        },
        "segment_slack_ms": {"median": median(slack), "min": round(min(slack), 1)},
        "speculation": {
            "eager_lead_ms": round(lead_ms, 1),
            "first_prompt_after_turn_end_ms": {
                mode: median([r["first_ms"] for r in rounds]) for mode, rounds in speculation.items()
            },
            "gain_ms": {
                "on, right": round(
                    median([r["first_ms"] for r in speculation["off"]])
                    - median([r["first_ms"] for r in speculation["on, right"]]),
                    1,
                ),
                "on, wrong": round(
                    median([r["first_ms"] for r in speculation["off"]])
                    - median([r["first_ms"] for r in speculation["on, wrong"]]),
                    1,
                ),
            },
            "waste_per_wrong_turn": {
                "tokens": median([r["waste_tokens"] for r in speculation["on, wrong"]]),
                "sonic_ms": median([r["waste_sonic_ms"] for r in speculation["on, wrong"]]),
            },
        },
    }


def report(f: dict[str, Any]) -> str:
    first, diff = f["first_prompt_ms"], f["five_minus_one_ms"]
    lines = [
        f"responder: first words after {f['responder']['time_to_first_token_ms']:g} ms, then "
        f"{f['responder']['words_per_second']:g} words a second; median of {f['rounds']} rounds",
        f"{'first prompt stored':<24}{'one sentence':>14}{'five sentences':>16}{'five - one':>12}",
    ]
    for name in ("ours", "whole reply"):
        lines.append(
            f"{name:<24}{first[name]['one sentence']:>11.1f} ms{first[name]['five sentences']:>13.1f} ms"
            f"{diff[name]:>9.1f} ms"
        )
    lines.append(
        f"ours, five sentences: each later segment stored {f['segment_slack_ms']['median']:g} ms (median; least "
        f"{f['segment_slack_ms']['min']:g} ms) before the one before it would have finished playing"
    )
    lines.append("target: five - one <= 50 ms (ours)")
    spec = f["speculation"]
    after, gain = spec["first_prompt_after_turn_end_ms"], spec["gain_ms"]
    lines.append(
        f"speculation: Ink's eager end {spec['eager_lead_ms']:g} ms before its turn end (the emulator's thresholds); "
        "first prompt named after the turn end:"
    )
    for mode in SPECULATION_MODES:
        extra = f" ({gain[mode]:+g} ms against off)" if mode in gain else ""
        lines.append(f"  {mode:<10}{after[mode]:>9.1f} ms{extra}")
    waste = spec["waste_per_wrong_turn"]
    lines.append(
        f"  a wrong eager end discards {waste['tokens']:g} tokens and {waste['sonic_ms']:g} ms of Sonic (median)"
    )
    lines.append("targets: on, right gains >= lead - 50 ms; on, wrong gains >= 0 ms (no later than off)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))

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
the reply. Run ``python bench/bench_converse.py`` or ``voicebridge bench --only converse``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import statistics
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from voicebridge import container
from voicebridge.converse.replies import Action, TurnRequest
from voicebridge.converse.worker import ReplyWorker, Spoken
from voicebridge.sonic.request import SpeechRequest
from voicebridge.store.turns import CUSTOMER, Turn
from voicebridge_dev.local.cloud import LOCAL_ENDPOINT_NAME, local_cloud_process
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

    def __init__(self, sentences: tuple[str, ...]) -> None:
        self._sentences = sentences

    def respond(self, request: TurnRequest, *, deadline: float) -> _Streamed:
        return _Streamed(self._sentences)


def _speak(text: str, deadline: float) -> Spoken:
    config = container.settings()
    prompt = container.synthesizer().synthesize(
        SpeechRequest.from_parameters({"Text": text}, config), deadline=deadline
    )
    return Spoken(prompt.uri, prompt.synthesis_ms)


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
        settings=config,
    )
    now = int(time.time() * 1000)
    turn = Turn(contact_id, CUSTOMER, 0, "my card was charged twice", 0, 1000, now, latency_ms=0)
    started = time.time()
    worker.submit(turn)
    assert worker.drain(60), "the reply did not finish"
    worker.close(1.0)
    segments = container.reply_store().segments(contact_id, 0)
    assert [s.text for s in segments] == list(sentences), [s.text for s in segments]
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
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))

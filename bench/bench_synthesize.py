"""Speak-path benchmark: what the bridge adds on top of the model, against a buffer-then-convert peer.

For a long sentence (≈20 s of audio), on the local cloud (botocore over loopback HTTP to the Sonic endpoint emulator
and to moto's S3), each prompt is synthesized fresh and timed:

- ``overhead = wall time − emulator generation time − S3 PutObject time`` — the generation time is the emulator's
  whole service time for the request (from reading it to writing the stream's last byte; read from its own records,
  the emulator running in its own process like the real endpoint), the PutObject time is the median of storing a
  WAV of the same size directly. What remains is what the bridge adds to the model's latency: request validation,
  the cache lookup, whatever decoding and conversion has not kept up with the stream, response shaping.
- the same for the peer most bridges implement: buffer the whole stream, then convert once it has ended;
- cache hits: from this container's index (no S3 call) and from S3 (one HeadObject), through the handler.

Targets: overhead under 5 ms at the median; cache hit under 20 ms total.
Run ``python bench/bench_synthesize.py`` or ``voicebridge bench --only synthesize``.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import time
import urllib.request
from pathlib import Path
from typing import Any

import boto3

from voicebridge import container
from voicebridge.audio.convert import MulawConverter
from voicebridge.config import Settings
from voicebridge.sonic.backends import STALL_TIMEOUT_S, OutputFormat, SageMakerBackend
from voicebridge.sonic.request import RequestSettings, SpeechRequest
from voicebridge.sonic.synthesizer import Generation, GenerationWatch, SynthesisSettings, Synthesizer
from voicebridge.store.prompts import PromptStore
from voicebridge_dev.local.cloud import LOCAL_ENDPOINT_NAME, local_cloud_process
from voicebridge_dev.local.runner import environment, invoke
from voicebridge_dev.template import function_spec, load_template

ROOT = Path(__file__).resolve().parents[1]
LONG_TEXT = (
    "Thank you for calling the customer service line. Your current balance is one hundred and twenty four dollars "
    "and seventeen cents, and your next payment is due on the fifteenth of next month. To pay now, say pay my bill. "
    "To hear recent transactions, say transactions. To speak with an agent at any time, just say agent."
)
ROUNDS = 12


class BufferThenConvert(Synthesizer):
    """The peer: collect every chunk, convert after the stream has ended."""

    def _run(self, request: SpeechRequest, fmt: OutputFormat, deadline: float, watch: GenerationWatch) -> Generation:
        started = time.perf_counter()
        chunks: list[bytes] = []
        first: float | None = None
        for audio in self._backend.stream(request, fmt, deadline=deadline):
            first = first or time.perf_counter()
            chunks.append(audio)
        converter = MulawConverter(fmt.encoding, fmt.sample_rate, resampler=self._settings.sonic_resampler)
        converter.feed(b"".join(chunks))
        wav = converter.finish()
        finished = time.perf_counter()
        return Generation(
            wav,
            int(converter.duration_ms),
            ((first or finished) - started) * 1000,
            (finished - started) * 1000,
            first_byte_at=time.time(),
        )


def _put_ms(bucket: str, size: int, rounds: int = 15) -> float:
    s3 = boto3.client("s3")
    body = b"\x7f" * size
    times = []
    for i in range(rounds):
        started = time.perf_counter()
        s3.put_object(Bucket=bucket, Key=f"bench/put-{i}.wav", Body=body, ContentType="audio/wav")
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _head_miss_ms(bucket: str, rounds: int = 15) -> float:
    s3 = boto3.client("s3")
    times = []
    for i in range(rounds):
        started = time.perf_counter()
        with contextlib.suppress(s3.exceptions.ClientError):
            s3.head_object(Bucket=bucket, Key=f"bench/missing-{i}.wav")
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _event(text: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((ROOT / "events" / "synthesize.json").read_text())
    event["Details"]["Parameters"] = {"Text": text}
    return event


def _last_generation_ms(sonic_url: str) -> float:
    """The emulator's whole service time for the last request: from reading it to writing its last byte."""
    with urllib.request.urlopen(f"{sonic_url}/_emulator/stats", timeout=10) as answer:
        record = json.load(answer)["invocations"][-1]
    return (float(record["finished"]) - float(record["started"])) * 1000


def run() -> dict[str, Any]:
    options = ["--engine", "standin", "--sonic-ttfb-ms", "40", "--sonic-speed", "20"]
    with local_cloud_process(template=ROOT / "template.yaml", options=options) as env, environment(env):
        sonic_url = env["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"]
        spec = function_spec(
            load_template(ROOT / "template.yaml"),
            "SynthesizeFunction",
            parameters={"SonicEndpointName": LOCAL_ENDPOINT_NAME},
        )
        bucket = spec.environment["PROMPT_BUCKET"]
        invoke(spec, _event("Warm up the container."))

        ours, audio_ms = [], []
        for i in range(ROUNDS):
            started = time.perf_counter()
            result = invoke(spec, _event(f"{LONG_TEXT} Reference {i}."))
            wall = (time.perf_counter() - started) * 1000
            assert result["Result"] == "OK", result
            ours.append((wall, _last_generation_ms(sonic_url)))
            audio_ms.append(int(result["DurationMs"]))
        put = _put_ms(bucket, int(statistics.median(audio_ms)) * 8 + 58)
        head = _head_miss_ms(bucket)

        settings = Settings.from_env({**spec.environment, "AWS_REGION": env["AWS_DEFAULT_REGION"]})
        store = PromptStore(bucket, container.client("s3"), region=settings.aws_region)
        backend = SageMakerBackend(
            settings.sonic_endpoint_name, container.client("sagemaker-runtime", read_timeout=STALL_TIMEOUT_S, pool=32)
        )
        wanted = SynthesisSettings(
            settings.sonic_encoding, settings.sonic_sample_rate, settings.sonic_resampler, settings.sonic_max_attempts
        )
        defaults = RequestSettings(
            settings.sonic_max_text_chars, settings.sonic_default_voice, settings.sonic_default_language
        )
        synthesizers = {
            "streaming (ours)": Synthesizer(wanted, backend, store),
            "buffer-then-convert": BufferThenConvert(wanted, backend, store),
        }
        peers: dict[str, list[tuple[float, float]]] = {name: [] for name in synthesizers}
        for i in range(ROUNDS):
            for name, synth in synthesizers.items():
                request = SpeechRequest.from_parameters({"Text": f"{LONG_TEXT} {name} {i}."}, defaults)
                started = time.perf_counter()
                synth.synthesize(request, deadline=time.monotonic() + 30)
                peers[name].append(((time.perf_counter() - started) * 1000, _last_generation_ms(sonic_url)))

        hit_event = _event(f"{LONG_TEXT} Reference 0.")
        index_hits, s3_hits = [], []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            assert invoke(spec, hit_event)["CacheHit"] == "true"
            index_hits.append((time.perf_counter() - started) * 1000)
            container.prompt_store()._index.clear()
            started = time.perf_counter()
            assert invoke(spec, hit_event)["CacheHit"] == "true"
            s3_hits.append((time.perf_counter() - started) * 1000)

    def overhead(samples: list[tuple[float, float]]) -> float:
        return statistics.median(wall - gen - put for wall, gen in samples)

    return {
        "audio_seconds": statistics.median(audio_ms) / 1000,
        "s3_put_ms": round(put, 2),
        "s3_head_miss_ms": round(head, 2),
        "handler_overhead_without_head_ms": round(overhead(ours) - head, 2),
        "handler_wall_ms": round(statistics.median(w for w, _ in ours), 1),
        "emulator_generation_ms": round(statistics.median(g for _, g in ours), 1),
        "handler_overhead_ms": round(overhead(ours), 2),
        "synthesizer_overhead_ms": {name: round(overhead(s), 2) for name, s in peers.items()},
        "cache_hit_index_ms": round(statistics.median(index_hits), 2),
        "cache_hit_s3_ms": round(statistics.median(s3_hits), 2),
        "targets": {"overhead_ms": 5.0, "cache_hit_ms": 20.0},
    }


def report(f: dict[str, Any]) -> str:
    ours = f["synthesizer_overhead_ms"]["streaming (ours)"]
    peer = f["synthesizer_overhead_ms"]["buffer-then-convert"]
    ratio = peer / ours if ours > 0 else float("inf")
    target = f["targets"]["overhead_ms"]
    return "\n".join(
        [
            f"long sentence: {f['audio_seconds']:.1f} s of audio; emulator service {f['emulator_generation_ms']} ms; "
            f"S3 PutObject {f['s3_put_ms']} ms; HeadObject (miss) {f['s3_head_miss_ms']} ms",
            "overhead beyond the model and the S3 write (median):",
            f"  handler, end to end (ours)         {f['handler_overhead_ms']:8.2f} ms   target < {target} ms",
            f"    of which the cache-miss lookup   {f['s3_head_miss_ms']:8.2f} ms",
            f"    the rest                         {f['handler_overhead_without_head_ms']:8.2f} ms",
            f"  synthesizer, streaming (ours)      {ours:8.2f} ms",
            f"  synthesizer, buffer-then-convert   {peer:8.2f} ms   ours adds {ratio:.1f}x less",
            f"cache hit: from this container's index {f['cache_hit_index_ms']} ms; from S3 (HeadObject) "
            f"{f['cache_hit_s3_ms']} ms   target < {f['targets']['cache_hit_ms']} ms",
        ]
    )


if __name__ == "__main__":
    print(report(run()))

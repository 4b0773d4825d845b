"""``voicebridge demo``: the Speak path on the local cloud, end to end.

Starts the local cloud in-process, runs SynthesizeFunction through the same runner as ``voicebridge invoke`` (handler
and environment from template.yaml, boto3 over loopback HTTP to moto and the Sonic endpoint emulator), fetches the
prompt Connect would play, writes it as a WAV, and prints its latency; then asks again to show the cache hit.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from voicebridge.local.cloud import LocalCloud
from voicebridge.local.runner import environment, invoke
from voicebridge.local.speech_engine import load_engine
from voicebridge.local.template import function_spec, load_template

DEFAULT_TEXT = (
    "Thanks for calling. I can help you check a balance, pay a bill, or reach an agent. What would you like to do?"
)


def run_demo(*, out: Path, report: str | None, engine: str = "auto", text: str | None = None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    speech = load_engine(engine)
    event: dict[str, Any] = json.loads(Path("events/synthesize.json").read_text(encoding="utf-8"))
    event["Details"]["Parameters"]["Text"] = text or DEFAULT_TEXT
    print(f"local cloud: moto + Sonic endpoint emulator (speech: {speech.name}; an emulator, not Sonic)")
    with LocalCloud(engine=speech) as cloud, environment(cloud.env()):
        spec = function_spec(
            load_template("template.yaml"), "SynthesizeFunction", parameters=cloud.parameters()
        )
        runs = []
        for label in ("first request", "same request again"):
            started = time.perf_counter()
            result = invoke(spec, event)
            wall_ms = (time.perf_counter() - started) * 1000
            runs.append({"label": label, "wall_ms": round(wall_ms, 1), "result": result})
            if result.get("Result") != "OK":
                print(f"SynthesizeFunction answered {json.dumps(result)}", file=sys.stderr)
                return 1
            print(
                f"{label:>20}: {wall_ms:7.1f} ms  cache hit={result['CacheHit']:<5}  "
                f"time to first byte={result['TimeToFirstByteMs']} ms  audio={result['DurationMs']} ms"
            )
        uri = runs[0]["result"]["PromptUri"]
        parsed = urlparse(uri)
        bucket, key = (parsed.hostname or "").split(".s3.")[0], parsed.path.lstrip("/")
        wav = cloud.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
        target = out / "prompt.wav"
        target.write_bytes(wav)
        print(f"prompt Connect would play: {uri}")
        print(f"written to {target} ({len(wav)} bytes, 8 kHz mono µ-law WAV)")
    if report:
        Path(report).write_text(
            json.dumps({"speech_engine": speech.name, "runs": runs}, indent=2), encoding="utf-8"
        )
    return 0

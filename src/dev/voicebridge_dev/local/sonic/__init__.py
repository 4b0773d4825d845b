"""EMULATOR of Cartesia Sonic on a SageMaker endpoint, as a container, and on the Cartesia API — a stand-in, not the
model.

One loopback HTTP/1.1 server speaks three transports; all share the synthesis, pacing, faults and statistics,
and differ only in how a generation is framed on the wire.

- **SageMaker runtime** ``InvokeEndpointWithResponseStream`` (rest-json protocol), so an unmodified botocore
  client decodes its answers itself: ``POST /endpoints/{EndpointName}/invocations-response-stream`` answered
  with an event stream of PayloadParts carrying Sonic's JSON lines.
- **Sonic container**, SageMaker's container contract: ``POST /invocations`` answered with the same JSON lines,
  chunked, and ``GET /ping`` (readiness), for a fleet the bridge speaks to directly.
- **Cartesia API** ``POST /tts/sse``, as the official ``cartesia`` SDK's ``client.tts.generate_sse`` calls it,
  answered with server-sent events.

The wire formats are stated where they are spoken: the requests in :mod:`~.requests`, the answers and their
framing in :mod:`~.stream`, the routes, error answers and pacing in :mod:`~.server`. Audio comes from a
:class:`~voicebridge_dev.local.speech_engine.SpeechEngine` (piper when installed, else a deterministic
stand-in), synthesised sentence by sentence (:mod:`~.synthesis`).

Faults (:mod:`~.faults`) are injected from Python (``emu.inject(Fault(FaultKind.THROTTLE, count=2))``) or
over HTTP by another process, on the control plane :mod:`~.server` lists, next to per-request statistics
(:mod:`~.records`), the model package the endpoint runs (``sonic-3``, ``sonic-3.5`` or ``sonic-3.6``, which differ in
the name of 16-bit PCM, in what ``language`` must be and in ``pronunciation_map``) and the model's accepted
encodings (whether the Sonic Marketplace package accepts ``pcm_mulaw`` is undocumented, so tests can make it
refuse). Errors are :mod:`~.errors`; the emulator itself,
:class:`SonicEmulator`, is :mod:`~.emulator`.

>>> with SonicEmulator(endpoint_name="sonic", api_key="local", model="sonic-3") as emu:  # doctest: +SKIP
...     runtime = boto3.client("sagemaker-runtime", endpoint_url=emu.url, region_name="us-east-1")
...     api = cartesia.Cartesia(api_key="local", base_url=emu.url)
"""

from voicebridge_dev.local.sonic.emulator import SonicEmulator
from voicebridge_dev.local.sonic.errors import EmulatorConfigError, FaultSpecError, InvalidSonicRequest
from voicebridge_dev.local.sonic.faults import Fault, FaultKind
from voicebridge_dev.local.sonic.records import InvocationRecord, Transport
from voicebridge_dev.local.sonic.requests import (
    DEFAULT_MODEL,
    ENCODINGS,
    PACKAGE_MODELS,
    SAMPLE_RATES,
    SonicRequest,
    parse_cartesia_request,
    parse_sonic_request,
)

__all__ = [
    "DEFAULT_MODEL",
    "ENCODINGS",
    "PACKAGE_MODELS",
    "SAMPLE_RATES",
    "EmulatorConfigError",
    "Fault",
    "FaultKind",
    "FaultSpecError",
    "InvalidSonicRequest",
    "InvocationRecord",
    "SonicEmulator",
    "SonicRequest",
    "Transport",
    "parse_cartesia_request",
    "parse_sonic_request",
]

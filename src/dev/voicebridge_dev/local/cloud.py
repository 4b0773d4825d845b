"""The local cloud: every AWS and Cartesia service the product calls, on loopback, over real HTTP.

- moto's server: S3, DynamoDB, Secrets Manager, CloudWatch (and anything else boto3 asks it for).
- The project's emulators where moto has nothing: the Sonic SageMaker endpoint's response stream and the Cartesia
  API's /tts/sse (:mod:`voicebridge_dev.local.sonic`), Kinesis Video Streams GetMedia
  (:mod:`voicebridge_dev.local.kvs`), Ink's WebSockets (:mod:`voicebridge_dev.local.ink`), Lambda
  Invoke running the template's own handlers in warm worker processes (:mod:`voicebridge_dev.local.lambda_`), and,
  for the responders, Bedrock Runtime ConverseStream answering from a scripted brain
  (:mod:`voicebridge_dev.local.bedrock`) and a scripted Lex V2 bot's RecognizeText (:mod:`voicebridge_dev.local.lex`),
  and Comprehend's DetectPiiEntities from rules, for transcript redaction (:mod:`voicebridge_dev.local.comprehend`),
  and Amazon Connect's contact attributes, where the streaming agent leaves its handover note
  (:mod:`voicebridge_dev.local.connect`).

:class:`LocalCloud` starts them, creates the resources template.yaml declares under their local names
(:func:`voicebridge_dev.template.local_physical_id`), and hands out the ``AWS_ENDPOINT_URL_*`` variables that point
unmodified boto3 at them. These are emulators: their timings and audio stand in for the real services, they are not
the real services.

From another process, :func:`local_cloud_process` runs ``voicebridge local up`` and reads its exports, and
:class:`LocalCall` feeds a running local cloud's KVS emulator a contact's audio as Amazon Connect would
(``voicebridge local call``).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, Self

import boto3
import numpy as np
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from voicebridge_dev.local.bedrock import BedrockEmulator
from voicebridge_dev.local.comprehend import ComprehendEmulator
from voicebridge_dev.local.connect import ConnectEmulator
from voicebridge_dev.local.ink import InkEmulator, Recogniser
from voicebridge_dev.local.kvs import (
    AGENT_TRACK,
    CUSTOMER_TRACK,
    EMULATED_ACCOUNT_ID,
    EMULATED_INSTANCE_ID,
    KvsEmulator,
    StreamHost,
)
from voicebridge_dev.local.lambda_ import LambdaEmulator
from voicebridge_dev.local.lex import LexEmulator
from voicebridge_dev.local.service import LocalService
from voicebridge_dev.local.sonic import SonicEmulator
from voicebridge_dev.local.speech_engine import SpeechEngine
from voicebridge_dev.template import load_template, local_physical_id

log = logging.getLogger("voicebridge_dev.local")

LOCAL_API_KEY = "local-cartesia-key"
LOCAL_ENDPOINT_NAME = "sonic"
"""The Sonic endpoint's name when the template declares no ``SonicEndpointName`` default. Otherwise the local cloud
serves the template's default (this name in the repository's), so functions reach it with no parameter override."""
_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_ALREADY_THERE = {"BucketAlreadyOwnedByYou", "ResourceExistsException", "ResourceInUseException"}
_MOTO_SERVICES = ("S3", "DYNAMODB", "SECRETS_MANAGER", "CLOUDWATCH", "LOGS", "STS", "EVENTBRIDGE", "SQS", "KMS")
_ENDPOINT_NAMES = {"secretsmanager": "SECRETS_MANAGER", "events": "EVENTBRIDGE"}
"""boto3's service names whose ``AWS_ENDPOINT_URL_*`` name is not the service's name in capitals."""


class CloudBase(LocalService):
    """What every local cloud is, wherever its services run: moto and the emulators behind the ``AWS_ENDPOINT_URL_*``
    variables, the template's resources, and the Lambda emulator running the template's functions.

    :class:`LocalCloud` runs the services in this process; :class:`~voicebridge_dev.local.processes.ProcessCloud`
    runs each in a process of its own. The demo and the flow simulator use only this face.
    """

    def __init__(
        self, *, template: str | Path, region: str, port_base: int = 0, lambda_concurrency: int | None = None
    ) -> None:
        self.template_path = Path(template)
        self.lambda_concurrency = lambda_concurrency
        self.region = region
        self._port_base = port_base
        declared = load_template(self.template_path).get("Parameters", {}).get("SonicEndpointName", {})
        self.endpoint_name = str(declared.get("Default") or LOCAL_ENDPOINT_NAME)
        self.lambdas: LambdaEmulator | None = None
        self.moto_url = ""

    # -- what each kind of cloud says of its services

    @abstractmethod
    def service_env(self) -> dict[str, str]:
        """The variables naming the emulators' URLs and what they serve (the model, the bot), not moto's."""

    @property
    @abstractmethod
    def media(self) -> StreamHost:
        """The KVS emulator as Connect's media streaming feeds it (the flow simulator's ``kvs``)."""

    @abstractmethod
    def register_transcript(self, pcm: bytes, transcript: str) -> None:
        """Have the Ink emulator hear ``transcript`` in ``pcm`` (8 kHz s16le), exactly."""

    @abstractmethod
    def inject(self, service: str, fault: Any) -> None:
        """Queue ``fault`` on the emulator ``service`` (``sonic``, ``bedrock``, ``lex``, ``comprehend``, ``connect``,
        ``ink`` or ``kvs``)."""

    @abstractmethod
    def emulated_timings(self) -> dict[str, float]:
        """The emulators' timings a report states: Ink's end of turn, Bedrock's and Sonic's pacing."""

    def cpu_seconds(self) -> dict[str, float]:
        """The CPU seconds each process of the cloud has used so far, by what it runs (none when it cannot say)."""
        return {}

    def call_record(self, contact_id: str, *, wait_s: float = 20.0) -> bytes | None:
        """The call record the stack stored for ``contact_id`` (``records/…/<contact-id>.json``), as stored, once it
        is there; None when none came within ``wait_s``."""
        from voicebridge_dev.template import local_physical_id

        s3, bucket = self.client("s3"), local_physical_id("CallRecordBucket")
        deadline = time.monotonic() + wait_s
        while True:
            listed = s3.list_objects_v2(Bucket=bucket, Prefix="records/")
            key = next((o["Key"] for o in listed.get("Contents", []) if o["Key"].endswith(f"/{contact_id}.json")), None)
            if key is not None:
                record: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
                return record
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.2)

    def contact_attributes(self, contact_id: str) -> dict[str, str]:
        """The user-defined attributes set on ``contact_id`` so far, read as a client reads them: Connect's
        ``GetContactAttributes`` on the Connect emulator."""
        answer = self._connect().get_contact_attributes(InstanceId=EMULATED_INSTANCE_ID, InitialContactId=contact_id)
        return dict(answer["Attributes"])

    def set_contact_attributes(self, contact_id: str, attributes: Mapping[str, str]) -> None:
        """Set attributes on ``contact_id`` as a flow's *Set contact attributes* block before the agent would:
        Connect's ``UpdateContactAttributes`` on the Connect emulator."""
        self._connect().update_contact_attributes(
            InstanceId=EMULATED_INSTANCE_ID, InitialContactId=contact_id, Attributes=dict(attributes)
        )

    def _connect(self) -> Any:
        return boto3.client(
            "connect",
            endpoint_url=self.service_env()["AWS_ENDPOINT_URL_CONNECT"],
            region_name=self.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    @abstractmethod
    def table_requests(self) -> dict[str, int]:
        """The DynamoDB requests moto has served so far, by operation (:func:`table_request_name`)."""

    # -- shared

    def _start_lambdas(self) -> None:
        self.create_resources()
        self.lambdas = LambdaEmulator(
            self.template_path,
            port=self._port_base + 4 if self._port_base else 0,
            region=self.region,
            parameters=self.parameters(),
            env=self.env(),
            concurrency=self.lambda_concurrency,
        )
        self.lambdas.start()

    def _stop_lambdas(self) -> None:
        if self.lambdas is not None:
            self.lambdas.stop()
            self.lambdas = None

    def moto_endpoint(self, service: str) -> str:
        """The URL of the moto server that serves ``service`` (its ``AWS_ENDPOINT_URL_<SERVICE>`` name): one for all."""
        return self.moto_url

    def env(self) -> dict[str, str]:
        """Variables that point boto3, the ``cartesia`` SDK and the product at this local cloud."""
        variables = {f"AWS_ENDPOINT_URL_{name}": self.moto_endpoint(name) for name in _MOTO_SERVICES}
        variables.update(self.service_env())
        if self.lambdas is not None:
            variables["AWS_ENDPOINT_URL_LAMBDA"] = self.lambdas.url
        variables["CARTESIA_API_KEY"] = LOCAL_API_KEY
        variables["AWS_DEFAULT_REGION"] = self.region
        variables.update(_CREDENTIALS)
        return variables

    def parameters(self) -> dict[str, str]:
        """Template parameter values for a local run."""
        return {"SonicEndpointName": self.endpoint_name}

    def client(self, service: str) -> Any:
        # The service is named at run time, and boto3's typed overloads know services only by literal name.
        make_client: Callable[..., Any] = boto3.client
        return make_client(
            service,
            endpoint_url=self.moto_endpoint(_ENDPOINT_NAMES.get(service, service.upper())),
            region_name=self.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"max_attempts": 1}),
        )

    def create_resources(self) -> None:
        """Create the buckets, tables and secrets the template declares, under their local names (idempotent)."""
        resources = load_template(self.template_path)["Resources"]
        for logical_id, resource in resources.items():
            kind, props = resource.get("Type"), resource.get("Properties", {})
            name = local_physical_id(logical_id)
            try:
                if kind == "AWS::S3::Bucket":
                    self.client("s3").create_bucket(Bucket=name)
                elif kind == "AWS::SecretsManager::Secret":
                    secret = json.dumps({"api_key": LOCAL_API_KEY})
                    self.client("secretsmanager").create_secret(Name=name, SecretString=secret)
                elif kind == "AWS::DynamoDB::Table":
                    self.client("dynamodb").create_table(
                        TableName=name,
                        KeySchema=props["KeySchema"],
                        AttributeDefinitions=props["AttributeDefinitions"],
                        BillingMode="PAY_PER_REQUEST",
                    )
            except ClientError as exc:
                if exc.response["Error"]["Code"] not in _ALREADY_THERE:
                    raise


def emulator_env(
    *,
    sonic: str,
    kvs: str,
    ink: str,
    bedrock: str,
    lex: str,
    comprehend: str,
    connect: str,
    model_id: str,
    bot: tuple[str, str, str],
) -> dict[str, str]:
    """The variables naming the emulators' URLs, the model the Bedrock emulator serves and the Lex emulator's bot
    (its ID, alias ID and locale), so a client names what they serve."""
    return {
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": sonic,
        "AWS_ENDPOINT_URL_KINESIS_VIDEO": kvs,
        "SONIC_BASE_URL": sonic,
        "CARTESIA_BASE_URL": ink,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock,
        "AWS_ENDPOINT_URL_LEX_RUNTIME_V2": lex,
        "AWS_ENDPOINT_URL_COMPREHEND": comprehend,
        "AWS_ENDPOINT_URL_CONNECT": connect,
        "BEDROCK_MODEL_ID": model_id,
        "LEX_BOT_ID": bot[0],
        "LEX_BOT_ALIAS_ID": bot[1],
        "LEX_LOCALE_ID": bot[2],
    }


class LocalCloud(CloudBase):
    """moto's server plus the project's emulators in this process, with the template's resources created.

    ``lambda_concurrency`` is the Lambda emulator's containers per function where the template reserves none (by
    default its :data:`~voicebridge_dev.local.lambda_.emulator.DEFAULT_CONCURRENCY`).
    """

    def __init__(
        self,
        *,
        template: str | Path = "template.yaml",
        region: str = "us-east-1",
        port_base: int = 0,
        engine: SpeechEngine | None = None,
        sonic_time_to_first_byte_ms: float = 40.0,
        sonic_realtime_factor: float = 20.0,
        media_pace: float = 1.0,
        recogniser: Recogniser | None = None,
        bedrock_time_to_first_token_ms: float = 300.0,
        bedrock_tokens_per_second: float = 60.0,
        lambda_concurrency: int | None = None,
    ) -> None:
        super().__init__(template=template, region=region, port_base=port_base, lambda_concurrency=lambda_concurrency)
        self._moto: Any = None
        self.sonic = SonicEmulator(
            port=port_base + 1 if port_base else 0,
            endpoint_name=self.endpoint_name,
            time_to_first_byte_ms=sonic_time_to_first_byte_ms,
            realtime_factor=sonic_realtime_factor,
            engine=engine,
            api_key=LOCAL_API_KEY,
        )
        self.kvs = KvsEmulator(port=port_base + 2 if port_base else 0, region=region, pace=media_pace)
        self.ink = InkEmulator(port=port_base + 3 if port_base else 0, api_key=LOCAL_API_KEY, recogniser=recogniser)
        # Port base + 4 is the Lambda emulator's, created in start() once the others' URLs are known.
        self.bedrock = BedrockEmulator(
            port=port_base + 5 if port_base else 0,
            time_to_first_token_ms=bedrock_time_to_first_token_ms,
            tokens_per_second=bedrock_tokens_per_second,
        )
        self.lex = LexEmulator(port=port_base + 6 if port_base else 0)
        self.comprehend = ComprehendEmulator(port=port_base + 7 if port_base else 0)
        self.connect = ConnectEmulator(port=port_base + 8 if port_base else 0)

    def table_requests(self) -> dict[str, int]:
        return {} if self._moto is None else dict(self._moto.requests())

    def _emulators(self) -> tuple[LocalService, ...]:
        """The emulators that need no other's URL, in the order they start."""
        return (self.sonic, self.kvs, self.ink, self.bedrock, self.lex, self.comprehend, self.connect)

    def start(self) -> Self:
        self._moto = moto_server(self._port_base)
        self._moto.start()
        host, port = self._moto.get_host_and_port()
        self.moto_url = f"http://{host}:{port}"
        for emulator in self._emulators():
            emulator.start()
        self._start_lambdas()
        assert self.lambdas is not None
        log.info(
            "local cloud up: moto %s, emulators: Sonic %s, KVS %s, Ink %s, Lambda %s, Bedrock %s, Lex %s, "
            "Comprehend %s, Connect %s",
            self.moto_url,
            self.sonic.url,
            self.kvs.url,
            self.ink.url,
            self.lambdas.url,
            self.bedrock.url,
            self.lex.url,
            self.comprehend.url,
            self.connect.url,
        )
        return self

    def stop(self) -> None:
        self._stop_lambdas()
        for emulator in reversed(self._emulators()):
            emulator.stop()
        if self._moto is not None:
            self._moto.stop()
            self._moto = None

    def service_env(self) -> dict[str, str]:
        return emulator_env(
            sonic=self.sonic.url,
            kvs=self.kvs.url,
            ink=self.ink.url,
            bedrock=self.bedrock.url,
            lex=self.lex.url,
            comprehend=self.comprehend.url,
            connect=self.connect.url,
            model_id=self.bedrock.model_id,
            bot=(self.lex.bot_id, self.lex.bot_alias_id, self.lex.locale_id),
        )

    @property
    def media(self) -> KvsEmulator:
        return self.kvs

    def register_transcript(self, pcm: bytes, transcript: str) -> None:
        self.ink.register(pcm, transcript)

    def inject(self, service: str, fault: Any) -> None:
        emulators: dict[str, Any] = {
            "sonic": self.sonic,
            "kvs": self.kvs,
            "ink": self.ink,
            "bedrock": self.bedrock,
            "lex": self.lex,
            "comprehend": self.comprehend,
            "connect": self.connect,
        }
        emulators[service].inject(fault)

    def emulated_timings(self) -> dict[str, float]:
        return {
            "ink_end_of_turn_delay_ms": self.ink.turn_settings.end_delay_ms,
            "bedrock_time_to_first_token_ms": self.bedrock.time_to_first_token_ms,
            "bedrock_tokens_per_second": self.bedrock.tokens_per_second,
            "sonic_time_to_first_byte_ms": self.sonic.time_to_first_byte_ms,
            "sonic_realtime_factor": self.sonic.realtime_factor,
        }


@contextmanager
def local_cloud_process(
    *,
    template: str | Path = "template.yaml",
    options: Sequence[str] = (),
    start_timeout_s: float = 60.0,
    stop_timeout_s: float = 30.0,
    stderr: IO[bytes] | int = subprocess.DEVNULL,
) -> Iterator[dict[str, str]]:
    """``voicebridge local up`` in a child process on ephemeral ports; yields its exports, stops it on exit.

    Measurements use this: the services then run on their own interpreter, as the real ones run on other machines,
    instead of competing with the code under test for this process's GIL. ``stderr`` takes the child's logs.
    """
    command = [sys.executable, "-m", "voicebridge_dev.cli", "local", "up", "--port-base", "0"]
    # A process group of its own: a local up that must be killed takes the agent server it started with it, where
    # killing local up alone would leave that server running with no parent.
    child = subprocess.Popen(
        [*command, "--template", str(template), *options],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        start_new_session=True,
    )
    try:
        yield _exports_of(child, start_timeout_s)
    finally:
        child.terminate()
        try:
            child.wait(timeout=stop_timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("voicebridge local up did not stop within %g s of SIGTERM; killed", stop_timeout_s)
            with suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()


class ChildLines:
    """A child process's stdout, line by line, each read with a deadline.

    A pipe cannot be waited on with a timeout, so a thread reads it into a queue (and keeps draining it after).
    """

    def __init__(self, stream: IO[str], name: str) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), name=f"{name}-output", daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def next(self, timeout_s: float) -> str | None:
        """The next line (without its end), None once the child closed its output; TimeoutError after ``timeout_s``."""
        try:
            line = self._lines.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            raise TimeoutError from None
        return None if line is None else line.rstrip("\n")


def _exports_of(child: subprocess.Popen[str], timeout_s: float) -> dict[str, str]:
    """The exports ``local up`` prints, read within ``timeout_s`` (its output is drained after)."""
    assert child.stdout is not None
    lines = ChildLines(child.stdout, "local-up")
    deadline = time.monotonic() + timeout_s
    env: dict[str, str] = {}
    while True:
        try:
            line = lines.next(deadline - time.monotonic())
        except TimeoutError:
            raise RuntimeError(f"voicebridge local up printed no exports within {timeout_s:g} s") from None
        if line is None or line.startswith("# Ctrl-C"):
            break
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").strip().partition("=")
            env[name] = value
    if child.poll() is not None or not env:
        raise RuntimeError("voicebridge local up did not start")
    return env


# -- a call placed from another process --

_SAMPLE_RATE = 8000
_BYTES_PER_SECOND = 2 * _SAMPLE_RATE
_CHUNK_BYTES = _BYTES_PER_SECOND * 256 // 1000
# Audio is queued this far ahead of the emulator's clock, so a late wake-up here never leaves a tick without audio
# (the emulator would fill it with silence, as Connect does, and split the caller's words).
_LEAD_S = 0.5
_CONTROL_TIMEOUT_S = 10.0


class LocalCallError(Exception):
    """A local call cannot be placed or go on: no local cloud to reach, audio it cannot play, or a refusal."""


def call_audio(path: str | Path) -> bytes:
    """A WAV file (16-bit PCM or µ-law, any rate and channels) as Connect streams audio: s16le, 8 kHz, mono.

    Channels are averaged and other rates resampled; any other file is refused with the reason.
    """
    from voicebridge.audio.resample import make_resampler
    from voicebridge.audio.wav import read_wav
    from voicebridge.errors import AudioFormatError

    try:
        samples, rate = read_wav(Path(path).read_bytes())
        if samples.ndim == 2:
            samples = np.rint(samples.mean(axis=1)).astype(np.int16)
        resampler = make_resampler(rate, _SAMPLE_RATE)
        samples = np.concatenate([resampler.process(samples), resampler.flush()])
    except OSError as exc:
        raise LocalCallError(f"{path}: {exc.strerror or exc}") from None
    except AudioFormatError as exc:
        raise LocalCallError(f"{path}: {exc} (a 16-bit PCM or µ-law WAV file is needed)") from None
    if not samples.size:
        raise LocalCallError(f"{path}: the file holds no audio")
    return samples.astype("<i2").tobytes()


def connect_stream_name(contact_id: str) -> str:
    """The name of the stream Connect's live media streaming would carry the contact on (instance alias ``local``)."""
    return f"connect-local-contact-{contact_id}"


def start_listening_event(
    contact_id: str, stream_arn: str, start_fragment: str, start_timestamp: str, *, tracks: str = "customer"
) -> dict[str, Any]:
    """The Connect event StartListeningFunction receives once media streaming has started (events/start-listening.json's
    shape), for a contact of the KVS emulator's instance in the stream's region."""
    region = stream_arn.split(":")[3]
    return {
        "Name": "ContactFlowEvent",
        "Details": {
            "ContactData": {
                "Attributes": {},
                "Channel": "VOICE",
                "ContactId": contact_id,
                "InitialContactId": contact_id,
                "InitiationMethod": "INBOUND",
                "LanguageCode": "en-US",
                "InstanceARN": f"arn:aws:connect:{region}:{EMULATED_ACCOUNT_ID}:instance/{EMULATED_INSTANCE_ID}",
                "CustomerEndpoint": {"Address": "+15555550100", "Type": "TELEPHONE_NUMBER"},
                "SystemEndpoint": {"Address": "+15555550199", "Type": "TELEPHONE_NUMBER"},
                "Queue": None,
                "MediaStreams": {
                    "Customer": {
                        "Audio": {
                            "StreamARN": stream_arn,
                            "StartFragmentNumber": start_fragment,
                            "StartTimestamp": start_timestamp,
                        }
                    }
                },
            },
            "Parameters": {"Tracks": tracks},
        },
    }


class LocalCall:
    """One contact fed to a running local cloud's KVS emulator as Amazon Connect feeds its stream, in real time.

    It finds the emulator through ``AWS_ENDPOINT_URL_KINESIS_VIDEO`` (one of ``voicebridge local up``'s exports),
    creates the stream with kinesisvideo's CreateStream (or reuses it), and drives the contact through the
    emulator's ``/_emulator/contacts`` routes::

        call = LocalCall(call_audio("caller.wav"), contact_id="c-1")
        event = call.begin()              # the contact is live; event is what StartListeningFunction receives
        call.play(on_started=announce)    # the audio at real time; announce() once the first of it is queued
        call.end()                        # the queued audio plays out, then the contact's last fragment
    """

    def __init__(self, caller: bytes, agent: bytes = b"", *, contact_id: str, stream_name: str | None = None) -> None:
        url = os.environ.get("AWS_ENDPOINT_URL_KINESIS_VIDEO", "")
        if not url:
            raise LocalCallError(
                "AWS_ENDPOINT_URL_KINESIS_VIDEO is not set: run `voicebridge local up` and paste its exports here"
            )
        self.url = url.rstrip("/")
        self.caller, self.agent = caller, agent
        self.contact_id = contact_id
        self.stream_name = stream_name or connect_stream_name(contact_id)
        self.stream_arn = ""
        self._region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        self._live = False

    @property
    def duration_s(self) -> float:
        return max(len(self.caller), len(self.agent)) / _BYTES_PER_SECOND

    def begin(self) -> dict[str, Any]:
        """Create (or reuse) the stream and begin the contact; returns the StartListeningFunction event."""
        self.stream_arn = self._stream()
        started = self._control("POST", "contacts", {"StreamARN": self.stream_arn, "ContactId": self.contact_id})
        self._live = True
        return start_listening_event(
            self.contact_id,
            self.stream_arn,
            str(started["StartFragmentNumber"]),
            str(started["StartTimestamp"]),
            tracks="both" if self.agent else "customer",
        )

    def play(self, on_started: Callable[[], None]) -> None:
        """Queue the audio chunk by chunk as its time comes, a little ahead; ``on_started`` after the first chunk."""
        total = max(len(self.caller), len(self.agent))
        started, sent = time.monotonic(), 0
        while sent < total:
            due = min(total, (time.monotonic() - started + _LEAD_S) * _BYTES_PER_SECOND)
            while sent < due:
                end = min(sent + _CHUNK_BYTES, total)
                self._control(
                    "POST",
                    "contacts/audio",
                    {
                        "StreamARN": self.stream_arn,
                        CUSTOMER_TRACK: base64.b64encode(self.caller[sent:end]).decode(),
                        AGENT_TRACK: base64.b64encode(self.agent[sent:end]).decode(),
                    },
                )
                if not sent:
                    on_started()
                sent = end
            time.sleep(max(0.0, started + sent / _BYTES_PER_SECOND - _LEAD_S - time.monotonic()))

    def end(self, *, drain: bool = True, timeout_s: float = _LEAD_S + 10.0) -> None:
        """End the contact: with ``drain`` its queued audio plays out first; waits (up to ``timeout_s``) for its
        last fragment. Does nothing once the contact has ended."""
        if not self._live:
            return
        self._control("POST", "contacts/end", {"StreamARN": self.stream_arn, "Drain": drain})
        self._live = False
        deadline = time.monotonic() + timeout_s
        while self._live_contact() == self.contact_id:
            if time.monotonic() >= deadline:
                raise LocalCallError(f"the contact was still live on {self.stream_name} after {timeout_s:g} s")
            time.sleep(0.05)

    def _stream(self) -> str:
        """The stream's ARN, creating it when Connect would not have yet."""
        # Unsigned: the emulator checks no signature, so a shell with only the endpoint export can place a call.
        config = Config(
            signature_version=UNSIGNED,
            retries={"max_attempts": 1},
            connect_timeout=5,
            read_timeout=_CONTROL_TIMEOUT_S,
        )
        client = boto3.client("kinesisvideo", endpoint_url=self.url, region_name=self._region, config=config)
        try:
            try:
                return str(client.create_stream(StreamName=self.stream_name)["StreamARN"])
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ResourceInUseException":
                    raise
            return str(client.describe_stream(StreamName=self.stream_name)["StreamInfo"]["StreamARN"])
        except EndpointConnectionError:
            raise LocalCallError(self._unreachable()) from None
        except (ClientError, BotoCoreError) as exc:
            raise LocalCallError(f"stream {self.stream_name}: {exc}") from None

    def _live_contact(self) -> str | None:
        streams = self._control("GET", "streams", None)["Streams"]
        return next((s["LiveContactId"] for s in streams if s["StreamARN"] == self.stream_arn), None)

    def _control(self, method: str, route: str, body: Mapping[str, Any] | None) -> Any:
        """One request to the KVS emulator's control plane; its refusal becomes a LocalCallError."""
        request = urllib.request.Request(
            f"{self.url}/_emulator/{route}",
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=_CONTROL_TIMEOUT_S) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as exc:
            raise LocalCallError(f"the KVS emulator refused {route}: {_refusal(exc)}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, ConnectionRefusedError):
                raise LocalCallError(self._unreachable()) from None
            raise LocalCallError(f"the KVS emulator at {self.url} cannot be reached: {exc.reason}") from None
        except (OSError, ValueError) as exc:
            raise LocalCallError(f"the KVS emulator gave no answer to {route}: {exc or type(exc).__name__}") from None

    def _unreachable(self) -> str:
        return f"no local cloud at {self.url}: is `voicebridge local up` running, and are its exports pasted here?"


def _refusal(error: urllib.error.HTTPError) -> str:
    """The reason the KVS emulator gives in a refusal's ``{"Message"}``, else the HTTP status."""
    try:
        message = json.loads(error.read()).get("Message")
    except (OSError, ValueError, AttributeError):
        message = None
    return str(message or f"HTTP {error.code} {error.reason}")


def moto_server(port: int) -> Any:
    """moto's threaded server, its S3 object requests and its DynamoDB requests each taken one at a time, and its
    DynamoDB requests counted.

    moto's S3 backend is not safe across threads: two PutObject calls for one key at once (ten calls greeting their
    callers with the same prompt) close the first key's buffer while its response still reads it, and moto answers
    500 (``ValueError: I/O operation on closed file`` in ``FakeKey.etag``). S3 itself takes concurrent writes to a key,
    the last one winning. Requests on a path below the root (S3's, path-style) are served one at a time, each answer
    whole before the next.

    moto's DynamoDB is not atomic either: an ``UpdateItem`` that creates an item stores its key alone, then sets its
    attributes, and a conditional write on the same item in between sees an item with nothing but its key (a reply's
    commit racing the mark that says it is expected was refused, and the turn went unanswered). DynamoDB applies each
    write to an item atomically, on its latest version (docs/protocols.md, "DynamoDB: conditional writes"), so
    DynamoDB's requests are served one at a time too. Every other service moto serves here is a POST to ``/`` and is
    left concurrent.

    The server's ``requests`` counts each DynamoDB request by operation and, for ``GetItem``, the kind of item read
    (:func:`table_request_name`): what a load run says of the table's traffic, counted rather than timed.
    """
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    one_at_a_time = threading.Lock()
    one_table_request_at_a_time = threading.Lock()
    counted = threading.Lock()
    requests: Counter[str] = Counter()

    class _Server(ThreadedMotoServer):
        def requests(self) -> dict[str, int]:
            """The DynamoDB requests served so far, by :func:`table_request_name`."""
            with counted:
                return dict(requests)

        def _server_entry(self) -> None:
            app = DomainDispatcherApplication(create_backend_app)

            def serialised(environ: dict[str, Any], start_response: Any) -> Any:
                target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
                if target.startswith("DynamoDB_"):
                    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
                    environ["wsgi.input"] = io.BytesIO(body)
                    with counted:
                        requests[table_request_name(target.partition(".")[2], body)] += 1
                    with one_table_request_at_a_time:
                        return [b"".join(app(environ, start_response))]
                if environ.get("PATH_INFO", "/") in ("", "/"):
                    return app(environ, start_response)
                with one_at_a_time:
                    return [b"".join(app(environ, start_response))]

            self._server = make_server(self._ip_address, self._port, serialised, True)
            self._server_ready_event.set()
            self._server.serve_forever()

    return _Server(ip_address="127.0.0.1", port=port, verbose=False)


def table_request_name(operation: str, body: bytes) -> str:
    """A DynamoDB request's name in a count: its operation, and for ``GetItem`` the kind of item it reads, the turn
    table's sort key up to its first ``#`` (``GetItem reply`` is a reply's status, ``GetItem reply#`` a segment,
    ``GetItem checkpoint`` a contact's checkpoint)."""
    if operation != "GetItem":
        return operation
    try:
        key = str(json.loads(body)["Key"]["TurnKey"]["S"])
    except (ValueError, KeyError, TypeError):
        return operation
    kind, hashed, _ = key.partition("#")
    return f"{operation} {kind}{hashed}"

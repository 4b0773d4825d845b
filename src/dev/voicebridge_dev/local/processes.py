"""The local cloud with every service in a process of its own: moto (S3 and DynamoDB on servers of their own, a
third for the rest), and the Sonic, KVS, Ink, Bedrock, Lex, Comprehend and Connect emulators.

In one process the services share one interpreter lock with each other and with whatever drives them (the
demo's calls), so a run of many calls measures their contention, not the product's. :class:`ProcessCloud` starts
each in ``python -m voicebridge_dev.local.processes <service> <options>``, as the real services run on machines
of their own; the Lambda emulator stays with the caller (the functions it runs are in worker processes already).
Each child's CPU can be read while it runs (:meth:`ProcessCloud.cpu_seconds`), so a load run can say where the
machine's time went.

A child speaks on its pipes, one line at a time: it prints ``ready <url> <facts>`` once it serves (``facts``: a JSON
object of what it was started with that a client names, e.g. the Bedrock emulator's model ID), answers ``cpu``
with ``cpu <seconds>`` (the CPU its process has used) and a moto server ``requests`` with ``requests <counts>`` (the
DynamoDB requests it has served, a JSON object), and stops when its stdin ends.

The parent reaches each through its control plane (``/_emulator/...``) over HTTP: :class:`RemoteEmulator` injects
faults and registers Ink's transcripts, and :class:`RemoteKvs` is the face of the KVS emulator the flow simulator
streams a contact's media to (:class:`~voicebridge_dev.simulator.media.MediaPlane`), as Connect's media streaming
would from its own machines.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self
from urllib.parse import urlsplit

from voicebridge_dev.local.cloud import LOCAL_API_KEY, ChildLines, CloudBase, emulator_env, moto_server
from voicebridge_dev.local.kvs import AGENT_TRACK, CUSTOMER_TRACK, EMULATED_INSTANCE_ID, KvsEmulatorError
from voicebridge_dev.local.kvs.matroska import BLOCK_BYTES
from voicebridge_dev.local.kvs.streams import ContactStart
from voicebridge_dev.local.service import CONTROL_PREFIX, LocalService

__all__ = [
    "SERVICES",
    "ControlClient",
    "ProcessCloud",
    "RemoteEmulator",
    "RemoteKvs",
    "RemoteServiceError",
    "RemoteStream",
    "ServiceProcess",
]

log = logging.getLogger(__name__)

SERVICES = ("s3", "dynamodb", "moto", "sonic", "kvs", "ink", "bedrock", "lex", "comprehend", "connect")
"""The services a child can run, in the order :class:`ProcessCloud` starts them: S3 and DynamoDB each on a moto
server of their own, ``moto`` for the rest moto serves (Secrets Manager, CloudWatch, Logs, STS), then the
emulators."""
_MOTO_PROCESSES = {"S3": "s3", "DYNAMODB": "dynamodb"}
_EMULATORS = ("sonic", "kvs", "ink", "bedrock", "lex", "comprehend", "connect")
"""The services with a moto server of their own, by ``AWS_ENDPOINT_URL_*`` name."""
_CONTROL_TIMEOUT_S = 10.0
_STOP_TIMEOUT_S = 15.0
_IDLE_POLL_S = 0.05


class RemoteServiceError(Exception):
    """A service's child process did not start, stopped answering, or refused a control request."""


# -- the child's side --


@dataclass
class _Hosted:
    """A service built in the child: what to start and stop, its URL once started, and its facts."""

    service: Any
    url: Callable[[], str]
    facts: Callable[[], dict[str, Any]]


def _build(name: str, options: Mapping[str, Any]) -> _Hosted:
    """The service ``name`` from its JSON options (each emulator's own keyword arguments, engines by name)."""
    options = dict(options)
    if name in ("s3", "dynamodb", "moto"):
        server = moto_server(0)

        def moto_url() -> str:
            host, port = server.get_host_and_port()
            return f"http://{host}:{port}"

        return _Hosted(server, moto_url, dict)
    if name == "sonic":
        from voicebridge_dev.local.sonic import SonicEmulator
        from voicebridge_dev.local.speech_engine import load_engine

        sonic = SonicEmulator(engine=load_engine(options.pop("engine", "auto")), **options)
        return _Hosted(
            sonic,
            lambda: sonic.url,
            lambda: {"time_to_first_byte_ms": sonic.time_to_first_byte_ms, "realtime_factor": sonic.realtime_factor},
        )
    if name == "kvs":
        from voicebridge_dev.local.kvs import KvsEmulator

        kvs = KvsEmulator(**options)
        return _Hosted(kvs, lambda: kvs.url, dict)
    if name == "ink":
        from voicebridge_dev.local.ink import InkEmulator, load_recogniser

        recognition = options.pop("recognition", "registered")
        recogniser = None if recognition == "registered" else load_recogniser(recognition)
        ink = InkEmulator(recogniser=recogniser, **options)
        return _Hosted(ink, lambda: ink.url, lambda: {"end_delay_ms": ink.turn_settings.end_delay_ms})
    if name == "bedrock":
        from voicebridge_dev.local.bedrock import BedrockEmulator

        bedrock = BedrockEmulator(**options)
        return _Hosted(
            bedrock,
            lambda: bedrock.url,
            lambda: {
                "model_id": bedrock.model_id,
                "time_to_first_token_ms": bedrock.time_to_first_token_ms,
                "tokens_per_second": bedrock.tokens_per_second,
            },
        )
    if name == "lex":
        from voicebridge_dev.local.lex import LexEmulator

        lex = LexEmulator(**options)
        return _Hosted(
            lex,
            lambda: lex.url,
            lambda: {"bot_id": lex.bot_id, "bot_alias_id": lex.bot_alias_id, "locale_id": lex.locale_id},
        )
    if name == "comprehend":
        from voicebridge_dev.local.comprehend import ComprehendEmulator

        comprehend = ComprehendEmulator(**options)
        return _Hosted(
            comprehend,
            lambda: comprehend.url,
            lambda: {"requests_per_second": comprehend.quota.requests_per_second},
        )
    if name == "connect":
        from voicebridge_dev.local.connect import ConnectEmulator

        connect = ConnectEmulator(**options)
        return _Hosted(connect, lambda: connect.url, lambda: {"instance_id": connect.instance_id})
    raise ValueError(f"unknown service {name!r}; choose one of {', '.join(SERVICES)}")


def main(argv: list[str] | None = None) -> int:
    """A child: ``<service> <options as JSON>``; serves until its stdin ends."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m voicebridge_dev.local.processes <service> <options as JSON>", file=sys.stderr)
        return 2
    try:
        options = json.loads(args[1])
        level = options.pop("log_level", "WARNING") if isinstance(options, dict) else "WARNING"
        logging.basicConfig(level=level, stream=sys.stderr, format=f"{args[0]} %(levelname)s %(name)s: %(message)s")
        # werkzeug (moto's server) logs every request at INFO unless its own logger says otherwise.
        logging.getLogger("werkzeug").setLevel(level)
        hosted = _build(args[0], options)
    except (ValueError, TypeError) as exc:
        print(f"voicebridge_dev.local.processes: {args[0]}: {exc}", file=sys.stderr)
        return 2
    hosted.service.start()
    try:
        print(f"ready {hosted.url()} {json.dumps(hosted.facts())}", flush=True)
        for line in sys.stdin:
            if line.strip() == "cpu":
                print(f"cpu {time.process_time():.6f}", flush=True)
            elif line.strip() == "requests":
                counts = hosted.service.requests() if hasattr(hosted.service, "requests") else {}
                print(f"requests {json.dumps(counts)}", flush=True)
    finally:
        hosted.service.stop()
    return 0


# -- the parent's side --


class ServiceProcess(LocalService):
    """One service of the local cloud in a child process: started, asked for its CPU, stopped."""

    def __init__(
        self,
        service: str,
        options: Mapping[str, Any] | None = None,
        *,
        stderr: IO[bytes] | int | None = None,
        start_timeout_s: float = 60.0,
    ) -> None:
        if service not in SERVICES:
            raise ValueError(f"unknown service {service!r}; choose one of {', '.join(SERVICES)}")
        self.service = service
        self.options = dict(options or {})
        self.url = ""
        self.facts: dict[str, Any] = {}
        self._stderr = stderr
        self._start_timeout_s = start_timeout_s
        self._child: subprocess.Popen[str] | None = None
        self._lines: ChildLines | None = None
        self._ask = threading.Lock()

    @property
    def pid(self) -> int | None:
        return None if self._child is None else self._child.pid

    def start(self) -> Self:
        self.launch()
        self.wait_ready()
        return self

    def launch(self) -> None:
        """Start the child; :meth:`wait_ready` waits until it serves."""
        command = [sys.executable, "-m", "voicebridge_dev.local.processes", self.service, json.dumps(self.options)]
        self._child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1
        )
        assert self._child.stdout is not None
        self._lines = ChildLines(self._child.stdout, f"{self.service}-process")

    def wait_ready(self) -> None:
        """Wait for the child's ``ready`` line: its URL and facts; RemoteServiceError if it does not come."""
        if self._child is None or self._lines is None:
            raise RemoteServiceError(f"the {self.service} process was not launched")
        try:
            line = self._lines.next(self._start_timeout_s)
        except TimeoutError:
            self.stop()
            raise RemoteServiceError(
                f"the {self.service} process did not start within {self._start_timeout_s:g} s"
            ) from None
        if line is None or not line.startswith("ready "):
            self.stop()
            raise RemoteServiceError(f"the {self.service} process did not start (it said {line!r})")
        _, url, facts = line.split(" ", 2)
        self.url, self.facts = url, json.loads(facts)
        log.info("%s in process %s at %s", self.service, self._child.pid, self.url)

    def cpu_seconds(self) -> float:
        """The CPU seconds the child has used so far (user and system, all its threads)."""
        return float(self._ask_child("cpu", "its CPU"))

    def requests(self) -> dict[str, int]:
        """The DynamoDB requests a moto child has served so far, by operation (none for any other child)."""
        return {
            str(name): int(count) for name, count in json.loads(self._ask_child("requests", "its requests")).items()
        }

    def _ask_child(self, question: str, what: str) -> str:
        """The child's answer to ``question`` (the rest of its line after the question's word)."""
        if self._child is None or self._child.stdin is None or self._lines is None:
            raise RemoteServiceError(f"the {self.service} process is not running")
        with self._ask:
            try:
                self._child.stdin.write(f"{question}\n")
                self._child.stdin.flush()
                line = self._lines.next(_CONTROL_TIMEOUT_S)
            except (OSError, TimeoutError):
                raise RemoteServiceError(f"the {self.service} process did not say {what}") from None
        if line is None or not line.startswith(f"{question} "):
            raise RemoteServiceError(f"the {self.service} process did not say {what} (it said {line!r})")
        return line.removeprefix(f"{question} ")

    def stop(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        try:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(timeout=_STOP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()


class ControlClient:
    """Requests to a service's control plane (``/_emulator/<route>``), JSON both ways, on kept-alive connections
    (one per thread). A refusal raises ``refused(message)``; a connection that fails raises RemoteServiceError."""

    def __init__(self, url: str, *, refused: Callable[[str], Exception] = RemoteServiceError) -> None:
        parts = urlsplit(url)
        self.url = url
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._refused = refused
        self._local = threading.local()

    def request(self, method: str, route: str, body: Any = None) -> Any:
        """``method /_emulator/<route>`` with ``body``; the decoded answer."""
        return self.call(method, CONTROL_PREFIX + route, body)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """``method path`` with ``body`` as JSON; the decoded answer."""
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        while True:
            connection, fresh = self._connection()
            try:
                connection.request(method, path, body=payload, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                # A kept-alive connection the server had closed before reading this request: once more, on a new
                # one (the next is new). A failure on a new connection may have reached the service.
                self._drop()
                if fresh:
                    raise RemoteServiceError(f"{self.url}: {path}: {exc or type(exc).__name__}") from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise RemoteServiceError(f"{self.url}: {path}: {exc or type(exc).__name__}") from None
        try:
            decoded = json.loads(data or b"null")
        except ValueError:
            decoded = None
        if answer.status >= 400:
            message = decoded.get("Message") or decoded.get("message") if isinstance(decoded, dict) else None
            raise self._refused(str(message or f"HTTP {answer.status} {answer.reason}"))
        return decoded

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None:
            return connection, False
        connection = http.client.HTTPConnection(self._host, self._port, timeout=_CONTROL_TIMEOUT_S)
        self._local.connection = connection
        return connection, True

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            connection.close()


class RemoteEmulator:
    """An emulator in another process, seen through its control plane."""

    def __init__(self, process: ServiceProcess, *, refused: Callable[[str], Exception] = RemoteServiceError) -> None:
        self.url = process.url
        self.control = ControlClient(process.url, refused=refused)

    def inject(self, fault: Any) -> None:
        """Queue ``fault`` (any emulator's fault with ``to_json``) behind those already injected."""
        self.control.request("POST", "faults", fault.to_json())

    def register(self, pcm: bytes, transcript: str, sample_rate: int = 8000) -> None:
        """The Ink emulator's :meth:`~voicebridge_dev.local.ink.InkEmulator.register`: ``transcript`` for ``pcm``."""
        body = {"pcm_base64": base64.b64encode(pcm).decode(), "transcript": transcript, "sample_rate": sample_rate}
        self.control.request("POST", "transcripts", body)


class RemoteStream:
    """A stream of the KVS emulator in another process: a contact begun, its media queued, the contact ended.

    The emulator makes a block of a fragment from each whole :data:`~voicebridge_dev.local.kvs.matroska.BLOCK_MS`
    of audio, and no sooner (until the contact ends), so audio is sent a whole block at a time: what is sent sooner
    would wait there all the same, and the simulator's 20 ms of media at a time would cost three requests a block.
    """

    def __init__(self, control: ControlClient, arn: str) -> None:
        self._control = control
        self.arn = arn
        self._lock = threading.Lock()
        self._pending = {CUSTOMER_TRACK: bytearray(), AGENT_TRACK: bytearray()}

    def begin_contact(
        self, contact_id: str, instance_id: str = EMULATED_INSTANCE_ID, *, start_ms: int | None = None
    ) -> ContactStart:
        body: dict[str, Any] = {"StreamARN": self.arn, "ContactId": contact_id, "InstanceId": instance_id}
        if start_ms is not None:
            body["StartTimestamp"] = start_ms
        started = self._control.request("POST", "contacts", body)
        return ContactStart(str(started["StartFragmentNumber"]), int(started["StartTimestamp"]))

    def append_tracks(self, customer: bytes = b"", agent: bytes = b"") -> None:
        if len(customer) % 2 or len(agent) % 2:
            raise KvsEmulatorError("s16le audio has an even number of bytes")
        with self._lock:
            self._pending[CUSTOMER_TRACK] += customer
            self._pending[AGENT_TRACK] += agent
            self._send(whole_blocks=True)

    def end_contact(self, drain: bool = True) -> None:
        with self._lock:
            if drain:
                self._send(whole_blocks=False)
            for pending in self._pending.values():
                pending.clear()
            self._control.request("POST", "contacts/end", {"StreamARN": self.arn, "Drain": drain})

    def _send(self, *, whole_blocks: bool) -> None:
        """Send what is pending on both tracks: with ``whole_blocks``, only the whole blocks both tracks hold."""
        ready = min(map(len, self._pending.values()))
        if whole_blocks:
            ready -= ready % BLOCK_BYTES
        longest = max(map(len, self._pending.values()))
        size = ready if whole_blocks else longest
        if not size:
            return
        body: dict[str, str] = {"StreamARN": self.arn}
        for track, pending in self._pending.items():
            body[track] = base64.b64encode(bytes(pending[:size])).decode()
            del pending[:size]
        self._control.request("POST", "contacts/audio", body)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no contact is live on the stream (its last fragment produced); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._stats().get("LiveContactId") is not None:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(_IDLE_POLL_S)
        return True

    @property
    def last_fragment_number(self) -> str | None:
        number = self._stats().get("LastFragmentNumber")
        return None if number is None else str(number)

    def _stats(self) -> dict[str, Any]:
        streams = self._control.request("GET", "streams")["Streams"]
        found = next((stream for stream in streams if stream["StreamARN"] == self.arn), None)
        if found is None:
            raise KvsEmulatorError(f"no stream {self.arn}")
        return dict(found)


class RemoteKvs(RemoteEmulator):
    """The KVS emulator in another process, as the flow simulator streams a contact's media to it."""

    def __init__(self, process: ServiceProcess) -> None:
        super().__init__(process, refused=KvsEmulatorError)

    def create_stream(self, name: str) -> str:
        """Create a stream as Connect would, with Kinesis Video Streams' CreateStream; returns its ARN."""
        return str(self.control.call("POST", "/createStream", {"StreamName": name})["StreamARN"])

    def stream(self, name_or_arn: str) -> RemoteStream:
        return RemoteStream(self.control, name_or_arn)


class ProcessCloud(CloudBase):
    """The local cloud with moto and each emulator in a process of its own, and the Lambda emulator in this one.
    S3 and DynamoDB have a moto server each (:meth:`moto_endpoint`); ``lambda_concurrency`` is as LocalCloud's.

    It takes :class:`~voicebridge_dev.local.cloud.LocalCloud`'s settings, the speech engine and the recognition by
    name (``recognition``: ``registered``, ``pocketsphinx`` or ``auto``), and the children's logs go to ``stderr``.
    """

    def __init__(
        self,
        *,
        template: str | Path = "template.yaml",
        region: str = "us-east-1",
        engine: str = "auto",
        sonic_time_to_first_byte_ms: float = 40.0,
        sonic_realtime_factor: float = 20.0,
        media_pace: float = 1.0,
        recognition: str = "registered",
        bedrock_time_to_first_token_ms: float = 300.0,
        bedrock_tokens_per_second: float = 60.0,
        lambda_concurrency: int | None = None,
        stderr: IO[bytes] | int | None = None,
    ) -> None:
        super().__init__(template=template, region=region, lambda_concurrency=lambda_concurrency)
        options: dict[str, dict[str, Any]] = {
            "s3": {},
            "dynamodb": {},
            "moto": {},
            "sonic": {
                "endpoint_name": self.endpoint_name,
                "time_to_first_byte_ms": sonic_time_to_first_byte_ms,
                "realtime_factor": sonic_realtime_factor,
                "engine": engine,
                "api_key": LOCAL_API_KEY,
            },
            "kvs": {"region": region, "pace": media_pace},
            "ink": {"api_key": LOCAL_API_KEY, "recognition": recognition},
            "bedrock": {
                "time_to_first_token_ms": bedrock_time_to_first_token_ms,
                "tokens_per_second": bedrock_tokens_per_second,
            },
            "lex": {},
            "comprehend": {},
            "connect": {},
        }
        self.processes = {name: ServiceProcess(name, options[name], stderr=stderr) for name in SERVICES}
        self._faces: dict[str, RemoteEmulator] = {}
        self._kvs: RemoteKvs | None = None

    def start(self) -> Self:
        try:
            # Each child takes a second or two to import what it serves: they start side by side.
            for process in self.processes.values():
                process.launch()
            for process in self.processes.values():
                process.wait_ready()
            self.moto_url = self.processes["moto"].url
            self._kvs = RemoteKvs(self.processes["kvs"])
            self._faces = {name: RemoteEmulator(self.processes[name]) for name in _EMULATORS}
            self._faces["kvs"] = self._kvs
            self._start_lambdas()
        except BaseException:
            self.stop()
            raise
        log.info(
            "local cloud up, a process for each service: %s",
            ", ".join(f"{name} {process.url} (pid {process.pid})" for name, process in self.processes.items()),
        )
        return self

    def stop(self) -> None:
        self._stop_lambdas()
        for process in reversed(self.processes.values()):
            process.stop()

    def moto_endpoint(self, service: str) -> str:
        """S3 and DynamoDB each have a moto server of their own: the calls' prompts and their long polls' reads
        then do not queue behind each other on one interpreter, as they do not on AWS."""
        return self.processes[_MOTO_PROCESSES.get(service, "moto")].url

    def service_env(self) -> dict[str, str]:
        lex = self.processes["lex"].facts
        return emulator_env(
            sonic=self.processes["sonic"].url,
            kvs=self.processes["kvs"].url,
            ink=self.processes["ink"].url,
            bedrock=self.processes["bedrock"].url,
            lex=self.processes["lex"].url,
            comprehend=self.processes["comprehend"].url,
            connect=self.processes["connect"].url,
            model_id=str(self.processes["bedrock"].facts["model_id"]),
            bot=(str(lex["bot_id"]), str(lex["bot_alias_id"]), str(lex["locale_id"])),
        )

    @property
    def media(self) -> RemoteKvs:
        if self._kvs is None:
            raise RemoteServiceError("the local cloud is not running")
        return self._kvs

    def register_transcript(self, pcm: bytes, transcript: str) -> None:
        self._faces["ink"].register(pcm, transcript)

    def inject(self, service: str, fault: Any) -> None:
        self._faces[service].inject(fault)

    def emulated_timings(self) -> dict[str, float]:
        sonic, ink, bedrock = (self.processes[name].facts for name in ("sonic", "ink", "bedrock"))
        return {
            "ink_end_of_turn_delay_ms": float(ink["end_delay_ms"]),
            "bedrock_time_to_first_token_ms": float(bedrock["time_to_first_token_ms"]),
            "bedrock_tokens_per_second": float(bedrock["tokens_per_second"]),
            "sonic_time_to_first_byte_ms": float(sonic["time_to_first_byte_ms"]),
            "sonic_realtime_factor": float(sonic["realtime_factor"]),
        }

    def cpu_seconds(self) -> dict[str, float]:
        """Each service process's CPU seconds so far, by service name."""
        return {name: process.cpu_seconds() for name, process in self.processes.items()}

    def table_requests(self) -> dict[str, int]:
        return self.processes["dynamodb"].requests()


if __name__ == "__main__":
    sys.exit(main())

"""Where Sonic runs: a SageMaker endpoint in the customer's account, a Sonic container the bridge speaks to directly,
or the Cartesia API.

Every backend takes a :class:`~voicebridge.sonic.request.SpeechRequest` and yield raw audio bytes in the encoding they
were asked for, as the model produces them. They translate each transport's failures into the product's error types:

- :class:`~voicebridge.errors.InvalidInput` — the model rejected the request (422): retrying cannot help.
- :class:`~voicebridge.errors.RetryableModelError` — throttling (429), a stream error, a stall: worth another try.
- :class:`~voicebridge.errors.ConfigurationError` — the endpoint or key does not exist.

SageMaker (``InvokeEndpointWithResponseStream``): the HTTP response is an AWS event stream of ``PayloadPart`` events
whose bytes carry Sonic's newline-delimited JSON (decoded by :mod:`voicebridge.sonic.stream`); failures arrive as
``ModelError`` (with ``OriginalStatusCode``) before the stream, or as ``ModelStreamError``/``InternalStreamFailure``
events inside it. botocore decodes the event stream; this module never touches its framing. Per
``cartesia-ai/cartesia-aws`` (both READMEs, Error Handling; the notebooks read ``e.response["OriginalStatusCode"]``)
and botocore's ``sagemaker-runtime`` model, ``ModelError`` is HTTP 424 wrapping the model's 422 (malformed input, the
reason in the message) or 429 (no capacity). A Sonic ``error`` object inside the stream carries its message in
``data`` (:mod:`voicebridge.sonic.stream`); it reaches the error, and so the logs, cut to the length of every
model reason here.

A Sonic container (``SONIC_BACKEND=container``, a fleet of your own behind a private load balancer) is spoken to the
way SageMaker speaks to it, by the container contract of SageMaker hosting: ``POST /invocations`` with the same JSON
body as the endpoint, answered with the same newline-delimited JSON, streamed over HTTP/1.1 chunked transfer encoding
("The implementation of response streaming in SageMaker real-time endpoints is achieved through HTTP 1.1 chunked
encoding", AWS Machine Learning Blog, "Elevating the generative AI experience: Introducing streaming support in
Amazon SageMaker hosting", 2023-09-01); ``GET /ping`` is the load balancer's readiness check. The container answers
a refusal itself: 422 for malformed input (the reason in its body), 429 when it has no capacity — the statuses
SageMaker relays as ``OriginalStatusCode`` (``cartesia-ai/cartesia-aws``, ``sonic-3-6-jumpstart/README.md``, Error
Handling: "the model container you are hitting does not have capacity").

The two packages name 16-bit PCM differently. The Sonic 3 package's README and notebook ask for ``"pcm"``
(``sonic-3-jumpstart/README.md`` Data Sample); Sonic 3.5's say ``"pcm_s16le"`` since commit 2c7787c ("update
examples to use specific pcm encoding", June 2026), as the Cartesia API does. Whether either package accepts the
other's name is undocumented, so :attr:`SageMakerBackend.pcm_names` offers both and the synthesizer settles on the
one the endpoint takes.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

# urllib3 comes with botocore: the container backend costs a function no library it does not already load.
import urllib3
from botocore.exceptions import BotoCoreError, ClientError, EventStreamError
from urllib3.connection import HTTPConnection
from urllib3.exceptions import HTTPError as Urllib3Error

from voicebridge.errors import ConfigurationError, InvalidInput, RetryableModelError
from voicebridge.sonic.request import SpeechRequest
from voicebridge.sonic.stream import Chunk, SonicStreamDecoder, SonicStreamError, StreamError

if TYPE_CHECKING:
    from types_boto3_sagemaker_runtime.client import SageMakerRuntimeClient

    # The audio package needs numpy and soxr, which a prompt answered from the cache never loads.
    from voicebridge.audio.convert import SourceEncoding

STALL_TIMEOUT_S = 1.0
"""A healthy Sonic stream never pauses this long between parts; a longer silence is a stall worth a retry."""


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """Raw audio format asked of the model."""

    encoding: SourceEncoding
    sample_rate: int
    name: str | None = None
    """The model's own name for ``encoding`` when it is not the Cartesia API's (Sonic 3 calls 16-bit PCM ``pcm``)."""

    @property
    def wire_encoding(self) -> str:
        """``output_format.encoding`` as the request carries it."""
        return self.name or self.encoding


class SonicBackend(Protocol):
    """A place Sonic runs."""

    identity: str
    """``<backend>:<target>``: names the model for the prompt cache key (endpoint, container address or model id),
    and the stream metrics' ``SonicBackend`` and ``SonicTarget`` dimensions."""

    pcm_names: tuple[str, ...]
    """The names the model may know 16-bit PCM by, in the order to ask for them."""

    def stream(self, request: SpeechRequest, fmt: OutputFormat, *, deadline: float) -> Iterator[bytes]:
        """Yield audio bytes as they arrive; stop at ``deadline`` (``time.monotonic()`` seconds)."""
        ...


class SageMakerBackend:
    """Sonic on a SageMaker real-time endpoint, invoked with a response stream."""

    pcm_names: tuple[str, ...] = ("pcm_s16le", "pcm")
    """Sonic 3.5's name, then Sonic 3's: the package behind the endpoint is not known until it answers."""

    def __init__(self, endpoint_name: str, runtime: SageMakerRuntimeClient) -> None:
        """``runtime`` is a ``sagemaker-runtime`` client whose read timeout bounds a stall between two parts."""
        if not endpoint_name:
            raise ConfigurationError("SONIC_ENDPOINT_NAME is not set")
        self.endpoint_name = endpoint_name
        self.identity = f"sagemaker:{endpoint_name}"
        self._runtime = runtime

    def stream(self, request: SpeechRequest, fmt: OutputFormat, *, deadline: float) -> Iterator[bytes]:
        body = json.dumps(request.body(encoding=fmt.wire_encoding, sample_rate=fmt.sample_rate))
        try:
            response = self._runtime.invoke_endpoint_with_response_stream(
                EndpointName=self.endpoint_name,
                Body=body,
                ContentType="application/json",
                Accept="text/event-stream",
            )
        except ClientError as exc:
            raise _from_client_error(exc) from None
        except (BotoCoreError, Urllib3Error) as exc:
            raise RetryableModelError(f"endpoint unreachable: {type(exc).__name__}") from None
        events = response["Body"]
        try:
            yield from _decoded(_payload_parts(events), deadline)
        except EventStreamError as exc:
            raise RetryableModelError(f"model stream failed: {exc.response['Error'].get('Code')}") from None
        except (BotoCoreError, Urllib3Error) as exc:
            raise RetryableModelError(f"model stream interrupted: {type(exc).__name__}") from None
        except SonicStreamError as exc:
            raise RetryableModelError(f"model stream unreadable: {exc}") from None
        finally:
            events.close()


CONNECT_TIMEOUT_S = 2.0
CONTAINER_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}
"""What SageMaker hands the container for the endpoint backend's call: the same body, the same media types."""
_READ_BYTES = 16384
_ERROR_BODY_BYTES = 65536


class ContainerBackend:
    """Sonic's container spoken to directly, by the SageMaker container contract.

    ::

        POST {SONIC_BASE_URL}/invocations   Content-Type: application/json   Accept: text/event-stream
             body: the endpoint's Sonic request (no model_id)
        200  Transfer-Encoding: chunked; Sonic's newline-delimited JSON objects, cut anywhere
        422  malformed input, the reason in the body          -> InvalidInput
        429  no capacity; 5xx the container failed            -> RetryableModelError
        404  no /invocations under SONIC_BASE_URL             -> ConfigurationError

    Connections are pooled and kept alive (urllib3, as botocore pools its own); each read waits at most
    ``stall_timeout_s``, so a stream that stops between two parts is a stall worth a retry, as on the endpoint.
    A stream cut before its last chunk (no terminating zero-length chunk) is an interruption, like SageMaker's
    ``ModelStreamError``. Whatever is left of a stream the synthesizer stops early is not read: its connection is
    closed, not drained.

    >>> backend = ContainerBackend("http://sonic.internal")
    >>> backend.identity
    'container:sonic.internal'
    """

    pcm_names: tuple[str, ...] = SageMakerBackend.pcm_names
    """The container is the package's model: its name for 16-bit PCM is not known until it answers, either."""

    def __init__(
        self,
        base_url: str,
        *,
        stall_timeout_s: float = STALL_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        max_connections: int = 32,
    ) -> None:
        if not base_url:
            raise ConfigurationError("SONIC_BASE_URL is not set")
        base = base_url.rstrip("/")
        self._url = f"{base}/invocations"
        self.identity = f"container:{base.split('://', 1)[-1]}"
        self._stall_timeout_s = stall_timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._pool = urllib3.PoolManager(
            num_pools=2,
            maxsize=max_connections,
            block=False,
            retries=False,
            socket_options=[*HTTPConnection.default_socket_options, (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)],
        )

    def stream(self, request: SpeechRequest, fmt: OutputFormat, *, deadline: float) -> Iterator[bytes]:
        body = json.dumps(request.body(encoding=fmt.wire_encoding, sample_rate=fmt.sample_rate)).encode()
        read_s = max(0.2, min(self._stall_timeout_s, deadline - time.monotonic()))
        try:
            response = self._pool.urlopen(
                "POST",
                self._url,
                body=body,
                headers=CONTAINER_HEADERS,
                timeout=urllib3.Timeout(connect=self._connect_timeout_s, read=read_s),
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except Urllib3Error as exc:
            raise RetryableModelError(f"Sonic container unreachable: {type(exc).__name__}") from None
        finished = False
        try:
            if response.status != 200:
                refusal = _from_status(response.status, response.read(_ERROR_BODY_BYTES))
                # A refusal read to its end leaves the connection fit for the next request.
                finished = response.read(1) == b""
                raise refusal
            yield from _decoded(_body_parts(response), deadline)
            finished = True
        except Urllib3Error as exc:
            raise RetryableModelError(f"model stream interrupted: {type(exc).__name__}") from None
        except SonicStreamError as exc:
            raise RetryableModelError(f"model stream unreadable: {exc}") from None
        finally:
            if not finished:
                response.close()
            response.release_conn()


def _payload_parts(events: Iterable[Any]) -> Iterator[bytes]:
    """The bytes of each PayloadPart of a SageMaker response stream; the stream's own error event ends it."""
    for event in events:
        part = event.get("PayloadPart")
        if part is None:
            failure = event.get("ModelStreamError") or event.get("InternalStreamFailure") or {}
            raise RetryableModelError(f"model stream failed: {failure.get('Message', 'unknown')}")
        yield part["Bytes"]


def _body_parts(response: Any) -> Iterator[bytes]:
    """The body as it arrives: chunk by chunk when chunked (the contract), else in reads of what has come."""
    if response.chunked and response.supports_chunked_reads():
        yield from response.read_chunked(decode_content=False)
    else:
        yield from response.stream(_READ_BYTES, decode_content=False)


def _from_status(status: int, raw: bytes) -> Exception:
    """The error a container's (or a proxy's) non-200 answer stands for, with the model's reason."""
    text = raw.decode("utf-8", errors="replace")
    if status == 424:
        # SageMaker's own ModelError shape, from something that answers as the endpoint does: what the model said.
        try:
            wrapped = json.loads(text)
        except ValueError:
            wrapped = None
        if isinstance(wrapped, dict) and isinstance(wrapped.get("OriginalStatusCode"), int):
            status = wrapped["OriginalStatusCode"]
            text = str(wrapped.get("OriginalMessage") or wrapped.get("Message") or "")
    reason = _reason(text) if text else "no reason given"
    if status in (401, 403, 404, 405):
        return ConfigurationError(f"Sonic container refused the call ({status}): is SONIC_BASE_URL its root?")
    if status in (408, 429) or status >= 500:
        return RetryableModelError(f"model answered {status}: {reason}")
    if 400 <= status < 500:
        return InvalidInput(f"model rejected the request: {reason}")
    return RetryableModelError(f"model answered {status}: {reason}")


class CartesiaApiBackend:
    """Sonic through the Cartesia API, or through a Sonic deployment that serves the API's shape (Cartesia's
    self-hosted API server, behind a private load balancer).

    Speaks ``POST /tts/sse`` through the official ``cartesia`` SDK; its base URL comes from ``SONIC_BASE_URL`` (else
    ``CARTESIA_BASE_URL``). The API names 16-bit PCM ``pcm_s16le`` only (the SDK's ``RawEncoding``), and takes a
    locale in ``locale`` rather than ``language`` ("A request may set `language` or `locale`, never both", the SDK's
    ``tts.generate_sse``).
    """

    pcm_names: tuple[str, ...] = ("pcm_s16le",)

    def __init__(self, *, api_key: str, base_url: str, model_id: str, stall_timeout_s: float = STALL_TIMEOUT_S) -> None:
        from cartesia import Cartesia

        self.identity = f"cartesia-api:{model_id}"
        self._model_id = model_id
        self._stall_timeout_s = stall_timeout_s
        self._client = Cartesia(api_key=api_key, base_url=base_url, max_retries=0, timeout=stall_timeout_s)

    def stream(self, request: SpeechRequest, fmt: OutputFormat, *, deadline: float) -> Iterator[bytes]:
        import cartesia
        import httpx
        from cartesia.types.tts_sse_event import TTSSSEChunkEvent, TTSSSEDoneEvent, TTSSSEErrorEvent

        body = request.body(encoding=fmt.wire_encoding, sample_rate=fmt.sample_rate)
        locale = "-" in request.language
        try:
            events = self._client.tts.generate_sse(
                model_id=self._model_id,
                transcript=body["transcript"],
                voice=request.voice,
                output_format=body["output_format"],
                language=cartesia.omit if locale else body["language"],
                locale=body["language"] if locale else cartesia.omit,
                generation_config=body["generation_config"],
                context_id=body["context_id"],
                pronunciation_dict_id=request.pronunciation_dict_id or cartesia.omit,
                timeout=max(0.2, min(self._stall_timeout_s, deadline - time.monotonic())),
            )
            with events:
                for event in events:
                    if isinstance(event, TTSSSEChunkEvent):
                        audio = event.audio
                        if audio:
                            yield audio
                    elif isinstance(event, TTSSSEErrorEvent):
                        if event.status_code == 422:
                            raise InvalidInput(f"model rejected the request: {event.message}")
                        raise RetryableModelError(f"model stream failed: {event.title}: {event.message}")
                    elif isinstance(event, TTSSSEDoneEvent):
                        return
                    if time.monotonic() > deadline:
                        raise RetryableModelError("deadline passed while the model was still generating")
        except (cartesia.UnprocessableEntityError, cartesia.BadRequestError) as exc:
            raise InvalidInput(f"model rejected the request: {_reason(exc.body)}") from None
        except (cartesia.AuthenticationError, cartesia.PermissionDeniedError, cartesia.NotFoundError) as exc:
            raise ConfigurationError(f"Cartesia API refused the call ({exc.status_code})") from None
        except cartesia.APIStatusError as exc:
            raise RetryableModelError(f"Cartesia API answered {exc.status_code}") from None
        except cartesia.APIConnectionError as exc:
            raise RetryableModelError(f"Cartesia API unreachable: {type(exc).__name__}") from None
        except httpx.TransportError as exc:
            # The SDK wraps failures of the request, not of reading its stream.
            raise RetryableModelError(f"model stream interrupted: {type(exc).__name__}") from None


def _decoded(parts: Iterable[bytes], deadline: float) -> Iterator[bytes]:
    """The audio of a Sonic stream whose body arrives in ``parts``, both backends' way: decoded as each part comes,
    and given up once the model is still generating at ``deadline``."""
    decoder = SonicStreamDecoder()
    for part in parts:
        yield from _audio(decoder.feed(part))
        if time.monotonic() > deadline:
            raise RetryableModelError("deadline passed while the model was still generating")
    yield from _audio(decoder.close())


def _audio(events: Iterator[Any]) -> Iterator[bytes]:
    for event in events:
        if isinstance(event, Chunk):
            if event.audio:
                yield event.audio
        elif isinstance(event, StreamError):
            if event.status_code == 422:
                raise InvalidInput(f"model rejected the request: {_reason(event.message)}")
            raise RetryableModelError(f"model reported an error: {_reason(event.message)}")


def _from_client_error(exc: ClientError) -> Exception:
    error = exc.response.get("Error", {})
    code = error.get("Code", "")
    if code == "ModelError":
        status = exc.response.get("OriginalStatusCode")
        reason = _reason(exc.response.get("OriginalMessage") or error.get("Message"))
        if status in (400, 422):
            return InvalidInput(f"model rejected the request: {reason}")
        return RetryableModelError(f"model answered {status}: {reason}")
    if code == "ValidationError":
        return ConfigurationError(f"endpoint call invalid: {_reason(error.get('Message'))}")
    if code in ("AccessDeniedException", "UnrecognizedClientException"):
        return ConfigurationError(f"not allowed to invoke the endpoint ({code})")
    return RetryableModelError(f"endpoint call failed: {code or 'unknown'}")


def _reason(raw: Any) -> str:
    """The model's reason, short: Sonic's JSON error bodies carry it in ``error``/``message``/``detail``."""
    if isinstance(raw, dict):
        text = raw.get("error") or raw.get("message") or raw.get("detail") or raw.get("title") or json.dumps(raw)
        return str(text)[:200]
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw[:200]
        return _reason(parsed) if isinstance(parsed, dict) else raw[:200]
    return "no reason given"

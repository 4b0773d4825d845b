"""Hand-written fake agents for the Connect A2A emulator's tests: a loopback WebSocket server and frame builders.

The builders write the agent's side of docs/protocols.md, *Amazon Connect external AI agents (A2A voice streaming)*,
by hand, so a test can break exactly one rule; they are not the product's server.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

EXT = "https://docs.aws.amazon.com/connect/a2a/ext/v1"
EVENT_TYPE = f"{EXT}/eventType"
API_KEY = "local-test-key"


def tone(seconds: float, rate: int, freq: float = 440.0) -> bytes:
    t = np.arange(round(rate * seconds)) / rate
    return (0.3 * np.sin(2 * np.pi * freq * t) * 32767).astype("<i2").tobytes()


def _id() -> str:
    return secrets.token_hex(4)


def result(body: dict[str, Any], frame_id: str | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": frame_id or _id(), "result": body}


class Agent:
    """One fake agent's end of the socket, with what Connect has told it so far."""

    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws
        self.context_id = ""
        self.init: dict[str, Any] = {}
        self.received: list[dict[str, Any]] = []
        self.raw_received: list[str | bytes] = []

    async def send(self, frame: dict[str, Any] | str | bytes) -> None:
        await self.ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)

    async def next_frame(self) -> dict[str, Any]:
        while True:
            raw = await self.ws.recv()
            self.raw_received.append(raw)
            frame = json.loads(raw)
            self.received.append(frame)
            return dict(frame)

    async def next_event(self, event_type: str | None = None) -> dict[str, Any]:
        """The next request that is not caller audio (or, with ``event_type``, the next of that type)."""
        while True:
            frame = await self.next_frame()
            if is_audio(frame):
                continue
            if event_type is None or event_type_of(frame) == event_type:
                return frame

    def init_response(self, *, frame_id: str | None = None, status: Any = "200", **configs: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"statusCode": status, **configs}
        return result(
            {
                "message": {
                    "messageId": _id(),
                    "contextId": self.context_id,
                    "role": "ROLE_AGENT",
                    "extensions": [EXT],
                    "parts": [{"data": {"initSessionResponse": body}, "mediaType": "application/json"}],
                    "metadata": {EVENT_TYPE: "INIT_SESSION_RESPONSE"},
                }
            },
            frame_id or self.init["id"],
        )

    async def accept(self, **configs: Any) -> None:
        """Reads INIT_SESSION, answers 200 (with ``configs`` as counter-proposals) and waits for READY."""
        await self.read_init()
        await self.send(self.init_response(**configs))
        await self.next_event("CHANNEL_STATE")

    async def read_init(self) -> None:
        self.init = await self.next_frame()
        self.context_id = self.init["params"]["message"]["contextId"]

    def chunk(
        self,
        task: str,
        artifact: str,
        pcm: bytes,
        *,
        append: bool,
        last: bool = False,
        event_type: str = "AUDIO_RESPONSE_CHUNK",
    ) -> dict[str, Any]:
        return result(
            {
                "artifactUpdate": {
                    "taskId": task,
                    "contextId": self.context_id,
                    "artifact": {
                        "artifactId": artifact,
                        "parts": [{"raw": base64.b64encode(pcm).decode(), "mediaType": "audio/lpcm"}],
                        "metadata": {EVENT_TYPE: event_type},
                    },
                    "append": append,
                    "lastChunk": last,
                }
            }
        )

    async def speak(self, task: str, artifact: str, pcm: bytes, *, piece: int = 4800, last: bool = True) -> None:
        """``pcm`` as one artifact in chunks of ``piece`` bytes, the last flagged unless ``last`` is false."""
        pieces = [pcm[i : i + piece] for i in range(0, len(pcm), piece)]
        for n, data in enumerate(pieces):
            await self.send(self.chunk(task, artifact, data, append=n > 0, last=last and n == len(pieces) - 1))

    def trace(self, task: str, *, span: dict[str, Any] | None = None, append: bool = False) -> dict[str, Any]:
        root = span or {
            "traceId": secrets.token_hex(16),
            "spanId": secrets.token_hex(8),
            "name": "invoke_agent fake",
            "kind": 2,
            "startTimeUnixNano": "1715000000000000000",
            "endTimeUnixNano": "1715000000500000000",
            "events": [
                {
                    "name": "aws.connect.span.message",
                    "timeUnixNano": "1715000000500000000",
                    "attributes": [{"key": "aws.connect.span.message.role", "value": {"stringValue": "output"}}],
                }
            ],
            "status": {"code": 1},
        }
        otlp = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "fake"}, "spans": [root]}]}]}
        return result(
            {
                "artifactUpdate": {
                    "taskId": task,
                    "contextId": self.context_id,
                    "artifact": {
                        "artifactId": f"trace-{task}",
                        "parts": [{"data": {"tracingSpan": {"otlp": otlp}}, "mediaType": "application/json"}],
                        "metadata": {EVENT_TYPE: "TRACING_SPAN"},
                    },
                    "append": append,
                    "lastChunk": True,
                }
            }
        )

    def status(
        self,
        task: str,
        *,
        state: str = "TASK_STATE_COMPLETED",
        finish: str | None = None,
        error: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        status: dict[str, Any] = {"state": state, "timestamp": "2026-12-06T03:00:00.000Z"}
        if finish is not None:
            status["message"] = message_body({"finish": {"type": finish, "reason": "done"}}, "FINISH")
        if error is not None:
            status["message"] = message_body({"error": error}, "ERROR")
        return result({"statusUpdate": {"taskId": task, "contextId": self.context_id, "status": status}})

    def message(self, data: dict[str, Any], event_type: str) -> dict[str, Any]:
        body = message_body(data, event_type)
        body.update(contextId=self.context_id, extensions=[EXT])
        return result({"message": body})

    def interruption(self) -> dict[str, Any]:
        return self.message({"interruption": {"type": "USER_AUDIO_INPUT", "reason": "user_speech"}}, "INTERRUPTION")

    async def turn(self, task: str, artifact: str, pcm: bytes, *, finish: str | None = None) -> None:
        """A whole well-formed turn: the audio, the trace, the terminal status (with FINISH if given)."""
        await self.speak(task, artifact, pcm)
        await self.send(self.trace(task))
        await self.send(self.status(task, finish=finish))

    def fragments(self, frame: dict[str, Any], pieces: int = 3) -> list[dict[str, Any]]:
        encoded = base64.b64encode(json.dumps(frame).encode()).decode()
        size = -(-len(encoded) // pieces)
        chunks = [encoded[i : i + size] for i in range(0, len(encoded), size)]
        return [
            result(
                {
                    "message": message_body(
                        {
                            "fragment": {
                                "fragmentId": "frag-1",
                                "partNumber": n,
                                "totalParts": len(chunks),
                                "payload": payload,
                                "encoding": "base64",
                            }
                        },
                        "FRAGMENT",
                    )
                },
                frame["id"],
            )
            for n, payload in enumerate(chunks)
        ]


def message_body(data: dict[str, Any], event_type: str) -> dict[str, Any]:
    return {
        "messageId": _id(),
        "role": "ROLE_AGENT",
        "parts": [{"data": data, "mediaType": "application/json"}],
        "metadata": {EVENT_TYPE: event_type},
    }


def event_type_of(frame: dict[str, Any]) -> str | None:
    metadata = frame.get("params", {}).get("message", {}).get("metadata", {})
    return metadata.get(EVENT_TYPE) if isinstance(metadata, dict) else None


def is_audio(frame: dict[str, Any]) -> bool:
    parts = frame.get("params", {}).get("message", {}).get("parts", [])
    return bool(parts) and "raw" in parts[0]


Behaviour = Callable[[Agent], Awaitable[None]]


@contextlib.asynccontextmanager
async def serving(behaviour: Behaviour, *, key: str = API_KEY, echo: bool = True) -> AsyncIterator[str]:
    """A one-agent server on 127.0.0.1; after ``behaviour`` the socket stays open until Connect closes it."""

    def check_key(connection: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Authorization") != f"Bearer {key}":
            return connection.respond(401, "")
        return None

    def echo_extension(connection: ServerConnection, request: Request, response: Response) -> Response:
        if echo:
            response.headers["A2A-Extensions"] = request.headers.get("A2A-Extensions", "")
        return response

    async def handler(ws: ServerConnection) -> None:
        agent = Agent(ws)
        with contextlib.suppress(ConnectionClosed):
            await behaviour(agent)
            async with asyncio.timeout(10):
                async for _ in ws:
                    pass

    async with serve(
        handler, "127.0.0.1", 0, process_request=check_key, process_response=echo_extension, compression=None
    ) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/"

"""One streaming session with Ink (Cartesia speech-to-text) over the official ``cartesia`` SDK.

Turn detection (``/stt/turns/websocket``, model ``ink-2``)::

    client → binary audio frames (s16le, 8 kHz) …, {"type": "close"}
    server → connected → turn.start → turn.update* → [turn.eager_end → turn.resume]* → turn.end … | error

Manual finalize (``/stt/websocket``, e.g. ``ink-whisper``)::

    client → binary audio …, "finalize" (when the caller stopped speaking), "close"
    server → transcript{text, is_final}* → flush_done … → done | error

A session knows nothing of KVS or DynamoDB: it sends what it is given and reports turns and failures to a
:class:`TurnListener`. Events are received on a thread of the session's own; a dropped socket or an ``error`` event
is reported once as a failure, and the owner opens a new session (replaying what is not settled) — the SDK's own
reconnect is left off because it cannot know which audio must be sent again.

``turn.eager_end`` ("Fires when the model predicts that the user might be done speaking", with the turn's
transcript so far) and ``turn.resume`` ("Fires after ``turn.eager_end`` if the user turn has not actually ended") are
both marked PREVIEW in the SDK (4.2, ``STTAutoFinalizeTurnEagerEnd`` and ``STTAutoFinalizeTurnResume``); the listener
hears them so a reply can be started before the turn ends. How early the eager end fires is set by the
``turn_eager_end_threshold`` query parameter (SDK ``AutoFinalizeWebsocketParams``: default 0.4, range 0.3–0.6, between
the end and start thresholds; https://docs.cartesia.ai/use-the-api/stt/turns#configuring-turn-detection).

Keyterms (:mod:`voicebridge.ink.keyterms`) go to the SDK's ``keyterm`` argument, which sends each as a ``keyterm``
query parameter of its own, on either endpoint. An ``error`` event whose ``error_code`` is ``model_not_found``
(``{"type": "error", "status_code": 400, "error_code": "model_not_found", "title": "Invalid model", …}``, Cartesia's
*Realtime Speech-to-Text (Auto)* reference) is the deployment's: :attr:`InkSession.refusal` holds it as a
ConfigurationError, and the owner stops rather than open a session that would be refused again.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Final, Protocol

from voicebridge.errors import ConfigurationError, InkUnavailable
from voicebridge.telemetry import in_context, logger

CONFIGURATION_ERROR_CODES: Final = frozenset({"model_not_found"})
"""Ink's ``error_code`` values no new session can cure."""


class TurnListener(Protocol):
    def on_turn_start(self) -> None: ...

    def on_turn_end(self, transcript: str) -> None: ...

    def on_turn_update(self, transcript: str) -> None:
        """The words of the open turn so far."""

    def on_turn_eager_end(self, transcript: str) -> None: ...

    def on_turn_resume(self) -> None: ...

    def on_failure(self, reason: str) -> None: ...


class InkSession:
    """A WebSocket session for one audio track."""

    def __init__(
        self,
        client: Any,
        listener: TurnListener,
        *,
        mode: str = "turns",
        model: str = "ink-2",
        language: str = "en",
        end_timeout_ms: int | None = None,
        eager_end_threshold: float | None = None,
        keyterms: tuple[str, ...] = (),
        name: str = "ink",
    ) -> None:
        self._client = client
        self._listener = listener
        self._mode = mode
        self._model = model
        self._language = language
        self._end_timeout_ms = end_timeout_ms
        self._eager_end_threshold = eager_end_threshold
        self._keyterms = keyterms
        self._name = name
        self.refusal: ConfigurationError | None = None
        """Set when Ink refused the session for a reason of the deployment's (an unknown model)."""
        self._connection: Any = None
        self._receiver: threading.Thread | None = None
        self._closing = threading.Event()
        self._failed = threading.Event()
        self._finals: list[str] = []

    @property
    def alive(self) -> bool:
        return self._connection is not None and not self._failed.is_set()

    def open(self) -> None:
        """Connect; raise InkUnavailable (or ConfigurationError for a refused key) when Ink cannot be reached."""
        from websockets.exceptions import InvalidStatus, WebSocketException

        options: dict[str, Any] = {"keyterm": list(self._keyterms)} if self._keyterms else {}
        try:
            if self._mode == "manual":
                manager = self._client.stt.manual_finalize.websocket(
                    model=self._model, encoding="pcm_s16le", sample_rate=8000, language=self._language, **options
                )
            else:
                if self._end_timeout_ms is not None:
                    options["turn_end_timeout_ms"] = self._end_timeout_ms
                if self._eager_end_threshold is not None:
                    options["turn_eager_end_threshold"] = self._eager_end_threshold
                manager = self._client.stt.auto_finalize.websocket(
                    model=self._model, encoding="pcm_s16le", sample_rate=8000, **options
                )
            self._connection = manager.enter()
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403):
                raise ConfigurationError(f"Ink refused the API key ({status})") from None
            raise InkUnavailable(f"Ink refused the session ({status})") from None
        except (OSError, WebSocketException) as exc:
            raise InkUnavailable(f"Ink unreachable ({type(exc).__name__})") from None
        self._receiver = threading.Thread(target=in_context(self._receive), name=f"{self._name}-receiver", daemon=True)
        self._receiver.start()

    def send_audio(self, pcm: bytes) -> None:
        """Send one frame; raise InkUnavailable when the session is gone (the frame was not delivered)."""
        if not self.alive:
            raise InkUnavailable("session lost")
        try:
            self._connection.send_raw(pcm)
        except Exception as exc:
            self._fail(f"send failed ({type(exc).__name__})")
            raise InkUnavailable("session lost while sending") from None

    def finalize(self) -> None:
        """Manual mode: ask for the final transcript of what was sent so far."""
        if self.alive:
            try:
                self._connection.send_raw("finalize")
            except Exception as exc:
                self._fail(f"finalize failed ({type(exc).__name__})")

    def close(self, *, timeout_s: float = 2.0) -> None:
        """Ask the server to finish, wait (bounded) for its last events, then close the socket."""
        if self._connection is None:
            return
        self._closing.set()
        if not self._failed.is_set():
            try:
                if self._mode == "manual":
                    self._connection.send_raw("close")
                else:
                    self._connection.send_raw(json.dumps({"type": "close"}))
            except Exception:
                logger.debug("ink close command not delivered", session=self._name)
        if self._receiver is not None:
            self._receiver.join(timeout_s)
        try:
            self._connection.close()
        except Exception:
            logger.debug("ink socket already closed", session=self._name)
        if self._receiver is not None:
            self._receiver.join(1.0)

    def _receive(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            while True:
                event = self._connection.recv()
                if not self._handle(event):
                    return
        except ConnectionClosed as exc:
            if not self._closing.is_set():
                self._fail(f"socket closed ({exc.rcvd.code if exc.rcvd else 1006})")
        except Exception as exc:
            if not self._closing.is_set():
                self._fail(f"receive failed ({type(exc).__name__})")
        else:
            return
        finally:
            if not self._closing.is_set() and not self._failed.is_set():
                self._fail("socket ended")

    def _handle(self, event: Any) -> bool:
        """Dispatch one server event; False when the session is over."""
        kind = getattr(event, "type", None)
        if kind == "turn.start":
            self._listener.on_turn_start()
        elif kind == "turn.end":
            self._listener.on_turn_end(event.transcript)
        elif kind == "turn.update":
            self._listener.on_turn_update(getattr(event, "transcript", "") or "")
        elif kind == "turn.eager_end":
            self._listener.on_turn_eager_end(getattr(event, "transcript", "") or "")
        elif kind == "turn.resume":
            self._listener.on_turn_resume()
        elif kind == "transcript":
            if event.is_final:
                self._finals.append(event.text)
        elif kind == "flush_done":
            # Final texts are joined exactly as sent: "Never strip() it" (Cartesia, STT common pitfalls).
            text, self._finals = "".join(self._finals), []
            self._listener.on_turn_end(text)
        elif kind == "done":
            if self._finals:
                text, self._finals = "".join(self._finals), []
                self._listener.on_turn_end(text)
            return False
        elif kind == "error":
            code = getattr(event, "error_code", None)
            reason = f"Ink error {getattr(event, 'status_code', '?')}: {getattr(event, 'title', '')}"
            if code in CONFIGURATION_ERROR_CODES:
                self.refusal = ConfigurationError(f"Ink refused the session ({code}): check INK_MODEL {self._model!r}")
            self._fail(reason if code is None else f"{reason} ({code})")
            return False
        return True

    def _fail(self, reason: str) -> None:
        if self._failed.is_set():
            return
        self._failed.set()
        logger.warning("ink session lost", session=self._name, reason=reason)
        self._listener.on_failure(reason)

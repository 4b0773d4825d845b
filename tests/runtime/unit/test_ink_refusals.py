"""An Ink session Ink refuses for the deployment's fault ends listening, instead of being reopened forever."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from voicebridge.clock import SYSTEM_CLOCK
from voicebridge.errors import ConfigurationError
from voicebridge.ink.session import InkSession, TurnListener
from voicebridge.ink.transcriber import SessionOpener


class Listener:
    def __init__(self) -> None:
        self.failed = threading.Event()

    def on_turn_start(self) -> None: ...

    def on_turn_end(self, transcript: str) -> None: ...

    def on_turn_update(self, transcript: str) -> None: ...

    def on_turn_eager_end(self, transcript: str) -> None: ...

    def on_turn_resume(self) -> None: ...

    def on_failure(self, reason: str) -> None:
        self.failed.set()


class Connection:
    """A socket whose server sends ``events`` and then nothing."""

    def __init__(self, events: list[Any]) -> None:
        self._events = list(events)
        self.sent: list[Any] = []

    def recv(self) -> Any:
        if self._events:
            return self._events.pop(0)
        threading.Event().wait(5)
        raise OSError("closed")

    def send_raw(self, data: Any) -> None:
        self.sent.append(data)

    def close(self) -> None: ...


class Client:
    """The SDK as the session uses it: ``client.stt.<mode>.websocket(**options).enter()``."""

    def __init__(self, *events: Any) -> None:
        self.events = events
        self.opened: list[dict[str, Any]] = []
        self.stt = SimpleNamespace(
            auto_finalize=SimpleNamespace(websocket=self._websocket),
            manual_finalize=SimpleNamespace(websocket=self._websocket),
        )

    def _websocket(self, **options: Any) -> Any:
        self.opened.append(options)
        return SimpleNamespace(enter=lambda: Connection(list(self.events)))


def error(code: str | None, status: int = 400, title: str = "Invalid model") -> Any:
    return SimpleNamespace(type="error", status_code=status, title=title, error_code=code)


def opened_and_failed(client: Client, model: str = "ink-3") -> tuple[SessionOpener, Listener]:
    listener = Listener()

    def factory(owner: TurnListener, name: str) -> InkSession:
        return InkSession(client, owner, model=model, name=name)

    opener = SessionOpener(factory, "customer", SYSTEM_CLOCK)
    assert opener.open(listener) is not None
    assert listener.failed.wait(5)
    return opener, listener


def test_model_not_found_in_the_socket_makes_the_next_open_a_configuration_error() -> None:
    client = Client(error("model_not_found"))
    opener, listener = opened_and_failed(client)
    with pytest.raises(ConfigurationError, match=r"model_not_found.*INK_MODEL 'ink-3'"):
        opener.open(listener)
    assert len(client.opened) == 1


def test_any_other_error_event_is_reopened_as_before() -> None:
    client = Client(error("concurrency_limited", status=429, title="Too many concurrent requests"))
    opener, listener = opened_and_failed(client)
    assert opener.open(listener) is not None
    assert len(client.opened) == 2


def test_keyterms_go_to_the_sdk_as_a_list_on_either_endpoint() -> None:
    client = Client()
    for mode in ("turns", "manual"):
        InkSession(client, Listener(), mode=mode, keyterms=("Acme Plus", "Zorblax")).open()
    assert [options["keyterm"] for options in client.opened] == [["Acme Plus", "Zorblax"]] * 2


def test_no_keyterm_is_sent_when_there_are_none() -> None:
    client = Client()
    InkSession(client, Listener()).open()
    assert "keyterm" not in client.opened[0]

"""A cold start is spent of Connect's 8 s: the first invocation of an environment Lambda started on demand for it counts
its waits and budgets from when the environment's process started, not from when the handler was called; one Lambda
initialized before any invocation counts from the call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.fixtures import ROOT
from voicebridge import container
from voicebridge.connect.events import ContactFlowEvent
from voicebridge.errors import ModelUnavailable, StorageError
from voicebridge.handlers import _edge, _longpoll, synthesize
from voicebridge.handlers._edge import invocation_began

SYNTHESIZE_EVENT = json.loads((ROOT / "events" / "synthesize.json").read_text())

EVENT = ContactFlowEvent.parse(
    {
        "Name": "ContactFlowEvent",
        "Details": {"ContactData": {"ContactId": "4a573372-1f28-4e26-b97b-c0e1d1e0f3a1"}, "Parameters": {}},
    }
)


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A process no invocation has begun in, as Lambda starts one for an invocation that found none idle."""
    monkeypatch.setattr(_edge, "_cold", True)
    monkeypatch.setattr(_edge, "_loaded_at", time.monotonic())
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
    return monkeypatch


def test_the_first_invocation_on_demand_began_when_its_process_started(cold: pytest.MonkeyPatch) -> None:
    before = time.monotonic()
    first = invocation_began(process_age_s=lambda: 1.5)
    second = invocation_began(process_age_s=lambda: 1.5)
    after = time.monotonic()

    assert before - 1.5 <= first <= after - 1.5
    assert first + 1.5 <= second <= after


@pytest.mark.parametrize("initialization", ["provisioned-concurrency", "snap-start", None])
def test_an_environment_started_before_any_invocation_counts_from_the_call(
    cold: pytest.MonkeyPatch, initialization: str | None
) -> None:
    if initialization is None:
        cold.delenv("AWS_LAMBDA_INITIALIZATION_TYPE")
    else:
        cold.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", initialization)
    before = time.monotonic()

    assert before <= invocation_began(process_age_s=lambda: 60.0) <= time.monotonic()


def test_an_environment_initialized_well_before_its_first_invocation_counts_from_the_call(
    cold: pytest.MonkeyPatch,
) -> None:
    # Lambda initialized it proactively: its handler was loaded 5 s before anyone invoked it.
    cold.setattr(_edge, "_loaded_at", time.monotonic() - 5.0)
    before = time.monotonic()

    assert before <= invocation_began(process_age_s=lambda: 6.0) <= time.monotonic()


def test_a_handler_is_loaded_as_it_is_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_edge, "_loaded_at", None)
    before = time.monotonic()

    _edge.connect_edge(errors="SomeErrors")(lambda event, context: {})

    assert _edge._loaded_at is not None and before <= _edge._loaded_at <= time.monotonic()


def test_an_unreadable_process_age_counts_from_the_call(cold: pytest.MonkeyPatch) -> None:
    before = time.monotonic()

    assert before <= invocation_began(process_age_s=lambda: None) <= time.monotonic()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_a_process_knows_how_long_ago_it_started() -> None:
    # A fresh interpreter that waits 0.5 s before asking: its age includes its own start-up and the wait.
    code = (
        "import time; time.sleep(0.5); from voicebridge.handlers._edge import _process_age_s; print(_process_age_s())"
    )
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ)
    ended = time.monotonic()

    age = json.loads(out.stdout)
    # Clock ticks are 10 ms: the age is read to within one.
    assert 0.5 - 0.01 <= age <= ended - began + 0.01


def test_a_cold_long_poll_waits_what_is_left_after_the_start(cold: pytest.MonkeyPatch) -> None:
    cold.setattr(_edge, "_process_age_s", lambda: 2.0)
    cold.setattr(container, "turn_store", lambda: None)
    cold.setattr(_longpoll, "redacting_read_turns", lambda *args: None)
    before = time.monotonic()

    poll = _longpoll.poll_start(EVENT, context=None)

    assert before - 2.0 <= poll.started <= time.monotonic() - 2.0


def test_a_cold_synthesis_has_what_is_left_of_its_budget_after_the_start(cold: pytest.MonkeyPatch) -> None:
    cold.setattr(_edge, "_process_age_s", lambda: 2.0)
    deadlines: list[float] = []

    class Recording:
        def synthesize(self, request: object, *, deadline: float, store_by: float | None) -> None:
            deadlines.append(deadline)
            assert store_by is None  # no Lambda context: no due time for the prompt's write
            raise ModelUnavailable("no model here")

    cold.setattr(container, "synthesizer", Recording)
    event = {**SYNTHESIZE_EVENT, "Details": {**SYNTHESIZE_EVENT["Details"], "Parameters": {"Text": "Hello."}}}
    before = time.monotonic()

    answer = synthesize.handler(event, None)

    budget_s = container.settings().sonic_deadline_ms / 1000
    assert answer["Result"] == "Fallback"
    assert before - 2.0 + budget_s <= deadlines[0] <= time.monotonic() - 2.0 + budget_s


def test_a_cold_synthesis_stores_its_prompt_by_lambdas_end_counted_from_the_start(cold: pytest.MonkeyPatch) -> None:
    cold.setattr(_edge, "_process_age_s", lambda: 2.0)
    due: list[tuple[float, float | None]] = []

    class Recording:
        def synthesize(self, request: object, *, deadline: float, store_by: float | None) -> None:
            due.append((deadline, store_by))
            raise StorageError("not stored in time")

    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 8000

    cold.setattr(container, "synthesizer", Recording)
    event = {**SYNTHESIZE_EVENT, "Details": {**SYNTHESIZE_EVENT["Details"], "Parameters": {"Text": "Hello."}}}
    before = time.monotonic()

    answer = synthesize.handler(event, Context())

    [(deadline, store_by)] = due
    assert (answer["Result"], answer["ErrorCode"]) == ("Error", "StorageError")
    assert store_by is not None
    # Lambda's 8 s left as the handler began, less the answer's 100 ms, from the environment's start 2 s before.
    assert before - 2.0 + 7.9 <= store_by <= time.monotonic() - 2.0 + 7.9
    assert deadline < store_by

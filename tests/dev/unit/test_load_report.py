"""What a load run reports beyond delivery and latency: the turn table's requests per call-minute, counted, and the
logs of every invocation that failed, answered ``Result=Error`` or answered later than Connect waits, so a call that
took an error branch names its cause."""

from __future__ import annotations

import json

from voicebridge_dev.demo import failed_invocation, failed_report
from voicebridge_dev.local.lambda_ import InvocationRecord, InvocationStatus, InvocationType, KeptInvocation
from voicebridge_dev.simulator.load import LoadRun, load_figures, load_table, table_figures

TRACEBACK = 'Traceback (most recent call last):\n  File "converse.py", line 41\nValueError: boom'


def record(
    status: InvocationStatus = InvocationStatus.OK,
    error: dict[str, str] | None = None,
    *,
    duration_ms: float = 1000.0,
    kind: InvocationType = InvocationType.REQUEST_RESPONSE,
) -> InvocationRecord:
    return InvocationRecord(
        request_id="r-1",
        function="ConverseFunction",
        invocation_type=kind,
        started=0.0,
        finished=duration_ms / 1000,
        duration_ms=duration_ms,
        status=status,
        error=error,
        logs=f"START RequestId: r-1\n{TRACEBACK}\nEND RequestId: r-1\n",
        container=1,
    )


def answer(**values: str) -> bytes:
    return json.dumps(values).encode()


def test_an_invocation_that_answered_the_flow_an_error_is_kept() -> None:
    assert failed_invocation(record(), answer(Result="Error", ErrorCode="InternalError"))
    assert not failed_invocation(record(), answer(Result="Speak", PromptUri="s3://b/k.wav"))
    assert not failed_invocation(record(), b"not json")


def test_an_invocation_that_failed_in_lambda_is_kept_whatever_it_answered() -> None:
    timed_out = record(InvocationStatus.TIMEOUT, {"errorType": "Sandbox.Timedout", "errorMessage": "after 8 s"})
    assert failed_invocation(timed_out, b"")
    assert failed_report(KeptInvocation(timed_out, b"")).error == "Sandbox.Timedout: after 8 s"


def test_an_answer_later_than_connect_waits_is_kept_as_late_whatever_it_said() -> None:
    late = record(duration_ms=8100.0)
    assert failed_invocation(late, answer(Result="Timeout"))
    assert failed_report(KeptInvocation(late, answer(Result="Timeout"))).error.startswith("late: answered 8100 ms")
    assert not failed_invocation(record(duration_ms=7900.0), answer(Result="Timeout"))
    # The consumer, invoked as an Event for the whole call, waits on no one.
    assert not failed_invocation(record(duration_ms=90_000.0, kind=InvocationType.EVENT), answer())


def test_the_report_names_the_error_and_ends_with_the_log_where_the_traceback_is() -> None:
    kept = KeptInvocation(record(), answer(Result="Error", ErrorCode="InternalError", ErrorMessage="unexpected"))
    run = LoadRun(results=(), wall_s=1.0, failed=(failed_report(kept),))

    (failed,) = load_figures(run)["failed_invocations"]
    assert (failed["function"], failed["error"]) == ("ConverseFunction", "InternalError: unexpected")
    assert "ValueError: boom" in failed["log_tail"]
    assert "ValueError: boom" in load_table(load_figures(run))


def test_table_reads_are_counted_per_call_minute_apart_from_writes() -> None:
    figures = table_figures({"GetItem reply": 50, "GetItem checkpoint": 10, "Query": 4, "UpdateItem": 16}, 2.0)
    assert (figures["reads"], figures["writes"]) == (64, 16)
    assert (figures["reads_per_call_minute"], figures["writes_per_call_minute"]) == (32.0, 8.0)
    assert figures["per_call_minute"]["GetItem reply"] == 25.0

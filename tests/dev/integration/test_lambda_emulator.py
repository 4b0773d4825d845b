"""The Lambda Invoke emulator, driven by unmodified boto3 over loopback HTTP.

The functions are declared in small templates written for each test module and run the handlers of
``tests.fixtures.lambda_handlers``, so these tests depend on nothing of the product's own handlers.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.config import Config

from tests.fixtures import ROOT
from voicebridge_dev.local.lambda_ import Fault, FaultKind, InvocationStatus, InvocationType, LambdaEmulator
from voicebridge_dev.template import LOCAL_ACCOUNT, Resolver, load_template, local_physical_id

pytestmark = pytest.mark.timeout(30)

REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


# --- helpers -----------------------------------------------------------------------------------------


def function(handler: str, **properties: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::Serverless::Function",
        "Properties": {"Handler": f"tests.fixtures.lambda_handlers.{handler}", **properties},
    }


def write_template(directory: Path, resources: dict[str, Any]) -> Path:
    """A SAM template whose code root is the repository, so containers import ``tests.fixtures.lambda_handlers``."""
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Parameters": {"Greeting": {"Type": "String", "Default": "hello"}},
        "Globals": {
            "Function": {
                "Runtime": "python3.13",
                "CodeUri": str(ROOT),
                "Timeout": 5,
                "MemorySize": 256,
                "Environment": {"Variables": {"STAGE": "template", "GREETING": {"Ref": "Greeting"}}},
            }
        },
        "Resources": resources,
    }
    path = directory / "template.yaml"
    path.write_text(yaml.safe_dump(template), encoding="utf-8")
    return path


def lambda_client(emulator: LambdaEmulator) -> Any:
    return boto3.client(
        "lambda",
        endpoint_url=emulator.url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}, connect_timeout=5, read_timeout=20),
    )


def invoke(client: Any, name: str, event: Any = None, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    """The decoded payload (None when empty) and the whole answer."""
    answer = client.invoke(FunctionName=name, Payload=json.dumps({} if event is None else event), **kwargs)
    body = answer["Payload"].read()
    return (json.loads(body) if body else None), answer


def wait_for_file(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} did not appear within {timeout} s")
        time.sleep(0.02)


def record_of(emulator: LambdaEmulator, request_id: str) -> Any:
    (record,) = [r for r in emulator.invocations if r.request_id == request_id]
    return record


RESOURCES: dict[str, Any] = {
    "TurnTable": {"Type": "AWS::DynamoDB::Table"},
    "EchoFunction": function("echo"),
    "FailFunction": function("fail"),
    "CrashFunction": function("crash"),
    "UnserialisableFunction": function("unserialisable"),
    "MissingHandlerFunction": function("no_such_handler"),
    "SleepFunction": function("sleep", Timeout=1),
    "ParallelFunction": function("sleep"),
    "CountFunction": function("count"),
    "ContextFunction": function("describe_context", Timeout=7, MemorySize=512),
    "EnvFunction": function(
        "environment",
        Timeout=6,
        Environment={"Variables": {"TABLE_NAME": {"Ref": "TurnTable"}, "STAGE": "function"}},
    ),
    "LogFunction": function("log"),
    "RecordFunction": function("record"),
    "KeepFunction": function("keep"),
    "DoomedFunction": function(
        "doomed",
        EventInvokeConfig={
            "MaximumRetryAttempts": 0,
            "DestinationConfig": {
                "OnFailure": {"Type": "Lambda", "Destination": {"Fn::GetAtt": ["KeepFunction", "Arn"]}}
            },
        },
    ),
    "RelayFunction": function("relay"),
    "ContinueFunction": function("continue_later"),
    "UnresolvableFunction": function("echo", Environment={"Variables": {"MODE": {"Ref": "NoSuchParameter"}}}),
}


@pytest.fixture(scope="module")
def template_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_template(tmp_path_factory.mktemp("lambda-template"), RESOURCES)


@pytest.fixture(scope="module")
def emulator(template_path: Path) -> Iterator[LambdaEmulator]:
    env = {**CREDENTIALS, "STAGE": "local"}
    with LambdaEmulator(template_path, parameters={"Greeting": "bonjour"}, env=env, concurrency=2) as emu:
        yield emu


@pytest.fixture(scope="module")
def client(emulator: LambdaEmulator) -> Any:
    return lambda_client(emulator)


# --- synchronous invocations -------------------------------------------------------------------------


def test_request_response_answers_200_with_the_handler_result(client: Any) -> None:
    payload, answer = invoke(client, "EchoFunction", {"Text": "Hello", "n": [1, 2]})

    assert answer["StatusCode"] == 200
    assert payload == {"Text": "Hello", "n": [1, 2]}
    assert "FunctionError" not in answer
    assert answer["ExecutedVersion"] == "$LATEST"


def test_an_empty_payload_reaches_the_handler_as_an_empty_object(client: Any) -> None:
    answer = client.invoke(FunctionName="EchoFunction")

    assert json.loads(answer["Payload"].read()) == {}


@pytest.mark.parametrize("form", ["logical id", "physical name", "arn", "partial arn", "arn with $LATEST"])
def test_a_function_is_found_by_each_of_its_names(client: Any, template_path: Path, form: str) -> None:
    arn = Resolver(load_template(template_path), region=REGION).arn("EchoFunction")
    name = {
        "logical id": "EchoFunction",
        "physical name": local_physical_id("EchoFunction"),
        "arn": arn,
        "partial arn": f"{LOCAL_ACCOUNT}:function:{local_physical_id('EchoFunction')}",
        "arn with $LATEST": f"{arn}:$LATEST",
    }[form]

    payload, _ = invoke(client, name, {"form": form})

    assert payload == {"form": form}


def test_qualifier_latest_is_accepted(client: Any) -> None:
    payload, _ = invoke(client, "EchoFunction", {"q": 1}, Qualifier="$LATEST")

    assert payload == {"q": 1}


def test_unknown_function_is_resource_not_found(client: Any) -> None:
    with pytest.raises(client.exceptions.ResourceNotFoundException, match="Function not found"):
        client.invoke(FunctionName="NoSuchFunction", Payload=b"{}")


def test_unknown_version_is_resource_not_found(client: Any) -> None:
    with pytest.raises(client.exceptions.ResourceNotFoundException, match=r"function:EchoFunction:7"):
        client.invoke(FunctionName="EchoFunction", Qualifier="7", Payload=b"{}")


def test_a_payload_that_is_not_json_is_invalid_request_content(client: Any) -> None:
    with pytest.raises(client.exceptions.InvalidRequestContentException):
        client.invoke(FunctionName="EchoFunction", Payload=b"{not json")


def test_a_function_whose_environment_cannot_be_resolved_answers_service_exception(client: Any) -> None:
    with pytest.raises(client.exceptions.ServiceException, match="NoSuchParameter"):
        client.invoke(FunctionName="UnresolvableFunction", Payload=b"{}")


def test_dry_run_answers_204_without_running_the_handler(client: Any, emulator: LambdaEmulator) -> None:
    before = len(emulator.invocations)

    answer = client.invoke(FunctionName="EchoFunction", InvocationType="DryRun", Payload=b"{}")

    assert answer["StatusCode"] == 204
    assert answer["Payload"].read() == b""
    assert len(emulator.invocations) == before


# --- function errors ---------------------------------------------------------------------------------


def test_handler_exception_is_an_unhandled_function_error_with_its_type_and_message(client: Any) -> None:
    payload, answer = invoke(client, "FailFunction", {"message": "card expired"})

    assert answer["StatusCode"] == 200
    assert answer["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "PaymentDeclined"
    assert payload["errorMessage"] == "card expired"
    assert any("in fail" in frame for frame in payload["stackTrace"])


def test_timeout_answers_sandbox_timedout_once_the_function_s_timeout_runs_out(client: Any) -> None:
    started = time.monotonic()
    payload, answer = invoke(client, "SleepFunction", {"seconds": 10})
    elapsed = time.monotonic() - started

    assert answer["FunctionError"] == "Unhandled"
    assert payload == {"errorMessage": "Task timed out after 1.00 seconds", "errorType": "Sandbox.Timedout"}
    assert 1.0 <= elapsed < 5.0


def test_after_a_timeout_the_next_call_succeeds_in_a_new_container(client: Any, emulator: LambdaEmulator) -> None:
    _, timed_out = invoke(client, "SleepFunction", {"seconds": 10})
    _, after = invoke(client, "SleepFunction", {"seconds": 0})

    old = record_of(emulator, timed_out["ResponseMetadata"]["RequestId"])
    new = record_of(emulator, after["ResponseMetadata"]["RequestId"])
    assert old.status is InvocationStatus.TIMEOUT
    assert new.status is InvocationStatus.OK
    assert new.container != old.container
    assert new.init_duration_ms is not None


def test_a_handler_that_exits_is_a_runtime_exit_error(client: Any) -> None:
    payload, answer = invoke(client, "CrashFunction", {"status": 3})

    assert answer["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "Runtime.ExitError"
    assert "exit status 3" in payload["errorMessage"]


def test_a_result_that_is_not_json_is_a_marshal_error(client: Any) -> None:
    payload, answer = invoke(client, "UnserialisableFunction")

    assert answer["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "Runtime.MarshalError"


def test_a_handler_missing_from_its_module_is_an_init_error(client: Any) -> None:
    payload, answer = invoke(client, "MissingHandlerFunction")

    assert answer["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "Runtime.HandlerNotFound"
    assert "no_such_handler" in payload["errorMessage"]


# --- containers --------------------------------------------------------------------------------------


def test_a_warm_container_keeps_module_state_between_invocations(client: Any) -> None:
    counts = [invoke(client, "CountFunction")[0] for _ in range(3)]

    assert [c["count"] for c in counts] == [1, 2, 3]
    assert len({c["pid"] for c in counts}) == 1


def test_concurrent_invocations_run_in_separate_containers(client: Any) -> None:
    results: list[Any] = []

    def call() -> None:
        results.append(invoke(client, "ParallelFunction", {"seconds": 0.5})[0])

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=15)

    assert len(results) == 2
    assert results[0]["pid"] != results[1]["pid"]


def test_the_context_counts_down_from_the_timeout_and_names_the_function(client: Any) -> None:
    payload, answer = invoke(client, "ContextFunction")

    physical = local_physical_id("ContextFunction")
    assert payload["function_name"] == physical
    assert payload["invoked_function_arn"] == f"arn:aws:lambda:{REGION}:{LOCAL_ACCOUNT}:function:{physical}"
    assert payload["memory_limit_in_mb"] == 512
    assert payload["aws_request_id"] == answer["ResponseMetadata"]["RequestId"]
    assert 6000 < payload["remaining_ms"] <= 7000


def test_the_client_context_reaches_the_handler(client: Any) -> None:
    header = base64.b64encode(json.dumps({"custom": {"caller": "flow"}}).encode()).decode()

    payload, _ = invoke(client, "ContextFunction", ClientContext=header)

    assert payload["custom"] == {"caller": "flow"}


def test_environment_is_the_template_s_plus_env_plus_lambda_s_own(
    client: Any, emulator: LambdaEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOICEBRIDGE_HOST_ONLY", "leaked")
    names = [
        "GREETING",
        "TABLE_NAME",
        "STAGE",
        "AWS_LAMBDA_FUNCTION_NAME",
        "AWS_REGION",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        "AWS_LAMBDA_FUNCTION_TIMEOUT",
        "AWS_ENDPOINT_URL_LAMBDA",
        "AWS_ACCESS_KEY_ID",
        "VOICEBRIDGE_HOST_ONLY",
    ]

    payload, _ = invoke(client, "EnvFunction", {"names": names})

    assert payload == {
        "GREETING": "bonjour",
        "TABLE_NAME": local_physical_id("TurnTable"),
        "STAGE": "local",
        "AWS_LAMBDA_FUNCTION_NAME": local_physical_id("EnvFunction"),
        "AWS_REGION": REGION,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_TIMEOUT": "6",
        "AWS_ENDPOINT_URL_LAMBDA": emulator.url,
        "AWS_ACCESS_KEY_ID": "testing",
        "VOICEBRIDGE_HOST_ONLY": None,
    }


# --- asynchronous invocations ------------------------------------------------------------------------


def test_event_answers_202_at_once_and_runs_the_handler_in_the_background(
    client: Any, emulator: LambdaEmulator, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.txt"

    answer = client.invoke(
        FunctionName="RecordFunction",
        InvocationType="Event",
        Payload=json.dumps({"path": str(trace), "text": "ran"}),
    )

    assert answer["StatusCode"] == 202
    assert answer["Payload"].read() == b""
    assert emulator.wait_for_idle(10)
    assert trace.read_text() == "ran\n"
    record = record_of(emulator, answer["ResponseMetadata"]["RequestId"])
    assert record.invocation_type is InvocationType.EVENT
    assert record.status is InvocationStatus.OK


def test_wait_for_idle_is_false_while_an_event_is_still_running(client: Any, emulator: LambdaEmulator) -> None:
    client.invoke(FunctionName="ParallelFunction", InvocationType="Event", Payload=json.dumps({"seconds": 1}))

    assert not emulator.wait_for_idle(0.1)
    assert emulator.wait_for_idle(10)


def test_a_failed_event_is_recorded_with_its_error(client: Any, emulator: LambdaEmulator) -> None:
    answer = client.invoke(FunctionName="FailFunction", InvocationType="Event", Payload=b'{"message": "later"}')

    assert emulator.wait_for_idle(10)
    record = record_of(emulator, answer["ResponseMetadata"]["RequestId"])
    assert record.status is InvocationStatus.ERROR
    assert record.error == {"errorType": "PaymentDeclined", "errorMessage": "later"}


def test_a_failed_event_sends_its_invocation_record_to_the_on_failure_destination(
    client: Any, emulator: LambdaEmulator, tmp_path: Path
) -> None:
    kept = tmp_path / "kept.json"
    event = {"path": str(kept), "ContactId": "c-1", "Generation": 2}

    failed = client.invoke(FunctionName="DoomedFunction", InvocationType="Event", Payload=json.dumps(event))
    succeeded = client.invoke(
        FunctionName="KeepFunction", InvocationType="Event", Payload=json.dumps({"path": str(kept)})
    )

    assert emulator.wait_for_idle(20)
    records = [json.loads(line) for line in kept.read_text().splitlines()]
    # KeepFunction's own event, then the record of DoomedFunction's failure, which only that one produced.
    (record,) = [r for r in records if "requestContext" in r]
    assert record["requestContext"]["requestId"] == failed["ResponseMetadata"]["RequestId"]
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["functionArn"].endswith(":function:voicebridge-local-doomed-function:$LATEST")
    assert record["requestPayload"] == event
    assert record["responseContext"] == {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"}
    assert record["responsePayload"]["errorType"] == "PaymentDeclined"
    assert succeeded["StatusCode"] == 202 and len(records) == 2


def test_a_handler_invokes_another_function_asynchronously(
    client: Any, emulator: LambdaEmulator, tmp_path: Path
) -> None:
    trace = tmp_path / "relayed.txt"

    payload, _ = invoke(
        client,
        "RelayFunction",
        {"target": "RecordFunction", "payload": {"path": str(trace), "text": "relayed"}},
    )

    assert payload == {"StatusCode": 202}
    assert emulator.wait_for_idle(10)
    assert trace.read_text() == "relayed\n"


def test_a_function_reinvoking_itself_continues_until_its_work_is_done(
    client: Any, emulator: LambdaEmulator, tmp_path: Path
) -> None:
    trace = tmp_path / "steps.txt"

    client.invoke(
        FunctionName="ContinueFunction",
        InvocationType="Event",
        Payload=json.dumps({"path": str(trace), "step": 1, "last": 3}),
    )

    assert emulator.wait_for_idle(20)
    assert trace.read_text().splitlines() == ["step 1", "step 2", "step 3"]


# --- logs --------------------------------------------------------------------------------------------


def test_log_type_tail_returns_the_invocation_log(client: Any) -> None:
    _, answer = invoke(client, "LogFunction", {"stdout": "to stdout", "stderr": "to stderr"}, LogType="Tail")

    log = base64.b64decode(answer["LogResult"]).decode()
    request_id = answer["ResponseMetadata"]["RequestId"]
    lines = log.splitlines()
    assert lines[lines.index(f"START RequestId: {request_id} Version: $LATEST") + 1 :][:3] == [
        "to stdout",
        "to stderr",
        f"END RequestId: {request_id}",
    ]
    assert lines[-1].startswith(f"REPORT RequestId: {request_id}\tDuration: ")


def test_each_invocation_reports_its_peak_memory_and_the_cpu_time_it_used(tmp_path: Path) -> None:
    template = write_template(tmp_path, {"BurnFunction": function("burn", MemorySize=256)})
    with LambdaEmulator(template, env=CREDENTIALS) as emu:
        _, answer = invoke(lambda_client(emu), "BurnFunction", {"cpu_ms": 300}, LogType="Tail")
        (record,) = emu.invocations

    report = base64.b64decode(answer["LogResult"]).decode().splitlines()[-1]
    fields = dict(field.split(": ", 1) for field in report.split("\t")[1:])
    assert record.cpu_ms is not None and record.cpu_ms >= 300
    assert fields["CPU Time (emulator)"] == f"{record.cpu_ms:.1f} ms"
    assert record.max_memory_mb is not None and fields["Max Memory Used"] == f"{record.max_memory_mb} MB"
    assert fields["Memory Size"] == "256 MB"


def test_without_log_type_tail_no_log_is_returned(client: Any) -> None:
    _, answer = invoke(client, "LogFunction", {"stdout": "a", "stderr": "b"})

    assert "LogResult" not in answer


def test_the_log_of_a_failed_invocation_holds_the_error(client: Any) -> None:
    _, answer = invoke(client, "FailFunction", {"message": "no funds"}, LogType="Tail")

    assert "[ERROR] PaymentDeclined: no funds" in base64.b64decode(answer["LogResult"]).decode()


def test_handler_output_is_kept_in_the_record_and_forwarded_to_the_logger(
    client: Any, emulator: LambdaEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="voicebridge_dev.local.lambda_"):
        _, answer = invoke(client, "LogFunction", {"stdout": "forward me", "stderr": "me too"})

    assert "forward me\nme too\n" in record_of(emulator, answer["ResponseMetadata"]["RequestId"]).logs
    forwarded = [r.getMessage() for r in caplog.records if r.name == "voicebridge_dev.local.lambda_.LogFunction"]
    assert {"forward me", "me too"} <= set(forwarded)


def test_the_invocations_a_caller_picks_are_kept_with_their_logs_and_answers(
    client: Any, emulator: LambdaEmulator
) -> None:
    # A long run outgrows the bounded record log: what it must explain later is kept apart, however many follow.
    emulator.keep(lambda record, answer: record.status is not InvocationStatus.OK or b"keep me" in answer)
    _, failed = invoke(client, "FailFunction", {"message": "no funds"})
    _, picked = invoke(client, "EchoFunction", {"say": "keep me"})
    invoke(client, "EchoFunction", {"say": "forget me"})

    kept = {k.record.request_id: k for k in emulator.kept}
    failure = kept[failed["ResponseMetadata"]["RequestId"]]
    assert failure.record.status is InvocationStatus.ERROR
    assert "[ERROR] PaymentDeclined: no funds" in failure.record.logs
    assert json.loads(kept[picked["ResponseMetadata"]["RequestId"]].answer) == {"say": "keep me"}
    assert not any(b"forget me" in k.answer for k in kept.values())


def test_the_invocations_endpoint_lists_finished_invocations(client: Any, emulator: LambdaEmulator) -> None:
    _, answer = invoke(client, "EchoFunction", {"listed": True})
    request_id = answer["ResponseMetadata"]["RequestId"]

    with urllib.request.urlopen(f"{emulator.url}/_emulator/invocations", timeout=5) as response:
        listed = json.load(response)["invocations"]

    (record,) = [r for r in listed if r["request_id"] == request_id]
    assert record["function"] == "EchoFunction"
    assert record["invocation_type"] == "RequestResponse"
    assert record["status"] == "ok"
    assert record["finished"] >= record["started"]
    assert f"START RequestId: {request_id}" in record["logs"]


# --- injected faults ---------------------------------------------------------------------------------


@pytest.fixture
def faults(emulator: LambdaEmulator) -> Iterator[LambdaEmulator]:
    """The module's emulator, its faults cleared after the test."""
    yield emulator
    emulator.clear_faults()


@pytest.fixture
def once(emulator: LambdaEmulator) -> Any:
    """A client that makes each call once: boto3 would retry a throttled or failed one."""
    return boto3.client(
        "lambda",
        endpoint_url=emulator.url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=20),
    )


def post_faults(emulator: LambdaEmulator, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(f"{emulator.url}/_emulator/faults", data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status), json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_a_throttle_fault_refuses_the_next_invocations_without_running_them(once: Any, faults: LambdaEmulator) -> None:
    faults.inject(Fault(FaultKind.THROTTLE, count=2))
    before = len(faults.invocations)

    for _ in range(2):
        with pytest.raises(once.exceptions.TooManyRequestsException):
            invoke(once, "EchoFunction", {"n": 1})

    assert len(faults.invocations) == before
    assert invoke(once, "EchoFunction", {"n": 2})[0] == {"n": 2}


def test_a_service_error_fault_answers_service_exception(once: Any, faults: LambdaEmulator) -> None:
    faults.inject(Fault(FaultKind.SERVICE_ERROR, message="Lambda is having a bad day"))

    with pytest.raises(once.exceptions.ServiceException, match="bad day"):
        invoke(once, "EchoFunction")


def test_a_fault_strikes_event_invocations_too(once: Any, faults: LambdaEmulator) -> None:
    faults.inject(Fault(FaultKind.THROTTLE))

    with pytest.raises(once.exceptions.TooManyRequestsException):
        invoke(once, "EchoFunction", InvocationType="Event")


def test_a_fault_for_another_function_leaves_this_one_alone(once: Any, faults: LambdaEmulator) -> None:
    faults.inject(Fault(FaultKind.THROTTLE, function="CountFunction"))

    assert invoke(once, "EchoFunction", {"spared": True})[0] == {"spared": True}
    assert faults.pending_faults == [Fault(FaultKind.THROTTLE, function="CountFunction")]


def test_refused_and_dry_run_requests_do_not_consume_faults(once: Any, faults: LambdaEmulator) -> None:
    faults.inject(Fault(FaultKind.THROTTLE))

    with pytest.raises(once.exceptions.ResourceNotFoundException):
        invoke(once, "NoSuchFunction")
    once.invoke(FunctionName="EchoFunction", InvocationType="DryRun")

    assert faults.pending_faults == [Fault(FaultKind.THROTTLE)]


def test_faults_are_injected_listed_and_cleared_over_http(faults: LambdaEmulator) -> None:
    status, answer = post_faults(faults, [{"kind": "throttle", "count": 2}, {"kind": "service_error"}])

    assert status == 201
    assert [(fault["kind"], fault["count"]) for fault in answer["pending"]] == [("throttle", 2), ("service_error", 1)]
    request = urllib.request.Request(f"{faults.url}/_emulator/faults", method="DELETE")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert json.load(response) == {"cleared": 3}
    assert faults.pending_faults == []


def test_a_malformed_fault_is_refused_over_http(faults: LambdaEmulator) -> None:
    status, answer = post_faults(faults, {"kind": "meteor"})

    assert status == 400
    assert "meteor" in answer["message"]
    assert faults.pending_faults == []


# --- concurrency limit and shutdown ------------------------------------------------------------------


def test_a_synchronous_call_beyond_the_concurrency_is_throttled(tmp_path: Path) -> None:
    template = write_template(tmp_path, {"SleepFunction": function("sleep")})
    started = tmp_path / "started"
    with LambdaEmulator(template, env=CREDENTIALS, concurrency=1) as emu:
        client = lambda_client(emu)
        release = tmp_path / "release"
        busy = threading.Thread(
            target=invoke,
            args=(client, "SleepFunction", {"seconds": 30, "started": str(started), "release": str(release)}),
        )
        busy.start()
        wait_for_file(started)

        with pytest.raises(client.exceptions.TooManyRequestsException):
            client.invoke(FunctionName="SleepFunction", Payload=json.dumps({"seconds": 0}))
        release.touch()
        busy.join(timeout=30)


def test_a_functions_reserved_concurrency_from_the_template_is_its_limit(tmp_path: Path) -> None:
    template = write_template(tmp_path, {"SleepFunction": function("sleep", ReservedConcurrentExecutions=1)})
    started = tmp_path / "started"
    with LambdaEmulator(template, env=CREDENTIALS, concurrency=8) as emu:
        client = lambda_client(emu)
        release = tmp_path / "release"
        busy = threading.Thread(
            target=invoke,
            args=(client, "SleepFunction", {"seconds": 30, "started": str(started), "release": str(release)}),
        )
        busy.start()
        wait_for_file(started)

        with pytest.raises(client.exceptions.TooManyRequestsException):
            client.invoke(FunctionName="SleepFunction", Payload=json.dumps({"seconds": 0}))
        release.touch()
        busy.join(timeout=30)


def test_without_a_reservation_a_dozen_calls_run_at_once(tmp_path: Path) -> None:
    from voicebridge_dev.local.lambda_.emulator import DEFAULT_CONCURRENCY

    template = write_template(tmp_path, {"SleepFunction": function("sleep")})
    with LambdaEmulator(template, env=CREDENTIALS) as emu:
        client = lambda_client(emu)
        answers: list[Any] = []
        calls = [
            threading.Thread(target=lambda: answers.append(invoke(client, "SleepFunction", {"seconds": 0.5})))
            for _ in range(DEFAULT_CONCURRENCY)
        ]
        for call in calls:
            call.start()
        for call in calls:
            call.join(timeout=30)
    assert len(answers) == DEFAULT_CONCURRENCY


def test_stop_ends_a_running_handler_promptly_and_records_it_cancelled(tmp_path: Path) -> None:
    template = write_template(tmp_path, {"SleepFunction": function("sleep", Timeout=60)})
    started = tmp_path / "started"
    emu = LambdaEmulator(template, env=CREDENTIALS).start()
    try:
        client = lambda_client(emu)
        client.invoke(
            FunctionName="SleepFunction",
            InvocationType="Event",
            Payload=json.dumps({"seconds": 30, "started": str(started)}),
        )
        wait_for_file(started)
    finally:
        began = time.monotonic()
        emu.stop()
        stopped_in = time.monotonic() - began

    assert stopped_in < 5.0
    assert [r.status for r in emu.invocations] == [InvocationStatus.CANCELLED]


def test_stop_kills_every_container_process(tmp_path: Path) -> None:
    template = write_template(tmp_path, {"CountFunction": function("count")})
    with LambdaEmulator(template, env=CREDENTIALS) as emu:
        pid = invoke(lambda_client(emu), "CountFunction")[0]["pid"]

    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)

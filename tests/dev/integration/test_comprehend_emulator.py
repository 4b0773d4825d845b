"""The Comprehend emulator, driven by an unmodified boto3 ``comprehend`` client over loopback HTTP: botocore
serialises the requests and parses the answers and errors, so every assertion is about what a real client sees.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ParamValidationError, ReadTimeoutError

from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.comprehend import LABEL, ComprehendEmulator, Fault, FaultKind
from voicebridge_dev.local.processes import ProcessCloud

pytestmark = pytest.mark.timeout(60)

REGION = "us-east-1"
CARD = "4111 1111 1111 1111"


@pytest.fixture
def emulator() -> Iterator[ComprehendEmulator]:
    with ComprehendEmulator(requests_per_second=None) as emu:
        yield emu
        emu.stopping.set()
        assert emu.wait_idle(5)


def comprehend(url: str, **config: Any) -> Any:
    return boto3.client(
        "comprehend",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(**{"retries": {"total_max_attempts": 1}, "read_timeout": 10, **config}),
    )


def entities(emulator: ComprehendEmulator, text: str, language: str = "en") -> list[dict[str, Any]]:
    return cast(
        "list[dict[str, Any]]",
        comprehend(emulator.url).detect_pii_entities(Text=text, LanguageCode=language)["Entities"],
    )


def refusal(client: Any, text: str = "hello", language: str = "en") -> dict[str, Any]:
    """The error botocore raises, with the HTTP status it read."""
    with pytest.raises(ClientError) as caught:
        client.detect_pii_entities(Text=text, LanguageCode=language)
    response = caught.value.response
    return {**response["Error"], "status": response["ResponseMetadata"]["HTTPStatusCode"]}


def post(emulator: ComprehendEmulator, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any, Any]:
    """A raw request: its status, decoded body and headers."""
    request = urllib.request.Request(
        f"{emulator.url}{path}", data=json.dumps(body).encode(), method="POST", headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.load(answer), answer.headers
    except urllib.error.HTTPError as error:
        return error.code, json.load(error), error.headers


def control(emulator: ComprehendEmulator, method: str, route: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{emulator.url}/_emulator/{route}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


# --- entities ----------------------------------------------------------------------------------------


def test_a_card_number_and_its_expiry_come_back_as_entities_with_offsets_into_the_text(
    emulator: ComprehendEmulator,
) -> None:
    text = f"My card number is {CARD}, expiry 04/29"
    found = entities(emulator, text)
    assert [(e["Type"], text[e["BeginOffset"] : e["EndOffset"]]) for e in found] == [
        ("CREDIT_DEBIT_NUMBER", CARD),
        ("CREDIT_DEBIT_EXPIRY", "04/29"),
    ]
    assert all(isinstance(e["Score"], float) and 0 <= e["Score"] <= 1 for e in found)


def test_offsets_are_code_points_after_text_outside_ascii(emulator: ComprehendEmulator) -> None:
    text = "¿Mi número? 🙂 Es 4111-1111-1111-1111, y mi correo es josé@example.com"
    found = entities(emulator, text, "es")
    assert [text[e["BeginOffset"] : e["EndOffset"]] for e in found] == ["4111-1111-1111-1111", "josé@example.com"]


def test_text_with_nothing_personal_has_no_entities(emulator: ComprehendEmulator) -> None:
    assert entities(emulator, "I'd like to check my balance, please.") == []


def test_contains_pii_entities_labels_each_type_found_once(emulator: ComprehendEmulator) -> None:
    client = comprehend(emulator.url)
    text = f"{CARD} and 4012 8888 8888 1881, or call 212-555-0100"
    labels = client.contains_pii_entities(Text=text, LanguageCode="en")["Labels"]
    assert [label["Name"] for label in labels] == ["CREDIT_DEBIT_NUMBER", "PHONE"]


def test_the_answer_is_json_1_1_with_a_request_id(emulator: ComprehendEmulator) -> None:
    status, body, headers = post(
        emulator,
        "/",
        {"Text": CARD, "LanguageCode": "en"},
        {"X-Amz-Target": "Comprehend_20171127.DetectPiiEntities", "Content-Type": "application/x-amz-json-1.1"},
    )
    assert status == 200 and body["Entities"][0]["Type"] == "CREDIT_DEBIT_NUMBER"
    assert headers["Content-Type"] == "application/x-amz-json-1.1" and headers["x-amzn-RequestId"]


# --- limits and errors as botocore raises them ---------------------------------------------------------


@pytest.mark.parametrize("language", ["fr", "de", "zh-TW"])
def test_a_language_detect_pii_entities_does_not_take_is_a_validation_exception(
    emulator: ComprehendEmulator, language: str
) -> None:
    error = refusal(comprehend(emulator.url), language=language)
    assert (error["Code"], error["status"]) == ("ValidationException", 400)
    assert error["Message"].endswith("Member must satisfy enum value set: [en, es]")


def test_contains_pii_entities_takes_english_only(emulator: ComprehendEmulator) -> None:
    with pytest.raises(ClientError) as caught:
        comprehend(emulator.url).contains_pii_entities(Text="hola", LanguageCode="es")
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def test_text_over_100000_bytes_of_utf8_is_refused_in_the_services_words(emulator: ComprehendEmulator) -> None:
    client = comprehend(emulator.url)
    assert client.detect_pii_entities(Text="ñ" * 50_000, LanguageCode="en")["Entities"] == []
    error = refusal(client, text="ñ" * 50_000 + ".")
    assert (error["Code"], error["status"]) == ("TextSizeLimitExceededException", 400)
    assert error["Message"] == (
        "Input text size exceeds limit. Max length of request text allowed is 100000 bytes while in this request "
        "the text size is 100001 bytes"
    )


def test_an_empty_text_is_refused_by_botocore_before_sending_and_by_the_service_after(
    emulator: ComprehendEmulator,
) -> None:
    with pytest.raises(ParamValidationError):
        comprehend(emulator.url).detect_pii_entities(Text="", LanguageCode="en")
    status, body, _ = post(
        emulator, "/", {"Text": "", "LanguageCode": "en"}, {"X-Amz-Target": "Comprehend_20171127.DetectPiiEntities"}
    )
    assert status == 400 and body["__type"] == "ValidationException"
    assert "Member must have length greater than or equal to 1" in body["message"]


def test_text_with_no_utf8_form_is_an_invalid_request_with_its_reason(emulator: ComprehendEmulator) -> None:
    with pytest.raises(ClientError) as caught:
        comprehend(emulator.url).detect_pii_entities(Text="card \ud800", LanguageCode="en")
    assert caught.value.response["Error"]["Code"] == "InvalidRequestException"
    # botocore adds the modelled error's members beside "Error".
    assert cast("dict[str, Any]", caught.value.response)["Reason"] == "INVALID_DOCUMENT"


def test_an_operation_it_does_not_serve_is_an_unknown_operation(emulator: ComprehendEmulator) -> None:
    with pytest.raises(ClientError) as caught:
        comprehend(emulator.url).detect_entities(Text="hello", LanguageCode="en")
    assert caught.value.response["Error"]["Code"] == "UnknownOperationException"
    status, body, _ = post(emulator, "/", {"Text": "x", "LanguageCode": "en"}, {})
    assert (status, body["__type"]) == (400, "UnknownOperationException")
    assert emulator.invocations == []


# --- the quota ---------------------------------------------------------------------------------------


def test_calls_beyond_the_quota_are_throttled_until_a_second_has_passed() -> None:
    with ComprehendEmulator(requests_per_second=2) as emu:
        client = comprehend(emu.url)
        client.detect_pii_entities(Text="one", LanguageCode="en")
        client.detect_pii_entities(Text="two", LanguageCode="en")
        error = refusal(client, text="three")
        assert (error["Code"], error["status"]) == ("TooManyRequestsException", 429)
        # The quota is an operation's own: ContainsPiiEntities still has its two.
        client.contains_pii_entities(Text="four", LanguageCode="en")
        time.sleep(1.05)
        client.detect_pii_entities(Text="five", LanguageCode="en")
        assert [r.outcome for r in emu.invocations] == ["ok", "ok", "throttled", "ok", "ok"]
        # A throttled call's text is recorded all the same: it was sent.
        assert emu.invocations[2].text == "three"


def test_the_quota_is_set_and_lifted_over_http() -> None:
    with ComprehendEmulator() as emu:
        assert control(emu, "GET", "config") == (200, {"requests_per_second": 20})
        assert control(emu, "POST", "config", {"requests_per_second": 1}) == (200, {"requests_per_second": 1})
        client = comprehend(emu.url)
        client.detect_pii_entities(Text="one", LanguageCode="en")
        assert refusal(client)["Code"] == "TooManyRequestsException"
        assert control(emu, "POST", "config", {"requests_per_second": None})[0] == 200
        for _ in range(30):
            client.detect_pii_entities(Text="again", LanguageCode="en")
        status, answer = control(emu, "POST", "config", {"requests_per_second": 0})
        assert status == 400 and "positive integer" in answer["message"]
        assert control(emu, "POST", "config", {"rate": 3})[0] == 400


def test_boto3_retries_a_throttled_call(emulator: ComprehendEmulator) -> None:
    emulator.inject(Fault(FaultKind.THROTTLE))
    client = comprehend(emulator.url, retries={"max_attempts": 3, "mode": "standard"})
    assert client.detect_pii_entities(Text=CARD, LanguageCode="en")["Entities"][0]["Type"] == "CREDIT_DEBIT_NUMBER"
    assert [r.outcome for r in emulator.invocations] == ["fault_throttle", "ok"]


# --- faults ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "code", "status"),
    [(FaultKind.THROTTLE, "TooManyRequestsException", 429), (FaultKind.INTERNAL_ERROR, "InternalServerException", 500)],
)
def test_an_injected_error_is_answered_as_comprehend_answers_it(
    emulator: ComprehendEmulator, kind: FaultKind, code: str, status: int
) -> None:
    emulator.inject(Fault(kind))
    error = refusal(comprehend(emulator.url))
    assert (error["Code"], error["status"]) == (code, status)
    assert entities(emulator, CARD)[0]["Type"] == "CREDIT_DEBIT_NUMBER"
    assert [r.outcome for r in emulator.invocations] == [f"fault_{kind.value}", "ok"]


def test_a_stall_longer_than_the_clients_read_timeout_times_it_out(emulator: ComprehendEmulator) -> None:
    emulator.inject(Fault(FaultKind.STALL, seconds=1.0))
    with pytest.raises(ReadTimeoutError):
        comprehend(emulator.url, read_timeout=0.3).detect_pii_entities(Text=CARD, LanguageCode="en")
    assert emulator.wait_idle(5)
    assert emulator.invocations[0].fault == "stall"


def test_a_dropped_connection_gets_no_answer(emulator: ComprehendEmulator) -> None:
    emulator.inject(Fault(FaultKind.DROP))
    with pytest.raises(ConnectionClosedError):
        entities(emulator, CARD)
    assert [r.outcome for r in emulator.invocations] == ["fault_drop"]


def test_a_refused_request_takes_no_count_of_a_fault(emulator: ComprehendEmulator) -> None:
    emulator.inject(Fault(FaultKind.INTERNAL_ERROR))
    assert refusal(comprehend(emulator.url), language="fr")["Code"] == "ValidationException"
    assert [fault.count for fault in emulator.pending_faults] == [1]


def test_faults_are_injected_listed_and_cleared_over_http(emulator: ComprehendEmulator) -> None:
    status, answer = control(emulator, "POST", "faults", [{"kind": "throttle", "count": 2}, {"kind": "stall"}])
    assert status == 201 and [f["kind"] for f in answer["pending"]] == ["throttle", "stall"]
    assert control(emulator, "DELETE", "faults") == (200, {"cleared": 3})
    status, answer = control(emulator, "POST", "faults", {"kind": "dependency_failed"})
    assert status == 400 and "unknown fault kind" in answer["message"]


# --- records -----------------------------------------------------------------------------------------


def test_each_call_is_recorded_with_the_text_it_sent_and_what_was_found(emulator: ComprehendEmulator) -> None:
    entities(emulator, f"card {CARD}")
    refusal(comprehend(emulator.url), text="bonjour", language="fr")
    status, answer = control(emulator, "GET", "invocations")
    assert status == 200 and answer["emulator"] == LABEL
    first, second = answer["invocations"]
    assert (first["operation"], first["text"], first["language_code"]) == (
        "DetectPiiEntities",
        f"card {CARD}",
        "en",
    )
    assert first["answer"]["Entities"][0]["BeginOffset"] == 5
    assert (second["text"], second["error_type"], second["answer"]) == ("bonjour", "ValidationException", None)
    assert emulator.invocations[0].entity_types == ["CREDIT_DEBIT_NUMBER"]


# --- in the local cloud ------------------------------------------------------------------------------


def test_the_local_cloud_exports_reach_it_with_a_plain_client_and_inject_its_faults(cloud_env: LocalCloud) -> None:
    assert os.environ["AWS_ENDPOINT_URL_COMPREHEND"] == cloud_env.comprehend.url
    client = boto3.client("comprehend", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))
    cloud_env.inject("comprehend", Fault(FaultKind.THROTTLE))
    assert refusal(client)["Code"] == "TooManyRequestsException"
    found = client.detect_pii_entities(Text="ssn 123-45-6789", LanguageCode="en")["Entities"]
    assert [entity["Type"] for entity in found] == ["SSN"]


def test_the_process_cloud_runs_it_in_a_process_of_its_own_and_injects_its_faults() -> None:
    with ProcessCloud(engine="standin", media_pace=0, lambda_concurrency=1) as cloud:
        url = cloud.env()["AWS_ENDPOINT_URL_COMPREHEND"]
        assert url == cloud.processes["comprehend"].url
        assert cloud.processes["comprehend"].facts == {"requests_per_second": 20}
        client = comprehend(url)
        cloud.inject("comprehend", Fault(FaultKind.INTERNAL_ERROR))
        assert refusal(client)["Code"] == "InternalServerException"
        assert client.detect_pii_entities(Text=CARD, LanguageCode="en")["Entities"][0]["EndOffset"] == len(CARD)
        assert cloud.cpu_seconds()["comprehend"] > 0

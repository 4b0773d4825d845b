"""The Connect emulator's contact attributes, driven by an unmodified boto3 ``connect`` client over loopback HTTP:
botocore serialises the requests and parses the answers and errors, so every assertion is about what a real client
sees."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.connect import LABEL, MAX_ATTRIBUTE_BYTES, ConnectEmulator, Fault, FaultKind
from voicebridge_dev.local.kvs import EMULATED_INSTANCE_ID
from voicebridge_dev.local.processes import RemoteEmulator, ServiceProcess

pytestmark = pytest.mark.timeout(60)

REGION = "us-east-1"
CONTACT = "7d3c0b5e-1f28-4e26-b97b-4a573372aa01"
OTHER = "0b9c2e1d-7777-4e26-b97b-4a7d3c0b5e02"
INSTANCE_ARN = f"arn:aws:connect:{REGION}:123456789012:instance/{EMULATED_INSTANCE_ID}"


@pytest.fixture
def emulator() -> Iterator[ConnectEmulator]:
    with ConnectEmulator() as emu:
        yield emu
        emu.stopping.set()
        assert emu.wait_idle(5)


def connect(url: str, **config: Any) -> Any:
    return boto3.client(
        "connect",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(**{"retries": {"total_max_attempts": 1}, "read_timeout": 10, **config}),
    )


def update(emulator: ConnectEmulator, attributes: dict[str, str], contact: str = CONTACT, **config: Any) -> Any:
    return connect(emulator.url, **config).update_contact_attributes(
        InstanceId=emulator.instance_id, InitialContactId=contact, Attributes=attributes
    )


def read(emulator: ConnectEmulator, contact: str = CONTACT, instance: str | None = None) -> dict[str, str]:
    answer = connect(emulator.url).get_contact_attributes(
        InstanceId=instance or emulator.instance_id, InitialContactId=contact
    )
    attributes: dict[str, str] = answer["Attributes"]
    return attributes


def refused(call: Any) -> dict[str, Any]:
    """The error botocore raises, with the HTTP status it read."""
    with pytest.raises(ClientError) as caught:
        call()
    response = caught.value.response
    return {**response["Error"], "Status": response["ResponseMetadata"]["HTTPStatusCode"]}


# -- UpdateContactAttributes and GetContactAttributes


def test_attributes_written_are_read_back(emulator: ConnectEmulator) -> None:
    answer = update(emulator, {"voicebridgeHandover": "Caller disputes a charge of $42", "record": "s3://b/k.json"})
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert read(emulator) == {"voicebridgeHandover": "Caller disputes a charge of $42", "record": "s3://b/k.json"}
    assert emulator.attributes(CONTACT) == read(emulator)


def test_an_update_overwrites_the_names_it_gives_and_keeps_the_others(emulator: ConnectEmulator) -> None:
    update(emulator, {"reason": "billing", "tier": "gold"})
    update(emulator, {"reason": "dispute", "queue": "disputes"})
    assert read(emulator) == {"reason": "dispute", "tier": "gold", "queue": "disputes"}


def test_an_empty_value_removes_the_attribute(emulator: ConnectEmulator) -> None:
    update(emulator, {"reason": "billing", "tier": "gold"})
    update(emulator, {"tier": ""})
    assert read(emulator) == {"reason": "billing"}


def test_each_contact_keeps_its_own_attributes(emulator: ConnectEmulator) -> None:
    update(emulator, {"reason": "billing"})
    update(emulator, {"reason": "lost card"}, contact=OTHER)
    assert (read(emulator), read(emulator, OTHER)) == ({"reason": "billing"}, {"reason": "lost card"})


def test_a_contact_with_no_attributes_reads_as_none(emulator: ConnectEmulator) -> None:
    assert read(emulator, "11111111-2222-4333-8444-555555555555") == {}


def test_an_unknown_instance_is_resource_not_found(emulator: ConnectEmulator) -> None:
    client = connect(emulator.url)
    error = refused(
        lambda: client.update_contact_attributes(
            InstanceId="00000000-0000-0000-0000-000000000000", InitialContactId=CONTACT, Attributes={"a": "b"}
        )
    )
    assert (error["Code"], error["Status"]) == ("ResourceNotFoundException", 404)
    assert emulator.attributes(CONTACT) == {}


def test_the_instance_is_named_by_its_id_not_its_arn(emulator: ConnectEmulator) -> None:
    client = connect(emulator.url)
    error = refused(
        lambda: client.update_contact_attributes(InstanceId=INSTANCE_ARN, InitialContactId=CONTACT, Attributes={})
    )
    assert error["Code"] == "ResourceNotFoundException"


def test_a_contact_id_not_shaped_as_connects_is_resource_not_found(emulator: ConnectEmulator) -> None:
    contact_arn = f"{INSTANCE_ARN}/contact/{CONTACT}"
    error = refused(lambda: update(emulator, {"a": "b"}, contact=contact_arn))
    assert (error["Code"], error["Status"]) == ("ResourceNotFoundException", 404)
    assert refused(lambda: read(emulator, "not-a-contact"))["Code"] == "ResourceNotFoundException"


def test_an_emulator_that_knows_its_contacts_refuses_any_other() -> None:
    with ConnectEmulator(known_contacts_only=True) as emu:
        emu.begin_contact(CONTACT)
        update(emu, {"reason": "billing"})
        assert refused(lambda: update(emu, {"reason": "billing"}, contact=OTHER))["Code"] == "ResourceNotFoundException"
        assert refused(lambda: read(emu, OTHER))["Code"] == "ResourceNotFoundException"
        assert read(emu) == {"reason": "billing"}


def test_a_contact_begun_over_the_control_plane_is_known() -> None:
    with ConnectEmulator(known_contacts_only=True) as emu:
        request = urllib.request.Request(
            f"{emu.url}/_emulator/contacts", data=json.dumps({"ContactId": OTHER}).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.status == 201
        update(emu, {"reason": "billing"}, contact=OTHER)
        assert emu.attributes(OTHER) == {"reason": "billing"}


@pytest.mark.parametrize("name", ["has space", "dotted.name", "colon:name", "naïve", "slash/name"])
def test_a_name_with_anything_but_letters_digits_dash_and_underscore_is_an_invalid_parameter(
    emulator: ConnectEmulator, name: str
) -> None:
    error = refused(lambda: update(emulator, {"ok_name-1": "x", name: "y"}))
    assert (error["Code"], error["Status"]) == ("InvalidParameterException", 400)
    assert error["Message"]
    assert emulator.attributes(CONTACT) == {}


def test_attributes_may_take_up_to_32768_utf8_bytes_across_the_contact(emulator: ConnectEmulator) -> None:
    assert MAX_ATTRIBUTE_BYTES == 32_768
    update(emulator, {"a": "é" * 8000})
    update(emulator, {"b": "x" * (32_768 - 1 - 16_000 - 1)})
    assert sum(len(k.encode()) + len(v.encode()) for k, v in read(emulator).items()) == 32_768


def test_an_update_taking_the_contact_over_32768_bytes_is_refused_and_changes_nothing(
    emulator: ConnectEmulator,
) -> None:
    update(emulator, {"a": "x" * 20_000})
    error = refused(lambda: update(emulator, {"b": "y" * 12_767, "c": "z"}))
    assert (error["Code"], error["Status"]) == ("InvalidParameterException", 400)
    assert read(emulator) == {"a": "x" * 20_000}


def test_members_outside_the_models_constraints_are_refused_by_the_service_too(emulator: ConnectEmulator) -> None:
    # botocore checks these before sending; a client that does not is refused by the service.
    client = connect(emulator.url, parameter_validation=False)
    too_long = client.update_contact_attributes
    assert refused(lambda: too_long(InstanceId=emulator.instance_id, InitialContactId="c" * 257, Attributes={}))[
        "Code"
    ] == ("InvalidParameterException")
    assert refused(lambda: too_long(InstanceId=emulator.instance_id, InitialContactId=CONTACT))["Code"] == (
        "InvalidParameterException"
    )
    assert refused(lambda: too_long(InstanceId=emulator.instance_id, InitialContactId=CONTACT, Attributes={"": "x"}))[
        "Code"
    ] == ("InvalidParameterException")


def test_members_of_the_wrong_type_are_a_serialization_exception(emulator: ConnectEmulator) -> None:
    client = connect(emulator.url, parameter_validation=False)
    error = refused(
        lambda: client.update_contact_attributes(
            InstanceId=emulator.instance_id, InitialContactId=CONTACT, Attributes={"count": 3}
        )
    )
    assert (error["Code"], error["Status"]) == ("SerializationException", 400)


def test_a_body_that_is_not_json_is_a_serialization_exception(emulator: ConnectEmulator) -> None:
    request = urllib.request.Request(f"{emulator.url}/contact/attributes", data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 400
    assert caught.value.headers["x-amzn-ErrorType"] == "SerializationException"


def test_an_operation_it_does_not_serve_is_unknown(emulator: ConnectEmulator) -> None:
    request = urllib.request.Request(f"{emulator.url}/contact/stop", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert (caught.value.code, caught.value.headers["x-amzn-ErrorType"]) == (404, "UnknownOperationException")


# -- faults, records, the control plane


@pytest.mark.parametrize(
    ("kind", "code", "status"),
    [(FaultKind.THROTTLE, "ThrottlingException", 429), (FaultKind.INTERNAL_ERROR, "InternalServiceException", 500)],
)
def test_an_injected_refusal_writes_nothing(emulator: ConnectEmulator, kind: FaultKind, code: str, status: int) -> None:
    emulator.inject(Fault(kind))
    error = refused(lambda: update(emulator, {"reason": "billing"}))
    assert (error["Code"], error["Status"]) == (code, status)
    assert emulator.attributes(CONTACT) == {}
    update(emulator, {"reason": "billing"})
    assert read(emulator) == {"reason": "billing"}


def test_a_dropped_connection_writes_nothing(emulator: ConnectEmulator) -> None:
    emulator.inject(Fault(FaultKind.DROP))
    with pytest.raises(ConnectionClosedError):
        update(emulator, {"reason": "billing"})
    assert emulator.attributes(CONTACT) == {}


def test_a_stalled_answer_still_writes(emulator: ConnectEmulator) -> None:
    emulator.inject(Fault(FaultKind.STALL, seconds=0.05))
    update(emulator, {"reason": "billing"})
    assert emulator.attributes(CONTACT) == {"reason": "billing"}


def test_a_stalled_answer_is_late_but_the_attributes_are_written_at_once(emulator: ConnectEmulator) -> None:
    emulator.inject(Fault(FaultKind.STALL, seconds=60))
    with pytest.raises(ReadTimeoutError):
        update(emulator, {"reason": "billing"}, read_timeout=2)
    assert emulator.attributes(CONTACT) == {"reason": "billing"}


def test_a_request_refused_anyway_takes_no_fault(emulator: ConnectEmulator) -> None:
    emulator.inject(Fault(FaultKind.THROTTLE))
    refused(lambda: update(emulator, {"bad name": "x"}))
    assert len(emulator.pending_faults) == 1


def test_each_call_is_recorded_with_its_contact_and_outcome(emulator: ConnectEmulator) -> None:
    update(emulator, {"reason": "billing"})
    refused(lambda: update(emulator, {"bad name": "x"}))
    read(emulator)
    records = [(r.operation, r.contact_id, r.outcome, r.error_type) for r in emulator.invocations]
    assert records == [
        ("UpdateContactAttributes", CONTACT, "ok", None),
        ("UpdateContactAttributes", CONTACT, "error", "InvalidParameterException"),
        ("GetContactAttributes", CONTACT, "ok", None),
    ]
    assert emulator.invocations[0].body["Attributes"] == {"reason": "billing"}


def test_the_control_plane_lists_each_contact_with_its_attributes_and_updates(emulator: ConnectEmulator) -> None:
    update(emulator, {"reason": "billing"})
    update(emulator, {"tier": "gold"})
    with urllib.request.urlopen(f"{emulator.url}/_emulator/contacts", timeout=5) as answer:
        listing = json.loads(answer.read())
    assert listing["InstanceId"] == EMULATED_INSTANCE_ID
    [contact] = listing["Contacts"]
    assert contact["ContactId"] == CONTACT
    assert contact["Attributes"] == {"reason": "billing", "tier": "gold"}
    assert [u["Attributes"] for u in contact["Updates"]] == [{"reason": "billing"}, {"tier": "gold"}]
    with urllib.request.urlopen(f"{emulator.url}/_emulator/invocations", timeout=5) as answer:
        assert json.loads(answer.read())["emulator"] == LABEL


# -- in the local cloud


def test_the_local_cloud_exports_reach_it_with_a_plain_client_and_read_attributes_back(cloud_env: LocalCloud) -> None:
    assert os.environ["AWS_ENDPOINT_URL_CONNECT"] == cloud_env.connect.url
    client = boto3.client("connect", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))
    cloud_env.inject("connect", Fault(FaultKind.THROTTLE))
    with pytest.raises(ClientError):
        client.update_contact_attributes(
            InstanceId=EMULATED_INSTANCE_ID, InitialContactId=OTHER, Attributes={"reason": "billing"}
        )
    client.update_contact_attributes(
        InstanceId=EMULATED_INSTANCE_ID, InitialContactId=OTHER, Attributes={"reason": "billing"}
    )
    assert cloud_env.contact_attributes(OTHER) == {"reason": "billing"}


def test_a_process_of_its_own_serves_it_and_takes_faults_over_the_control_plane() -> None:
    with ServiceProcess("connect", {}) as process:
        assert process.facts == {"instance_id": EMULATED_INSTANCE_ID}
        RemoteEmulator(process).inject(Fault(FaultKind.INTERNAL_ERROR))
        client = connect(process.url)
        error = refused(
            lambda: client.update_contact_attributes(
                InstanceId=EMULATED_INSTANCE_ID, InitialContactId=CONTACT, Attributes={"a": "b"}
            )
        )
        assert error["Code"] == "InternalServiceException"
        client.update_contact_attributes(
            InstanceId=EMULATED_INSTANCE_ID, InitialContactId=CONTACT, Attributes={"a": "b"}
        )
        assert client.get_contact_attributes(InstanceId=EMULATED_INSTANCE_ID, InitialContactId=CONTACT)[
            "Attributes"
        ] == {"a": "b"}

"""The bearer key Connect presents on the upgrade (docs/protocols.md, *Upgrade*): what :class:`ApiKeys` lets in, and
how it reads the key from Secrets Manager (botocore's Stubber plays the service; time is moved by hand)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tests.fixtures.clock import ManualClock
from voicebridge.a2a import auth
from voicebridge.a2a.auth import ApiKeys
from voicebridge.errors import ConfigurationError

SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:voicebridge-a2a-AbCdEf"
CURRENT, PREVIOUS = "k3y-current-0123456789abcdef", "k3y-previous-0123456789abcdef"
TTL_S = 60.0


class SecretsManager:
    """A stubbed client whose calls are counted (a call nobody queued would fail like an unreachable service)."""

    def __init__(self) -> None:
        self.client = boto3.client(
            "secretsmanager", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        self.stubber = Stubber(self.client)
        self.calls = 0
        self.client.meta.events.register_first("before-parameter-build.secrets-manager.*", self._count)

    def _count(self, **_: Any) -> None:
        self.calls += 1

    def has(self, stage: str, value: str) -> None:
        answer = {"ARN": SECRET, "Name": "voicebridge-a2a", "VersionId": f"v-{stage}-0000000000000000000000000"}
        self.stubber.add_response(
            "get_secret_value",
            {**answer, "SecretString": value, "VersionStages": [stage]},
            {"SecretId": SECRET, "VersionStage": stage},
        )

    def fails(self, stage: str, code: str, status: int = 400) -> None:
        self.stubber.add_client_error(
            "get_secret_value",
            service_error_code=code,
            http_status_code=status,
            expected_params={"SecretId": SECRET, "VersionStage": stage},
        )

    def has_no_previous(self) -> None:
        self.fails("AWSPREVIOUS", "ResourceNotFoundException")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    manual = ManualClock()
    monkeypatch.setattr(auth, "time", manual)
    return manual


@pytest.fixture
def secrets() -> Iterator[SecretsManager]:
    stubbed = SecretsManager()
    with stubbed.stubber:
        yield stubbed
        stubbed.stubber.assert_no_pending_responses()


@pytest.fixture
def keys(secrets: SecretsManager, clock: ManualClock) -> ApiKeys:
    return ApiKeys(secrets.client, SECRET, ttl_s=TTL_S)


def read_then_expire(secrets: SecretsManager, keys: ApiKeys, clock: ManualClock) -> None:
    """The current key read (no previous version), then the ttl passed."""
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has_no_previous()
    assert keys.accepts(f"Bearer {CURRENT}")
    clock.advance(TTL_S)


def test_the_current_key_is_accepted(secrets: SecretsManager, keys: ApiKeys) -> None:
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has("AWSPREVIOUS", PREVIOUS)
    assert keys.accepts(f"Bearer {CURRENT}")


def test_the_previous_key_is_accepted_during_a_rotation(secrets: SecretsManager, keys: ApiKeys) -> None:
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has("AWSPREVIOUS", PREVIOUS)
    assert keys.accepts(f"Bearer {PREVIOUS}")


def test_a_secret_never_rotated_has_no_previous_version_and_that_is_fine(
    secrets: SecretsManager, keys: ApiKeys
) -> None:
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has_no_previous()
    assert keys.accepts(f"Bearer {CURRENT}")


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer not-the-key",
        f"Bearer {CURRENT}x",
        f"Bearer {CURRENT[:-1]}",
        f"Basic {CURRENT}",
        CURRENT,
        f"Token {CURRENT}",
        "Bearer ",
        "Bearer",
        "",
        None,
    ],
    ids=[
        "wrong",
        "longer",
        "shorter",
        "basic",
        "no-scheme",
        "other-scheme",
        "empty-key",
        "scheme-only",
        "empty",
        "absent",
    ],
)
def test_anything_but_bearer_and_an_accepted_key_is_refused(
    secrets: SecretsManager, keys: ApiKeys, authorization: str | None
) -> None:
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has_no_previous()
    assert not keys.accepts(authorization)


def test_the_scheme_is_read_without_regard_to_case(secrets: SecretsManager, keys: ApiKeys) -> None:
    # RFC 9110 section 11.1: "It uses a case-insensitive token to identify the authentication scheme".
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has_no_previous()
    assert keys.accepts(f"bearer {CURRENT}")


def test_a_key_stored_with_a_trailing_newline_still_matches(secrets: SecretsManager, keys: ApiKeys) -> None:
    secrets.has("AWSCURRENT", CURRENT + "\n")
    secrets.has_no_previous()
    assert keys.accepts(f"Bearer {CURRENT}")


def test_keys_are_read_once_within_the_ttl(secrets: SecretsManager, keys: ApiKeys, clock: ManualClock) -> None:
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has_no_previous()
    for _ in range(5):
        assert keys.accepts(f"Bearer {CURRENT}")
        clock.advance(TTL_S / 10)
    assert secrets.calls == 2


def test_a_rotation_reaches_the_server_once_the_ttl_has_passed(
    secrets: SecretsManager, keys: ApiKeys, clock: ManualClock
) -> None:
    secrets.has("AWSCURRENT", PREVIOUS)
    secrets.has_no_previous()
    assert not keys.accepts(f"Bearer {CURRENT}")
    clock.advance(TTL_S - 1)
    assert not keys.accepts(f"Bearer {CURRENT}")
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has("AWSPREVIOUS", PREVIOUS)
    clock.advance(1)
    assert keys.accepts(f"Bearer {CURRENT}") and keys.accepts(f"Bearer {PREVIOUS}")


def test_a_key_rotated_out_twice_is_refused_after_the_ttl(
    secrets: SecretsManager, keys: ApiKeys, clock: ManualClock
) -> None:
    secrets.has("AWSCURRENT", CURRENT)
    secrets.has("AWSPREVIOUS", PREVIOUS)
    assert keys.accepts(f"Bearer {PREVIOUS}")
    clock.advance(TTL_S)
    secrets.has("AWSCURRENT", "k3y-newest-0123456789abcdef")
    secrets.has("AWSPREVIOUS", CURRENT)
    assert not keys.accepts(f"Bearer {PREVIOUS}")


def test_secrets_manager_failing_after_a_first_read_keeps_the_keys_read_before(
    secrets: SecretsManager, keys: ApiKeys, clock: ManualClock
) -> None:
    read_then_expire(secrets, keys, clock)
    secrets.fails("AWSCURRENT", "InternalServiceError", 500)
    assert keys.accepts(f"Bearer {CURRENT}")


def test_after_a_failed_read_the_next_try_waits_for_the_ttl(
    secrets: SecretsManager, keys: ApiKeys, clock: ManualClock
) -> None:
    read_then_expire(secrets, keys, clock)
    secrets.fails("AWSCURRENT", "ThrottlingException")
    keys.accepts(f"Bearer {CURRENT}")
    calls = secrets.calls
    clock.advance(TTL_S / 2)
    keys.accepts(f"Bearer {CURRENT}")
    assert secrets.calls == calls


def test_a_failure_reading_the_previous_version_keeps_the_keys_read_before(
    secrets: SecretsManager, keys: ApiKeys, clock: ManualClock
) -> None:
    read_then_expire(secrets, keys, clock)
    secrets.has("AWSCURRENT", "k3y-newest-0123456789abcdef")
    secrets.fails("AWSPREVIOUS", "InternalServiceError", 500)
    assert keys.accepts(f"Bearer {CURRENT}")


@pytest.mark.parametrize(
    ("code", "status"),
    [("AccessDeniedException", 400), ("ResourceNotFoundException", 400), ("InternalServiceError", 500)],
)
def test_secrets_manager_failing_before_any_key_was_read_is_a_configuration_error(
    secrets: SecretsManager, keys: ApiKeys, code: str, status: int
) -> None:
    secrets.fails("AWSCURRENT", code, status)
    with pytest.raises(ConfigurationError):
        keys.accepts(f"Bearer {CURRENT}")


def test_a_secret_with_no_string_value_is_a_configuration_error(secrets: SecretsManager, keys: ApiKeys) -> None:
    secrets.has("AWSCURRENT", "   ")
    secrets.has_no_previous()
    with pytest.raises(ConfigurationError):
        keys.accepts(f"Bearer {CURRENT}")

"""How a responder tells of an AWS refusal: the code always, the service's message only where it is explained."""

from __future__ import annotations

from botocore.exceptions import ClientError

from voicebridge.converse.responders.refusals import error_code, refusal


def _refused(code: str | None, message: str = "") -> ClientError:
    if code is None:
        return ClientError({"Error": {"Message": message}}, "Operation")
    return ClientError({"Error": {"Code": code, "Message": message}}, "Operation")


def test_an_explained_refusal_carries_its_message_cut_short() -> None:
    text = refusal("Lex", _refused("ResourceNotFoundException", "x" * 500), {"ResourceNotFoundException"})
    assert text == f"Lex refused the request (ResourceNotFoundException: {'x' * 160})"


def test_any_other_refusal_carries_its_code_alone() -> None:
    text = refusal("Bedrock", _refused("ThrottlingException", "the caller said"), {"ValidationException"})
    assert text == "Bedrock refused the request (ThrottlingException)"


def test_a_refusal_without_a_code_is_unknown() -> None:
    assert error_code(_refused(None)) == "unknown"
    assert refusal("Lex", _refused(None, "why"), {"unknown"}) == "Lex refused the request (unknown: why)"

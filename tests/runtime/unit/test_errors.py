"""The error codes are one list: every product error is a type in voicebridge.errors, and the docs table matches."""

from __future__ import annotations

import importlib
import pkgutil
import re

import voicebridge
from tests.fixtures import ROOT
from voicebridge.errors import (
    ERROR_CODES,
    INTERNAL_CODES,
    MediaInterrupted,
    MediaStalled,
    ModelUnavailable,
    RetryableModelError,
    VoiceBridgeError,
)


def _all_subclasses(base: type[VoiceBridgeError]) -> set[type[VoiceBridgeError]]:
    found: set[type[VoiceBridgeError]] = set()
    pending = [base]
    while pending:
        for sub in pending.pop().__subclasses__():
            found.add(sub)
            pending.append(sub)
    return found


def _documented(table_heading: str) -> list[str]:
    """The codes in the first column of the table whose header row starts with ``table_heading``."""
    lines = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(table_heading))
    codes = []
    for row in lines[start + 2 :]:
        if not row.startswith("|"):
            break
        codes.append(re.findall(r"`([A-Za-z]+)`", row.split("|")[1])[0])
    return codes


def test_every_product_error_is_defined_in_the_errors_module() -> None:
    for module in pkgutil.walk_packages(voicebridge.__path__, "voicebridge."):
        importlib.import_module(module.name)
    elsewhere = sorted(
        c.__qualname__ for c in _all_subclasses(VoiceBridgeError) if c.__module__ != "voicebridge.errors"
    )
    assert elsewhere == []


def test_no_two_unrelated_errors_share_a_code() -> None:
    for cls in _all_subclasses(VoiceBridgeError):
        assert issubclass(cls, ERROR_CODES[cls.code]), cls


def test_the_docs_list_every_code_a_flow_can_be_answered() -> None:
    assert sorted(_documented("| `ErrorCode` |")) == sorted(set(ERROR_CODES) - INTERNAL_CODES)


def test_the_docs_list_every_internal_code() -> None:
    assert sorted(_documented("| code |")) == sorted(INTERNAL_CODES)


def test_a_code_is_its_types_name_and_a_refinement_keeps_its_parents() -> None:
    assert all(code == cls.__name__ for code, cls in ERROR_CODES.items() if cls is not VoiceBridgeError)
    assert RetryableModelError("x").code == ModelUnavailable.code == "ModelUnavailable"
    assert MediaStalled.code == MediaInterrupted.code == "MediaInterrupted"

"""A DetectPiiEntities or ContainsPiiEntities request as Comprehend reads it, validated as Comprehend validates it.

Both take ``{"Text", "LanguageCode"}`` (botocore's ``comprehend`` model, 2017-11-27: shapes
``DetectPiiEntitiesRequest`` and ``ContainsPiiEntitiesRequest``, both members required, ``Text`` a ``String`` of at
least one character). botocore checks the members' presence, types and minimum length before it sends; what reaches
the service is refused in this order:

1. ``ValidationException`` (400), every failed constraint in one message as AWS's validation layer words it
   (``1 validation error detected: Value null at 'languageCode' failed to satisfy constraint: Member must not be
   null``, aws/aws-sdk-java issue 1684): a member missing, an empty ``Text``, or a ``LanguageCode`` the operation does
   not take. The model's ``LanguageCode`` enum has twelve values, but DetectPiiEntities takes ``en`` and ``es`` only
   (API reference, DetectPiiEntities: "Enter the language code for English (en) or Spanish (es)"; the Developer
   Guide, *PII real-time analysis (API)*: "Supported languages include English and Spanish") and ContainsPiiEntities
   ``en`` only (API reference, ContainsPiiEntities: "Valid Values: en"). The others are answered with a
   ValidationException naming the operation's set, as boto/boto3 issue 4673 reports of the service ("a
   ValidationException is thrown, indicating that only en and es are currently supported"), although the operation
   also declares ``UnsupportedLanguageException``.
2. ``InvalidRequestException`` (400, ``Reason: INVALID_DOCUMENT``): a ``Text`` that is not valid Unicode (a lone
   surrogate escape in the JSON), which has no UTF-8 form. What the service says of it is not published; this is the
   model's one reason for an invalid document.
3. ``TextSizeLimitExceededException`` (400): more than 100,000 bytes of UTF-8 ("The maximum string size is 100 KB",
   ``DetectPiiEntitiesRequest.Text``; the service's words, "Input text size exceeds limit. Max length of request text
   allowed is 100000 bytes while in this request the text size is N bytes", as edenai/edenai-apis matches them).

A body that is not a JSON object, or a member that is not a string, is a ``SerializationException`` (400).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from voicebridge_dev.local.service import ApiError, validation_error

DETECT_PII_ENTITIES: Final = "DetectPiiEntities"
CONTAINS_PII_ENTITIES: Final = "ContainsPiiEntities"
LANGUAGES: Final = {DETECT_PII_ENTITIES: ("en", "es"), CONTAINS_PII_ENTITIES: ("en",)}
"""The languages each operation takes."""
MAX_TEXT_BYTES: Final = 100_000


@dataclass(frozen=True)
class PiiRequest:
    """A request both operations take: the text to inspect and its language."""

    operation: str
    text: str
    language_code: str


def _serialization_error(message: str) -> ApiError:
    return ApiError(400, "SerializationException", message)


def parse_pii_request(operation: str, body: Any) -> PiiRequest:
    """The request ``body`` (decoded JSON) makes for ``operation`` (one of :data:`LANGUAGES`); :class:`ApiError`
    otherwise, as the module's order says."""
    if not isinstance(body, dict):
        raise _serialization_error("The request body must be a JSON object.")
    text, language = body.get("Text"), body.get("LanguageCode")
    for member, value in (("Text", text), ("LanguageCode", language)):
        if value is not None and not isinstance(value, str):
            raise _serialization_error(f"{member} must be a string, not {type(value).__name__}.")
    failed: list[str] = []
    if text is None:
        failed.append("Value null at 'text' failed to satisfy constraint: Member must not be null")
    elif not text:
        failed.append(
            "Value '' at 'text' failed to satisfy constraint: Member must have length greater than or equal to 1"
        )
    languages = LANGUAGES[operation]
    if language is None:
        failed.append("Value null at 'languageCode' failed to satisfy constraint: Member must not be null")
    elif language not in languages:
        failed.append(
            f"Value '{language}' at 'languageCode' failed to satisfy constraint: Member must satisfy enum value set: "
            f"[{', '.join(languages)}]"
        )
    if failed:
        count = f"{len(failed)} validation error{'s' if len(failed) > 1 else ''} detected"
        raise validation_error(f"{count}: {'; '.join(failed)}")
    assert isinstance(text, str) and isinstance(language, str)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ApiError(
            400, "InvalidRequestException", "The input text is not valid UTF-8.", {"Reason": "INVALID_DOCUMENT"}
        ) from None
    if size > MAX_TEXT_BYTES:
        raise ApiError(
            400,
            "TextSizeLimitExceededException",
            f"Input text size exceeds limit. Max length of request text allowed is {MAX_TEXT_BYTES} bytes while in "
            f"this request the text size is {size} bytes",
        )
    return PiiRequest(operation, text, language)

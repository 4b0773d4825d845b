"""Redaction of log lines: every string a log line carries passes the built-in redactor on its way out.

Two places cover every line a function writes: the product's Powertools logger serialises each line through
:func:`redacting`, which redacts every string value (the message, each key, an exception's text); and
:class:`RedactingFilter`, on the root logger's handlers, redacts the lines of the libraries beneath (botocore logs
whole requests at DEBUG). The built-in redactor serves in every mode but ``off``: a Comprehend request per log line
would cost more than the line. A quick look for a digit, an ``@`` or a digit's name keeps lines without any from
being parsed at all.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from voicebridge.redaction.builtin import BuiltinRedactor

_MAYBE = re.compile(
    r"\d|@|\b(?:zero|oh|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|twenty|thirty|forty|"
    r"fifty|sixty|seventy|eighty|ninety|double|triple|at)\b",
    re.I,
)
_REDACTOR = BuiltinRedactor()
_OWN_KEYS = frozenset(
    {
        "level",
        "location",
        "timestamp",
        "service",
        "xray_trace_id",
        "cold_start",
        "function_name",
        "function_memory_size",
        "function_arn",
        "function_request_id",
        "correlation_id",
        "sampling_rate",
    }
)
"""Keys Powertools fills itself, with no words of a caller in them: the line's time, the function, the request, the
trace, and the contact id the product sets as the correlation id (the key operators filter by, kept exactly). Every
other value is redacted; the redactor itself reads an identifier as one token, never as digits
(:func:`~voicebridge.redaction.spoken.tokens`), so an id, an ARN or a prompt's key in a message stays whole too."""


def redact_text(text: str) -> str:
    """``text`` redacted, unless it holds nothing a redactor could find."""
    if len(text) < 3 or not _MAYBE.search(text):
        return text
    return _REDACTOR.redact(text).text


def redact_values(value: Any) -> Any:
    """``value`` with every string in it redacted (dictionaries' keys left as they are)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: item if key in _OWN_KEYS else redact_values(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_values(item) for item in value]
    return value


def redacting(dumps: Callable[[Any], str]) -> Callable[[Any], str]:
    """A JSON serialiser for Powertools' Logger that redacts before ``dumps``."""

    def serialise(log: Any) -> str:
        return dumps(redact_values(log))

    return serialise


class RedactingFilter(logging.Filter):
    """Redacts each record's message (its arguments merged in) before a handler writes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        redacted = redact_text(message)
        if redacted != message or record.args:
            record.msg, record.args = redacted, ()
        return True

"""The errors every emulator shares: an error answered to a client in place of the operation, a client that
went away mid-answer, and an emulator stopping mid-call.

What an :class:`ApiError`'s body looks like on the wire is each emulator's own (AWS JSON's ``{"message"}`` with
``x-amzn-ErrorType``, KVS's ``{"Message"}``, Lambda's ``{"Type", "Message"}``, Lex's, Cartesia's); the class, its
fields and the way it is raised and caught are shared.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


class ApiError(Exception):
    """An error a service answers with instead of running the operation: its HTTP ``status``, its ``error_type``
    (the code AWS clients read from ``x-amzn-ErrorType``), its ``message``, and any further body fields
    (``extra``) the service adds."""

    def __init__(self, status: int, error_type: str, message: str, extra: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.extra = dict(extra or {})

    @property
    def message(self) -> str:
        return str(self)


def validation_error(message: str) -> ApiError:
    """A ``ValidationException`` (400), an AWS service's answer to a request it will not act on."""
    return ApiError(400, "ValidationException", message)


def finite_number(value: Any) -> bool:
    """A real number: an int or a float, not a bool, neither infinite nor NaN."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def unknown_names(given: Iterable[Any], known: Iterable[Any]) -> str:
    """The names among ``given`` not ``known``, sorted and comma-separated as a refusal lists them; empty when every
    one is known."""
    return ", ".join(sorted(set(given) - set(known)))


class ClientGone(Exception):
    """The client closed the connection while the answer was being written."""


class Stopping(Exception):
    """The emulator is shutting down while a call waits."""

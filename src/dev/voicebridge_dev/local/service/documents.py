"""What the definitions an emulator answers from share (a Bedrock brain, a Lex bot): each is read from a JSON
document, given from Python or over the control plane, and keeps a copy of it, which the control plane serves back
as it was given."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self


@dataclass(frozen=True, kw_only=True)
class Definition(ABC):
    """A frozen dataclass read from ``document`` by :meth:`from_json`."""

    document: Mapping[str, Any] = field(repr=False)

    @classmethod
    @abstractmethod
    def from_json(cls, document: Any) -> Self:
        """The definition ``document`` describes; the definition's own ValueError saying what is wrong with it."""

    @classmethod
    def of(cls, given: Self | Mapping[str, Any]) -> Self:
        """``given`` itself, or the definition its document describes."""
        return given if isinstance(given, cls) else cls.from_json(dict(given) if isinstance(given, Mapping) else given)

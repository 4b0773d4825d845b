"""What every local-cloud service shares: started and stopped around a ``with`` block."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class LocalService(ABC):
    """A loopback service of the local cloud."""

    @abstractmethod
    def start(self) -> Self:
        """Start serving; returns the service."""

    @abstractmethod
    def stop(self) -> None:
        """Stop serving and free the port."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

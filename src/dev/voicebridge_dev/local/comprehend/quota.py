"""The Comprehend emulator's request quota: at most ``requests_per_second`` calls of an operation in any one second.

Comprehend's synchronous operations have a per-second request quota per account and region, adjustable in Service
Quotas (Developer Guide, *Guidelines and quotas*: "If you plan to send more than 20 requests per second, you should
consider using the batch operations"; "you can send up to 20 documents per second" with a single-document
operation). The current default for DetectPiiEntities itself is not on a public page the emulator's sources reach:
:data:`DEFAULT_REQUESTS_PER_SECOND` is that page's 20, and tests set a lower one to reach it quickly. A call beyond
the quota is refused with 429 ``TooManyRequestsException``, the throttling error botocore's ``comprehend`` model
declares ("The number of requests exceeds the limit. Resubmit your request later."), before its request is
validated, as a quota is enforced in front of the service; a refused call takes no place in the window.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Final

from voicebridge_dev.local.comprehend.errors import EmulatorConfigError

DEFAULT_REQUESTS_PER_SECOND: Final = 20
_WINDOW_S: Final = 1.0


class RequestQuota:
    """Calls admitted per operation in the last second; ``requests_per_second`` None admits every call."""

    def __init__(self, requests_per_second: int | None, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._admitted: dict[str, deque[float]] = {}
        self.requests_per_second = requests_per_second

    @property
    def requests_per_second(self) -> int | None:
        return self._limit

    @requests_per_second.setter
    def requests_per_second(self, limit: int | None) -> None:
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise EmulatorConfigError(f"requests_per_second must be a positive integer or null, got {limit!r}")
        with self._lock:
            self._limit = limit
            self._admitted.clear()

    def admit(self, operation: str) -> bool:
        """Whether a call of ``operation`` now is within the quota; an admitted call counts for the next second."""
        with self._lock:
            if self._limit is None:
                return True
            now = self._clock()
            admitted = self._admitted.setdefault(operation, deque())
            while admitted and admitted[0] <= now - _WINDOW_S:
                admitted.popleft()
            if len(admitted) >= self._limit:
                return False
            admitted.append(now)
            return True

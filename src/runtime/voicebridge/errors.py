"""Errors as types, each with the stable code a contact flow sees as ``ErrorCode``: the one list of them.

Handlers catch :class:`VoiceBridgeError` at the edge and map ``code`` and ``safe_message`` to the Connect
response; messages are short, safe to log, and never carry a secret. :data:`ERROR_CODES` maps every code to its
type, and the error-code table in ``docs/errors.md`` is checked against it::

    >>> ERROR_CODES["NoMediaStream"].__name__
    'NoMediaStream'

Codes marked *internal* below never reach a flow: the consumer handles them itself (it reconnects, or stops).
"""

from __future__ import annotations


class VoiceBridgeError(Exception):
    """Base of every error the product reports; unexpected failures are answered with its code.

    A subclass's code is its own name, unless it is declared with ``refines=True``: a narrower case of its parent,
    reported under the parent's code::

        >>> RetryableModelError("throttled").code
        'ModelUnavailable'
    """

    code = "InternalError"

    def __init_subclass__(cls, *, refines: bool = False, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if not refines:
            cls.code = cls.__name__

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.safe_message = message[:240]


# -- what a flow can be answered


class InvalidInput(VoiceBridgeError):
    """The flow (or the model, with a 422) rejected what was asked: retrying cannot help."""


class ConfigurationError(VoiceBridgeError):
    """The deployment is missing or has a malformed setting."""


class ModelUnavailable(VoiceBridgeError):
    """The model could not produce audio in time (throttled, stream failed, deadline passed)."""


class RetryableModelError(ModelUnavailable, refines=True):
    """A model failure worth another try: 429, 5xx, or a stream error before any audio arrived."""


class StorageError(VoiceBridgeError):
    """The prompt bucket or the turn table could not be read or written."""


class AudioFormatError(VoiceBridgeError, ValueError):
    """Audio that cannot be handled: unsupported encoding or rate, malformed WAV, truncated sample."""


class NoMediaStream(VoiceBridgeError):
    """The contact is not streaming media yet: the flow must start media streaming before listening."""


class NotListening(VoiceBridgeError):
    """AwaitTurn was called for a contact nobody is listening to."""


class HandOffFailed(VoiceBridgeError):
    """The consumer could not be started."""


class LanguageNotServed(VoiceBridgeError):
    """The contact's language is one no Ink model transcribes: nothing was started for it."""


# -- internal: handled by the consumer, reported only in its logs and its own invocation result


class MediaInterrupted(VoiceBridgeError):
    """The media connection ended abnormally; the consumer resumes from its last fragment."""


class MediaStalled(MediaInterrupted, refines=True):
    """GetMedia answered, then sent nothing for the read timeout: the producer stalled or stopped."""


class InkUnavailable(VoiceBridgeError):
    """An Ink session could not be opened or was lost; the consumer reopens it and replays what is unsettled."""


class ResponderUnavailable(VoiceBridgeError):
    """The responder could not answer a turn (refused, throttled, timed out, or answered something unreadable); the
    caller hears the configured apology instead."""


class Superseded(VoiceBridgeError):
    """Another consumer generation owns this contact now; this one must stop without writing."""


def _registry() -> dict[str, type[VoiceBridgeError]]:
    found: dict[str, type[VoiceBridgeError]] = {VoiceBridgeError.code: VoiceBridgeError}
    pending = [VoiceBridgeError]
    while pending:
        for sub in pending.pop().__subclasses__():
            # A refinement keeps its parent's code (RetryableModelError): it names no new code.
            found.setdefault(sub.code, sub)
            pending.append(sub)
    return found


ERROR_CODES: dict[str, type[VoiceBridgeError]] = _registry()
"""Every ``ErrorCode`` the product can answer or log, and its type."""

INTERNAL_CODES = frozenset({"MediaInterrupted", "InkUnavailable", "ResponderUnavailable", "Superseded"})
"""Codes the consumer handles itself: no Connect-facing handler answers them."""

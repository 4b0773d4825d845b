"""How a responder tells of an AWS service refusing its call: the error code, and the service's own message only for
the codes that name what is wrong with the deployment (a model id, a bot, an access), never what the caller said."""

from __future__ import annotations

from collections.abc import Collection

from botocore.exceptions import ClientError


def error_code(exc: ClientError) -> str:
    """The refusal's error code (``unknown`` when the answer carries none)."""
    return str(exc.response.get("Error", {}).get("Code") or "unknown")


def refusal(service: str, exc: ClientError, explained: Collection[str]) -> str:
    """``<service> refused the request (<code>)``, with the service's message when the code is one of ``explained``."""
    code = error_code(exc)
    if code in explained:
        message = str(exc.response.get("Error", {}).get("Message", ""))
        return f"{service} refused the request ({code}: {message[:160]})"
    return f"{service} refused the request ({code})"

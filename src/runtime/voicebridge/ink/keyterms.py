"""Ink keyterms: words and phrases the model is biased towards transcribing, set when a session opens.

"You can pass up to 100 keyterms per connection, up to a total of 1200 characters across all keyterms"; they "apply
for the entire connection and are set only when you open it" (Cartesia, *Keyterm Prompting*). The SDK (4.2,
``AutoFinalizeWebsocketParams.keyterm``) sends each as a ``keyterm`` query parameter of its own. This module imports
nothing: the settings check reads it.
"""

from __future__ import annotations

from typing import Final

MAX_KEYTERMS: Final = 100
MAX_KEYTERM_CHARS: Final = 1200


def parse_keyterms(text: str) -> tuple[str, ...]:
    """Terms separated by commas (``Acme Plus, Zorblax``), each kept once and trimmed; ValueError past Ink's
    limits. Empty text is no term."""
    terms = tuple(dict.fromkeys(" ".join(part.split()) for part in text.split(",") if part.strip()))
    if len(terms) > MAX_KEYTERMS:
        raise ValueError(f"has {len(terms)} terms; Ink takes at most {MAX_KEYTERMS}")
    chars = sum(len(term) for term in terms)
    if chars > MAX_KEYTERM_CHARS:
        raise ValueError(f"has {chars} characters of terms; Ink takes at most {MAX_KEYTERM_CHARS}")
    return terms

"""The consumer's invocation event, ``{"ContactId": "...", "Generation": n}``: read by TranscribeStreamFunction, and
by CallRecordFunction from a failed invocation's record.

A module of its own, importing nothing of the consumer: CallRecordFunction ships without numpy, which the consumer's
voice activity detection needs.
"""

from __future__ import annotations

import re
from typing import Any

CONTACT_ID = re.compile(r"[A-Za-z0-9-]{1,256}")


def parse_consumer_event(event: Any) -> tuple[str, int] | str:
    """(ContactId, Generation) from the consumer's event, or why it cannot be read."""
    if not isinstance(event, dict):
        return f"the event must be an object, not {type(event).__name__}"
    contact_id = event.get("ContactId")
    if not isinstance(contact_id, str) or not CONTACT_ID.fullmatch(contact_id):
        return "ContactId must be a contact id (letters, digits and hyphens, at most 256)"
    generation = event.get("Generation", 0)
    if isinstance(generation, str) and generation.isascii() and generation.isdigit():
        generation = int(generation)
    if not isinstance(generation, int) or isinstance(generation, bool) or generation < 0:
        return "Generation must be a whole number, 0 or more"
    return contact_id, generation

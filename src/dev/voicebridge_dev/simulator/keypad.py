"""What ``GetParticipantInput`` makes of the keys a caller presses on a voice contact.

Sources: Connect's flow language reference (*GetParticipantInput*) and its administrator guide (*Get customer input*,
*Store customer input*):

- without ``StoreInput`` ("Get customer input") the block takes one key — "only individual digits … and the
  special characters # and *" — and branches on the condition it equals: :func:`menu_key`;
- with ``StoreInput`` "True" ("Store customer input") it collects keys until the termination sequence
  (``DTMFConfiguration.InputTerminationSequence``, ``#`` unless given) or the maximum length
  (``InputValidation.CustomValidation.MaximumLength``), and stores them in ``$.StoredCustomerInput``; a call with no
  input takes the success branch with the value ``Timeout``; a phone number that fails
  ``InputValidation.PhoneNumberValidation`` takes ``InvalidPhoneNumber``: :func:`stored_input`.

The guide is silent on three things, decided here: ``*`` clears the keys pressed before it unless
``DTMFConfiguration.DisableCancelKey`` is "True" (the setting's name is the only hint); the maximum length is 20
when none is given; a phone number is valid with 8 to 15 digits in ``E164`` form (ITU-T E.164's length), or 4 to 14
in ``Local`` form, stored in E.164 form (``+`` and the country's calling code — the small table
:data:`CALLING_CODES` — before a ``Local`` number, without its trunk ``0``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["CALLING_CODES", "DEFAULT_MAXIMUM_LENGTH", "Entry", "menu_key", "stored_input"]

DEFAULT_MAXIMUM_LENGTH: Final = 20
CALLING_CODES: Final[Mapping[str, str]] = {
    "US": "1",
    "CA": "1",
    "GB": "44",
    "IE": "353",
    "AU": "61",
    "NZ": "64",
    "DE": "49",
    "FR": "33",
    "ES": "34",
    "IT": "39",
    "NL": "31",
    "IN": "91",
    "JP": "81",
    "SG": "65",
    "ZA": "27",
    "BR": "55",
    "MX": "52",
}
"""Calling codes for the countries ``PhoneNumberValidation.CountryCode`` is most often set to."""
TIMEOUT: Final = "Timeout"


@dataclass(frozen=True)
class Entry:
    """What the block stored, or the error it takes (``value`` is then None)."""

    value: str | None
    error: str | None = None
    reason: str | None = None


def menu_key(keys: str) -> str:
    """The key a menu ("Get customer input") takes: the first one pressed."""
    return keys[0]


def stored_input(keys: str | None, params: Mapping[str, Any]) -> Entry:
    """What "Store customer input" keeps of ``keys`` (None: nothing was pressed in time)."""
    if keys is None:
        return Entry(TIMEOUT)
    dtmf = params.get("DTMFConfiguration") or {}
    validation = params.get("InputValidation") or {}
    terminator = str(dtmf.get("InputTerminationSequence") or "#")
    cancel = str(dtmf.get("DisableCancelKey", "False")) != "True"
    custom = validation.get("CustomValidation") or {}
    try:
        maximum = int(custom.get("MaximumLength", DEFAULT_MAXIMUM_LENGTH))
    except (TypeError, ValueError):
        maximum = DEFAULT_MAXIMUM_LENGTH
    entered = ""
    for index, key in enumerate(keys):
        if keys.startswith(terminator, index):
            break
        if cancel and key == "*":
            entered = ""
            continue
        entered += key
        if len(entered) >= maximum:
            break
    if not entered:
        return Entry(TIMEOUT)
    phone = validation.get("PhoneNumberValidation")
    if isinstance(phone, Mapping):
        return _phone_number(entered, phone)
    return Entry(entered)


def _phone_number(entered: str, rule: Mapping[str, Any]) -> Entry:
    if not entered.isdigit():
        return Entry(None, "InvalidPhoneNumber", f"{entered!r} is not a phone number")
    if str(rule.get("NumberFormat", "E164")) == "Local":
        country = str(rule.get("CountryCode", ""))
        code = CALLING_CODES.get(country)
        if code is None:
            return Entry(None, "InvalidPhoneNumber", f"no calling code known here for country {country!r}")
        national = entered.removeprefix("0")
    else:
        # E.164: the country's calling code is among the keys; at most 15 digits in all (ITU-T E.164).
        if not 8 <= len(entered) <= 15:
            return Entry(None, "InvalidPhoneNumber", f"{entered} has {len(entered)} digits, not 8 to 15 (E.164)")
        return Entry(f"+{entered}")
    if not 4 <= len(national) <= 14:
        return Entry(None, "InvalidPhoneNumber", f"{entered} has {len(national)} digits after its calling code")
    return Entry(f"+{code}{national}")

"""The Comprehend emulator's own PII detector: deterministic rules over written text, not Comprehend's model.

It finds six of ``PiiEntityType``'s values, each as a rule a reader can check:

- ``CREDIT_DEBIT_NUMBER``: 13 to 19 digits written as one run or in groups joined by single spaces or hyphens,
  passing the Luhn check (ISO/IEC 7812-1's check digit); of a longer run of groups, the longest Luhn-valid stretch of
  whole groups from its start (a card number followed by its security code in one breath).
- ``CREDIT_DEBIT_EXPIRY``: ``MM/YY``, ``MM/YYYY``, ``MM-YY`` or ``MM-YYYY`` (month 01–12) within
  :data:`CONTEXT_CHARS` characters after a card number or a word of expiry (``exp``, ``expiry``, ``expires``,
  ``valid thru``…).
- ``CREDIT_DEBIT_CVV``: three or four digits within :data:`CONTEXT_CHARS` characters after ``CVV``, ``CVC``,
  ``CV2``, ``CID``, ``security code`` or ``verification code``.
- ``SSN``: ``AAA-GG-SSSS`` or ``AAA GG SSSS`` as the Social Security Administration issues them (area not 000, 666 or
  900–999, group not 00, serial not 0000), or nine digits in one run after ``social security`` or ``SSN``.
- ``EMAIL``: ``local@domain.tld`` (RFC 5321's dot-atom local part, with letters beyond ASCII as RFC 6531 allows, a
  domain of labels and a top-level label of two or more letters).
- ``PHONE``: a NANP number (``(212) 555-0100``, ``212-555-0100``, ``212.555.0100``, ``+1 212 555 0100``; area and
  exchange codes starting 2–9), or ``+`` and 8 to 15 digits in groups (E.164's length).

Where spans overlap, the rule listed first keeps its span. It reports no other type: names, addresses, dates, bank
account numbers, PINs, passwords and the rest need what Comprehend's model knows of language, which a rule cannot
honestly stand in for. Digits spoken as words ("four one one one") are not read as digits: what Comprehend's model
does with them is not published.

Offsets count Unicode code points, as Python's ``str`` indexes (:mod:`voicebridge_dev.local.comprehend` says why);
``end`` is exclusive. Scores are this detector's fixed figure per rule, not a model's confidence.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

DETECTED_TYPES: Final = ("CREDIT_DEBIT_NUMBER", "CREDIT_DEBIT_EXPIRY", "CREDIT_DEBIT_CVV", "SSN", "EMAIL", "PHONE")
"""The entity types the detector can report, in the order their rules claim text."""

CONTEXT_CHARS: Final = 40
"""How far after a card number or a keyword an expiry date or a security code is taken as one."""

SCORES: Final = {
    "CREDIT_DEBIT_NUMBER": 0.99,
    "CREDIT_DEBIT_EXPIRY": 0.9,
    "CREDIT_DEBIT_CVV": 0.85,
    "SSN": 0.95,
    "EMAIL": 0.99,
    "PHONE": 0.9,
}

# Groups of digits joined by one space or hyphen, taken whole (what follows is looked at in _card_numbers: a lookahead
# here would backtrack group by group, and a long run of groups would cost its square).
_DIGIT_RUN: Final = re.compile(r"(?<![\w.,/-])\d+(?:[ -]\d+)*")
_RUN_BREAKER: Final = re.compile(r"[\w/]|[.,]\d")
_GROUP: Final = re.compile(r"\d+")
_EXPIRY: Final = re.compile(r"(?<![\w/.-])(0[1-9]|1[0-2])\s?([/-])\s?(\d{4}|\d{2})(?![\w/.-])")
_EXPIRY_WORDS: Final = re.compile(
    r"\b(?:exp(?:iry|iration|ires|ire|iring)?|valid\s+(?:thru|through|until|till)|good\s+(?:thru|through))\b",
    re.IGNORECASE,
)
_CVV: Final = re.compile(r"(?<![\w-])\d{3,4}(?![\w-])")
_CVV_WORDS: Final = re.compile(
    r"\b(?:cvv2?|cvc2?|cv2|cid|csc|(?:card\s+)?security\s+code|(?:card\s+)?verification\s+(?:code|value|number))\b",
    re.IGNORECASE,
)
_SSN: Final = re.compile(r"(?<![\w-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\w-])")
_SSN_RUN: Final = re.compile(r"(?<![\w-])\d{9}(?![\w-])")
_SSN_WORDS: Final = re.compile(r"\b(?:social\s+security(?:\s+number)?|ssn)\b", re.IGNORECASE)
_EMAIL: Final = re.compile(
    r"(?<![\w.!#$%&'*+/=?^`{|}~-])[\w!#$%&'*+/=?^`{|}~-]+(?:\.[\w!#$%&'*+/=?^`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(?![\w-])"
)
_NANP: Final = re.compile(
    r"(?<![\w+-])(?:\+?1[ .-]?)?(?:\([2-9]\d{2}\)\s?|[2-9]\d{2}[ .-])[2-9]\d{2}[ .-]\d{4}(?![\w-])"
)
_INTERNATIONAL: Final = re.compile(r"(?<![\w+])\+\d(?:[ .-]?\d){7,14}(?![\w-])")


@dataclass(frozen=True, order=True)
class Detected:
    """One entity found: its span of code points ``[begin, end)``, its ``PiiEntityType`` and its score."""

    begin: int
    end: int
    type: str
    score: float


def luhn_valid(digits: str) -> bool:
    """The Luhn check over a string of digits: doubling every second digit from the right, the sum ends in 0."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card_numbers(text: str) -> Iterator[tuple[int, int]]:
    for run in _DIGIT_RUN.finditer(text):
        groups = [(m.start() + run.start(), m.end() + run.start()) for m in _GROUP.finditer(run.group())]
        if _RUN_BREAKER.match(text, run.end()):
            # The last group runs into a word, a date or a decimal: it is not a group of a card number.
            groups.pop()
        first = 0
        while first < len(groups):
            found = None
            digits = ""
            for last in range(first, len(groups)):
                digits += text[groups[last][0] : groups[last][1]]
                if len(digits) > 19:
                    break
                if len(digits) >= 13 and luhn_valid(digits):
                    found = last
            if found is None:
                first += 1
                continue
            yield groups[first][0], groups[found][1]
            first = found + 1


def _follows(begin: int, cues: Iterable[int]) -> bool:
    """Whether one of ``cues`` (where a keyword or a card number ends) lies at most CONTEXT_CHARS before ``begin``."""
    return any(0 <= begin - cue <= CONTEXT_CHARS for cue in cues)


def _ssn_valid(area: str, group: str, serial: str) -> bool:
    return area not in ("000", "666") and not area.startswith("9") and group != "00" and serial != "0000"


def detect(text: str) -> list[Detected]:
    """The entities in ``text``, by offset; where spans overlap, the first rule of :data:`DETECTED_TYPES` keeps its."""
    cards = list(_card_numbers(text))
    candidates: list[tuple[str, int, int]] = [("CREDIT_DEBIT_NUMBER", begin, end) for begin, end in cards]
    card_ends = [end for _, end in cards]
    expiry_cues = [m.end() for m in _EXPIRY_WORDS.finditer(text)] + card_ends
    candidates += [
        ("CREDIT_DEBIT_EXPIRY", m.start(), m.end()) for m in _EXPIRY.finditer(text) if _follows(m.start(), expiry_cues)
    ]
    cvv_cues = [m.end() for m in _CVV_WORDS.finditer(text)]
    candidates += [
        ("CREDIT_DEBIT_CVV", m.start(), m.end()) for m in _CVV.finditer(text) if _follows(m.start(), cvv_cues)
    ]
    candidates += [("SSN", m.start(), m.end()) for m in _SSN.finditer(text) if _ssn_valid(m[1], m[3], m[4])]
    ssn_cues = [m.end() for m in _SSN_WORDS.finditer(text)]
    candidates += [
        ("SSN", m.start(), m.end())
        for m in _SSN_RUN.finditer(text)
        if _follows(m.start(), ssn_cues) and _ssn_valid(m[0][:3], m[0][3:5], m[0][5:])
    ]
    candidates += [("EMAIL", m.start(), m.end()) for m in _EMAIL.finditer(text)]
    candidates += [("PHONE", m.start(), m.end()) for m in _NANP.finditer(text)]
    candidates += [("PHONE", m.start(), m.end()) for m in _INTERNATIONAL.finditer(text)]
    claimed: list[Detected] = []
    for kind, begin, end in sorted(candidates, key=lambda c: (DETECTED_TYPES.index(c[0]), c[1])):
        # Claimed spans do not overlap, so only the neighbours by offset can overlap this one.
        at = bisect.bisect_left(claimed, (begin,), key=lambda entity: (entity.begin,))
        if (at == 0 or claimed[at - 1].end <= begin) and (at == len(claimed) or end <= claimed[at].begin):
            claimed.insert(at, Detected(begin, end, kind, SCORES[kind]))
    return claimed

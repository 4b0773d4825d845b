"""The built-in redactor: payment card data, US social security numbers, e-mail addresses and phone numbers.

No service is called and nothing is learnt: each entity is a run of digits (:mod:`.spoken`, so a spoken number is
one too) or an address, told apart by its shape and by the words it is said after::

    >>> BuiltinRedactor().redact("My card number is 4111 1111 1111 1111, expiry 04/29").text
    'My card number is [CARD], expiry [EXPIRY]'

What each type is:

- ``CARD``: 13 to 19 digits that pass the Luhn check (ISO/IEC 7812's check digit, which every payment card number
  carries), as one run or the leading part of one; after a card word ("card", "credit", "visa"…), 13 to 19 digits
  even when the check fails, since a caller who misreads one digit has still said their card.
- ``EXPIRY``: a month and year (``04/29``, ``0429``, "oh four twenty nine", "April 2029") said after an expiry word
  ("expiry", "expires", "exp"…) or straight after a card number.
- ``CVV``: three or four digits after a security-code word ("CVV", "CVC", "security code"…), or left over straight
  after a card number or its expiry.
- ``SSN``: nine digits written 3-2-4 (``123-45-6789``, ``123 45 6789``), or nine digits after "social" or "SSN";
  the number must be one the Social Security Administration issues (not area 000, 666 or 9xx, group 00 or serial
  0000).
- ``PHONE``: a North American number (ten digits whose area code and exchange start with 2–9, with or without a
  leading 1), an international one (``+`` and 8 to 15 digits, E.164's longest), or 7 to 15 digits after a phone
  word ("phone", "call", "cell"…).
- ``EMAIL``: an address as written (``jo.smith@example.com``) or as said ("jo dot smith at example dot com").

Not redacted: a card's last four digits said alone, amounts, dates, times, order and account numbers that match
none of the shapes above, names and street addresses (``comprehend`` mode finds those).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from voicebridge.redaction.spoken import DigitRun, digit_runs, tokens, words_before

CARD, CVV, EXPIRY, SSN, EMAIL, PHONE = "CARD", "CVV", "EXPIRY", "SSN", "EMAIL", "PHONE"
KINDS = (CARD, CVV, EXPIRY, SSN, EMAIL, PHONE)

_CARD_WORDS = frozenset({"card", "credit", "debit", "visa", "mastercard", "amex", "discover", "pan"})
_EXPIRY_WORDS = frozenset({"expiry", "expiration", "expires", "expire", "expiring", "exp", "thru"})
_CVV_WORDS = frozenset({"cvv", "cvc", "cvv2", "cvc2", "csc", "cid", "verification"})
_SSN_WORDS = frozenset({"social", "ssn"})
_PHONE_WORDS = frozenset({"phone", "call", "cell", "mobile", "telephone", "reach", "callback", "fax", "text"})
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_TLDS = "com|net|org|edu|gov|mil|int|io|co|uk|us|ca|de|fr|es|it|nl|au|in|info|biz|me|ai|app|dev"
_EMAIL_WRITTEN = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b")
_PART = r"[A-Za-z0-9_+-]+"
_SAID_DOT = r"(?:\s*\.\s*|\s+dot\s+)"
_EMAIL_SAID = re.compile(
    rf"\b{_PART}(?:(?:{_SAID_DOT}|\s+(?:underscore|dash|hyphen)\s+){_PART})*\s+(?:at|@)\s+"
    rf"{_PART}(?:{_SAID_DOT}{_PART})*{_SAID_DOT}(?:{_TLDS})\b",
    re.IGNORECASE,
)
_CONTEXT_WORDS = 8
"""How many words before a number are its context."""


@dataclass(frozen=True, slots=True)
class Entity:
    """A piece of text to redact: what it is and where it lies (``text[start:end]``)."""

    kind: str
    start: int
    end: int


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check that a payment card number's last digit makes true."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _ssn_valid(digits: str) -> bool:
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _nanp(digits: str) -> bool:
    if len(digits) == 11 and digits[0] == "1":
        digits = digits[1:]
    return len(digits) == 10 and digits[0] in "23456789" and digits[3] in "23456789"


def _month_year(digits: str) -> bool:
    """Digits that read as a month and a year: MMYY, MYY ("four twenty nine") or MMYYYY (20YY)."""
    if len(digits) == 3:
        month, year = digits[:1], digits[1:]
    elif len(digits) == 4:
        month, year = digits[:2], digits[2:]
    elif len(digits) == 6:
        month, year = digits[:2], digits[2:]
        if not year.startswith("20"):
            return False
    else:
        return False
    return 1 <= int(month) <= 12 and year.isdigit()


class BuiltinRedactor:
    """Finds the entities above in a piece of text; deterministic, and fast enough for every turn and log line."""

    name = "builtin"

    def find(self, text: str) -> list[Entity]:
        """Every entity in ``text``, in order, none overlapping."""
        found: list[Entity] = []
        found.extend(Entity(EMAIL, m.start(), m.end()) for m in _EMAIL_WRITTEN.finditer(text))
        found.extend(Entity(EMAIL, m.start(), m.end()) for m in _EMAIL_SAID.finditer(text))
        emails = list(found)
        previous: Entity | None = None
        for run in digit_runs(text):
            if any(e.start <= run.start < e.end for e in emails):
                continue
            for entity in self._classify(text, run, previous):
                found.append(entity)
            previous = next((e for e in reversed(found) if e.kind != EMAIL), None)
        return _without_overlaps(found)

    def _classify(self, text: str, run: DigitRun, previous: Entity | None) -> Iterable[Entity]:
        context = set(words_before(text, run.start, _CONTEXT_WORDS))
        card = _card_part(run, context & _CARD_WORDS != set())
        if card is not None:
            first, last = card
            if first > 0:
                yield from self._classify(text, run.part(0, first - 1), previous)
            yield Entity(CARD, run.groups[first].start, run.groups[last].end)
            if last + 1 < len(run.groups):
                yield from self._after_card(run.part(last + 1, len(run.groups) - 1))
            return
        after_card = previous is not None and previous.kind in (CARD, EXPIRY) and _near(text, previous, run)
        single = self._single(text, run, context, after_card)
        if single is not None:
            yield single

    def _after_card(self, rest: DigitRun) -> Iterable[Entity]:
        """What follows a card number in the same run: its expiry, then its security code."""
        digits = rest.digits
        if len(rest.groups) > 1 and _month_year(rest.groups[0].digits):
            yield Entity(EXPIRY, rest.groups[0].start, rest.groups[0].end)
            yield from self._after_card(rest.part(1, len(rest.groups) - 1))
        elif len(digits) == 4 and _month_year(digits):
            yield Entity(EXPIRY, rest.start, rest.end)
        elif len(digits) in (3, 4):
            yield Entity(CVV, rest.start, rest.end)

    def _single(self, text: str, run: DigitRun, context: set[str], after_card: bool) -> Entity | None:
        digits = run.digits
        n = len(digits)
        if n == 9 and _ssn_valid(digits) and (context & _SSN_WORDS or _written_ssn(run)):
            return Entity(SSN, run.start, run.end)
        if context & _EXPIRY_WORDS or after_card:
            start = _month_word_before(text, run.start)
            if start is not None and 2 <= n <= 4:
                return Entity(EXPIRY, start, run.end)
            if _month_year(digits):
                return Entity(EXPIRY, run.start, run.end)
        if n in (3, 4) and (context & _CVV_WORDS or {"security", "code"} <= context or after_card):
            return Entity(CVV, run.start, run.end)
        if (_nanp(digits) and _phone_shaped(run)) or (_mark_before(text, run.start, "+") and 8 <= n <= 15):
            return Entity(PHONE, _phone_start(text, run.start), run.end)
        if context & _PHONE_WORDS and 7 <= n <= 15 and not _date_shaped(run):
            return Entity(PHONE, _phone_start(text, run.start), run.end)
        return None

    def redact(self, text: str, *, before: str = "", after: str = "") -> Redaction:
        """``text`` with every entity replaced by its type (``[CARD]``); ``before`` and ``after`` are the turns
        said around it, so a number split across turns is still one number."""
        return redact_with(self.find, text, before=before, after=after)


@dataclass(frozen=True, slots=True)
class Redaction:
    """Text with its entities replaced, and what was replaced."""

    text: str
    entities: tuple[Entity, ...] = ()

    @property
    def kinds(self) -> list[str]:
        return [e.kind for e in self.entities]


JOIN = "\n"
"""What stands between turns read together: whitespace, so a number split across turns is one run."""


def redact_with(find: Callable[[str], Sequence[Entity]], text: str, *, before: str = "", after: str = "") -> Redaction:
    """Apply ``find`` to ``text`` read with its neighbours, and replace what lies in ``text``."""
    if not text:
        return Redaction(text)
    prefix = before + JOIN if before else ""
    whole = prefix + text + (JOIN + after if after else "")
    lo, hi = len(prefix), len(prefix) + len(text)
    mine = [
        Entity(e.kind, max(e.start, lo) - lo, min(e.end, hi) - lo) for e in find(whole) if e.end > lo and e.start < hi
    ]
    return Redaction(replace(text, mine), tuple(mine))


def replace(text: str, entities: Sequence[Entity]) -> str:
    out: list[str] = []
    at = 0
    for e in sorted(entities, key=lambda e: e.start):
        if e.start < at:
            continue
        out.append(text[at : e.start])
        out.append(f"[{e.kind}]")
        at = e.end
    out.append(text[at:])
    return "".join(out)


def _card_part(run: DigitRun, card_context: bool) -> tuple[int, int] | None:
    """The groups of ``run`` that are a card number (the longest Luhn-valid part of 13–19 digits, earliest first),
    or the whole run after a card word."""
    lengths = [len(g.digits) for g in run.groups]
    best: tuple[int, int] | None = None
    for first in range(len(lengths)):
        total = 0
        for last in range(first, len(lengths)):
            total += lengths[last]
            if total > 19:
                break
            longer = best is None or total > sum(lengths[best[0] : best[1] + 1])
            if total >= 13 and longer and luhn_valid("".join(g.digits for g in run.groups[first : last + 1])):
                best = (first, last)
    if best is None and card_context and 13 <= sum(lengths) <= 19:
        best = (0, len(lengths) - 1)
    return best


_PHONE_SHAPES = frozenset({(10,), (11,), (3, 3, 4), (1, 3, 3, 4), (3, 7)})
"""How a North American number is written: whole, or area code, exchange and line apart (a date or a time written
with the same digits, 2026-12-02 07:25, has another shape)."""


def _phone_shaped(run: DigitRun) -> bool:
    if not all(g.written for g in run.groups):
        return True
    return tuple(len(g.digits) for g in run.groups) in _PHONE_SHAPES


def _date_shaped(run: DigitRun) -> bool:
    """A written date (``2026-12-02``, ``12/02/2026``), perhaps with the hour after it."""
    shape = tuple(len(g.digits) for g in run.groups[:3])
    dated = set(run.separators[:2]) <= {"-", "/"} and len(run.separators) >= 2
    return all(g.written for g in run.groups) and dated and shape in ((4, 2, 2), (2, 2, 4), (1, 2, 4), (2, 1, 4))


def _written_ssn(run: DigitRun) -> bool:
    shape = [len(g.digits) for g in run.groups]
    return all(g.written for g in run.groups) and shape == [3, 2, 4] and set(run.separators) <= {"-", ""}


def _near(text: str, previous: Entity, run: DigitRun) -> bool:
    """``run`` follows ``previous`` within a few words (the expiry and code said after a card number)."""
    between = [t for t in tokens(text[previous.end : run.start]) if t.text.isalpha()]
    return len(between) <= 4


def _month_word_before(text: str, position: int) -> int | None:
    """Where a month's name starts just before ``position`` ("April 2029", "april of twenty nine")."""
    toks = [t for t in tokens(text[:position]) if t.text.isalpha()][-2:]
    for tok in reversed(toks):
        if tok.word in _MONTHS:
            return tok.start
        if tok.word != "of":
            return None
    return None


def _mark_before(text: str, position: int, mark: str) -> bool:
    return text[:position].rstrip().endswith(mark)


def _phone_start(text: str, position: int) -> int:
    """A phone number's start, with the ``+`` or the area code's ``(`` written before its digits."""
    stripped = text[:position].rstrip()
    return len(stripped) - 1 if stripped.endswith(("+", "(")) else position


def _without_overlaps(found: list[Entity]) -> list[Entity]:
    kept: list[Entity] = []
    for e in sorted(found, key=lambda e: (e.start, -e.end)):
        if kept and e.start < kept[-1].end:
            continue
        kept.append(e)
    return kept

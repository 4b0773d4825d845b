"""The built-in redactor: payment card data, US social security numbers, e-mail addresses and phone numbers.

No service is called and nothing is learnt: each entity is a run of digits (:mod:`.spoken`, so a spoken number is
one too, hesitations and self-corrections inside it) or an address, told apart by its shape and by what it is said
after — the caller's own words, or the agent's question before them::

    >>> BuiltinRedactor().redact("My card number is 4111 1111 1111 1111, expiry 04/29").text
    'My card number is [CARD], expiry [EXPIRY]'

What a number is, is decided by its *topic*: the nearest word before it (up to 14 words back, across the turns read
with it) that says what is being given — a card word ("card", "visa", "the long number on the front"), a security
code's ("CVV", "security code", "on the back", "the three digits"), an expiry's ("expiry", "good through"), a social
security number's ("social", "SSN", "the nine digits"), a phone's ("phone", "call", "reach"), or a word that says it
is something else ("order", "reference", "tracking", "zip", "warranty", "flight", "ending in", "last four"). A word
after the number stands in when none comes before ("it's 615 on the back").

- ``CARD``: 13 to 19 digits that pass the Luhn check (ISO/IEC 7812's check digit) and begin as issuers' numbers do
  (2 to 6), inside a run that is not said to be something else; after a card word, any run of three or more digits
  (a number read in two turns, one misread digit that fails the check).
- ``EXPIRY``: after an expiry word, or straight after a card number in the same run (``04/29``, "oh four slash twenty
  nine", "April 2029"); not after "plan", "warranty", "coupon"…, whose dates are not a card's.
- ``CVV``: three or four digits after a security-code word, or at the end of a card number's run.
- ``SSN``: nine digits written 3-2-4 or said alone, of a number the Social Security Administration issues (not area
  000, 666 or 9xx, group 00 or serial 0000); after "social" or "SSN", any run of three or more digits.
- ``PHONE``: a North American number (ten digits whose area code and exchange start with 2–9, with or without a
  leading 1), ten or eleven digits starting with 0 (a national number abroad), ``+``/"plus" and 7 to 15 digits
  (E.164); after a phone word, any run of three or more digits.
- ``EMAIL``: an address as written (``jo.smith@example.com``) or as said ("jo dot smith at example dot com", "s as
  in sam, m, i, t, h at proton mail dot com"), its local part possibly in the turn before.

A number said twice in one breath ("032862736, that's zero three two…") is read as the number it repeats. A run
followed by a unit ("dollars", "percent", "pm", "minutes") or after a ``$`` is an amount, a rate, a time or a count.
Not redacted: a card's last four digits said alone, amounts, dates, times, order, reference and account numbers,
names and street addresses (``comprehend`` mode finds those). The numbering rules relied on (card issuers' first
digits, E.164 and the North American plan, the SSA's never-issued numbers) are in docs/protocols.md, "Numbers and
identifiers the built-in redactor reads".
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from voicebridge.redaction.spoken import HESITATIONS, DigitRun, Token, digit_runs, tokens

CARD, CVV, EXPIRY, SSN, EMAIL, PHONE = "CARD", "CVV", "EXPIRY", "SSN", "EMAIL", "PHONE"
KINDS = (CARD, CVV, EXPIRY, SSN, EMAIL, PHONE)
OTHER = "OTHER"
"""The topic of a number said to be none of the kinds (an order number, a zip code, a warranty's date)."""

_TOPICS: dict[str, str] = {
    **dict.fromkeys(
        ("card", "cards", "credit", "debit", "visa", "mastercard", "amex", "discover", "jcb", "diners", "unionpay",
         "maestro", "pan", "front", "long"),
        CARD,
    ),
    **dict.fromkeys(
        ("cvv", "cvc", "cvv2", "cvc2", "csc", "cid", "security", "code", "signature", "strip", "flip",
         "verification"),
        CVV,
    ),
    **dict.fromkeys(("expiry", "expiration", "exp", "mm", "yy"), EXPIRY),
    **dict.fromkeys(("social", "ssn", "ss", "taxpayer", "itin"), SSN),
    **dict.fromkeys(
        ("phone", "call", "cell", "mobile", "telephone", "reach", "callback", "fax", "text", "landline", "message",
         "whatsapp", "dial", "abroad"),
        PHONE,
    ),
    **dict.fromkeys(
        ("order", "reference", "ref", "ticket", "case", "rma", "invoice", "tracking", "claim", "confirmation",
         "flight", "zip", "zipcode", "postal", "room", "extension", "ext", "model", "part", "serial", "store",
         "branch", "plan", "warranty", "coupon", "offer", "promotion", "lease", "subscription", "membership",
         "policy", "trial", "contract", "appointment", "booking", "locator", "voucher", "gift", "promo", "ends",
         "ending", "last", "apartment", "apt", "suite", "unit", "street", "avenue", "road", "boulevard", "drive",
         "lane", "building", "floor", "gate", "seat", "platform", "route", "bus", "train", "version", "option",
         "press", "pressed", "hit", "balance", "statement", "fee", "rate", "charged", "payment", "bill", "cost",
         "price", "total", "owe", "born", "built", "renews", "renewal", "package", "shipment", "parcel", "menu",
         "member", "customer", "id", "license", "passport", "vin", "pin", "tax", "routing", "reservation", "loyalty",
         "rewards", "transaction", "receipt", "plate", "imei", "meter", "employee", "badge", "student", "patient",
         "po", "insurance", "registration", "domain", "deadline", "due", "birth", "birthday", "limit"),
        OTHER,
    ),
}  # fmt: skip
"""The words that say what a number is."""
_EXPIRES = frozenset(
    {"expires", "expire", "expiring", "expired", "thru", "through", "till", "until", "valid", "good", "runs", "date"}
)
"""Words that say a date is when something ends: a card's expiry, unless what ends is named and is no card."""
_NOT_CODES = frozenset(
    {"zip", "area", "postal", "promo", "gift", "voucher", "discount", "coupon", "confirmation", "access", "booking",
     "reference", "tracking", "error", "sort", "swift", "bar", "qr"}
)  # fmt: skip
"""Codes that are no card's security code."""
_UNITS_AFTER = frozenset(
    {"dollars", "dollar", "bucks", "cents", "percent", "%", "am", "pm", "o", "minutes", "minute", "hours", "hour",
     "days", "day", "weeks", "week", "months", "years", "year", "times", "boxes", "items", "kids", "people",
     "pounds", "euros", "miles", "degrees", "th", "st", "nd", "rd", "ms", "seconds", "second", "secs", "bytes",
     "kb", "mb", "gb", "hz", "khz", "frames", "chunks", "segments", "turns", "attempts", "retries", "tokens",
     "words", "characters", "chars", "calls", "requests", "records"}
)  # fmt: skip
"""What after a number makes it an amount, a rate, a time or a count (a log line's "after 1200 ms" among them)."""
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
_WINDOW = 14
"""How many words before a number may say what it is."""
_NEAR = 6
"""How near a word that says a number is something else must be to count: a card number said further on in the
sentence ("for order 8030 I want to pay with 3799…") is still a card number."""
_WINDOW_AFTER = 5
"""How many words after it, when none before does."""
_MOST_CORRECTED = 40
"""The longest run of digits read for a number after a correction in it (longer runs are no one's number)."""

_TLDS = frozenset(
    {"com", "net", "org", "edu", "gov", "mil", "int", "io", "co", "uk", "us", "ca", "de", "fr", "es", "it", "nl",
     "au", "in", "info", "biz", "me", "ai", "app", "dev", "ie", "mx", "ly", "tv"}
)  # fmt: skip
"""The top-level domains an address said aloud may end in (generic ones, and the countries callers name most)."""
_EMAIL_WRITTEN = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b")
_LEAD_INS = frozenset(
    {"is", "to", "with", "email", "mail", "address", "login", "try", "use", "under", "at", "me", "be", "was", "were",
     "registered", "update", "send", "spell", "it", "that", "the", "my", "your", "his", "her", "and", "or", "you",
     "can", "should", "file", "new", "personal", "work", "wife", "husband", "for", "paid", "pay", "shopped", "shop",
     "bought", "ordered", "looked", "went", "logged", "signed", "online", "home", "office", "store", "we", "am",
     "are", "been", "this", "here", "there", "but", "of", "from", "by", "change", "receipt", "would", "might",
     "spelled", "out", "let", "id", "account", "number", "phone", "call", "username", "user", "via"}
)  # fmt: skip
"""Words that come before an address's local part (or say there is none): where it begins."""
_ASIDES = frozenset(
    {"uh", "um", "er", "erm", "ah", "hmm", "mm", "mhm", "okay", "ok", "go", "ahead", "on", "yes", "yeah", "got",
     "so", "far", "sorry", "right", "hang"}
)  # fmt: skip
"""What may stand inside a said address without being part of it: a hesitation, or the agent's "mm-hmm, go on"
between the two turns it was said in."""
_NOT_DOMAIN = frozenset(
    {"the", "a", "an", "home", "work", "when", "i", "and", "in", "to", "my", "your", "least", "all", "once",
     "night", "noon", "first", "last", "this", "that", "it", "store", "mall", "office", "school"}
)  # fmt: skip
_MOST_LOCAL = 64
"""How many tokens an address's local part may take (each letter spelled, with commas and "as in")."""


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
    elif len(digits) in (5, 6):
        month, year = digits[: len(digits) - 4], digits[-4:]
        if not year.startswith("20"):
            return False
    else:
        return False
    return 1 <= int(month) <= 12


class BuiltinRedactor:
    """Finds the entities above in a piece of text; deterministic, and fast enough for every turn and log line."""

    name = "builtin"

    def find(self, text: str) -> list[Entity]:
        """Every entity in ``text``, in order, none overlapping."""
        toks = tokens(text)
        found = _emails(text, toks)
        runs = digit_runs(toks)
        for run in runs:
            if any(e.start <= run.start < e.end for e in found):
                continue
            found.extend(_classify(text, toks, run))
        return _merged(text, _without_overlaps(found))

    def redact(self, text: str, *, before: str = "", after: str = "") -> Redaction:
        """``text`` with every entity replaced by its type (``[CARD]``); ``before`` and ``after`` are the words said
        around it (the caller's turns before and after, the agent's question), so a number split across turns is
        still one number and a question can say what the answer is."""
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


# Numbers


def _classify(text: str, toks: list[Token], run: DigitRun) -> list[Entity]:
    digits = run.digits
    plus = _plus_before(toks, run.first)
    if plus is not None and 7 <= len(digits) <= 15:
        return [Entity(PHONE, plus, run.end)]
    if len(digits) < 2 or _amount(toks, run) or _date_shaped(run):
        return []
    topic = _topic_before(toks, run.first)
    if topic is None:
        topic = _topic_after(toks, run.last)
    if topic == OTHER:
        return []
    month = _month_word_before(toks, run.first)
    if topic is None:
        kind = None if _counting(run) else _by_shape(run)
        if kind is None:
            return []
        if kind == CARD:
            return _card(run)
        paren = kind == PHONE and run.first > 0 and toks[run.first - 1].text == "("
        return [Entity(kind, toks[run.first - 1].start if paren else run.start, run.end)]
    if month is not None and topic in (CARD, CVV, EXPIRY) and len(digits) <= 6:
        return [Entity(EXPIRY, month, run.end)]
    if (len(digits) < 3 and topic != EXPIRY) or (topic == SSN and len(digits) == 9 and not _ssn_valid(digits)):
        return []
    if topic == PHONE and len(run.groups) == 1 and (len(digits) > 15 or (len(digits) > 11 and digits[0] == "1")):
        return []  # one number longer than E.164 allows, or a North American one (+1) with more than 10 digits
    if topic == PHONE and run.first > 0 and toks[run.first - 1].text == "(":
        return [Entity(PHONE, toks[run.first - 1].start, run.end)]
    if topic in (CARD, CVV, EXPIRY) and len(digits) >= 13:
        return _card(run)
    return [Entity(topic, run.start, run.end)]


def _by_shape(run: DigitRun) -> str | None:
    """What a number said with no word around it is, by its shape alone: the whole run's, or the shape of what
    follows a correction or a pause in it ("…five two three sorry, from the top, nine four two…")."""
    kind = _shape(run)
    if kind is not None or len(run.digits) > _MOST_CORRECTED:
        return kind
    for i, separator in enumerate(run.separators):
        if separator == " ":
            kind = _shape(run.part(i + 1, len(run.groups) - 1))
            if kind is not None:
                return kind
    return None


def _shape(run: DigitRun) -> str | None:
    digits = run.digits
    half = len(digits) // 2
    if len(digits) >= 14 and len(digits) % 2 == 0 and digits[:half] == digits[half:]:
        digits = digits[:half]  # the same number said twice, in two forms
    n = len(digits)
    if _card_stretch(run) is not None:
        return CARD
    if n == 9 and _ssn_valid(digits) and (_written_ssn(run) or not all(g.written for g in run.groups)):
        return SSN
    if _nanp(digits) and (_phone_shaped(run) or n < len(run.digits)):
        return PHONE
    if (n in (10, 11) and digits[0] == "0" and not _date_shaped(run)) or (digits.startswith("00") and 11 <= n <= 17):
        return PHONE
    return None


def _card(run: DigitRun) -> list[Entity]:
    """A run that holds a card number: the card, and its expiry and code when they follow it in the same run;
    anything else in the run (a first try, a repetition) is the card's too."""
    stretch = _card_stretch(run)
    if stretch is None or stretch[0] != 0:
        return [Entity(CARD, run.start, run.end)]
    last = stretch[1]
    card = Entity(CARD, run.start, run.groups[last].end)
    if last + 1 == len(run.groups):
        return [card]
    tail = _after_card(run.part(last + 1, len(run.groups) - 1))
    return [card, *tail] if tail else [Entity(CARD, run.start, run.end)]


def _after_card(rest: DigitRun) -> list[Entity]:
    """A card number's expiry then security code, when ``rest`` is exactly those; else nothing."""
    digits = rest.digits
    if len(digits) in (3, 4) and not (len(digits) == 4 and _month_year(digits)):
        return [Entity(CVV, rest.start, rest.end)]
    if len(digits) == 4:
        return [Entity(EXPIRY, rest.start, rest.end)]
    taken = ""
    for i, group in enumerate(rest.groups[:-1]):
        taken += group.digits
        if len(taken) in (3, 4) and _month_year(taken) and len(digits) - len(taken) in (3, 4):
            return [
                Entity(EXPIRY, rest.start, group.end),
                Entity(CVV, rest.groups[i + 1].start, rest.end),
            ]
    return []


def _card_stretch(run: DigitRun) -> tuple[int, int] | None:
    """The groups of ``run`` that are a card number: the longest part of 13 to 19 digits that passes the Luhn check
    and begins with an issuer's first digit (2 to 6), earliest first."""
    lengths = [len(g.digits) for g in run.groups]
    if sum(lengths) < 13:
        return None
    best: tuple[int, int] | None = None
    best_total = 0
    for first in range(len(lengths)):
        if run.groups[first].digits[0] not in "23456":
            continue
        total = 0
        for last in range(first, len(lengths)):
            total += lengths[last]
            if total > 19:
                break
            number = "".join(g.digits for g in run.groups[first : last + 1]) if 13 <= total > best_total else ""
            if number and luhn_valid(number):
                best, best_total = (first, last), total
    return best


def _topic_before(toks: list[Token], first: int) -> str | None:
    """What the nearest telling word before token ``first`` says the number is (None when no word says)."""
    words = 0
    lowest = max(0, first - 4 * _WINDOW)
    for k in range(first - 1, lowest - 1, -1):
        word = toks[k].word or toks[k].text.lower()
        if word.isalpha() or (word.isalnum() and not word.isdigit()):
            words += 1
            topic = _topic_of(toks, k)
            if topic == OTHER and words > _NEAR:
                return None
            if topic is not None:
                return topic
            if words == _WINDOW:
                break
    return None


def _topic_after(toks: list[Token], last: int) -> str | None:
    words = 0
    for k in range(last, min(len(toks), last + 2 * _WINDOW_AFTER)):
        word = toks[k].word
        if not word.isalpha():
            if toks[k].text.isdigit():
                return None
            continue
        words += 1
        if words > _WINDOW_AFTER:
            return None
        topic = _topic_of(toks, k)
        if topic is not None and topic != OTHER:
            return topic
    return None


def _topic_of(toks: list[Token], k: int) -> str | None:
    """The topic the word at ``k`` gives, read with the words before it."""
    word = toks[k].word or toks[k].text.lower()
    previous = _word_before(toks, k)
    if word == "code":
        if previous in ("area", "country", "dialing", "dialling"):
            return PHONE
        return OTHER if previous in _NOT_CODES else CVV
    if word == "back":
        return CVV if previous == "the" else None
    if word == "case" and previous == "in":
        return None
    if word == "with" and previous in ("pay", "paying", "use", "charge"):
        return CARD
    if word == "security":
        return SSN if previous == "social" else CVV
    if word in ("digit", "digits"):
        if previous == "nine":
            return SSN
        if previous in ("thirteen", "fifteen", "sixteen", "nineteen"):
            return CARD
        if previous == "three" or (previous == "four" and _word_before(toks, _index_before(toks, k)) != "last"):
            return CVV
        return OTHER if previous == "four" else None
    if word == "v" and previous == "v":
        return CVV
    if word == "n" and previous == "s":
        return SSN
    if word == "number" and previous in ("my", "your", "best", "contact", "callback", "home", "work"):
        return PHONE
    if word in _EXPIRES:
        return _expires(toks, k)
    return _TOPICS.get(word)


def _expires(toks: list[Token], k: int) -> str:
    """An expiry, unless the thing said to end is named and is no card ("my plan expires…")."""
    for _ in range(5):
        k = _index_before(toks, k)
        if k < 0:
            break
        topic = _TOPICS.get(toks[k].word)
        if topic == CARD:
            return EXPIRY
        if topic == OTHER:
            return OTHER
    return EXPIRY


def _index_before(toks: list[Token], k: int) -> int:
    """The index of the word before token ``k`` (marks and numbers skipped, a few at most), or -1."""
    lowest = max(0, k - 8)
    for j in range(k - 1, lowest - 1, -1):
        if toks[j].word.isalpha():
            return j
    return -1


def _word_before(toks: list[Token], k: int) -> str:
    j = _index_before(toks, k)
    return toks[j].word if j >= 0 else ""


def _amount(toks: list[Token], run: DigitRun) -> bool:
    """A run that is an amount, a rate, a time, a count or an address: a unit or a street after it, or a currency
    sign before it."""
    if run.first > 0 and toks[run.first - 1].text in "$£€":
        return True
    k = run.last
    while k < len(toks) and toks[k].text in ".,":
        k += 1
    if k < len(toks) and toks[k].word in _UNITS_AFTER and not (toks[k].word == "o" and k + 1 == len(toks)):
        return True
    # A house number before its street ("14521 pine road"), a count before what it counts.
    return any(_TOPICS.get(toks[j].word) == OTHER for j in range(k, min(len(toks), k + 2)))


def _counting(run: DigitRun) -> bool:
    """Counting ("one two three four five…", "…nine ten"): no one's number."""
    values = [int(g.digits) for g in run.groups]
    return len(values) >= 4 and all(b == a + 1 for a, b in itertools.pairwise(values))


def _plus_before(toks: list[Token], first: int) -> int | None:
    """Where the ``+`` or the word "plus" just before an international number starts."""
    k = first - 1
    if k >= 0 and toks[k].text == "+":
        return toks[k].start
    if k >= 0 and toks[k].word == "plus":
        return toks[k].start
    return None


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


def _month_word_before(toks: list[Token], first: int) -> int | None:
    """Where a month's name starts just before token ``first`` ("April 2029", "may of thirty five")."""
    k = _index_before(toks, first)
    for _ in range(3):
        if k < 0 or toks[k].word not in ("of", "um", "uh", "er", "like"):
            break
        k = _index_before(toks, k)
    return toks[k].start if k >= 0 and toks[k].word in _MONTHS else None


# E-mail addresses


def _emails(text: str, toks: list[Token]) -> list[Entity]:
    """Addresses as written, and as said: a local part, "at", and a domain ending in a known top-level domain."""
    found = []
    for m in _EMAIL_WRITTEN.finditer(text):
        k = next(i for i, t in enumerate(toks) if t.end > m.start())
        found.append(Entity(EMAIL, _local_start(toks, k, m.start()), m.end()))
    lowered = text.lower()
    if "at" not in lowered and "@" not in text:
        return found
    for k, tok in enumerate(toks):
        if tok.word not in ("at", "@") or any(e.start <= tok.start < e.end for e in found):
            continue
        end = _domain_end(toks, k + 1)
        if end is None:
            continue
        start = _local_start(toks, k, tok.start)
        if start < tok.start:
            found.append(Entity(EMAIL, start, end))
    return found


def _domain_end(toks: list[Token], k: int) -> int | None:
    """Where a said domain starting at token ``k`` ends ("g mail dot com", "acme dash corp dot co dot uk",
    "comcast.net"); None when there is none, or it is a web address ("globex dot com slash returns")."""
    words = labels = 0
    end = None
    while k < len(toks) and labels < 5:
        word = toks[k].word
        if word in ("dot", ".") and words:
            j = _skip_asides(toks, k + 1)
            if j < len(toks) and toks[j].word == "dot":
                j = _skip_asides(toks, j + 1)
            if j >= len(toks) or not toks[j].word.isalpha() or toks[j].word in _NOT_DOMAIN:
                break
            if toks[j].word in _TLDS:
                end = toks[j].end
                after = _skip_asides(toks, j + 1)
                if after < len(toks) and toks[after].word in ("slash", "/"):
                    return None
            labels, words, k = labels + 1, 1, j + 1
            continue
        if word in ("dash", "hyphen", "-", "underscore", "_") and words:
            k += 1
            continue
        if word in _ASIDES or word in (",", "'") or (word == "." and not words):
            k += 1
            continue
        if end is not None or not word.isalnum() or word in _NOT_DOMAIN or words >= 3:
            break
        if labels == 0 and words == 0 and word in ("www", "w"):
            return None
        words += 1
        k += 1
    return end


def _skip_asides(toks: list[Token], k: int) -> int:
    while k < len(toks) and (toks[k].word in _ASIDES or toks[k].text in ",.'"):
        k += 1
    return k


def _local_start(toks: list[Token], k: int, default: int) -> int:
    """Where the local part of an address whose "at" (or written address) is token ``k`` begins: the earliest token
    back to a lead-in word ("my email is", "send it to"); ``default`` when there is none."""
    start = default
    j = k - 1
    while j >= 0 and k - j <= _MOST_LOCAL:
        tok = toks[j]
        word = tok.word or tok.text.lower()
        got_it = word == "it" and j > 0 and toks[j - 1].word == "got"
        if word in ("@", "at") or (word in _LEAD_INS and not got_it) or (j > 0 and toks[j - 1].text == "'"):
            break
        if word.isalnum() and word not in _ASIDES and not got_it:
            start = tok.start
        elif word.isalnum() or tok.text in ",.-_?!":
            pass
        elif tok.opaque:
            start = tok.start
        else:
            break
        j -= 1
    return start


_GAP_WORD = re.compile(r"[A-Za-z]+")


def _merged(text: str, found: list[Entity]) -> list[Entity]:
    """Entities of one kind with only a correction or a hesitation between them, as one: "[EXPIRY] wait no
    [EXPIRY]" gives nothing of what was said away but the words a caller corrected."""
    out: list[Entity] = []
    for e in found:
        if out and out[-1].kind == e.kind and e.kind != EMAIL and _hesitation(text[out[-1].end : e.start]):
            out[-1] = Entity(e.kind, out[-1].start, e.end)
        else:
            out.append(e)
    return out


def _hesitation(gap: str) -> bool:
    words = _GAP_WORD.findall(gap.lower())
    return len(words) <= 8 and all(w in HESITATIONS or w in _MONTHS for w in words)


def _without_overlaps(found: list[Entity]) -> list[Entity]:
    kept: list[Entity] = []
    for e in sorted(found, key=lambda e: (e.start, -e.end)):
        if kept and e.start < kept[-1].end:
            if e.end > kept[-1].end and e.kind == kept[-1].kind:
                kept[-1] = Entity(e.kind, kept[-1].start, e.end)
            continue
        kept.append(e)
    return kept

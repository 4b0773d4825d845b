"""Test sets for the redactors: a generated one (entities as callers say them, and ordinary sentences that must not
change), the identifiers nothing may change, and the reader and scorer of the independent set in tests/data/redaction/.

:func:`entity_cases` makes card numbers (Visa, Mastercard, American Express, Discover, 13 to 19 digits, each with a
valid Luhn digit), expiry dates, security codes, social security numbers, e-mail addresses and phone numbers, each
in written and spoken forms inside a sentence a caller might say; :func:`ordinary_sentences` gives sentences full of
numbers and words that are none of these. The same seed always gives the same set::

    >>> cases = entity_cases(seed=7)
    >>> len(cases) >= 200, {case.kind for case in cases} >= {"CARD", "SSN", "EMAIL", "PHONE"}
    (True, True)
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from voicebridge.redaction import luhn_valid
from voicebridge.redaction.builtin import JOIN

_DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True)
class Case:
    """A sentence with one entity in it: what the entity is, and its digits (or its text, for an address)."""

    kind: str
    form: str
    sentence: str
    secret: str
    """The digits a redactor must remove (an e-mail address's text)."""

    def leaked(self, redacted: str) -> bool:
        """Whether ``redacted`` still gives the entity away: four or more of its digits in a row (written or
        spoken), or any part of an address."""
        if self.kind == "EMAIL":
            local = re.split(r"@| at ", self.secret)[0]
            return local.lower() in redacted.lower()
        from voicebridge.redaction.spoken import digit_runs

        said = "".join(run.digits for run in digit_runs(redacted))
        return any(self.secret[i : i + 4] in said for i in range(len(self.secret) - 3))


def card_number(rng: random.Random) -> str:
    """A card number with a valid check digit, of one of the common schemes and lengths."""
    prefix, length = rng.choice(
        [("4", 16), ("4", 13), ("4", 19), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16)]
    )
    body = prefix + "".join(rng.choice("0123456789") for _ in range(length - len(prefix) - 1))
    for check in "0123456789":
        if luhn_valid(body + check):
            return body + check
    raise AssertionError("unreachable: one check digit always fits")


def spell_digits(digits: str) -> str:
    return " ".join(_DIGIT_WORDS[int(d)] for d in digits)


def spell_pairs(digits: str) -> str:
    """Digits read two at a time, as people read a card: "41 11" → "forty one eleven", "05" → "oh five"."""
    words = []
    for i in range(0, len(digits), 2):
        pair = digits[i : i + 2]
        if len(pair) == 1:
            words.append(_DIGIT_WORDS[int(pair)])
        elif pair[0] == "0":
            words.append(f"oh {_DIGIT_WORDS[int(pair[1])]}")
        elif pair[0] == "1":
            words.append(_TEENS[int(pair[1])])
        elif pair[1] == "0":
            words.append(_TENS[int(pair[0])])
        else:
            words.append(f"{_TENS[int(pair[0])]} {_DIGIT_WORDS[int(pair[1])]}")
    return " ".join(words)


def spell_with_doubles(digits: str) -> str:
    words, i = [], 0
    while i < len(digits):
        if i + 1 < len(digits) and digits[i] == digits[i + 1]:
            words.append(f"double {_DIGIT_WORDS[int(digits[i])]}")
            i += 2
        else:
            words.append(_DIGIT_WORDS[int(digits[i])])
            i += 1
    return " ".join(words)


def _groups(digits: str, sizes: tuple[int, ...]) -> list[str]:
    out, at = [], 0
    for size in sizes:
        out.append(digits[at : at + size])
        at += size
    if at < len(digits):
        out.append(digits[at:])
    return [g for g in out if g]


def _card_forms(number: str, rng: random.Random) -> dict[str, str]:
    sizes = (4, 6, 5) if len(number) == 15 else (4, 4, 4, 4, 3)
    groups = _groups(number, sizes)
    return {
        "written": number,
        "written grouped": " ".join(groups),
        "written dashed": "-".join(groups),
        "spoken digits": ", ".join(spell_digits(g) for g in groups),
        "spoken pairs": spell_pairs(number),
        "spoken doubles": spell_with_doubles(number),
        "mixed": " ".join(g if i % 2 else spell_digits(g) for i, g in enumerate(groups)),
        "spoken dashes": " dash ".join(spell_digits(g) for g in groups),
    }


_CARD_SAYINGS = (
    "My card number is {}",
    "it's {}",
    "sure, the number is {}",
    "the long number on the front is {}",
    "ok {}",
    "use my visa, {}",
    "{}",
)


def entity_cases(seed: int = 20, *, per_kind: int = 40) -> list[Case]:
    """At least ``per_kind`` sentences of each entity type, across its written and spoken forms."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for i in range(per_kind * 2):
        number = card_number(rng)
        forms = _card_forms(number, rng)
        form = list(forms)[i % len(forms)]
        cases.append(Case("CARD", form, rng.choice(_CARD_SAYINGS).format(forms[form]), number))
    for i in range(per_kind):
        month, year = rng.randint(1, 12), rng.randint(25, 35)
        mmyy = f"{month:02d}{year:02d}"
        said = [
            f"expiry {month:02d}/{year:02d}",
            f"it expires {spell_pairs(f'{month:02d}')} {spell_pairs(f'{year:02d}')}",
            f"the expiration date is {_MONTHS[month - 1]} 20{year:02d}",
            f"expires {month:02d} {year:02d}",
            f"exp {spell_digits(mmyy)}",
        ][i % 5]
        cases.append(
            Case(
                "EXPIRY",
                ["written", "spoken pairs", "month name", "written", "spoken digits"][i % 5],
                said,
                mmyy if i % 5 != 2 else f"20{year:02d}",
            )
        )
    for i in range(per_kind):
        code = "".join(rng.choice("0123456789") for _ in range(3 if i % 4 else 4))
        said = [
            f"the security code is {code}",
            f"CVV {spell_digits(code)}",
            f"the three digits on the back, the security code, are {spell_digits(code)}",
            f"cvc is {code}",
        ][i % 4]
        cases.append(Case("CVV", "written" if i % 2 == 0 else "spoken digits", said, code))
    for i in range(per_kind):
        ssn = f"{rng.randint(1, 665):03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"
        said = [
            f"my SSN is {ssn[:3]}-{ssn[3:5]}-{ssn[5:]}",
            f"it's {ssn[:3]} {ssn[3:5]} {ssn[5:]}",
            f"my social security number is {spell_digits(ssn[:3])}, {spell_digits(ssn[3:5])}, {spell_digits(ssn[5:])}",
            f"social is {ssn}",
            f"my social is {spell_with_doubles(ssn)}",
        ][i % 5]
        cases.append(Case("SSN", "spoken" if i % 5 in (2, 4) else "written", said, ssn))
    names = ("jo", "sam.lee", "a_patel", "mike", "dana-k", "li.wei88", "rosa")
    domains = ("example.com", "mail.example.org", "example.co.uk", "corp.example.net", "example.io")
    for i in range(per_kind):
        name, domain = rng.choice(names), rng.choice(domains)
        address = f"{name}@{domain}"
        spoken = (
            name.replace(".", " dot ").replace("_", " underscore ").replace("-", " dash ")
            + " at "
            + domain.replace(".", " dot ")
        )
        said = [f"my email is {address}", f"it's {spoken}", f"send it to {address} please", f"email {spoken}"][i % 4]
        cases.append(Case("EMAIL", "written" if i % 2 == 0 else "spoken", said, address if i % 2 == 0 else spoken))
    for i in range(per_kind):
        area = f"{rng.randint(2, 9)}{rng.randint(0, 9)}{rng.randint(0, 9)}"
        exchange = f"{rng.randint(2, 9)}{rng.randint(0, 9)}{rng.randint(0, 9)}"
        line = f"{rng.randint(0, 9999):04d}"
        digits = area + exchange + line
        said = [
            f"call me at ({area}) {exchange}-{line}",
            f"my number is {area}-{exchange}-{line}",
            f"my cell is {spell_digits(area)}, {spell_digits(exchange)}, {spell_digits(line)}",
            f"you can reach me on +44 20 {exchange[:2]}{line[:2]} {line[2:]}{area[:2]}",
            f"it's {area}.{exchange}.{line}",
            f"phone {spell_with_doubles(digits)}",
        ][i % 6]
        secret = f"4420{exchange[:2]}{line}{area[:2]}" if i % 6 == 3 else digits
        cases.append(Case("PHONE", "spoken" if i % 6 in (2, 5) else "written", said, secret))
    return cases


def ordinary_sentences() -> list[str]:
    """Sentences a caller or an agent says that hold nothing to redact: amounts, times, dates, counts, addresses,
    order and flight numbers, a card's last four digits said alone."""
    amounts = [f"I need to pay {n} dollars" for n in (5, 45, 120, 1999)] + [
        "the balance is one hundred and twenty dollars and fifty cents",
        "it was two thousand dollars",
        "about forty five dollars",
    ]
    times = [
        "can you call me back at five",
        "I'll be home at half past three",
        "the meeting is at 10:30",
        "one o'clock works for me",
        "it takes two to three business days",
        "wait about fifteen minutes",
    ]
    dates = [
        "I was born in nineteen eighty five",
        "it happened on March 3rd",
        "the payment was due on 04/15",
        "we moved in 2019",
        "in twenty twenty two I opened the account",
    ]
    counts = [
        "I have two kids and one dog",
        "there are three people on the account",
        "I ordered 2 of them",
        "press one for sales",
        "option four please",
        "I've called five times this week",
        "one two three testing",
    ]
    places = [
        "I live at 42 Main Street",
        "my zip code is 90210",
        "it's apartment 4B",
        "my zip is nine oh two one oh",
        "the branch on 5th avenue",
    ]
    references = [
        "my order number is 55123",
        "flight 1234 to Boston",
        "the reference is AB1234",
        "ticket number 998877",
        "the card ends in 4242",
        "the last four digits are one two three four",
        "my account is ending in 8812",
        "room 101",
    ]
    chatter = [
        "I want to pay my bill",
        "yes please",
        "no thank you",
        "can I speak to a person",
        "my card was declined yesterday",
        "I'd like to check my balance",
        "what time do you open",
        "my email changed last week",
        "I'll be at home tonight",
        "call my cell if there's a problem",
        "I lost my phone",
        "the security team called me",
        "it expires soon I think",
        "I got a text about my social media account",
        "thank you so much, bye",
        "I'm at the office, dot dot dot, you know",
        "send it to my home address",
        "the code didn't work",
    ]
    sentences = amounts + times + dates + counts + places + references + chatter
    # Each again in the words a recogniser might write for it, and with the caller's hesitations.
    return sentences + [f"um, {s.lower()}" for s in sentences] + [f"{s}, okay?" for s in sentences]


def _one_of(rng: random.Random, *forms: Callable[[], str]) -> str:
    """One of ``forms``, chosen by ``rng``, made (only the one chosen draws from ``rng``)."""
    return rng.choice(forms)()


def _hex(rng: random.Random, length: int) -> str:
    return f"{rng.getrandbits(length * 4):0{length}x}"


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[rng.getrandbits(2)]}{h[17:20]}-{h[20:]}"


_REGIONS = ("us-east-1", "us-west-2", "eu-west-2", "eu-central-1", "ap-southeast-2", "ca-central-1")
_EPOCH_MS = (1_500_000_000_000, 2_000_000_000_000)
"""July 2017 to May 2033: every epoch-millisecond time a call of this product is stamped with."""


def _epoch_ms(rng: random.Random) -> int:
    return rng.randrange(*_EPOCH_MS)


def _iso(rng: random.Random) -> str:
    ms = _epoch_ms(rng)
    at = dt.datetime.fromtimestamp(ms // 1000, dt.UTC)
    day, clock, frac = at.strftime("%Y-%m-%d"), at.strftime("%H:%M:%S"), f"{ms % 1000:03d}"
    return _one_of(
        rng,
        lambda: f"{day}T{clock}.{frac}Z",
        lambda: f"{day}T{clock}+00:00",
        lambda: f"{day} {clock},{frac}+0000",
        lambda: f"{day}T{clock}.{frac}{rng.randrange(1000):03d}+00:00",
        lambda: at.strftime("%Y%m%dT%H%M%SZ"),
    )


def _arn(rng: random.Random) -> str:
    region, account = rng.choice(_REGIONS), f"{rng.randrange(10**12):012d}"
    return _one_of(
        rng,
        lambda: f"arn:aws:connect:{region}:{account}:instance/{_uuid(rng)}/contact/{_uuid(rng)}",
        lambda: f"arn:aws:lambda:{region}:{account}:function:voicebridge-AwaitTurn-{_hex(rng, 12).upper()}:7",
        lambda: f"arn:aws:kinesisvideo:{region}:{account}:stream/connect-acme-contact-{_uuid(rng)}/{_epoch_ms(rng)}",
        lambda: f"arn:aws:iam::{account}:role/voicebridge-ConsumerRole-{_hex(rng, 12).upper()}",
        lambda: f"arn:aws:s3:::voicebridge-records-{account}-{region}/records/{_uuid(rng)}.json",
        lambda: f"arn:aws:kms:{region}:{account}:key/{_uuid(rng)}",
    )


def _s3(rng: random.Random) -> str:
    bucket = f"voicebridge-prompts-{rng.randrange(10**12):012d}"
    key = _one_of(
        rng,
        lambda: f"prompts/{_hex(rng, 64)}.wav",
        lambda: f"records/{dt.datetime.fromtimestamp(_epoch_ms(rng) // 1000, dt.UTC):%Y/%m/%d}/{_uuid(rng)}.json",
        lambda: f"records/{_uuid(rng)}-{rng.randrange(2, 9)}.json",
    )
    return _one_of(
        rng,
        lambda: key,
        lambda: f"s3://{bucket}/{key}",
        lambda: f"https://{bucket}.s3.{rng.choice(_REGIONS)}.amazonaws.com/{key}",
    )


def _xray(rng: random.Random) -> str:
    root = f"1-{_hex(rng, 8)}-{_hex(rng, 24)}"
    if rng.getrandbits(1):
        return root
    return f"Root={root};Parent={_hex(rng, 16)};Sampled={rng.getrandbits(1)}"


IDENTIFIER_KINDS: dict[str, Callable[[random.Random], str]] = {
    "contact id": _uuid,
    "request id": _uuid,
    "X-Ray trace id": _xray,
    "traceparent": lambda rng: f"00-{_hex(rng, 32)}-{_hex(rng, 16)}-0{rng.getrandbits(1)}",
    "ARN": _arn,
    "S3 key or URL": _s3,
    "hash": lambda rng: _hex(rng, (32, 40, 64)[rng.randrange(3)]),
    "fragment number": lambda rng: str(rng.randrange(10**46, 10**47)),
    "epoch ms": lambda rng: str(_epoch_ms(rng)),
    "ISO-8601 time": _iso,
}
"""What the product writes beside a caller's words, by kind: each maker gives one identifier as the product or AWS
spells it. A contact id and a Lambda request id are UUIDs; an X-Ray trace id is ``1-<8 hex>-<24 hex>`` (Lambda's
``_X_AMZN_TRACE_ID`` holds it as ``Root=…;Parent=…;Sampled=…``); a W3C ``traceparent`` is
``00-<32 hex>-<16 hex>-<2 hex>``; Kinesis Video fragment numbers are decimal strings (47 digits in practice); a
prompt's S3 key is the SHA-256 hex digest of what it says; a call record's key holds the day and the contact id."""


def identifiers(kind: str, count: int, seed: int = 28) -> list[str]:
    """``count`` identifiers of ``kind`` (a key of :data:`IDENTIFIER_KINDS`); the same seed gives the same ones."""
    rng = random.Random(f"{seed}:{kind}")
    make = IDENTIFIER_KINDS[kind]
    return [make(rng) for _ in range(count)]


# The independent set

INDEPENDENT = Path(__file__).resolve().parents[3] / "tests" / "data" / "redaction"
_FILES = {"dev": "independent-dev.jsonl", "held-out": "independent-heldout.jsonl"}
Span = tuple[int, int]


def applied(text: str, spans: Sequence[Span]) -> str:
    """``text`` with each span replaced by ``[X]`` (what a contender's output looks like)."""
    out, at = [], 0
    for start, end in sorted(spans):
        if start < at:
            start = at
        if end <= start:
            continue
        out += [text[at:start], "[X]"]
        at = end
    return "".join([*out, text[at:]])


@dataclass(frozen=True)
class Conversation:
    """One line of the independent set."""

    id: str
    kind: str
    turns: tuple[tuple[str, str], ...]
    """(speaker, text) in the order said."""
    entities: tuple[tuple[str, int, int, int], ...]
    """(type, turn, start, end)."""

    @property
    def negative(self) -> bool:
        return self.kind.startswith("negative/")

    def context(self, turn: int) -> tuple[str, str]:
        """What the call record gives the redactor around ``turn``: the words since the caller's previous turn
        (that turn included), and the caller's next turn."""
        first = turn
        while first > 0:
            first -= 1
            if self.turns[first][0] == "caller":
                break
        before = JOIN.join(text for _, text in self.turns[first:turn])
        after = next((text for speaker, text in self.turns[turn + 1 :] if speaker == "caller"), "")
        return before, after


def load_independent(name: str, folder: Path = INDEPENDENT) -> list[Conversation]:
    """The independent set's ``dev`` or ``held-out`` file (tests/data/redaction/, its README says how it was made)."""
    out = []
    for line in (folder / _FILES[name]).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append(
            Conversation(
                row["id"],
                row["class"],
                tuple((t["speaker"], t["text"]) for t in row["turns"]),
                tuple((e["type"], e["turn"], e["start"], e["end"]) for e in row["entities"]),
            )
        )
    return out


@dataclass
class Scored:
    """One contender's figures on one file of the independent set."""

    found: dict[str, list[int]]
    """Per class: [entities found, entities]."""
    changed: list[int]
    """[ordinary turns changed, ordinary turns]."""
    misses: list[str]
    false_positives: list[str]

    @property
    def recall(self) -> float:
        found = sum(f for f, _ in self.found.values())
        return found / max(1, sum(n for _, n in self.found.values()))

    def recall_of(self, prefix: str) -> float:
        rows = [v for k, v in self.found.items() if k.startswith(prefix)]
        return sum(f for f, _ in rows) / max(1, sum(n for _, n in rows))

    @property
    def changed_rate(self) -> float:
        return self.changed[0] / max(1, self.changed[1])


def _covered(spans: Sequence[Span], text: str, start: int, end: int) -> bool:
    return all(any(s <= i < e for s, e in spans) for i in range(start, end) if text[i].isalnum())


def score(find: Callable[[str, str, str], Sequence[Span]], conversations: Sequence[Conversation]) -> Scored:
    result = Scored(defaultdict(lambda: [0, 0]), [0, 0], [], [])
    for conversation in conversations:
        spans = []
        for i, (_, text) in enumerate(conversation.turns):
            before, after = conversation.context(i)
            spans.append(find(text, before, after))
        if conversation.negative:
            for i, (_, text) in enumerate(conversation.turns):
                result.changed[1] += 1
                if spans[i]:
                    result.changed[0] += 1
                    result.false_positives.append(f"{conversation.id}: {applied(text, spans[i])}")
            continue
        for kind, turn, start, end in conversation.entities:
            text = conversation.turns[turn][1]
            found = _covered(spans[turn], text, start, end)
            tally = result.found[conversation.kind]
            tally[0] += found
            tally[1] += 1
            if not found:
                result.misses.append(f"{conversation.id} {kind} {text[start:end]!r}: {applied(text, spans[turn])}")
    return result

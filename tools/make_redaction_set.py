"""Writes the independent redaction set: ``tests/data/redaction/independent-{dev,heldout}.jsonl``.

The set measures the transcript redactor from outside. It was written from the list of entity classes and the
misses reported in issue 28 (part 3), in the style of a streaming speech-to-text transcript of a contact-centre
call: mostly lower case, numbers said as words or written as digits or both, fillers, pauses, self-corrections,
numbers split across two caller turns, and an agent's question as the only context. Hard negatives (reference
numbers, amounts, dates that are not card expiries, addresses, websites said aloud, counting, chit-chat) must come
through the redactor unchanged.

Each line is one conversation::

    {"id": "card-filler-007", "class": "card/filler",
     "turns": [{"speaker": "agent", "text": "..."}, {"speaker": "caller", "text": "..."}],
     "entities": [{"type": "CARD", "turn": 1, "start": 20, "end": 61}]}

``start``/``end`` slice the turn's text (end exclusive) and cover exactly the entity's spoken or written material;
a self-correction's span covers the wrong and the corrected digits; a number split across turns has one entity per
turn. The last turn is always the caller's; entities sit in caller turns only; negatives have no entities.

An utterance goes to the dev file or the held-out file by a hash of its id (about 40 % / 60 %), so adding a class
never moves another utterance. Every generator draws from its own seeded ``random.Random``, so the output is the
same on every run. The generator checks its own spans and values (word boundaries, no overlaps, Luhn for every card
the caller did not misspeak, SSA-valid SSNs, the digits and addresses each span spells) and stops on the first
failure.

Run it from the repository root: ``python3 tools/make_redaction_set.py`` (standard library only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SEED = "voicebridge-redaction-independent-1"
OUT_DIR = Path("tests/data/redaction")
DEV_PERCENT = 40

# ---------------------------------------------------------------------------------------------------------------
# Values, spelled out
# ---------------------------------------------------------------------------------------------------------------

UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def luhn_complete(body: str) -> str:
    """The body plus the one check digit that makes it Luhn-valid."""
    for check in "0123456789":
        if luhn_ok(body + check):
            return body + check
    raise AssertionError("unreachable: one check digit always fits")


def ssn_ok(digits: str) -> bool:
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return (
        len(digits) == 9
        and digits.isdigit()
        and area not in ("000", "666")
        and area[0] != "9"
        and group != "00"
        and serial != "0000"
    )


def int_words(n: int, rng: random.Random, *, allow_and: bool = True) -> str:
    """An amount said as a caller says it: 2412 -> "two thousand four hundred (and) twelve"."""
    if n < 10:
        return UNITS[n]
    if n < 20:
        return TEENS[n - 10]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + UNITS[n % 10])
    if n < 1000:
        rest = n % 100
        head = UNITS[n // 100] + " hundred"
        if rest == 0:
            return head
        joiner = " and " if allow_and and rng.random() < 0.5 else " "
        return head + joiner + int_words(rest, rng, allow_and=allow_and)
    if n < 1_000_000:
        rest = n % 1000
        head = int_words(n // 1000, rng, allow_and=allow_and) + " thousand"
        if rest == 0:
            return head
        joiner = " and " if allow_and and rest < 100 and rng.random() < 0.6 else " "
        return head + joiner + int_words(rest, rng, allow_and=allow_and)
    head = int_words(n // 1_000_000, rng, allow_and=allow_and) + " million"
    rest = n % 1_000_000
    return head if rest == 0 else head + " " + int_words(rest, rng, allow_and=allow_and)


def pair_words(two: str) -> str:
    """Two digits said as one number: "05" -> "oh five", "41" -> "forty one", "10" -> "ten"."""
    a, b = int(two[0]), int(two[1])
    if a == 0:
        return "oh " + UNITS[b] if b else "oh oh"
    if a == 1:
        return TEENS[b]
    return TENS[a] + ("" if b == 0 else " " + UNITS[b])


def digit_word(d: str, zero: str) -> str:
    return zero if d == "0" else UNITS[int(d)]


def digit_words(ds: str, rng: random.Random, zero: str, doubles: float = 0.0) -> list[str]:
    """Each digit a word; with probability ``doubles`` a run of two or three is "double"/"triple" the digit."""
    out: list[str] = []
    i = 0
    while i < len(ds):
        run = 1
        while i + run < len(ds) and ds[i + run] == ds[i] and run < 3:
            run += 1
        if run >= 2 and rng.random() < doubles:
            take = run if run == 3 and rng.random() < 0.5 else 2
            out.append(("triple " if take == 3 else "double ") + digit_word(ds[i], zero))
            i += take
        else:
            out.append(digit_word(ds[i], zero))
            i += 1
    return out


def grouped_words(ds: str, rng: random.Random) -> str:
    """Digits said the way people read 3- and 4-digit groups: "seven forty one", "fifty three oh nine"."""
    if len(ds) == 2:
        return pair_words(ds)
    if len(ds) == 3:
        if ds[1:] == "00" and ds[0] != "0":
            return UNITS[int(ds[0])] + " hundred"
        return digit_word(ds[0], "oh") + " " + pair_words(ds[1:])
    if len(ds) == 4:
        if ds[0] != "0" and ds[1:] == "000":
            return UNITS[int(ds[0])] + " thousand"
        if ds[0] != "0" and ds[2:] == "00" and ds[:2] != "00":
            return pair_words(ds[:2]) + " hundred"
        if ds[0] == "0":
            return " ".join(digit_words(ds, rng, "oh"))
        return pair_words(ds[:2]) + " " + pair_words(ds[2:])
    return " ".join(digit_words(ds, rng, "oh"))


def split_sizes(ds: str, sizes: list[int]) -> list[str]:
    assert sum(sizes) == len(ds), (ds, sizes)
    out, i = [], 0
    for s in sizes:
        out.append(ds[i : i + s])
        i += s
    return out


# ---------------------------------------------------------------------------------------------------------------
# Reading a span back (the generator's own check that a span spells the value it claims)
# ---------------------------------------------------------------------------------------------------------------

_UNIT_VALUE = {w: i for i, w in enumerate(UNITS)} | {"oh": 0, "o": 0}
_TEEN_VALUE = {w: 10 + i for i, w in enumerate(TEENS)}
_TENS_VALUE = {w: i for i, w in enumerate(TENS) if w}


def digits_said(text: str) -> str:
    """The digit string a span says, ignoring fillers; the inverse of the renderers above."""
    tokens = re.findall(r"[a-z]+|\d+", text.lower())
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok.isdigit():
            out.append(tok)
        elif tok in ("double", "triple") and nxt in _UNIT_VALUE:
            out.append(str(_UNIT_VALUE[nxt]) * (2 if tok == "double" else 3))
            i += 1
        elif tok in _TENS_VALUE:
            if nxt in _UNIT_VALUE and nxt not in ("zero", "oh", "o"):
                out.append(f"{_TENS_VALUE[tok]}{_UNIT_VALUE[nxt]}")
                i += 1
            else:
                out.append(f"{_TENS_VALUE[tok]}0")
        elif tok in _TEEN_VALUE:
            out.append(str(_TEEN_VALUE[tok]))
        elif tok in _UNIT_VALUE:
            out.append(str(_UNIT_VALUE[tok]))
        elif tok == "hundred":
            out.append("00")
        elif tok == "thousand":
            out.append("000")
        i += 1
    return "".join(out)


_EMAIL_WORDS = {"dot": ".", "at": "@", "underscore": "_", "dash": "-", "hyphen": "-"}


def email_said(text: str) -> str:
    """The address a span says: words for symbols, spelled letters and number words joined up."""
    text = re.sub(r"\b([a-z]) as in [a-z]+", r"\1", text.lower())
    tokens = [t for t in re.split(r"[\s,]+", text) if t and t.strip(".") not in ("uh", "um")]
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok in _EMAIL_WORDS:
            out.append(_EMAIL_WORDS[tok])
        elif tok in _TENS_VALUE and nxt in _UNIT_VALUE and nxt not in ("zero", "oh"):
            out.append(f"{_TENS_VALUE[tok]}{_UNIT_VALUE[nxt]}")
            i += 1
        elif tok in _TENS_VALUE:
            out.append(f"{_TENS_VALUE[tok]}0")
        elif tok in _TEEN_VALUE:
            out.append(str(_TEEN_VALUE[tok]))
        elif tok in UNITS:
            out.append(str(UNITS.index(tok)))
        elif tok == "oh" and out and out[-1][-1:].isdigit():
            out.append("0")
        elif tok in ("hundred", "thousand"):
            out.append("00" if tok == "hundred" else "000")
        else:
            out.append(tok.rstrip("."))
        i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------------
# Building turns with spans
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ent:
    """An entity's text in a turn, with what the generator checks it against.

    ``digits`` is the value the span must spell (None when a self-correction makes the spoken digits differ from
    the value); ``address`` likewise for an e-mail address. ``corrected`` is the value a self-correction ends on:
    its digits appear in order among those said. ``misspoken`` marks a card number said with one digit wrong,
    which must fail Luhn.
    """

    type: str
    text: str
    digits: str | None = None
    address: str | None = None
    corrected: str | None = None
    misspoken: bool = False


@dataclass
class Turn:
    speaker: str
    text: str
    spans: list[tuple[Ent, int, int]] = field(default_factory=list)


_SLOT = re.compile(r"\{(\w+)\}")


def fill(speaker: str, template: str, **slots: str | Ent) -> Turn:
    """A turn from a template whose ``{slot}``s are plain text or entities; entity spans are recorded."""
    parts: list[str] = []
    spans: list[tuple[Ent, int, int]] = []
    pos = 0
    length = 0
    for m in _SLOT.finditer(template):
        lit = template[pos : m.start()]
        parts.append(lit)
        length += len(lit)
        value = slots[m.group(1)]
        text = value.text if isinstance(value, Ent) else value
        if isinstance(value, Ent):
            spans.append((value, length, length + len(text)))
        parts.append(text)
        length += len(text)
        pos = m.end()
    parts.append(template[pos:])
    return Turn(speaker, "".join(parts), spans)


def caller(template: str, **slots: str | Ent) -> Turn:
    return fill("caller", template, **slots)


def agent(text: str) -> Turn:
    return Turn("agent", text)


def ink_style(turn: Turn, rng: random.Random) -> Turn:
    """Streaming transcripts are mostly lower case; some turns come capitalised or with closing punctuation."""
    text = turn.text
    if turn.speaker == "agent":
        if rng.random() < 0.5:
            text = text[0].upper() + text[1:]
        return Turn(turn.speaker, text, turn.spans)
    if rng.random() < 0.2 and text[0].isalpha():
        text = text[0].upper() + text[1:]
    if rng.random() < 0.25 and text[-1].isalnum():
        text += rng.choice([".", ".", "?"])
    return Turn(turn.speaker, text, turn.spans)


# ---------------------------------------------------------------------------------------------------------------
# Saying a digit string: groups, fillers, pauses, corrections
# ---------------------------------------------------------------------------------------------------------------

FILLERS = ["uh", "um", "uh", "um", "like", "er", "hmm", "uh let me see", "you know", "hang on", "wait", "ah"]
CORRECTIONS = [
    "um sorry",
    "sorry",
    "no wait",
    "no sorry",
    "I mean",
    "uh no",
    "oops",
    "sorry I mean",
    "no no",
    "actually",
    "scratch that",
    "wait no",
    "sorry, let me start again,",
    "hold on that's wrong,",
    "no, sorry,",
]
HESITATIONS = ["... ", "... ", ", ", " - ", "... uh ", ", um, "]


@dataclass
class Say:
    """How a caller says a number: per-group mode, zero word, separators, fillers and pauses."""

    mode: str = "words"  # words | digits | mixed | pairs
    zero: str = "zero"
    doubles: float = 0.0
    sep: str = " "
    fillers: int = 0
    hesitations: int = 0


def say_group(g: str, rng: random.Random, how: Say) -> list[str]:
    mode = how.mode if how.mode != "mixed" else rng.choice(["words", "digits"])
    if mode == "digits":
        return [g]
    if mode == "pairs":
        return [grouped_words(g, rng)]
    return digit_words(g, rng, how.zero, how.doubles)


def say_groups(groups: list[str], rng: random.Random, how: Say) -> str:
    """The groups said with ``how``; fillers and pauses go only between digits, never at either end."""
    said = [say_group(g, rng, how) for g in groups]
    seps = [how.sep] * (len(groups) - 1)
    # Places inside a group (between two of its word tokens) where a filler or a pause can go.
    inner = [(gi, ti) for gi, toks in enumerate(said) for ti in range(1, len(toks))]
    for _ in range(how.fillers):
        filler = rng.choice(FILLERS)
        if seps and (not inner or rng.random() < 0.6):
            k = rng.randrange(len(seps))
            seps[k] = rng.choice([" ", ", ", "... "]) + filler + rng.choice([" ", ", ", "... "])
        elif inner:
            gi, ti = rng.choice(inner)
            said[gi].insert(ti, filler)
            inner = [(gi, ti) for gi, toks in enumerate(said) for ti in range(1, len(toks))]
    for _ in range(how.hesitations):
        if seps and (not inner or rng.random() < 0.5):
            k = rng.randrange(len(seps))
            seps[k] = rng.choice(HESITATIONS)
        elif inner:
            gi, ti = rng.choice(inner)
            said[gi][ti - 1] = said[gi][ti - 1] + "..."
    chunks = [" ".join(toks) for toks in said]
    text = chunks[0]
    for sep, chunk in zip(seps, chunks[1:], strict=True):
        text += sep + chunk
    text = re.sub(r"\s+", " ", text)
    text = text.replace(",,", ",").replace(", ...", "...").replace("... ,", "...")
    return text


def pick_say(rng: random.Random, *, digits_ok: bool = True) -> Say:
    mode = rng.choices(["words", "digits", "mixed"], [6, 3 if digits_ok else 0, 2 if digits_ok else 0])[0]
    zero = rng.choice(["zero", "oh", "oh", "zero"])
    if mode == "digits":
        sep = rng.choice([" ", " ", "-", ""])
    elif mode == "mixed":
        sep = " "
    else:
        sep = rng.choice([" ", " ", " ", ", ", "... "])
    return Say(mode=mode, zero=zero, sep=sep)


def wrong_group(g: str, rng: random.Random) -> str:
    """A plausible slip: one digit changed, or two neighbours swapped, or the group cut short."""
    kind = rng.choice(["change", "change", "swap", "short"])
    if kind == "swap" and len(g) >= 2:
        i = rng.randrange(len(g) - 1)
        if g[i] != g[i + 1]:
            return g[:i] + g[i + 1] + g[i] + g[i + 2 :]
    if kind == "short" and len(g) >= 3:
        return g[: rng.randrange(1, len(g))]
    i = rng.randrange(len(g))
    return g[:i] + rng.choice([d for d in "0123456789" if d != g[i]]) + g[i + 1 :]


def say_corrected(groups: list[str], rng: random.Random, how: Say) -> str:
    """The groups with one self-correction in the middle: a slip and its repair, or a restart from the top."""
    plain = Say(mode=how.mode, zero=how.zero, sep=how.sep)
    k = rng.randrange(len(groups))
    marker = rng.choice(CORRECTIONS)
    if rng.random() < 0.25 and k > 0:
        head = say_groups(groups[:k], rng, plain)
        wrong = say_groups([wrong_group(groups[k], rng)], rng, plain)
        restart = rng.choice(["let me start over,", "sorry, from the top,", "let me do that again,", "sorry, again,"])
        return f"{head} {wrong} {restart} {say_groups(groups, rng, plain)}"
    before = say_groups(groups[:k], rng, plain) + " " if k else ""
    wrong = say_groups([wrong_group(groups[k], rng)], rng, plain)
    after = say_groups(groups[k:], rng, plain)
    return f"{before}{wrong} {marker} {after}"


# ---------------------------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------------------------

# (brand, prefixes, lengths, grouping by length)
ISSUERS: list[tuple[str, list[str], list[int]]] = [
    ("visa", ["4"], [16, 16, 16, 16, 16, 13, 19]),
    ("mastercard", ["51", "52", "53", "54", "55", "2221", "2300", "2500", "2720"], [16]),
    ("amex", ["34", "37"], [15]),
    ("discover", ["6011", "644", "645", "649", "65"], [16, 16, 19]),
    ("diners club", ["36", "300", "305", "38"], [14]),
    ("jcb", ["3528", "3530", "3566", "3589"], [16]),
    ("unionpay", ["62"], [16, 16, 19]),
]
ISSUER_WEIGHTS = [10, 7, 4, 3, 1, 1, 1]
GROUPING = {13: [4, 4, 5], 14: [4, 6, 4], 15: [4, 6, 5], 16: [4, 4, 4, 4], 19: [4, 4, 4, 4, 3]}


@dataclass(frozen=True)
class Card:
    brand: str
    digits: str

    @property
    def groups(self) -> list[str]:
        return split_sizes(self.digits, GROUPING[len(self.digits)])


def new_card(rng: random.Random, *, brand: str | None = None, length: int | None = None) -> Card:
    choices = [i for i in ISSUERS if brand is None or i[0] == brand]
    weights = [ISSUER_WEIGHTS[ISSUERS.index(i)] for i in choices]
    name, prefixes, lengths = rng.choices(choices, weights)[0]
    n = length if length in lengths else rng.choice(lengths)
    prefix = rng.choice(prefixes)
    body = prefix + "".join(rng.choice("0123456789") for _ in range(n - len(prefix) - 1))
    digits = luhn_complete(body)
    assert luhn_ok(digits) and len(digits) == n
    return Card(name, digits)


def new_ssn(rng: random.Random) -> str:
    while True:
        area = rng.randrange(1, 900)
        if area == 666:
            continue
        ssn = f"{area:03d}{rng.randrange(1, 100):02d}{rng.randrange(1, 10000):04d}"
        assert ssn_ok(ssn)
        return ssn


def new_nanp(rng: random.Random) -> str:
    """A NANP number: area and exchange start 2-9 and are not N11."""

    def three() -> str:
        while True:
            s = f"{rng.randrange(2, 10)}{rng.randrange(0, 10)}{rng.randrange(0, 10)}"
            if s[1:] != "11":
                return s

    return three() + three() + f"{rng.randrange(0, 10000):04d}"


# (country, code, national significant number maker, grouping of the national part)
def _uk(rng: random.Random) -> str:
    return "7" + rng.choice("1234579") + "".join(rng.choice("0123456789") for _ in range(8))


def _ie(rng: random.Random) -> str:
    return "8" + rng.choice("35679") + "".join(rng.choice("0123456789") for _ in range(7))


def _au(rng: random.Random) -> str:
    return "4" + "".join(rng.choice("0123456789") for _ in range(8))


def _de(rng: random.Random) -> str:
    return "1" + rng.choice("567") + rng.choice("0123456789") + "".join(rng.choice("0123456789") for _ in range(8))


def _fr(rng: random.Random) -> str:
    return rng.choice("67") + "".join(rng.choice("0123456789") for _ in range(8))


def _in(rng: random.Random) -> str:
    return rng.choice("6789") + "".join(rng.choice("0123456789") for _ in range(9))


def _mx(rng: random.Random) -> str:
    return rng.choice(["55", "33", "81"]) + "".join(rng.choice("0123456789") for _ in range(8))


COUNTRIES: list[tuple[str, str, Callable[[random.Random], str], list[int]]] = [
    ("uk", "44", _uk, [4, 3, 3]),
    ("ireland", "353", _ie, [2, 3, 4]),
    ("australia", "61", _au, [3, 3, 3]),
    ("germany", "49", _de, [3, 4, 4]),
    ("france", "33", _fr, [1, 2, 2, 2, 2]),
    ("india", "91", _in, [5, 5]),
    ("mexico", "52", _mx, [2, 4, 4]),
]
COUNTRY_WEIGHTS = [8, 2, 2, 2, 2, 2, 1]

FIRST = [
    "jane",
    "john",
    "maria",
    "david",
    "sarah",
    "mike",
    "linda",
    "kevin",
    "aisha",
    "carlos",
    "emily",
    "tom",
    "priya",
    "robert",
    "nina",
    "james",
    "olivia",
    "daniel",
    "grace",
    "luis",
    "hannah",
    "chris",
    "fatima",
    "pat",
    "megan",
    "sam",
    "wei",
    "rachel",
]
LAST = [
    "doe",
    "smith",
    "garcia",
    "nguyen",
    "johnson",
    "patel",
    "brown",
    "lee",
    "martinez",
    "obrien",
    "kim",
    "walker",
    "lopez",
    "chen",
    "miller",
    "davis",
    "khan",
    "murphy",
    "rossi",
    "taylor",
    "wilson",
    "clark",
    "shah",
    "young",
]
WORDS_LOCAL = ["sunny", "bluebird", "coffee", "runner", "mountain", "tiger", "pixel", "gamer", "chef", "rocket"]
DOMAINS_SIMPLE = [
    ("gmail", "com"),
    ("gmail", "com"),
    ("gmail", "com"),
    ("yahoo", "com"),
    ("hotmail", "com"),
    ("outlook", "com"),
    ("icloud", "com"),
    ("aol", "com"),
    ("comcast", "net"),
    ("att", "net"),
    ("live", "com"),
    ("msn", "com"),
]
# Domains said as more than one word, or with more than one dot: (spoken words, written domain)
DOMAINS_MULTI = [
    (["proton", "mail", "dot", "com"], "protonmail.com"),
    (["outlook", "dot", "co", "dot", "uk"], "outlook.co.uk"),
    (["hotmail", "dot", "co", "dot", "uk"], "hotmail.co.uk"),
    (["yahoo", "dot", "co", "dot", "uk"], "yahoo.co.uk"),
    (["g", "mail", "dot", "com"], "gmail.com"),
    (["sbc", "global", "dot", "net"], "sbcglobal.net"),
    (["bell", "south", "dot", "net"], "bellsouth.net"),
    (["earth", "link", "dot", "net"], "earthlink.net"),
    (["mail", "dot", "com"], "mail.com"),
    (["proton", "dot", "me"], "proton.me"),
    (["btinternet", "dot", "com"], "btinternet.com"),
    (["sky", "dot", "com"], "sky.com"),
    (["verizon", "dot", "net"], "verizon.net"),
    (["cox", "dot", "net"], "cox.net"),
    (["harbor", "freight", "dot", "com"], "harborfreight.com"),
    (["student", "dot", "uni", "dot", "edu"], "student.uni.edu"),
    (["acme", "dash", "corp", "dot", "com"], "acme-corp.com"),
    (["zoho", "mail", "dot", "com"], "zohomail.com"),
    (["fast", "mail", "dot", "com"], "fastmail.com"),
    (["yahoo", "dot", "ca"], "yahoo.ca"),
]


@dataclass(frozen=True)
class Email:
    """An address and one way of saying it (``said``); ``address`` is what ``said`` spells."""

    address: str
    said: str
    spells_address: bool = True


# ---------------------------------------------------------------------------------------------------------------
# Phrasings
# ---------------------------------------------------------------------------------------------------------------

CARD_LEADS = [
    "my card number is {E}",
    "it's {E}",
    "sure, it's {E}",
    "okay the card number is {E}",
    "yeah so the number on the card is {E}",
    "the long number is {E}",
    "um okay let me read it off, {E}",
    "alright, {E}",
    "card number {E}",
    "it's a {brand}, {E}",
    "I want to pay with my {brand}, the number is {E}",
    "can you put it on my card, it's {E}",
    "you can charge it to {E}",
    "the credit card is {E}",
    "my debit card number is {E}",
    "hold on let me get my wallet... okay it's {E}",
    "so it's {E}",
    "yes the card is {E}",
    "the number across the front is {E}",
    "ready? {E}",
    "okay here goes, {E}",
    "I'll use my other card, {E}",
    "let me see, it's {E}",
    "it's my {brand} card, number {E}",
    "oh yeah the card number, {E}",
    "you want the card? it's {E}",
    "it's my husband's card, {E}",
    "please charge {E}",
    "the card I want to use is {E}",
    "put it on the {brand}, {E}",
    "alright I got the card right here, {E}",
    "the number on my {brand} is {E}",
]
CARD_TAILS = [
    "",
    "",
    "",
    ", thanks",
    ", did you get that",
    "... yeah",
    ", that's it",
    " and that's a {brand}",
    ". is that enough",
    ", okay",
]
CARD_QUESTIONS = [
    "Can I get the card number please?",
    "What's the long number on the front of the card?",
    "Go ahead with the card number whenever you're ready.",
    "And the card you'd like to use?",
    "Please read me the card number.",
    "What card number would you like to use today?",
    "Okay, and the number on the card?",
    "And what's the number on the debit card?",
    "Which card are we putting this on? Go ahead with the number.",
]
ANSWER_ONLY = ["{E}", "{E}", "it's {E}", "yeah {E}", "okay {E}", "uh {E}", "sure, {E}", "{E} I think", "that's {E}"]
BACKCHANNELS = ["Mhm.", "Okay.", "Uh huh.", "Go on.", "Yes?", "Okay, go ahead.", "Got it so far.", "Mm-hmm."]

SSN_LEADS = [
    "my social is {E}",
    "social security number {E}",
    "it's {E}",
    "the social's {E}",
    "my ss number is {E}",
    "sure, my social security number is {E}",
    "my s s n is {E}",
    "ssn {E}",
    "okay, social, {E}",
    "you need my social? it's {E}",
    "for verification my social is {E}",
    "I think it's {E}",
    "my social security is {E}",
    "the number on my social security card is {E}",
    "mine is {E}",
    "it should be {E}",
    "uh my social, {E}",
    "yeah that's {E}",
    "social security {E}",
    "my son's social is {E}",
    "the account holder's social is {E}",
    "she said to give you her social, it's {E}",
    "okay let me pull up the card, {E}",
    "my tax id, the social, is {E}",
    "I'll give you the social, {E}",
    "social number {E}",
    "my socials {E}",
    "the nine digits are {E}",
    "my social security number is {E}",
    "uh the social on the account is {E}",
]
SSN_QUESTIONS = [
    "Can I get your social security number to verify?",
    "And the social?",
    "For verification, the full social security number please.",
    "What's the SSN on the account?",
    "I'll need the social security number of the account holder.",
    "And your social security number?",
    "Could you give me the nine digit social?",
]

EMAIL_LEADS = [
    "my email is {E}",
    "it's {E}",
    "email address {E}",
    "the email on file should be {E}",
    "you can send it to {E}",
    "send the receipt to {E}",
    "my e-mail's {E}",
    "yeah it's {E}",
    "I use {E}",
    "try {E}",
    "it might be under {E}",
    "my work email, {E}",
    "my personal one is {E}",
    "email me at {E}",
    "the contact email is {E}",
    "the new email is {E}",
    "update it to {E}",
    "change my email to {E}",
    "my wife's email, {E}",
    "the login is {E}",
    "it's all lower case, {E}",
    "okay so {E}",
    "I'll spell it, {E}",
    "that would be {E}",
    "please use {E}",
    "you can reach me at {E}",
    "I registered with {E}",
    "the email is {E}",
    "uh it's {E}",
]
EMAIL_QUESTIONS = [
    "What's the best email to send the confirmation to?",
    "Can I get an email address?",
    "And your email?",
    "What email is on the account?",
    "Could you spell the email for me?",
    "Where should we send the receipt?",
]
EMAIL_TAILS = ["", "", "", ", thanks", ", all lower case", ", that's it", "... yeah", ", got that?"]

PHONE_LEADS = [
    "my number is {E}",
    "you can call me back at {E}",
    "my cell is {E}",
    "it's {E}",
    "the phone number on the account is {E}",
    "my phone number's {E}",
    "call me at {E}",
    "best number is {E}",
    "reach me on {E}",
    "my mobile is {E}",
    "text me at {E}",
    "my home number is {E}",
    "the number I'm calling from is {E}",
    "my callback number is {E}",
    "my work phone is {E}",
    "try {E}",
    "the old number was {E}",
    "the new number is {E}",
    "update my number to {E}",
    "my daughter's number is {E}",
    "you can leave a message at {E}",
    "my landline is {E}",
    "yeah {E}",
    "it's area code {E}",
    "if I'm not home try {E}",
    "phone's {E}",
    "the number should be {E}",
    "my wife's cell is {E}",
    "okay the number is {E}",
]
INTL_LEADS = [
    "the international number is {E}",
    "my number with the country code is {E}",
    "my whatsapp is {E}",
    "when I'm abroad use {E}",
    "my mobile's {E}",
    "you can reach me on {E}",
    "it's {E}",
    "call me on {E}",
]
# Leads that name where the caller lives, used only with that country's numbers
INTL_LEADS_BY_COUNTRY = {
    "uk": ["my UK mobile is {E}", "I'm in london right now, my number is {E}", "my british number is {E}"],
    "ireland": ["I live in dublin so it's {E}", "my irish mobile is {E}"],
    "australia": ["I'm calling from sydney, it's {E}", "my aussie number is {E}"],
    "germany": ["I'm in berlin for work, my number there is {E}", "my german mobile is {E}"],
    "france": ["my french number is {E}", "I'm in paris, call {E}"],
    "india": ["my number in india is {E}", "my mother's number in delhi is {E}"],
    "mexico": ["my number in mexico is {E}", "I'm in guadalajara, it's {E}"],
    "us": ["with the country code it's {E}"],
}
PHONE_QUESTIONS = [
    "What's the best number to reach you?",
    "And a callback number in case we get disconnected?",
    "Can I get the phone number on the account?",
    "What number should we text the code to?",
    "And your phone number?",
    "Is there a number we can reach you at?",
]
PHONE_TAILS = ["", "", "", ", thanks", ", that's my cell", ", anytime after five", "... yeah", ", okay"]

EXPIRY_LEADS = [
    "expiration date is {E}",
    "it expires {E}",
    "expires {E}",
    "exp date {E}",
    "the expiry is {E}",
    "valid thru {E}",
    "good through {E}",
    "it's good till {E}",
    "expiration {E}",
    "the date on the card is {E}",
    "the card expires {E}",
    "expiration's {E}",
    "uh the expiry date {E}",
    "the month and year on the card are {E}",
    "the exp is {E}",
    "good thru {E}",
    "my card's expiration is {E}",
    "it doesn't expire till {E}",
    "that card expires {E}",
    "and it expires {E}",
    "then the expiration, {E}",
    "the card's good until {E}",
    "expiration month and year {E}",
    "the expiry on it is {E}",
    "it's valid through {E}",
    "the card runs out {E}",
    "the expiration date on my visa is {E}",
]
EXPIRY_QUESTIONS = [
    "And the expiration date?",
    "What's the expiry on the card?",
    "When does the card expire?",
    "Month and year of expiration, please.",
    "And the exp date?",
    "What's the expiration date on that card?",
]

CVV_LEADS = [
    "the cvv is {E}",
    "cvv {E}",
    "c v v {E}",
    "cvc is {E}",
    "the security code is {E}",
    "security code {E}",
    "the code on the back is {E}",
    "the three digits on the back are {E}",
    "the three digit code is {E}",
    "the little number on the back is {E}",
    "on the back it says {E}",
    "the code on the back of the card is {E}",
    "the last three on the back are {E}",
    "the verification code is {E}",
    "csc {E}",
    "cvv2 is {E}",
    "the number on the signature strip is {E}",
    "the three numbers on the back, {E}",
    "and the back code is {E}",
    "the security number's {E}",
    "the digits on the back are {E}",
    "code's {E}",
    "and the three digit one is {E}",
    "for the code on the back, {E}",
    "it's {E} on the back",
    "the cvv code, {E}",
    "the card code is {E}",
    "the little code is {E}",
]
CVV_AMEX_LEADS = [
    "the four digit code on the front is {E}",
    "the code above the card number is {E}",
    "it's an amex so the code on the front is {E}",
    "the four digits on the front, {E}",
    "the cid is {E}",
    "security code {E}",
]
CVV_QUESTIONS = [
    "And the three digit code on the back?",
    "What's the security code?",
    "Can I get the CVV?",
    "And the three numbers on the back of the card?",
    "Last thing, the security code on the back.",
    "The card verification code, please.",
    "And the CVC?",
    "What are the three digits on the signature panel?",
    "And the code on the back?",
    "Then the little three digit number on the back, please.",
]
CVV_AMEX_QUESTIONS = [
    "For American Express, the four digit code on the front?",
    "And the four digit security code above the number?",
]
CVV_ANSWERS = [
    "it's {E}",
    "{E}",
    "yeah {E}",
    "okay {E}",
    "uh {E}",
    "sure, {E}",
    "let me flip it over... {E}",
    "that's {E}",
    "um it says {E}",
    "{E} I think",
    "hold on, {E}",
    "it's uh {E}",
]


# ---------------------------------------------------------------------------------------------------------------
# Renderers per entity type
# ---------------------------------------------------------------------------------------------------------------


def card_ent(card: Card, text: str, *, corrected: bool = False) -> Ent:
    if corrected:
        return Ent("CARD", text, corrected=card.digits)
    return Ent("CARD", text, card.digits)


def say_card(card: Card, rng: random.Random, how: Say | None = None) -> Ent:
    how = how or pick_say(rng)
    if how.mode == "digits" and how.sep == "" and rng.random() < 0.5:
        how.sep = " "
    return card_ent(card, say_groups(card.groups, rng, how))


def ssn_groups(ssn: str) -> list[str]:
    return split_sizes(ssn, [3, 2, 4])


def say_ssn(ssn: str, rng: random.Random, how: Say | None = None) -> Ent:
    how = how or pick_say(rng)
    if how.mode == "digits":
        how.sep = rng.choice(["-", "-", " ", ""])
    elif how.mode == "words" and rng.random() < 0.15:
        how.sep = " dash "
    return Ent("SSN", say_groups(ssn_groups(ssn), rng, how), ssn)


def phone_written(digits: str, rng: random.Random, *, lead_one: bool = False) -> str:
    a, e, n = digits[:3], digits[3:6], digits[6:]
    form = rng.choice(["({a}) {e}-{n}", "{a}-{e}-{n}", "{a}.{e}.{n}", "{a}{e}{n}", "{a} {e} {n}", "{a}-{e}{n}"])
    if lead_one:
        form = rng.choice(["1-{a}-{e}-{n}", "1 {a} {e} {n}", "+1 {a} {e} {n}", "+1 ({a}) {e}-{n}", "1{a}{e}{n}"])
    return form.format(a=a, e=e, n=n)


def say_phone(digits: str, rng: random.Random, how: Say | None = None, *, lead_one: bool = False) -> Ent:
    how = how or pick_say(rng)
    groups = split_sizes(digits, [3, 3, 4])
    if how.mode == "digits" and how.fillers == 0 and how.hesitations == 0:
        return Ent("PHONE", phone_written(digits, rng, lead_one=lead_one), ("1" if lead_one else "") + digits)
    text = say_groups(groups, rng, how)
    if lead_one:
        text = rng.choice(["one ", "one ", "1 ", "one, "]) + text
    return Ent("PHONE", text, ("1" if lead_one else "") + digits)


def say_phone_pairs(digits: str, rng: random.Random) -> Ent:
    a, e, n = digits[:3], digits[3:6], digits[6:]
    sep = rng.choice([", ", " ", "... "])
    area = " ".join(digit_words(a, rng, "oh")) if rng.random() < 0.6 else grouped_words(a, rng)
    text = area + sep + " ".join(digit_words(e, rng, "oh")) + sep + grouped_words(n, rng)
    return Ent("PHONE", text, digits)


def say_e164(rng: random.Random, *, written: bool = False) -> tuple[Ent, str]:
    """An international number with its country code (written "+44 ..." or spoken "plus four four ..."), and the
    country."""
    country, code, make, sizes = rng.choices(COUNTRIES, COUNTRY_WEIGHTS)[0]
    if country == "uk" and rng.random() < 0.2:
        country, code, make, sizes = ("us", "1", new_nanp, [3, 3, 4])
    national = make(rng)
    groups = split_sizes(national, sizes)
    if written:
        form = rng.choice(["+{c} {g}", "+{c}{n}", "+{c} {n}", "+{c}-{g}"])
        g = (" " if "-" not in form else "-").join(groups)
        return Ent("PHONE", form.format(c=code, g=g, n=national), code + national), country
    how = Say(mode=rng.choice(["words", "words", "words", "mixed"]), zero=rng.choice(["zero", "oh"]))
    how.sep = rng.choice([" ", " ", ", "])
    how.doubles = 0.4 if country in ("uk", "ireland") else 0.0
    lead = rng.choice(["plus", "plus", "plus", "zero zero"])
    code_said = " ".join(digit_words(code, rng, "zero", how.doubles))
    prefix = "00" if lead == "zero zero" else ""
    code_said = f"{lead} {code_said}"
    text = code_said + rng.choice([" ", ", "]) + say_groups(groups, rng, how)
    return Ent("PHONE", text, prefix + code + national), country


def say_uk_national(rng: random.Random) -> Ent:
    national = "0" + _uk(rng)
    how = Say(mode="words", zero="oh", doubles=0.5, sep=rng.choice([" ", ", "]))
    return Ent("PHONE", say_groups(split_sizes(national, [5, 3, 3]), rng, how), national)


@dataclass(frozen=True)
class Expiry:
    month: int
    year: int  # 2000 + yy

    def accept(self) -> set[str]:
        yy = f"{self.year % 100:02d}"
        m = self.month
        return {f"{m:02d}{yy}", f"{m}{yy}", f"{m:02d}{self.year}", f"{m}{self.year}", f"{m:02d}20{yy}"}


def new_expiry(rng: random.Random) -> Expiry:
    return Expiry(rng.randrange(1, 13), rng.randrange(2026, 2036))


def year_words(year: int, rng: random.Random, *, short_ok: bool = True) -> str:
    yy = year % 100
    forms = ["twenty " + pair_words(f"{yy:02d}"), "two thousand " + int_words(yy, rng, allow_and=False)]
    forms.append("two thousand and " + int_words(yy, rng, allow_and=False))
    if short_ok:
        forms += [pair_words(f"{yy:02d}")] * 2
    return rng.choice(forms)


def say_expiry(exp: Expiry, rng: random.Random, style: str) -> Ent:
    mm = f"{exp.month:02d}"
    yy = f"{exp.year % 100:02d}"
    m_word = pair_words(mm) if exp.month < 10 and rng.random() < 0.7 else int_words(exp.month, rng)
    if exp.month < 10 and rng.random() < 0.3:
        m_word = "zero " + UNITS[exp.month]
    if style == "oh-words":
        text = f"{m_word} {year_words(exp.year, rng)}"
    elif style == "slash-digits":
        text = rng.choice([f"{mm}/{yy}", f"{exp.month}/{yy}", f"{mm}/{exp.year}", f"{mm} / {yy}", f"{mm}-{yy}"])
    elif style == "slash-spoken":
        yw = pair_words(yy) if rng.random() < 0.6 else " ".join(digit_words(yy, rng, "oh"))
        text = f"{m_word} {rng.choice(['slash', 'slash', 'slash', 'forward slash', 'over'])} {yw}"
        if rng.random() < 0.15:
            text = f"{m_word} slash {year_words(exp.year, rng, short_ok=False)}"
    elif style == "month-name":
        name = MONTHS[exp.month - 1]
        text = rng.choice([f"{name} {year_words(exp.year, rng)}", f"{name} of {year_words(exp.year, rng)}"])
    elif style == "digit-run":
        text = " ".join(digit_words(mm + yy, rng, rng.choice(["oh", "zero"])))
    else:
        raise AssertionError(style)
    return Ent("EXPIRY", text, f"{exp.month}/{exp.year}")


def expiry_said_ok(text: str, value: str) -> bool:
    month, year = (int(v) for v in value.split("/"))
    exp = Expiry(month, year)
    lowered = text.lower()
    for i, name in enumerate(MONTHS):
        lowered = re.sub(rf"\b{name}\b", f"{i + 1:02d}", lowered)
    lowered = lowered.replace("two thousand and ", "twenty ").replace("two thousand ", "twenty ")
    return digits_said(lowered) in exp.accept()


def say_cvv(code: str, rng: random.Random, style: str | None = None) -> Ent:
    style = style or rng.choice(["words", "words", "words", "digits", "pairs"])
    if style == "digits":
        text = code
    elif style == "pairs":
        text = grouped_words(code, rng)
    else:
        text = " ".join(digit_words(code, rng, rng.choice(["zero", "oh"])))
    return Ent("CVV", text, code)


def new_cvv(rng: random.Random, n: int = 3) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def local_part(rng: random.Random) -> tuple[list[str], str]:
    """A local part as spoken words and as written: names, initials, digits, words, dots and underscores."""
    f, last = rng.choice(FIRST), rng.choice(LAST)
    kind = rng.choice(["f.l", "fl", "f.l+n", "fl+n", "initial+l", "f+n", "word+n", "f_l", "f.l.n"])
    n = str(rng.choice([rng.randrange(1, 100), rng.randrange(1950, 2010), rng.randrange(1, 10)]))

    def num_words(s: str) -> list[str]:
        if len(s) == 2 and s[0] != "0" and rng.random() < 0.5:
            return pair_words(s).split()
        if len(s) == 4 and rng.random() < 0.5:
            return grouped_words(s, rng).split()
        return [UNITS[int(c)] for c in s]

    if kind == "f.l":
        return [f, "dot", last], f"{f}.{last}"
    if kind == "fl":
        return [f, last], f"{f}{last}"
    if kind == "f.l+n":
        return [f, "dot", last, *num_words(n)], f"{f}.{last}{n}"
    if kind == "fl+n":
        return [f, last, *num_words(n)], f"{f}{last}{n}"
    if kind == "initial+l":
        return [f[0], last], f"{f[0]}{last}"
    if kind == "f+n":
        return [f, *num_words(n)], f"{f}{n}"
    if kind == "word+n":
        w = rng.choice(WORDS_LOCAL)
        return [w, *num_words(n)], f"{w}{n}"
    if kind == "f_l":
        sym = rng.choice(["underscore", "dash", "hyphen"])
        return [f, sym, last], f"{f}{'_' if sym == 'underscore' else '-'}{last}"
    return [f, "dot", last, "dot", *num_words(n)], f"{f}.{last}.{n}"


def domain(rng: random.Random, *, multi: bool) -> tuple[list[str], str]:
    if multi:
        words, written = rng.choice(DOMAINS_MULTI)
        return list(words), written
    name, tld = rng.choice(DOMAINS_SIMPLE)
    return [name, "dot", tld], f"{name}.{tld}"


def spelled(word: str, rng: random.Random, *, phonetic: bool = False) -> list[str]:
    """A word spelled letter by letter; with ``phonetic`` some letters get "as in" a word."""
    helpers = {
        "b": "boy",
        "d": "david",
        "m": "mary",
        "n": "nancy",
        "p": "peter",
        "s": "sam",
        "t": "tom",
        "f": "frank",
        "v": "victor",
        "c": "charlie",
    }
    out: list[str] = []
    for ch in word:
        if ch.isdigit():
            out.append(UNITS[int(ch)])
        elif ch == ".":
            out.append("dot")
        elif ch == "_":
            out.append("underscore")
        elif ch == "-":
            out.append("dash")
        elif phonetic and ch in helpers and rng.random() < 0.6:
            out.append(f"{ch} as in {helpers[ch]}")
        else:
            out.append(ch)
    return out


def say_email(rng: random.Random, style: str) -> Email:
    local_said, local = local_part(rng)
    multi = style == "multiword-domain" or (style not in ("written",) and rng.random() < 0.25)
    dom_said, dom = domain(rng, multi=multi)
    address = f"{local}@{dom}"
    at = "at"
    if style == "written":
        return Email(address, address)
    if style == "mixed-written-spoken":
        form = rng.choice(
            [f"{local} at {dom}", f"{local}@{dom}".replace(".", " dot ", 1) if "." in local else f"{local} @ {dom}"]
        )
        if rng.random() < 0.4:
            form = f"{' '.join(local_said)} at {dom}"
        return Email(address, form)
    if style == "spelled":
        letters = spelled(local, rng)
        sep = rng.choice([" ", ", "])
        return Email(address, sep.join(letters) + f" {at} " + " ".join(dom_said))
    if style == "spelled-phonetic":
        letters = spelled(local, rng, phonetic=True)
        return Email(address, ", ".join(letters) + f" {at} " + " ".join(dom_said))
    if style == "name-then-spelled":
        while len(local_said[0]) < 3 or local_said[0] in WORDS_LOCAL:
            local_said, local = local_part(rng)
            address = f"{local}@{dom}"
        first = local_said[0]
        spelled_first = " ".join(spelled(first, rng))
        rest = " ".join(local_said[1:])
        said = f"{first}, {spelled_first}" + (f", {rest}" if rest else "") + f" {at} " + " ".join(dom_said)
        # the name is said and then spelled: the address holds it once, the words twice
        return Email(address, said, spells_address=False)
    if style == "hesitation":
        words = [*local_said, at, *dom_said]
        i = rng.randrange(1, len(words))
        words.insert(i, rng.choice(["uh", "um", "uh...", "um,"]))
        return Email(address, re.sub(r"\.\.\.", "...", " ".join(words)))
    return Email(address, " ".join([*local_said, at, *dom_said]))


def email_ent(e: Email) -> Ent:
    return Ent("EMAIL", e.said, None, e.address if e.spells_address else None)


# ---------------------------------------------------------------------------------------------------------------
# Positive generators: each returns the turns of one conversation
# ---------------------------------------------------------------------------------------------------------------

Gen = Callable[[random.Random], list[Turn]]


def maybe_question(rng: random.Random, questions: list[str], p: float = 0.5) -> list[Turn]:
    return [agent(rng.choice(questions))] if rng.random() < p else []


def card_turn(rng: random.Random, card: Card, ent: Ent) -> Turn:
    lead = rng.choice(CARD_LEADS)
    tail = rng.choice(CARD_TAILS)
    return caller(lead + tail, E=ent, brand=card.brand)


def gen_card(style: str) -> Gen:
    def make(rng: random.Random) -> list[Turn]:
        card = new_card(rng)
        how = pick_say(rng)
        if style == "words":
            how = Say(mode="words", zero=rng.choice(["zero", "oh"]), sep=rng.choice([" ", " ", ", "]))
        elif style == "digits":
            how = Say(mode="digits", sep=rng.choice([" ", " ", "-", ""]))
        elif style == "mixed":
            how = Say(mode="mixed", zero=rng.choice(["zero", "oh"]))
        elif style == "filler":
            how.fillers = rng.choice([1, 1, 2, 3])
            if how.mode == "digits":
                how.sep = " "
        elif style == "hesitation":
            how.mode = rng.choice(["words", "words", "mixed"])
            how.sep = " "
            how.hesitations = rng.choice([1, 2, 2, 3])
        elif style == "double":
            how = Say(mode="words", zero=rng.choice(["zero", "oh"]), doubles=0.9)
            card = new_card(rng)
            while not re.search(r"(\d)\1", card.digits):
                card = new_card(rng)
        elif style == "issuers":
            card = new_card(rng, brand=rng.choice(["amex", "diners club", "visa", "discover", "unionpay", "jcb"]))
            if card.brand == "visa":
                card = new_card(rng, brand="visa", length=rng.choice([13, 19]))
        ent = say_card(card, rng, how)
        return [*maybe_question(rng, CARD_QUESTIONS, 0.4), card_turn(rng, card, ent)]

    return make


def gen_card_correction(rng: random.Random) -> list[Turn]:
    card = new_card(rng)
    how = pick_say(rng)
    if how.mode == "digits":
        how.sep = " "
    ent = card_ent(card, say_corrected(card.groups, rng, how), corrected=True)
    return [*maybe_question(rng, CARD_QUESTIONS, 0.4), card_turn(rng, card, ent)]


def two_forms(groups: list[str], rng: random.Random) -> tuple[str, str]:
    written = Say(mode="digits", sep=rng.choice([" ", "-", ""]))
    spoken = Say(mode="words", zero=rng.choice(["zero", "oh"]), sep=rng.choice([" ", ", "]))
    a, b = say_groups(groups, rng, written), say_groups(groups, rng, spoken)
    return (a, b) if rng.random() < 0.6 else (b, a)


REPEAT_JOINS = [
    "{A}, that's {B}",
    "{A}, I'll say it again, {B}",
    "{A} so that's {B}",
    "{A}. again that's {B}",
    "{A}, let me repeat, {B}",
    "{A}... {B}",
    "{A}, one more time, {B}",
]


def gen_card_repeated(rng: random.Random) -> list[Turn]:
    card = new_card(rng)
    a, b = two_forms(card.groups, rng)
    lead = rng.choice(["my card number is ", "it's ", "okay the number is ", "", "the card is "])
    join = rng.choice(REPEAT_JOINS)
    return [*maybe_question(rng, CARD_QUESTIONS, 0.4), caller(lead + join, A=card_ent(card, a), B=card_ent(card, b))]


def split_turns(
    rng: random.Random,
    groups: list[str],
    etype: str,
    value: str,
    leads: list[str],
    questions: list[str],
    how: Say,
) -> list[Turn]:
    """A number said in two caller turns with the agent's backchannel between: one entity per part."""
    k = rng.randrange(1, len(groups))
    first = say_groups(groups[:k], rng, how)
    second = say_groups(groups[k:], rng, how)
    ent1 = Ent(etype, first, None)
    ent2 = Ent(etype, second, None)
    # the generator checks the two parts together spell the value
    _SPLIT_CHECKS.append((first + " " + second, value))
    turns = maybe_question(rng, questions, 0.5)
    turns.append(caller(rng.choice(leads), E=ent1, brand=""))
    turns.append(agent(rng.choice(BACKCHANNELS)))
    cont = rng.choice(["{E}", "{E}", "then {E}", "and {E}", "okay {E}", "uh {E}", "the rest is {E}", "{E}, that's it"])
    turns.append(caller(cont, E=ent2))
    return turns


_SPLIT_CHECKS: list[tuple[str, str]] = []


def gen_card_split(rng: random.Random) -> list[Turn]:
    card = new_card(rng)
    how = pick_say(rng)
    if how.mode == "digits":
        how.sep = " "
    leads = [x for x in CARD_LEADS if "{brand}" not in x]
    return split_turns(rng, card.groups, "CARD", card.digits, leads, CARD_QUESTIONS, how)


def gen_card_agent_question(rng: random.Random) -> list[Turn]:
    card = new_card(rng)
    ent = say_card(card, rng)
    return [agent(rng.choice(CARD_QUESTIONS)), caller(rng.choice(ANSWER_ONLY), E=ent)]


def gen_card_misspoken(rng: random.Random) -> list[Turn]:
    """A clear card context, but the caller gets one digit wrong, so the number said fails Luhn."""
    card = new_card(rng)
    i = rng.randrange(len(card.digits))
    wrong = card.digits[:i] + rng.choice([d for d in "0123456789" if d != card.digits[i]]) + card.digits[i + 1 :]
    assert not luhn_ok(wrong)
    said = Card(card.brand, wrong)
    ent = Ent("CARD", say_groups(said.groups, rng, pick_say(rng)), wrong, misspoken=True)
    lead = rng.choice(
        [
            "my card number is {E}",
            "the credit card number is {E}",
            "okay my {brand} card, the number is {E}",
            "the card number on my debit card is {E}",
            "charge my card please, the number is {E}",
            "card number {E}",
        ]
    )
    return [*maybe_question(rng, CARD_QUESTIONS, 0.5), caller(lead, E=ent, brand=card.brand)]


def gen_ssn(style: str) -> Gen:
    def make(rng: random.Random) -> list[Turn]:
        ssn = new_ssn(rng)
        how = pick_say(rng)
        if style == "words":
            how = Say(mode="words", zero=rng.choice(["zero", "oh"]), sep=rng.choice([" ", " ", ", ", "... "]))
        elif style == "digits":
            how = Say(mode="digits")
        elif style == "mixed":
            how = Say(mode="mixed", zero=rng.choice(["zero", "oh"]))
        elif style == "filler":
            how.fillers = rng.choice([1, 1, 2])
            how.mode = rng.choice(["words", "words", "mixed"])
            how.sep = " "
        elif style == "hesitation":
            how.mode = "words"
            how.sep = " "
            how.hesitations = rng.choice([1, 2])
        elif style == "double":
            how = Say(mode="words", zero=rng.choice(["zero", "oh"]), doubles=0.9)
            while not re.search(r"(\d)\1", ssn):
                ssn = new_ssn(rng)
        ent = say_ssn(ssn, rng, how)
        if how.fillers or how.hesitations:
            ent = Ent("SSN", say_groups(ssn_groups(ssn), rng, how), ssn)
        return [*maybe_question(rng, SSN_QUESTIONS, 0.4), caller(rng.choice(SSN_LEADS), E=ent)]

    return make


def gen_ssn_correction(rng: random.Random) -> list[Turn]:
    ssn = new_ssn(rng)
    how = pick_say(rng, digits_ok=False)
    ent = Ent("SSN", say_corrected(ssn_groups(ssn), rng, how), corrected=ssn)
    return [*maybe_question(rng, SSN_QUESTIONS, 0.4), caller(rng.choice(SSN_LEADS), E=ent)]


def gen_ssn_repeated(rng: random.Random) -> list[Turn]:
    ssn = new_ssn(rng)
    a, b = two_forms(ssn_groups(ssn), rng)
    lead = rng.choice(["my social is ", "it's ", "social security number ", "", "the ssn is "])
    return [
        *maybe_question(rng, SSN_QUESTIONS, 0.4),
        caller(lead + rng.choice(REPEAT_JOINS), A=Ent("SSN", a, ssn), B=Ent("SSN", b, ssn)),
    ]


def gen_ssn_split(rng: random.Random) -> list[Turn]:
    ssn = new_ssn(rng)
    return split_turns(rng, ssn_groups(ssn), "SSN", ssn, SSN_LEADS, SSN_QUESTIONS, pick_say(rng, digits_ok=False))


def gen_ssn_agent_question(rng: random.Random) -> list[Turn]:
    ssn = new_ssn(rng)
    return [agent(rng.choice(SSN_QUESTIONS)), caller(rng.choice(ANSWER_ONLY), E=say_ssn(ssn, rng))]


def gen_email(style: str) -> Gen:
    def make(rng: random.Random) -> list[Turn]:
        e = say_email(rng, style)
        tail = rng.choice(EMAIL_TAILS)
        return [*maybe_question(rng, EMAIL_QUESTIONS, 0.4), caller(rng.choice(EMAIL_LEADS) + tail, E=email_ent(e))]

    return make


def gen_email_split(rng: random.Random) -> list[Turn]:
    local_said, local = local_part(rng)
    dom_said, dom = domain(rng, multi=rng.random() < 0.4)
    address = f"{local}@{dom}"
    words = [*local_said, "at", *dom_said]
    at = words.index("at")
    # the break falls at the "at" most often, or inside the domain
    cut = at if rng.random() < 0.7 else rng.randrange(at + 1, len(words))
    first, second = " ".join(words[:cut]), " ".join(words[cut:])
    _EMAIL_SPLIT_CHECKS.append((first + " " + second, address))
    turns = maybe_question(rng, EMAIL_QUESTIONS, 0.5)
    turns.append(caller(rng.choice(EMAIL_LEADS), E=Ent("EMAIL", first)))
    turns.append(agent(rng.choice(BACKCHANNELS)))
    turns.append(
        caller(rng.choice(["{E}", "{E}", "{E}, sorry", "yeah {E}", "uh {E}", "{E}, that's it"]), E=Ent("EMAIL", second))
    )
    return turns


_EMAIL_SPLIT_CHECKS: list[tuple[str, str]] = []


def gen_email_agent_question(rng: random.Random) -> list[Turn]:
    e = say_email(rng, rng.choice(["spoken", "spoken", "spelled", "multiword-domain", "written"]))
    return [agent(rng.choice(EMAIL_QUESTIONS)), caller(rng.choice(ANSWER_ONLY), E=email_ent(e))]


def gen_email_repeated(rng: random.Random) -> list[Turn]:
    local_said, local = local_part(rng)
    dom_said, dom = domain(rng, multi=False)
    address = f"{local}@{dom}"
    spoken = Email(address, " ".join([*local_said, "at", *dom_said]))
    letters = Email(address, " ".join(spelled(local, rng)) + " at " + " ".join(dom_said))
    written = Email(address, address)
    first, second = rng.choice([(written, spoken), (spoken, letters), (written, letters), (spoken, written)])
    joins = ["{A}, that's {B}", "{A}, so {B}"]
    if second is letters:
        joins += ["{A}. let me spell it, {B}", "{A}, or spelled out {B}"]
    join = rng.choice(joins)
    return [
        caller(rng.choice(["my email is ", "it's ", "", "send it to "]) + join, A=email_ent(first), B=email_ent(second))
    ]


def gen_phone(style: str) -> Gen:
    def make(rng: random.Random) -> list[Turn]:
        digits = new_nanp(rng)
        lead_one = False
        how = pick_say(rng)
        if style == "words":
            how = Say(mode="words", zero=rng.choice(["zero", "oh"]), sep=rng.choice([" ", " ", ", ", "... "]))
        elif style == "digits":
            how = Say(mode="digits")
        elif style == "leading-one":
            lead_one = True
        elif style == "filler":
            how.mode = rng.choice(["words", "words", "mixed"])
            how.sep = " "
            how.fillers = rng.choice([1, 1, 2])
        elif style == "double":
            how = Say(mode="words", zero="oh", doubles=0.9)
            while not re.search(r"(\d)\1", digits):
                digits = new_nanp(rng)
        ent = say_phone_pairs(digits, rng) if style == "pairs" else say_phone(digits, rng, how, lead_one=lead_one)
        lead = rng.choice(PHONE_LEADS)
        if lead_one and "area code" in lead:
            lead = "my number is {E}"
        return [*maybe_question(rng, PHONE_QUESTIONS, 0.4), caller(lead + rng.choice(PHONE_TAILS), E=ent)]

    return make


def gen_phone_correction(rng: random.Random) -> list[Turn]:
    digits = new_nanp(rng)
    how = pick_say(rng, digits_ok=False)
    ent = Ent("PHONE", say_corrected(split_sizes(digits, [3, 3, 4]), rng, how), corrected=digits)
    return [*maybe_question(rng, PHONE_QUESTIONS, 0.4), caller(rng.choice(PHONE_LEADS), E=ent)]


def gen_phone_e164(*, written: bool) -> Gen:
    def make(rng: random.Random) -> list[Turn]:
        ent, country = say_e164(rng, written=written)
        leads = INTL_LEADS + PHONE_LEADS[:12] + INTL_LEADS_BY_COUNTRY[country] * 3
        return [*maybe_question(rng, PHONE_QUESTIONS, 0.3), caller(rng.choice(leads), E=ent)]

    return make


def gen_phone_uk_national(rng: random.Random) -> list[Turn]:
    leads = INTL_LEADS + INTL_LEADS_BY_COUNTRY["uk"] * 2
    return [*maybe_question(rng, PHONE_QUESTIONS, 0.4), caller(rng.choice(leads), E=say_uk_national(rng))]


def gen_phone_split(rng: random.Random) -> list[Turn]:
    digits = new_nanp(rng)
    return split_turns(
        rng, split_sizes(digits, [3, 3, 4]), "PHONE", digits, PHONE_LEADS, PHONE_QUESTIONS, pick_say(rng)
    )


def gen_phone_agent_question(rng: random.Random) -> list[Turn]:
    digits = new_nanp(rng)
    ent = say_phone(digits, rng) if rng.random() < 0.8 else say_e164(rng)[0]
    return [agent(rng.choice(PHONE_QUESTIONS)), caller(rng.choice(ANSWER_ONLY), E=ent)]


def gen_phone_repeated(rng: random.Random) -> list[Turn]:
    digits = new_nanp(rng)
    written = Ent("PHONE", phone_written(digits, rng), digits)
    spoken = say_phone(digits, rng, Say(mode="words", zero=rng.choice(["zero", "oh"]), sep=rng.choice([" ", ", "])))
    a, b = (written, spoken) if rng.random() < 0.5 else (spoken, written)
    lead = rng.choice(["my number is ", "it's ", "call me at ", "", "the cell is "])
    return [*maybe_question(rng, PHONE_QUESTIONS, 0.3), caller(lead + rng.choice(REPEAT_JOINS), A=a, B=b)]


EXPIRY_STYLES = ["oh-words", "slash-digits", "slash-spoken", "month-name", "digit-run"]


def gen_expiry(style: str) -> Gen:
    def make(rng: random.Random) -> list[Turn]:
        exp = new_expiry(rng)
        ent = say_expiry(exp, rng, style)
        return [*maybe_question(rng, EXPIRY_QUESTIONS, 0.3), caller(rng.choice(EXPIRY_LEADS), E=ent)]

    return make


def gen_expiry_agent_question(rng: random.Random) -> list[Turn]:
    exp = new_expiry(rng)
    ent = say_expiry(exp, rng, rng.choice(EXPIRY_STYLES))
    return [agent(rng.choice(EXPIRY_QUESTIONS)), caller(rng.choice(ANSWER_ONLY), E=ent)]


def gen_expiry_filler(rng: random.Random) -> list[Turn]:
    exp = new_expiry(rng)
    base = say_expiry(exp, rng, rng.choice(["oh-words", "slash-spoken", "month-name"]))
    words = base.text.split(" ")
    # never between the two words of one number ("twenty | nine")
    places = [i for i in range(1, len(words)) if not (words[i - 1] in _TENS_VALUE and words[i] in UNITS)]
    words.insert(rng.choice(places), rng.choice(["uh", "um", "uh...", "let me see", "um,"]))
    ent = Ent("EXPIRY", " ".join(words), base.digits)
    return [*maybe_question(rng, EXPIRY_QUESTIONS, 0.4), caller(rng.choice(EXPIRY_LEADS), E=ent)]


def gen_expiry_correction(rng: random.Random) -> list[Turn]:
    exp = new_expiry(rng)
    wrong = Expiry(exp.month % 12 + 1, exp.year) if rng.random() < 0.5 else Expiry(exp.month, exp.year + 1)
    style = rng.choice(["oh-words", "slash-spoken", "month-name"])
    bad = say_expiry(wrong, rng, style).text
    if rng.random() < 0.5:
        bad = bad.split(" ")[0]
    good = say_expiry(exp, rng, style).text
    ent = Ent("EXPIRY", f"{bad} {rng.choice(CORRECTIONS)} {good}", None)
    return [*maybe_question(rng, EXPIRY_QUESTIONS, 0.4), caller(rng.choice(EXPIRY_LEADS), E=ent)]


def gen_cvv(style: str) -> Gen:
    def make(rng: random.Random) -> list[Turn]:
        if style == "amex-four":
            code = new_cvv(rng, 4)
            ent = say_cvv(code, rng, rng.choice(["words", "words", "digits", "pairs"]))
            if rng.random() < 0.4:
                return [agent(rng.choice(CVV_AMEX_QUESTIONS)), caller(rng.choice(CVV_ANSWERS), E=ent)]
            return [caller(rng.choice(CVV_AMEX_LEADS), E=ent)]
        code = new_cvv(rng)
        leads = CVV_LEADS
        if style == "keyword":
            leads = [x for x in CVV_LEADS if re.search(r"cvv|cvc|c v v|csc|security|verification", x)]
            ent = say_cvv(code, rng)
        elif style == "back-of-card":
            leads = [x for x in CVV_LEADS if "back" in x or "signature" in x or "little" in x or "three" in x]
            ent = say_cvv(code, rng)
        elif style in ("digits", "pairs"):
            ent = say_cvv(code, rng, style)
        elif style == "filler":
            words = digit_words(code, rng, rng.choice(["zero", "oh"]))
            words.insert(rng.randrange(1, 3), rng.choice(["uh", "um", "uh...", "like", "hmm"]))
            ent = Ent("CVV", " ".join(words), code)
        else:
            raise AssertionError(style)
        return [caller(rng.choice(leads), E=ent)]

    return make


def gen_cvv_agent_question(rng: random.Random) -> list[Turn]:
    """The agent's question is the only context: the caller says just the digits."""
    code = new_cvv(rng)
    turns = [agent(rng.choice(CVV_QUESTIONS)), caller(rng.choice(CVV_ANSWERS), E=say_cvv(code, rng))]
    if rng.random() < 0.3:
        # a payment already under way: the card went by in an earlier turn
        card = new_card(rng)
        turns = [agent(rng.choice(CARD_QUESTIONS)), card_turn(rng, card, say_card(card, rng)), *turns]
    return turns


def gen_cvv_correction(rng: random.Random) -> list[Turn]:
    code = new_cvv(rng)
    wrong = wrong_group(code, rng)
    zero = rng.choice(["zero", "oh"])
    text = (
        f"{' '.join(digit_words(wrong, rng, zero))} {rng.choice(CORRECTIONS)} {' '.join(digit_words(code, rng, zero))}"
    )
    ent = Ent("CVV", text, corrected=code)
    if rng.random() < 0.5:
        return [agent(rng.choice(CVV_QUESTIONS)), caller(rng.choice(CVV_ANSWERS), E=ent)]
    return [caller(rng.choice(CVV_LEADS), E=ent)]


def gen_cvv_after_card(rng: random.Random) -> list[Turn]:
    card = new_card(rng)
    code = new_cvv(rng, 4 if card.brand == "amex" else 3)
    tmpl = rng.choice(
        [
            "{C} and the code on the back is {V}",
            "card is {C}, security code {V}",
            "{C}, and then {V} on the back",
            "it's {C}... the three digits are {V}",
            "{C} and the cvv {V}",
            "number's {C}, code {V}",
        ]
    )
    return [*maybe_question(rng, CARD_QUESTIONS, 0.4), caller(tmpl, C=say_card(card, rng), V=say_cvv(code, rng))]


def gen_multi_one_turn(rng: random.Random) -> list[Turn]:
    card = new_card(rng)
    exp = new_expiry(rng)
    code = new_cvv(rng, 4 if card.brand == "amex" else 3)
    tmpl = rng.choice(
        [
            "the card is {C}, expires {X}, and the code on the back is {V}",
            "{C} expiration {X} cvv {V}",
            "okay {C}, exp {X}, security code {V}",
            "it's {C}... good thru {X} and the three digits on the back are {V}",
            "card number {C} expiry {X} and {V} on the back",
            "{C}, it expires {X}, c v v {V}",
            "so {C}, {X} is the expiration, and the security code's {V}",
        ]
    )
    x = say_expiry(exp, rng, rng.choice(EXPIRY_STYLES))
    return [*maybe_question(rng, CARD_QUESTIONS, 0.3), caller(tmpl, C=say_card(card, rng), X=x, V=say_cvv(code, rng))]


def gen_multi_dialogue(rng: random.Random) -> list[Turn]:
    """A whole payment: the card, the expiry and the code, each after the agent's question."""
    card = new_card(rng)
    exp = new_expiry(rng)
    code = new_cvv(rng, 4 if card.brand == "amex" else 3)
    turns = [agent(rng.choice(CARD_QUESTIONS)), card_turn(rng, card, say_card(card, rng))]
    turns.append(agent(rng.choice(EXPIRY_QUESTIONS)))
    turns.append(caller(rng.choice(ANSWER_ONLY + EXPIRY_LEADS[:5]), E=say_expiry(exp, rng, rng.choice(EXPIRY_STYLES))))
    q = CVV_AMEX_QUESTIONS if card.brand == "amex" else CVV_QUESTIONS
    turns.append(agent(rng.choice(q)))
    turns.append(caller(rng.choice(CVV_ANSWERS), E=say_cvv(code, rng)))
    return turns


def gen_multi_distractor(rng: random.Random) -> list[Turn]:
    """An entity beside numbers that are not sensitive in the same turn: only the entity is marked."""
    kind = rng.choice(["card-amount", "card-order", "phone-address", "email-order", "ssn-date", "phone-time"])
    if kind == "card-amount":
        card = new_card(rng)
        amt = int_words(rng.randrange(20, 3000), rng)
        return [caller("can you charge " + amt + " dollars to {C}", C=say_card(card, rng))]
    if kind == "card-order":
        card = new_card(rng)
        order = "".join(rng.choice("0123456789") for _ in range(rng.choice([8, 10, 12])))
        o = say_groups([order], rng, Say(mode=rng.choice(["digits", "words"]), zero="zero"))
        return [caller("for order " + o + " I want to pay with {C}", C=say_card(card, rng))]
    if kind == "phone-address":
        house = int_words(rng.randrange(10, 9999), rng, allow_and=False)
        zipc = " ".join(digit_words(f"{rng.randrange(10000, 99999)}", rng, "oh"))
        street = rng.choice(["maple street", "oak avenue", "elm drive", "sunset boulevard", "main street"])
        return [
            caller(
                f"I'm at {house} {street}, zip {zipc}, and my phone is {{P}}",
                P=say_phone(new_nanp(rng), rng),
            )
        ]
    if kind == "email-order":
        order = "".join(rng.choice("0123456789") for _ in range(rng.choice([7, 9, 11])))
        o = say_groups([order], rng, Say(mode=rng.choice(["digits", "words"]), zero="oh"))
        e = say_email(rng, rng.choice(["spoken", "written", "spelled"]))
        return [caller("the order number is " + o + " and the confirmation went to {E}", E=email_ent(e))]
    if kind == "ssn-date":
        ssn = new_ssn(rng)
        month = rng.choice(MONTHS)
        day = rng.choice(["first", "second", "third", "fifth", "tenth", "twelfth", "twenty first", "thirtieth"])
        return [caller(f"I opened the account on {month} {day}, and my social is {{S}}", S=say_ssn(ssn, rng))]
    hour = rng.choice(["two", "three", "four thirty", "ten fifteen", "noon"])
    return [caller(f"call me back after {hour} at {{P}}", P=say_phone(new_nanp(rng), rng))]


def gen_multi_email_phone(rng: random.Random) -> list[Turn]:
    e = say_email(rng, rng.choice(["spoken", "written", "multiword-domain", "spelled"]))
    p = say_phone(new_nanp(rng), rng)
    tmpl = rng.choice(
        [
            "my email is {E} and my phone is {P}",
            "{E}, and the number is {P}",
            "you can email {E} or call {P}",
            "phone {P}, email {E}",
        ]
    )
    return [*maybe_question(rng, EMAIL_QUESTIONS, 0.3), caller(tmpl, E=email_ent(e), P=p)]


# ---------------------------------------------------------------------------------------------------------------
# Hard negatives: nothing in them is to be redacted
# ---------------------------------------------------------------------------------------------------------------


def rand_digits(rng: random.Random, n: int, *, first: str = "123456789") -> str:
    return rng.choice(first) + "".join(rng.choice("0123456789") for _ in range(n - 1))


def say_plain(ds: str, rng: random.Random, *, sizes: list[int] | None = None) -> str:
    sizes = sizes or [len(ds)]
    how = Say(mode=rng.choice(["words", "words", "digits", "mixed"]), zero=rng.choice(["zero", "oh"]))
    how.sep = " " if how.mode != "words" else rng.choice([" ", ", "])
    return say_groups(split_sizes(ds, sizes), rng, how)


def chunks_of(n: int, rng: random.Random) -> list[int]:
    sizes: list[int] = []
    while sum(sizes) < n:
        sizes.append(min(rng.choice([3, 4, 4]), n - sum(sizes)))
    return sizes


REF_LEADS = [
    "my order number is {N}",
    "the reference number is {N}",
    "confirmation number {N}",
    "it's order {N}",
    "the ticket number you gave me last time was {N}",
    "I have a case number, {N}",
    "the claim number is {N}",
    "reference {N}",
    "the invoice number is {N}",
    "it says order number {N} on the email",
    "my booking reference is {N}",
    "the return authorization is {N}",
    "the work order is {N}",
    "my rma number is {N}",
]


def neg_reference(rng: random.Random) -> list[Turn]:
    ds = rand_digits(rng, rng.choice([6, 7, 8, 9, 10, 11, 12]))
    return [
        *maybe_question(rng, ["Do you have an order number?", "What's the reference number?"], 0.4),
        caller(rng.choice(REF_LEADS), N=say_plain(ds, rng, sizes=chunks_of(len(ds), rng))),
    ]


def neg_reference_luhn_stretch(rng: random.Random) -> list[Turn]:
    """A long reference number with a Luhn-valid, card-prefixed 16-digit stretch inside it."""
    card = new_card(rng, brand=rng.choice(["visa", "mastercard"]), length=16)
    head = rand_digits(rng, rng.choice([2, 3, 4]))
    tail = "".join(rng.choice("0123456789") for _ in range(rng.choice([1, 2, 3])))
    ds = head + card.digits + tail
    return [caller(rng.choice(REF_LEADS), N=say_plain(ds, rng, sizes=chunks_of(len(ds), rng)))]


def neg_order_luhn16(rng: random.Random) -> list[Turn]:
    """A Luhn-valid 16-digit number with no card prefix, given as an order or tracking number."""
    ds = luhn_complete(rng.choice("0189") + "".join(rng.choice("0123456789") for _ in range(14)))
    assert luhn_ok(ds) and len(ds) == 16
    lead = rng.choice([*REF_LEADS, "the tracking number is {N}", "the package tracking says {N}"])
    return [caller(lead, N=say_plain(ds, rng, sizes=[4, 4, 4, 4]))]


def neg_tracking(rng: random.Random) -> list[Turn]:
    kind = rng.choice(["ups", "usps", "fedex"])
    if kind == "ups":
        n = "1Z" + "".join(rng.choice("0123456789ABCDEFGHJKLMNPRSTUVWXY") for _ in range(16))
        said = n if rng.random() < 0.5 else " ".join(c.lower() if c.isalpha() else UNITS[int(c)] for c in n)
    elif kind == "usps":
        n = "9400" + "".join(rng.choice("0123456789") for _ in range(18))
        said = say_plain(n, rng, sizes=[4, 4, 4, 4, 4, 2])
    else:
        n = "".join(rng.choice("0123456789") for _ in range(12))
        said = say_plain(n, rng, sizes=[4, 4, 4])
    lead = rng.choice(
        [
            "the tracking number is {N}",
            "it's {N}, that's the {kind} tracking",
            "the {kind} tracking number {N} says delivered but it's not here",
            "tracking {N}",
            "I have the tracking, {N}",
        ]
    )
    return [caller(lead, N=said, kind=kind)]


def neg_confirmation_code(rng: random.Random) -> list[Turn]:
    code = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(rng.choice([5, 6, 6, 8])))
    said = code if rng.random() < 0.4 else " ".join(c.lower() if c.isalpha() else UNITS[int(c)] for c in code)
    lead = rng.choice(
        [
            "the confirmation code is {N}",
            "my record locator is {N}",
            "the promo code was {N}",
            "it gave me a code, {N}",
            "the voucher code is {N}",
            "booking code {N}",
            "the gift code {N} isn't working",
        ]
    )
    return [caller(lead, N=said)]


def neg_amount(rng: random.Random) -> list[Turn]:
    n = rng.choice(
        [rng.randrange(1, 100), rng.randrange(100, 1000), rng.randrange(1000, 20000), rng.randrange(20000, 2_000_000)]
    )
    cents = rng.randrange(0, 100)
    if rng.random() < 0.6:
        amount = int_words(n, rng) + " dollars"
        if cents and rng.random() < 0.5:
            amount += " and " + int_words(cents, rng) + " cents"
    else:
        amount = f"${n:,}" + (f".{cents:02d}" if rng.random() < 0.5 else "")
    lead = rng.choice(
        [
            "my balance says {A}",
            "I was charged {A} twice",
            "the bill this month is {A}",
            "I want to pay {A} today",
            "it's showing {A} past due",
            "I made a payment of {A} last week",
            "the refund should be {A}",
            "why is my statement {A}",
            "I can pay like {A} now and the rest later",
            "the minimum payment is {A}",
            "my limit is {A}",
            "they took out {A}",
        ]
    )
    return [caller(lead, A=amount)]


def non_card_date(rng: random.Random) -> str:
    month = rng.choice(MONTHS)
    year = rng.randrange(2024, 2036)
    form = rng.choice(["month-year", "month-of-year", "month-day", "numeric-slash", "oh-words"])
    if form == "month-year":
        return f"{month} {year_words(year, rng, short_ok=False)}"
    if form == "month-of-year":
        return f"{month} of {year_words(year, rng, short_ok=False)}"
    if form == "month-day":
        day = rng.choice(
            ["first", "second", "third", "fourth", "fifteenth", "twentieth", "twenty ninth", "thirty first"]
        )
        return f"{month} {day}"
    if form == "numeric-slash":
        return f"{rng.randrange(1, 13)}/{rng.randrange(1, 29)}/{year}"
    m = rng.randrange(1, 13)
    return f"{pair_words(f'{m:02d}')} {year_words(year, rng, short_ok=False)}"


def neg_date(rng: random.Random) -> list[Turn]:
    lead = rng.choice(
        [
            "the warranty expires {D}",
            "my lease ends {D}",
            "the contract runs until {D}",
            "my subscription renews {D}",
            "the promotion ends {D}",
            "the policy renews on {D}",
            "we moved in {D}",
            "the extended warranty is good through {D}",
            "my plan expires {D}, can I upgrade before then",
            "the appointment is on {D}",
            "the installation is scheduled for {D}",
            "the free trial ends {D}",
            "the rebate deadline is {D}",
            "the tv's warranty runs out {D}",
        ]
    )
    return [caller(lead, D=non_card_date(rng))]


def neg_coupon(rng: random.Random) -> list[Turn]:
    month = rng.choice(MONTHS)
    day = rng.choice(["first", "fifteenth", "thirtieth", "twenty ninth", "tenth", "end of the month"])
    when = f"{month} {day}" if day != "end of the month" else f"the end of {month}"
    lead = rng.choice(
        [
            "the coupon is valid until {W}",
            "it says the coupon expires {W}",
            "the discount code is good until {W}",
            "my voucher runs out {W}",
            "the offer on the flyer ends {W}",
            "the store credit expires {W}",
        ]
    )
    return [caller(lead, W=when)]


def neg_time(rng: random.Random) -> list[Turn]:
    h = rng.choice(UNITS[1:] + TEENS[:3])
    mins = rng.choice(["", " thirty", " fifteen", " forty five", " o'clock", " oh five", " twenty"])
    lead = rng.choice(
        [
            "can you call me back at {T}",
            "I'm free after {T}",
            "the technician said between {T} and {U}",
            "I called at {T} this morning",
            "they close at {T} right",
            "I've been on hold since {T}",
            "the delivery window was {T} to {U}",
            "my shift ends at {T}",
        ]
    )
    u = rng.choice(UNITS[1:] + TEENS[:3])
    return [caller(lead, T=h + mins + rng.choice(["", " pm", " am", " in the morning"]), U=u)]


STREETS = ["maple street", "oak avenue", "elm drive", "sunset boulevard", "main street", "pine road", "cedar lane"]
CITIES = ["springfield illinois", "austin texas", "tampa florida", "columbus ohio", "reno nevada", "salem oregon"]


def neg_address(rng: random.Random) -> list[Turn]:
    house = rng.randrange(1, 20000)
    house_said = rng.choice(
        [
            str(house),
            int_words(house, rng, allow_and=False),
            " ".join(digit_words(str(house), rng, "oh")),
            grouped_words(str(house), rng) if len(str(house)) in (3, 4) else str(house),
        ]
    )
    zipc = f"{rng.randrange(1000, 99999):05d}"
    zip_said = zipc if rng.random() < 0.4 else " ".join(digit_words(zipc, rng, rng.choice(["oh", "zero"])))
    apt = rng.choice(["", f", apartment {int_words(rng.randrange(1, 40), rng)}", f" unit {rng.randrange(1, 400)}"])
    tmpl = rng.choice(
        [
            "I live at {H} {S}{A}, {C} {Z}",
            "the address is {H} {S}{A}",
            "ship it to {H} {S}, {C}, zip code {Z}",
            "my zip is {Z}",
            "it's {H} {S}{A}",
            "the billing address is {H} {S}, {Z}",
            "we're at {H} {S} in {C}",
        ]
    )
    return [caller(tmpl, H=house_said, S=rng.choice(STREETS), A=apt, C=rng.choice(CITIES), Z=zip_said)]


def neg_flight(rng: random.Random) -> list[Turn]:
    airline = rng.choice(["united", "delta", "ua", "aa", "southwest", "jetblue", "alaska"])
    n = str(rng.randrange(10, 9999))
    said = rng.choice([n, " ".join(digit_words(n, rng, "oh")), grouped_words(n, rng)])
    lead = rng.choice(
        [
            "I'm on {A} flight {N}",
            "my flight is {A} {N} tomorrow",
            "flight {N} got cancelled",
            "the connecting flight was {A} {N}",
            "I need to rebook flight number {N}",
        ]
    )
    return [caller(lead, A=airline, N=said)]


def neg_year(rng: random.Random) -> list[Turn]:
    y = rng.randrange(1960, 2027)
    said = rng.choice(
        [
            str(y),
            year_words(y, rng, short_ok=False) if y >= 2000 else pair_words(str(y)[:2]) + " " + pair_words(str(y)[2:]),
        ]
    )
    lead = rng.choice(
        [
            "I've been a customer since {Y}",
            "I bought the car in {Y}",
            "back in {Y} I had the same problem",
            "the house was built in {Y}",
            "it's a {Y} honda civic",
            "I opened the account in {Y} I think",
        ]
    )
    return [caller(lead, Y=said)]


def neg_quantity(rng: random.Random) -> list[Turn]:
    n = int_words(rng.choice([rng.randrange(2, 13), rng.randrange(2, 13), rng.randrange(13, 120)]), rng)
    lead = rng.choice(
        [
            "I ordered {Q} boxes and got only half",
            "we need {Q} units for the office",
            "I've called like {Q} times about this",
            "there were {Q} items in the package",
            "it's been {Q} days",
            "I waited {Q} minutes on hold",
            "can I get {Q} of the blue ones",
            "I've got {Q} lines on the family plan",
        ]
    )
    return [caller(lead, Q=n)]


def neg_website(rng: random.Random) -> list[Turn]:
    site = rng.choice(["acme", "acmebank", "shopwell", "northwind", "contoso", "fabrikam", "globex"])
    tld = rng.choice(["com", "com", "net", "org", "co dot uk"])
    path = rng.choice(
        ["", " slash help", " slash returns", " slash account slash login", " slash support", " slash faq"]
    )
    www = rng.choice(["", "www dot ", "w w w dot ", "help dot ", "my dot "])
    if rng.random() < 0.25:
        said = f"{rng.choice(['www.', '', 'https://'])}{site}.{tld.replace(' dot ', '.')}{path.replace(' slash ', '/')}"
    else:
        said = f"{www}{site} dot {tld}{path}"
    lead = rng.choice(
        [
            "I went to {W} and it said error",
            "the site says go to {W}",
            "I tried {W} but the page won't load",
            "I looked at {W} yesterday",
            "it told me to visit {W}",
            "I was on {W} and it logged me out",
            "is {W} the right website",
            "I saw it at {W}",
            "the letter says to go online at {W}",
        ]
    )
    return [caller(lead, W=said)]


def neg_model(rng: random.Random) -> list[Turn]:
    letters = "".join(rng.choice("abcdefghjkmnprstvwxz") for _ in range(rng.choice([1, 2, 3])))
    n = str(rng.randrange(10, 99999))
    said = rng.choice(
        [
            f"{letters.upper()}-{n}",
            f"{' '.join(letters)} {' '.join(digit_words(n, rng, 'oh'))}",
            f"{' '.join(letters)} {grouped_words(n, rng) if len(n) in (3, 4) else n}",
            f"{letters}{n}",
        ]
    )
    lead = rng.choice(
        [
            "the model number is {M}",
            "it's the {M} router",
            "I have the {M}, the black one",
            "the sku on the box says {M}",
            "the part number is {M}",
            "my modem is a {M}",
            "the printer model is {M}",
        ]
    )
    return [caller(lead, M=said)]


def neg_counting(rng: random.Random) -> list[Turn]:
    start = rng.randrange(1, 5)
    seq = " ".join(UNITS[i] for i in range(start, start + rng.choice([3, 4, 5])))
    lead = rng.choice(
        [
            "{S}, can you hear me now",
            "testing {S}",
            "hello? {S}, is this thing on",
            "I pressed {S} and nothing happened",
            "it goes {S} on the menu",
            "okay {S}, I'm counting the boxes",
        ]
    )
    return [caller(lead, S=seq)]


CHITCHAT = [
    "I have two kids and they both use the account",
    "give me one second",
    "hold on one sec",
    "it's been like three weeks",
    "I'm sixty seven years old and I don't do computers",
    "we've got four people in the house",
    "I'll be there in five minutes",
    "one more thing",
    "I called twice yesterday",
    "number one, I never got the letter",
    "the second time they hung up on me",
    "that was two or three months ago",
    "I've been with you guys for like ten years",
    "it's the one with the blue cover",
    "yeah one of them is fine",
    "I only need one",
    "nine times out of ten it works",
    "there's a hundred things going on today",
    "it happened like four or five times",
    "first of all thanks for your help",
    "I'm on my third call today",
    "a couple of weeks, maybe two",
    "I've got like a million emails from you",
    "my two year old is screaming sorry",
    "can you give me a minute, I'm driving",
    "I gave it five stars",
    "it was a ten out of ten experience honestly",
    "the second one is the one I want",
    "one of my cards got declined",
    "I'm calling about my card, it got stuck in the atm",
    "I need a new card, mine is cracked",
    "I don't remember my social off the top of my head",
    "my email doesn't work anymore",
    "can you send me an email instead of a text",
    "should I give you my phone number",
    "I don't have the card on me right now",
    "the code never came through",
    "I'll call back at like seven",
    "it's the number on the back that's rubbed off",
    "what's the security code for, though",
    "I'm seventy two, be patient with me",
    "we have three dogs so it's loud here",
    "it took them six hours to show up",
    "I'm number four in line at the pharmacy",
    "my kid is in second grade",
    "I only used it once",
    "the first two were fine, the third one broke",
    "I spent half an hour on the chat",
    "like a dozen times",
    "a one time payment, not monthly",
    "the one in the kitchen, not the bedroom",
    "I'll give it one more try",
    "it's on the fourth floor",
    "two adults and one child",
]
CHITCHAT_OPENERS = ["", "", "", "yeah ", "okay so ", "honestly ", "um ", "well ", "see, ", "oh "]


def neg_chitchat(rng: random.Random) -> list[Turn]:
    return [caller(rng.choice(CHITCHAT_OPENERS) + rng.choice(CHITCHAT))]


NO_ANSWER = [
    "hang on let me grab it",
    "give me one second",
    "I don't have it with me",
    "I'd rather not give that over the phone",
    "can I give it to you later",
    "let me ask my wife, one minute",
    "my reading glasses, hang on",
    "it's the same as last time",
    "do you need all of it?",
    "okay, two seconds",
    "one moment please",
]
NO_ANSWER_BY_TOPIC = {
    "card": [
        "hold on, I need to find my card",
        "one sec, it's in my other wallet",
        "hmm, it's rubbed off, I can't read it",
        "is that the one on the back?",
        "wait which card, I have two",
        "the card's in the car, give me two minutes",
    ],
    "ssn": ["I don't know it by heart, one second", "do you need the whole social or the last four?"],
    "email": ["uh, I'm not sure I have an email", "I don't really use email", "my grandson set it up, one sec"],
    "phone": ["I don't have a cell phone", "just use the one I'm calling from", "the home phone, same as on file"],
}


def neg_agent_question(rng: random.Random) -> list[Turn]:
    topic, questions = rng.choice(
        [
            ("card", CVV_QUESTIONS + CARD_QUESTIONS + EXPIRY_QUESTIONS),
            ("ssn", SSN_QUESTIONS),
            ("email", EMAIL_QUESTIONS),
            ("phone", PHONE_QUESTIONS),
        ]
    )
    answers = NO_ANSWER + NO_ANSWER_BY_TOPIC[topic] * 2
    return [agent(rng.choice(questions)), caller(rng.choice(answers))]


def neg_ssn_shaped(rng: random.Random) -> list[Turn]:
    """SSN-shaped part or case numbers whose area no SSN can have (000, 666, 9xx)."""
    area = rng.choice(["000", "666", f"9{rng.randrange(0, 100):02d}"])
    ds = area + f"{rng.randrange(0, 100):02d}{rng.randrange(0, 10000):04d}"
    assert not ssn_ok(ds)
    said = rng.choice([f"{ds[:3]}-{ds[3:5]}-{ds[5:]}", say_plain(ds, rng, sizes=[3, 2, 4])])
    lead = rng.choice(["the part number is {N}", "the case number is {N}", "the serial is {N}", "the sku is {N}"])
    return [caller(lead, N=said)]


def neg_rate(rng: random.Random) -> list[Turn]:
    whole = rng.randrange(1, 30)
    frac = rng.randrange(0, 100)
    said = rng.choice(
        [
            f"{whole}.{frac:02d}%",
            f"{int_words(whole, rng)} point {' '.join(digit_words(f'{frac:02d}', rng, 'oh'))} percent",
        ]
    )
    lead = rng.choice(
        [
            "the interest rate is {R}",
            "why did my apr go up to {R}",
            "they said {R} cash back",
            "the late fee is {R} of the balance",
        ]
    )
    return [caller(lead, R=said)]


def neg_extension(rng: random.Random) -> list[Turn]:
    n = str(rng.randrange(100, 10000))
    said = rng.choice([n, " ".join(digit_words(n, rng, "oh")), grouped_words(n, rng)])
    lead = rng.choice(
        [
            "can you transfer me to extension {N}",
            "I was talking to someone at extension {N}",
            "it's store number {N}",
            "I was at the store on route {N}",
            "the agent id was {N}",
            "my room number is {N}",
        ]
    )
    return [caller(lead, N=said)]


def neg_ivr(rng: random.Random) -> list[Turn]:
    presses = " then ".join(rng.choice(UNITS[:10]) for _ in range(rng.choice([2, 3, 4])))
    lead = rng.choice(
        [
            "I pressed {P} and it hung up",
            "the menu made me press {P}",
            "I hit {P} like it said",
            "I kept pressing {P}",
        ]
    )
    return [caller(lead, P=presses)]


def neg_email_like(rng: random.Random) -> list[Turn]:
    site = rng.choice(["acme", "shopwell", "northwind", "contoso"])
    lines = [
        f"I was at home when I went on {site} dot com",
        f"I looked at {site} dot com and it was down",
        "I'm at work right now so I have to be quick",
        f"we were at the {site} store at the mall",
        f"I clicked on the link at the bottom of {site} dot com slash deals",
        "I'm at my mom's, she has better signal",
        "we signed up at the store, not online",
        "the email came from your company, not me",
        "at this point I just want it fixed",
        f"I paid at {site} dot com with apple pay",
    ]
    return [caller(rng.choice(lines))]


# ---------------------------------------------------------------------------------------------------------------
# The set
# ---------------------------------------------------------------------------------------------------------------

CLASSES: list[tuple[str, int, Gen]] = [
    ("card/words", 25, gen_card("words")),
    ("card/digits", 20, gen_card("digits")),
    ("card/mixed", 20, gen_card("mixed")),
    ("card/filler", 30, gen_card("filler")),
    ("card/hesitation", 25, gen_card("hesitation")),
    ("card/self-correction", 30, gen_card_correction),
    ("card/repeated-two-forms", 20, gen_card_repeated),
    ("card/split-turns", 30, gen_card_split),
    ("card/agent-question", 25, gen_card_agent_question),
    ("card/misspoken-luhn-fails", 20, gen_card_misspoken),
    ("card/other-issuers-lengths", 25, gen_card("issuers")),
    ("card/double-digits", 15, gen_card("double")),
    ("ssn/words", 25, gen_ssn("words")),
    ("ssn/digits", 25, gen_ssn("digits")),
    ("ssn/mixed", 15, gen_ssn("mixed")),
    ("ssn/filler", 25, gen_ssn("filler")),
    ("ssn/hesitation", 15, gen_ssn("hesitation")),
    ("ssn/self-correction", 25, gen_ssn_correction),
    ("ssn/repeated-two-forms", 15, gen_ssn_repeated),
    ("ssn/split-turns", 20, gen_ssn_split),
    ("ssn/agent-question", 25, gen_ssn_agent_question),
    ("ssn/double-digits", 15, gen_ssn("double")),
    ("email/written", 25, gen_email("written")),
    ("email/spoken", 30, gen_email("spoken")),
    ("email/spelled", 25, gen_email("spelled")),
    ("email/spelled-phonetic", 15, gen_email("spelled-phonetic")),
    ("email/name-then-spelled", 15, gen_email("name-then-spelled")),
    ("email/multiword-domain", 30, gen_email("multiword-domain")),
    ("email/mixed-written-spoken", 20, gen_email("mixed-written-spoken")),
    ("email/hesitation", 15, gen_email("hesitation")),
    ("email/split-turns", 30, gen_email_split),
    ("email/agent-question", 20, gen_email_agent_question),
    ("email/repeated-two-forms", 15, gen_email_repeated),
    ("phone/words", 25, gen_phone("words")),
    ("phone/digits", 25, gen_phone("digits")),
    ("phone/leading-one", 20, gen_phone("leading-one")),
    ("phone/pairs", 15, gen_phone("pairs")),
    ("phone/filler", 20, gen_phone("filler")),
    ("phone/double-digits", 10, gen_phone("double")),
    ("phone/self-correction", 20, gen_phone_correction),
    ("phone/e164-spoken", 35, gen_phone_e164(written=False)),
    ("phone/e164-written", 15, gen_phone_e164(written=True)),
    ("phone/uk-national", 10, gen_phone_uk_national),
    ("phone/split-turns", 20, gen_phone_split),
    ("phone/agent-question", 20, gen_phone_agent_question),
    ("phone/repeated-two-forms", 15, gen_phone_repeated),
    ("expiry/oh-words", 25, gen_expiry("oh-words")),
    ("expiry/slash-digits", 25, gen_expiry("slash-digits")),
    ("expiry/slash-spoken", 30, gen_expiry("slash-spoken")),
    ("expiry/month-name", 25, gen_expiry("month-name")),
    ("expiry/digit-run", 20, gen_expiry("digit-run")),
    ("expiry/agent-question", 25, gen_expiry_agent_question),
    ("expiry/filler", 15, gen_expiry_filler),
    ("expiry/self-correction", 15, gen_expiry_correction),
    ("cvv/keyword", 30, gen_cvv("keyword")),
    ("cvv/back-of-card", 30, gen_cvv("back-of-card")),
    ("cvv/agent-question", 40, gen_cvv_agent_question),
    ("cvv/amex-four", 15, gen_cvv("amex-four")),
    ("cvv/digits", 15, gen_cvv("digits")),
    ("cvv/pairs", 15, gen_cvv("pairs")),
    ("cvv/filler", 15, gen_cvv("filler")),
    ("cvv/self-correction", 15, gen_cvv_correction),
    ("cvv/after-card", 15, gen_cvv_after_card),
    ("multi/card-expiry-cvv-one-turn", 30, gen_multi_one_turn),
    ("multi/payment-dialogue", 30, gen_multi_dialogue),
    ("multi/with-distractors", 40, gen_multi_distractor),
    ("multi/email-and-phone", 20, gen_multi_email_phone),
    ("negative/reference-number", 40, neg_reference),
    ("negative/reference-luhn-stretch", 40, neg_reference_luhn_stretch),
    ("negative/order-luhn16-no-card-prefix", 35, neg_order_luhn16),
    ("negative/tracking-number", 30, neg_tracking),
    ("negative/confirmation-code", 30, neg_confirmation_code),
    ("negative/amount", 40, neg_amount),
    ("negative/date-not-expiry", 45, neg_date),
    ("negative/coupon-date", 20, neg_coupon),
    ("negative/time", 30, neg_time),
    ("negative/address-zip", 40, neg_address),
    ("negative/flight", 20, neg_flight),
    ("negative/year", 20, neg_year),
    ("negative/quantity", 25, neg_quantity),
    ("negative/website", 35, neg_website),
    ("negative/model-number", 30, neg_model),
    ("negative/counting", 20, neg_counting),
    ("negative/chit-chat", 45, neg_chitchat),
    ("negative/agent-question-no-answer", 35, neg_agent_question),
    ("negative/ssn-shaped-invalid", 20, neg_ssn_shaped),
    ("negative/rate-percent", 15, neg_rate),
    ("negative/extension-store-number", 20, neg_extension),
    ("negative/ivr-keypresses", 15, neg_ivr),
    ("negative/at-and-dot-not-email", 20, neg_email_like),
]


def check_turns(uid: str, turns: list[Turn]) -> None:
    assert turns and turns[-1].speaker == "caller", uid
    for ti, t in enumerate(turns):
        assert t.text and t.text == t.text.strip() and "  " not in t.text, (uid, t.text)
        assert t.speaker in ("agent", "caller"), uid
        if t.speaker == "agent":
            assert not t.spans, uid
        last_end = -1
        for ent, start, end in sorted(t.spans, key=lambda s: s[1]):
            text = t.text[start:end]
            where = (uid, ti, text, t.text)
            assert 0 <= start < end <= len(t.text), where
            assert text.lower() == ent.text.lower() and text == text.strip(), where
            assert start == 0 or not t.text[start - 1].isalnum(), where
            assert end == len(t.text) or not t.text[end].isalnum(), where
            assert text[0].isalnum() or text[0] in "+(", where
            assert text[-1].isalnum(), where
            assert start >= last_end, where
            last_end = end
            if ent.type == "CARD" and ent.digits is not None:
                assert digits_said(text) == ent.digits, where
                assert luhn_ok(ent.digits) != ent.misspoken, where
            elif ent.type == "SSN" and ent.digits is not None:
                assert ssn_ok(ent.digits) and digits_said(text) == ent.digits, where
            elif ent.type in ("PHONE", "CVV") and ent.digits is not None:
                assert digits_said(text) == ent.digits, where
            elif ent.corrected is not None:
                assert ent.type != "CARD" or luhn_ok(ent.corrected), where
                assert ent.type != "SSN" or ssn_ok(ent.corrected), where
                said = iter(digits_said(text))
                assert all(d in said for d in ent.corrected), where  # in order, as a subsequence
                assert len(digits_said(text)) > len(ent.corrected), where
            elif ent.type == "EXPIRY" and ent.digits is not None:
                assert expiry_said_ok(text, ent.digits), where
            elif ent.type == "EMAIL" and ent.address is not None:
                assert email_said(text) == ent.address, (where, email_said(text), ent.address)


def to_record(uid: str, cls: str, turns: list[Turn]) -> dict[str, object]:
    entities = [
        {"type": ent.type, "turn": ti, "start": start, "end": end}
        for ti, t in enumerate(turns)
        for ent, start, end in sorted(t.spans, key=lambda s: s[1])
    ]
    if cls.startswith("negative/"):
        assert not entities, uid
    else:
        assert entities, uid
    return {
        "id": uid,
        "class": cls,
        "turns": [{"speaker": t.speaker, "text": t.text} for t in turns],
        "entities": entities,
    }


def is_dev(uid: str) -> bool:
    return int.from_bytes(hashlib.sha256(uid.encode()).digest()[:4], "big") % 100 < DEV_PERCENT


def build() -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    seen: set[tuple[str, ...]] = set()
    for cls, count, gen in CLASSES:
        rng = random.Random(f"{SEED}:{cls}")
        made = 0
        attempts = 0
        while made < count:
            attempts += 1
            assert attempts < count * 20, f"{cls}: too many duplicates"
            turns = [ink_style(t, rng) for t in gen(rng)]
            key = tuple(t.text.lower().rstrip(".?") for t in turns)
            if key in seen:
                continue
            seen.add(key)
            uid = f"{cls.replace('/', '-')}-{made:03d}"
            check_turns(uid, turns)
            records.append(to_record(uid, cls, turns))
            made += 1
    for said, value in _SPLIT_CHECKS:
        assert digits_said(said) == value, (said, value)
        if len(value) >= 13:
            assert luhn_ok(value), value
        if len(value) == 9:
            assert ssn_ok(value), value
    for said, address in _EMAIL_SPLIT_CHECKS:
        assert email_said(said) == address, (said, address)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args()
    records = build()
    args.out.mkdir(parents=True, exist_ok=True)
    dev = [r for r in records if is_dev(str(r["id"]))]
    held = [r for r in records if not is_dev(str(r["id"]))]
    for name, rows in (("independent-dev.jsonl", dev), ("independent-heldout.jsonl", held)):
        with (args.out / name).open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    per_class: Counter[tuple[str, bool]] = Counter((str(r["class"]), is_dev(str(r["id"]))) for r in records)
    classes = sorted({c for c, _ in per_class})
    print(f"{'class':40} {'dev':>5} {'held':>5}")
    for c in classes:
        print(f"{c:40} {per_class[(c, True)]:5} {per_class[(c, False)]:5}")
    n_pos = sum(1 for r in records if r["entities"])
    ents: Counter[str] = Counter()
    for r in records:
        for e in r["entities"]:  # type: ignore[attr-defined]
            ents[e["type"]] += 1
    print(
        f"total {len(records)} (dev {len(dev)}, held-out {len(held)}); with entities {n_pos}, negatives "
        f"{len(records) - n_pos}; entities {dict(sorted(ents.items()))}"
    )


if __name__ == "__main__":
    main()

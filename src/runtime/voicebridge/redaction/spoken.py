"""Numbers as callers say them: runs of digits, written or spoken, found with where they lie in the text.

A caller reads a card number as "four one one one, one one one one…", "forty-one eleven…", "4111 1111…" or a mix,
and a transcript keeps whatever the recogniser wrote. To a redactor all of these are one run of digits::

    >>> [run.digits for run in digit_runs("card four one one one, 1111 double one 11, expiry oh four twenty nine")]
    ['411111111111', '0429']

A run is a sequence of *groups* (a written number such as ``4111``, or the digits of a spoken number such as
"forty one" → ``41``) joined by nothing but spaces and the separators people and recognisers put between digits
(``,`` ``-`` ``.`` ``/``); any other word ends it. Spoken forms understood: the digit words and "oh"/"o" for zero
(only next to other digits), "double"/"triple" before a digit, the teens, the tens alone or with a unit ("twenty
nine", "twenty-nine"), and "hundred"/"thousand" after a number ("nineteen hundred", "two thousand twenty nine").
Each group keeps its span in the original text, so what is found can be cut out exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
}
_TEENS = {
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_ZEROS = frozenset({"oh", "o"})
"""Zero as people say it inside a number; alone, "oh" and "o" are words, never digits."""
_REPEATS = {"double": 2, "triple": 3}
_SCALES = {"hundred": 100, "thousand": 1000}

_TOKEN = re.compile(r"\d+|[A-Za-z]+|[^\sA-Za-z\d]")
_JOINERS = frozenset(",-./()")
"""What may stand between two groups of one run (besides spaces)."""
_SAID_JOINERS = frozenset({"dash", "hyphen"})
"""Separators said as words ("five five five dash two three four…"), between two groups only."""


@dataclass(frozen=True, slots=True)
class Group:
    """One written or spoken number inside a run: its digits and its span in the text."""

    digits: str
    start: int
    end: int
    written: bool


@dataclass(frozen=True, slots=True)
class DigitRun:
    """Consecutive groups of digits with only separators between them."""

    groups: tuple[Group, ...]
    separators: tuple[str, ...]
    """What stood between group *i* and *i+1* (``""`` for spaces only, else the separator characters)."""

    @property
    def digits(self) -> str:
        return "".join(g.digits for g in self.groups)

    @property
    def start(self) -> int:
        return self.groups[0].start

    @property
    def end(self) -> int:
        return self.groups[-1].end

    def part(self, first: int, last: int) -> DigitRun:
        """Groups ``first`` to ``last`` (inclusive) as a run of their own."""
        return DigitRun(self.groups[first : last + 1], self.separators[first:last])


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    start: int
    end: int

    @property
    def word(self) -> str:
        return self.text.lower()


def tokens(text: str) -> list[_Token]:
    return [_Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def digit_runs(text: str) -> list[DigitRun]:
    """Every run of digits in ``text``, in order."""
    toks = tokens(text)
    runs: list[DigitRun] = []
    groups: list[Group] = []
    separators: list[str] = []
    pending = ""
    i = 0
    while i < len(toks):
        group, i_next = _group_at(toks, i, bool(groups))
        if group is not None:
            if groups:
                separators.append(pending)
            groups.append(group)
            pending = ""
            i = i_next
            continue
        tok = toks[i]
        if groups and tok.text in _JOINERS and len(pending) < 2:
            pending += tok.text
            i += 1
            continue
        said_joiner = groups and tok.word in _SAID_JOINERS and not pending and i + 1 < len(toks)
        if said_joiner and _group_at(toks, i + 1, True)[0] is not None:
            pending = "-"
            i += 1
            continue
        if groups:
            runs.append(DigitRun(tuple(groups), tuple(separators)))
            groups, separators, pending = [], [], ""
        i += 1
    if groups:
        runs.append(DigitRun(tuple(groups), tuple(separators)))
    return runs


def _group_at(toks: list[_Token], i: int, in_run: bool) -> tuple[Group | None, int]:
    """The group that starts at token ``i``, and the index after it; (None, i) when none does."""
    tok = toks[i]
    if tok.text.isdigit():
        return Group(tok.text, tok.start, tok.end, written=True), i + 1
    word = tok.word
    if word in _ZEROS:
        # "oh" is zero only inside a number: after a digit, or before one.
        nxt = _next_word(toks, i)
        if in_run or (nxt is not None and _is_number_word(nxt.word) and nxt.word not in _ZEROS):
            return Group("0", tok.start, tok.end, written=False), i + 1
        return None, i
    if word in _REPEATS:
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if nxt is not None and (nxt.word in _UNITS or nxt.word in _ZEROS):
            digit = "0" if nxt.word in _ZEROS else str(_UNITS[nxt.word])
            return Group(digit * _REPEATS[word], tok.start, nxt.end, written=False), i + 2
        return None, i
    value, end_index = _spoken_number(toks, i)
    if value is None:
        return None, i
    return Group(value, tok.start, toks[end_index - 1].end, written=False), end_index


def _spoken_number(toks: list[_Token], i: int) -> tuple[str | None, int]:
    """A number of words from token ``i``: a unit, a teen, a ten with its unit, and an optional scale after it."""
    word = toks[i].word
    if word in _UNITS:
        value, j = _UNITS[word], i + 1
    elif word in _TEENS:
        value, j = _TEENS[word], i + 1
    elif word in _TENS:
        value, j = _TENS[word], i + 1
        k = j + 1 if j < len(toks) and toks[j].text == "-" else j
        if k < len(toks) and toks[k].word in _UNITS and toks[k].word != "zero":
            value, j = value + _UNITS[toks[k].word], k + 1
    else:
        return None, i
    if j < len(toks) and toks[j].word in _SCALES:
        scale = _SCALES[toks[j].word]
        rest, k = (None, j + 1)
        if j + 1 < len(toks) and toks[j + 1].word not in _ZEROS:
            rest, k = _spoken_number(toks, j + 1)
        if rest is not None and int(rest) < scale:
            return str(value * scale + int(rest)), k
        return str(value * scale), j + 1
    return str(value), j


def _is_number_word(word: str) -> bool:
    return word in _UNITS or word in _TEENS or word in _TENS or word in _REPEATS or word in _ZEROS


def _next_word(toks: list[_Token], i: int) -> _Token | None:
    j = i + 1
    while j < len(toks) and toks[j].text in _JOINERS:
        j += 1
    return toks[j] if j < len(toks) else None


def words_before(text: str, position: int, count: int = 8) -> list[str]:
    """The last ``count`` words before ``position``, lower case: the context a number is said in."""
    return [t.word for t in tokens(text[:position]) if t.text.isalpha()][-count:]


@dataclass(frozen=True, slots=True)
class Rewritten:
    """Text with every spoken number written as digits, and the way back to the original's offsets."""

    text: str
    pieces: tuple[tuple[int, int, int, int], ...]
    """(start, end) in ``text`` and (start, end) in the original, for each rewritten group."""

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``text[start:end]`` came from."""
        return self._original(start, at_end=False), self._original(end, at_end=True)

    def _original(self, offset: int, *, at_end: bool) -> int:
        shift = 0
        for new_start, new_end, old_start, old_end in self.pieces:
            if offset < new_start or (at_end and offset == new_start):
                break
            if offset < new_end or (at_end and offset == new_end):
                return old_end if at_end else old_start
            shift = old_end - new_end
        return offset + shift


def written_form(text: str) -> Rewritten:
    """``text`` with its spoken numbers as digits ("four one one one, one one" → "4111, 11"), for a reader that
    knows only digits; :meth:`Rewritten.original_span` maps what it finds back. Spoken groups said one after another
    are written together; separators and written groups stay as they were."""
    out: list[str] = []
    pieces: list[tuple[int, int, int, int]] = []
    at = length = 0
    for run in digit_runs(text):
        if all(group.written for group in run.groups):
            continue
        out.append(text[at : run.start])
        length += run.start - at
        written = _run_written(run)
        pieces.append((length, length + len(written), run.start, run.end))
        out.append(written)
        length += len(written)
        at = run.end
    out.append(text[at:])
    return Rewritten("".join(out), tuple(pieces))


def _run_written(run: DigitRun) -> str:
    parts = [run.groups[0].digits]
    for separator, before, group in zip(run.separators, run.groups[:-1], run.groups[1:], strict=True):
        if separator:
            parts.append(separator + " ")
        elif before.written or group.written:
            parts.append(" ")
        parts.append(group.digits)
    return "".join(parts)

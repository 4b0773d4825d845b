"""Numbers as callers say them: runs of digits, written or spoken, found with where they lie in the text.

A caller reads a card number as "four one one one, one one one one…", "forty-one eleven…", "4111 1111…" or a mix,
stops and starts again ("three zero six five um sorry three zero five…"), and a transcript keeps whatever the
recogniser wrote. To a redactor all of these are one run of digits::

    >>> [run.digits for run in digit_runs("card four one one one, 1111 double one 11, expiry oh four twenty nine")]
    ['411111111111', '0429']

A run is a sequence of *groups* (a written number such as ``4111``, or the digits of a spoken number such as
"forty one" → ``41``) with nothing between them but spaces, the separators people and recognisers put between digits
(``,`` ``-`` ``.`` ``/``, "dash", "slash", "over", a pause's "…"), and the words of a hesitation or a correction
(:data:`HESITATIONS`: "uh", "hang on", "sorry, I mean", "scratch that", a listener's "mhm" between two turns); any
other word ends it. Spoken forms understood: the digit words and "oh"/"o" for zero (only next to other digits),
"double"/"triple" before a digit, the teens, the tens alone or with a unit ("twenty nine", "twenty-nine"), and
"hundred"/"thousand" after a number ("nineteen hundred", "two thousand and twenty nine"); a number before "digits"
counts them ("the three digit code") and is none. Spanish numbers are read too: the digit words, the one-word numbers
to twenty-nine, the tens with "y" and their unit, and "mil" ("cuatro cinco uno dos", "treinta y cinco");
"cien"/"ciento" and the hundreds ("cuatrocientos") are not, nor "un"/"una". Each group keeps its span in the original
text, so what is found can be cut out exactly.

An identifier is never a number: a chunk whose letters and digits are glued together or joined by ``-_:/.=#%~@`` (a
contact id, an ARN, an S3 key, a hash, an ISO-8601 time), or that holds more digits than any entity, is one token
(:func:`tokens`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

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
# Spanish: the digits, the numbers written as one word up to twenty-nine (with and without their accents, as
# recognisers write either), the tens (joined to a unit by "y": "treinta y cinco") and "mil". "Un" and "una" are
# left out: they are articles far more often than digits ("un cargo", "una persona").
_UNITS.update(
    {"cero": 0, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7, "ocho": 8, "nueve": 9}
)
_TEENS.update(
    {"diez": 10, "once": 11, "doce": 12, "trece": 13, "catorce": 14, "quince": 15, "dieciséis": 16, "dieciseis": 16,
     "diecisiete": 17, "dieciocho": 18, "diecinueve": 19, "veintiuno": 21, "veintidós": 22, "veintidos": 22,
     "veintitrés": 23, "veintitres": 23, "veinticuatro": 24, "veinticinco": 25, "veintiséis": 26, "veintiseis": 26,
     "veintisiete": 27, "veintiocho": 28, "veintinueve": 29}
)  # fmt: skip
_TENS.update(
    {"veinte": 20, "treinta": 30, "cuarenta": 40, "cincuenta": 50, "sesenta": 60, "setenta": 70, "ochenta": 80,
     "noventa": 90}
)  # fmt: skip
_TEN_AND_UNIT = frozenset({"-", "y"})
"""What may join a ten to its unit: English's hyphen ("twenty-nine") and Spanish's "y" ("treinta y cinco")."""
_ZEROS = frozenset({"oh", "o"})
"""Zero as people say it inside a number; alone, "oh" and "o" are words, never digits."""
_REPEATS = {"double": 2, "triple": 3}
_SCALES = {"hundred": 100, "thousand": 1000, "mil": 1000}
_DETERMINERS = frozenset(
    {"the", "that", "this", "which", "other", "another", "any", "each", "every", "a", "my", "your", "no", "new", "old",
     "right", "wrong", "same", "last", "first", "next", "only", "personal", "work", "little", "big"}
)  # fmt: skip
"""Words after which "one" is a pronoun ("the other one", "my personal one"), not a digit."""
_NUMBER_WORDS = frozenset([*_UNITS, *_TEENS, *_TENS, *_ZEROS, *_REPEATS])
_COUNTED = frozenset({"digit", "digits", "numbers", "letters", "of", "more", "time", "times"})
"""A number said before one of these counts something ("the three digit code", "nine digits"): it is no digit."""

_L = r"[^\W\d_]"
"""A letter of any alphabet: Spanish's accented letters belong to its number words ("dieciséis")."""
_TOKEN = re.compile(rf"\d+|{_L}+|[^\s\d]")
_CHUNK = re.compile(rf"(?:{_L}|[0-9])+(?:[-_:/.=#%~@]+(?:{_L}|[0-9])+)*|[^\s\d]")
"""Letters and digits joined by nothing or by the characters identifiers are built with."""
_LETTER = re.compile(_L)
_DIGIT = re.compile(r"\d")
_LONGEST = 19
"""More digits than any entity holds (a card number's longest): a chunk with more is an identifier, not words."""
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
    """Consecutive groups of digits with only separators, hesitations or a self-correction between them."""

    groups: tuple[Group, ...]
    separators: tuple[str, ...]
    """What stood between group *i* and *i+1*: ``""`` for spaces only, else the separator characters, ``" "`` when a
    filler or a correction stood there, ``"and"`` when only everyday words did ("and then", "the rest is")."""
    first: int = 0
    """The index of the run's first token (in :func:`tokens` of the text it was found in)."""
    last: int = 0
    """The index after the run's last token."""

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
        return DigitRun(self.groups[first : last + 1], self.separators[first:last], self.first, self.last)


class Token(NamedTuple):
    """A word, a number as written, a mark, or an identifier, with its span in the text (a tuple: a turn has
    dozens, and they are made for every turn and log line)."""

    text: str
    start: int
    end: int
    word: str
    """The text in lower case; ``""`` for an identifier, which is neither a number nor a word."""

    @property
    def opaque(self) -> bool:
        return not self.word


def tokens(text: str) -> list[Token]:
    """The words, numbers and marks of ``text``; an identifier is one token, never a number's digits.

    A chunk in which letters and digits are glued together or joined by ``-_:/.=#%~@`` (a contact id
    ``49b47580-a040-…``, an ARN, an S3 key, a hash, ``2026-12-02T07:25:10Z``), or one holding more digits than
    any entity (a Kinesis Video fragment number), is no caller's number: Ink writes a number's groups apart, with
    spaces, and a spoken one as words."""
    out: list[Token] = []
    for m in _CHUNK.finditer(text):
        chunk = m.group()
        if chunk.isalpha() or (chunk.isdigit() and len(chunk) <= _LONGEST) or len(chunk) == 1:
            out.append(Token(chunk, m.start(), m.end(), chunk.lower()))
        elif _opaque(chunk):
            out.append(Token(chunk, m.start(), m.end(), ""))
        else:
            at = m.start()
            out.extend(
                Token(p.group(), at + p.start(), at + p.end(), p.group().lower()) for p in _TOKEN.finditer(chunk)
            )
    return out


def _opaque(chunk: str) -> bool:
    digits = len(_DIGIT.findall(chunk))
    return digits > _LONGEST or (digits > 0 and _LETTER.search(chunk) is not None)


def digit_runs(text: str | list[Token]) -> list[DigitRun]:
    """Every run of digits in ``text`` (or in its :func:`tokens`), in order."""
    toks = tokens(text) if isinstance(text, str) else text
    runs: list[DigitRun] = []
    groups: list[Group] = []
    separators: list[str] = []
    first = 0
    i = 0
    while i < len(toks):
        group, i_next = _group_at(toks, i, in_run=False)
        if group is None:
            i += 1
            continue
        first, groups, separators = i, [group], []
        i = i_next
        while i < len(toks):
            j, separator = _between(toks, i)
            group, i_next = _group_at(toks, j, in_run=True) if j < len(toks) else (None, j)
            if group is None or (separator == _CONNECTED and sum(len(g.digits) for g in groups) < 2):
                break
            groups.append(group)
            separators.append(separator)
            i = i_next
        runs.append(DigitRun(tuple(groups), tuple(separators), first, i))
    return runs


HESITATIONS = frozenset(
    {
        "uh", "um", "umm", "uhm", "er", "erm", "ah", "hmm", "hm", "mm", "mhm", "huh", "like", "you", "know", "let",
        "me", "see", "hang", "on", "hold", "wait", "no", "sorry", "oops", "i", "mean", "scratch", "that", "wrong",
        "start", "again", "from", "the", "top", "actually", "okay", "ok", "so", "and", "then", "rest", "is", "it", "s",
        "yeah", "yes", "right", "sure", "go", "ahead", "got", "far", "more", "last", "part", "with", "well", "forward",
        "over", "slash", "dash", "hyphen", "space", "m", "oh",
        "eh", "este", "pues", "perdón", "perdon", "digo", "espere", "y", "luego", "sí", "si", "vale", "guion", "barra",
    }
)  # fmt: skip
"""Words a caller says between the digits of one number: fillers and pauses ("uh", "let me see", "hang on"),
self-corrections ("sorry, I mean", "scratch that", "let me start again, from the top"), the rest of it after a
pause ("and then", "the rest is"), a listener's "mhm" between two turns, and separators said aloud ("slash",
"forward slash", "over", "dash")."""
_CONNECTIVES = frozenset(
    {"and", "then", "the", "rest", "is", "it", "s", "that", "so", "with", "more", "last", "part", "go", "got", "far",
     "yes", "yeah", "right", "sure", "okay", "ok", "well", "ahead", "i", "m", "you", "y", "luego", "sí", "si", "vale",
     "pues"}
)  # fmt: skip
"""Hesitations that are also everyday words: a number goes on across them only once it has two digits ("the other
one is 4111…" is no number 14111…)."""
_CONNECTED = "and"
"""The separator of two groups with only connectives between them."""
_MOST_BETWEEN = 10
"""How many words and marks may stand between two groups of one number."""


def _between(toks: list[Token], i: int) -> tuple[int, str]:
    """Where the next group may start after the group ending before token ``i``, and what stood between: the index
    of the first token that is neither a separator nor a hesitation (or ``i`` when there is none)."""
    j, marks, words, connectives = i, "", False, True
    while j < len(toks) and j - i < _MOST_BETWEEN:
        tok = toks[j]
        if tok.text in _JOINERS or tok.text in "'?!":
            marks += tok.text
        elif tok.word in HESITATIONS and not (tok.word in _ZEROS and _group_at(toks, j, in_run=True)[0]):
            words = True
            connectives = connectives and tok.word in _CONNECTIVES
        else:
            break
        j += 1
    if j == i:
        return i, ""
    if words and connectives:
        return j, _CONNECTED
    return j, " " if words or "?" in marks or "!" in marks else marks[:2].replace("'", "")


def _group_at(toks: list[Token], i: int, in_run: bool) -> tuple[Group | None, int]:
    """The group that starts at token ``i``, and the index after it; (None, i) when none does."""
    tok = toks[i]
    if tok.word not in _NUMBER_WORDS:
        if tok.word.isdigit():
            return Group(tok.text, tok.start, tok.end, written=True), i + 1
        return None, i
    if i + 1 < len(toks) and toks[i + 1].word in _COUNTED:
        return None, i
    if tok.word == "one" and i > 0 and toks[i - 1].word in _DETERMINERS:
        return None, i
    word = tok.word
    if word in _ZEROS:
        # "oh" is zero only inside a number: after a digit, or before one.
        nxt = _next_word(toks, i)
        if in_run or (nxt is not None and _is_number_word(nxt.word)):
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


def _spoken_number(toks: list[Token], i: int) -> tuple[str | None, int]:
    """A number of words from token ``i``: a unit, a teen, a ten with its unit, and an optional scale after it."""
    word = toks[i].word
    if word in _UNITS:
        value, j = _UNITS[word], i + 1
    elif word in _TEENS:
        value, j = _TEENS[word], i + 1
    elif word in _TENS:
        value, j = _TENS[word], i + 1
        k = j + 1 if j < len(toks) and toks[j].word in _TEN_AND_UNIT else j
        if k < len(toks) and toks[k].word in _UNITS and toks[k].word != "zero":
            value, j = value + _UNITS[toks[k].word], k + 1
    else:
        return None, i
    if j < len(toks) and toks[j].word in _SCALES:
        scale = _SCALES[toks[j].word]
        rest, k = (None, j + 1)
        after = j + 2 if j + 2 < len(toks) and toks[j + 1].word == "and" else j + 1
        if after < len(toks) and toks[after].word not in _ZEROS:
            rest, k = _spoken_number(toks, after)
        if rest is not None and int(rest) < scale:
            return str(value * scale + int(rest)), k
        return str(value * scale), j + 1
    return str(value), j


def _is_number_word(word: str) -> bool:
    return word in _UNITS or word in _TEENS or word in _TENS or word in _REPEATS or word in _ZEROS


def _next_word(toks: list[Token], i: int) -> Token | None:
    j = i + 1
    while j < len(toks) and toks[j].text in _JOINERS:
        j += 1
    return toks[j] if j < len(toks) else None


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
        if separator in (" ", _CONNECTED):
            parts.append(" ")  # a hesitation's words are no part of the number a reader is shown
        elif separator:
            parts.append(separator + " ")
        elif before.written or group.written:
            parts.append(" ")
        parts.append(group.digits)
    return "".join(parts)

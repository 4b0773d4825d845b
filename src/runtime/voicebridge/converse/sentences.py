"""A reply's text stream cut into sentences as it arrives, so the first can be spoken while the rest is written.

Sans-I/O: :meth:`SentenceSplitter.feed` takes each text delta a responder streams and returns the sentences it
completed; :meth:`SentenceSplitter.flush` returns what is left at the end::

    splitter = SentenceSplitter()
    for delta in ["Your balance is $1,204.50. Would", " you like to pay a bill?"]:
        for sentence in splitter.feed(delta):
            speak(sentence)                      # "Your balance is $1,204.50."
    for sentence in splitter.flush():
        speak(sentence)                          # "Would you like to pay a bill?"

A sentence ends at ``.``, ``!``, ``?`` or ``…`` (with any closing quotes or brackets) followed by white space —
not inside a number (``1,204.50``), an abbreviation (``Mr.``, ``e.g.``) or an initial. A sentence that runs longer
than ``max_chars`` is cut at its last clause boundary (``,``, ``;``, ``:``, a dash) so speech can start sooner; a
piece shorter than ``min_chars`` waits to join the next one, so Sonic is never asked for a lone "OK." mid-reply.
Text is kept as written: white space between sentences is dropped, nothing else is changed.
"""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "no", "inc", "ltd",
        "co", "corp", "dept", "approx", "appt", "apt", "ave", "est", "min", "max", "jan", "feb", "mar", "apr",
        "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "a.m", "p.m", "u.s",
    }
)  # fmt: skip
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")
_CLAUSE = re.compile(r"[,;:]\s|\s[—–-]\s")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


class SentenceSplitter:
    """Sentences out of a stream of text deltas."""

    def __init__(self, *, min_chars: int = 12, max_chars: int = 160) -> None:
        self.min_chars = min_chars
        self.max_chars = max_chars
        self._buffer = ""

    def feed(self, delta: str) -> list[str]:
        """The sentences ``delta`` completed, in order."""
        self._buffer += delta
        out: list[str] = []
        while True:
            cut = self._next_cut()
            if cut is None:
                break
            piece, self._buffer = self._buffer[:cut].strip(), self._buffer[cut:].lstrip()
            if piece:
                out.append(piece)
        return out

    def flush(self) -> list[str]:
        """What is left at the end of the reply, as its last sentence (none when only white space is left)."""
        rest, self._buffer = self._buffer.strip(), ""
        return [rest] if rest else []

    def _next_cut(self) -> int | None:
        ends = [m.end() for m in _END.finditer(self._buffer) if self._is_sentence_end(m.start(), m.end())]
        ends = [end for end in ends if len(self._buffer[:end].strip()) >= self.min_chars]
        # Decided on the first max_chars characters only, so any chunking of the text cuts it the same way.
        if ends and ends[0] <= self.max_chars:
            return ends[0]
        if len(self._buffer) <= self.max_chars:
            return None
        return self._clause_cut() or (ends[0] if ends else None)

    def _is_sentence_end(self, mark: int, after: int) -> bool:
        text = self._buffer
        if text[mark] != ".":
            return True
        if after - mark > 1 and text[mark : mark + 3] == "...":
            return True
        word = _WORD_BEFORE.search(text[:mark])
        if word is None:
            # "4." is a sentence end after a number only when the next word starts a sentence.
            return text[mark - 1 : mark].isdigit() and _next_starts_sentence(text, after)
        token = word.group(1).lower()
        if token in ABBREVIATIONS or token.rstrip(".") in ABBREVIATIONS:
            return False
        # A single capital letter is an initial ("J. Smith").
        return not (len(token) == 1 and word.group(1).isupper())

    def _clause_cut(self) -> int | None:
        window = self._buffer[: self.max_chars]
        cuts = [m.start() + 1 for m in _CLAUSE.finditer(window) if m.start() + 1 >= self.min_chars]
        return cuts[-1] if cuts else None


def _next_starts_sentence(text: str, after: int) -> bool:
    rest = text[after:].lstrip()
    return bool(rest) and rest[0].isupper()

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

**A short first segment.** Connect plays only a whole WAV, so the caller's first sound waits for Sonic to make all of
the first segment. With ``short_first=True`` the first segment ends at the first clause boundary (``,``, ``;``,
``:``, a dash, or a sentence end) after at least two words, or, when none comes that soon, at the last word boundary
within ``first_max_ms`` of estimated speech (:data:`CHARS_PER_SECOND`), whichever is first; later segments are whole
sentences as above::

    splitter = SentenceSplitter(short_first=True)
    splitter.feed("Done. I've paid your electricity bill of eighty-four dollars. ")
    # ["Done. I've paid your", "electricity bill of eighty-four dollars."]
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
_SPACE = re.compile(r"\s+")
CHARS_PER_SECOND = 18.0
"""Characters of English text per second of speech, spaces and punctuation included: a voice at 1.0 speed says
about 15–20 (the demo's offline voice 19.8), so a first segment of ``first_max_ms`` lasts about that long."""
FIRST_MIN_WORDS = 2
PHRASE_STARTS = frozenset(
    {
        "about", "after", "and", "are", "as", "at", "because", "before", "but", "by", "can", "could", "for", "from",
        "if", "in", "into", "is", "of", "on", "or", "so", "than", "that", "then", "to", "was", "were", "when",
        "which", "while", "who", "will", "with", "would",
    }
)  # fmt: skip
"""Words that begin a phrase: a first segment cut for time ends before one of these if it can, so it ends where a
speaker could pause ("Your balance | is two hundred dollars.")."""
NUMBER_WORDS = frozenset(
    {
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand",
        "million", "billion",
    }
)  # fmt: skip


class SentenceSplitter:
    """Sentences out of a stream of text deltas."""

    def __init__(
        self, *, min_chars: int = 12, max_chars: int = 160, short_first: bool = False, first_max_ms: float = 1500
    ) -> None:
        self.min_chars = min_chars
        self.max_chars = max_chars
        self._first_pending = short_first
        self._first_max_chars = max(1, int(first_max_ms / 1000 * CHARS_PER_SECOND))
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
        """What is left at the end of the reply, as its last sentence (none when only white space is left); a short
        first segment still pending is cut from it first."""
        out: list[str] = []
        if self._first_pending:
            self._first_pending = False
            cut = self._first_cut(final=True)
            if cut is not None:
                out.append(self._buffer[:cut].strip())
                self._buffer = self._buffer[cut:]
        rest, self._buffer = self._buffer.strip(), ""
        return [*out, rest] if rest else out

    def _next_cut(self) -> int | None:
        if self._first_pending:
            cut = self._first_cut()
            if cut is not None:
                self._first_pending = False
            return cut
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

    def _first_cut(self, *, final: bool = False) -> int | None:
        """Where the short first segment ends, once the text decides it (None: not yet).

        Decided on the first ``_first_max_chars`` characters and the word across that limit (``final``: the text is
        all there is), so any chunking of the text cuts it the same way."""
        text = self._buffer
        limit = self._first_max_chars
        lead = len(text) - len(text.lstrip())
        boundaries = [m.start() + 1 for m in _CLAUSE.finditer(text) if m.start() + 1 <= limit + lead]
        boundaries += [m.end() for m in _END.finditer(text) if m.end() <= limit + lead and self._settled_end(m)]
        for cut in sorted(boundaries):
            if len(text[:cut].split()) >= FIRST_MIN_WORDS:
                return cut
        # No boundary soon enough: a word boundary within the limit, once the word across the limit is whole (what
        # follows each boundary is known, whatever the chunking).
        if len(text) <= limit + lead + 1 or (not final and _SPACE.search(text, limit + lead + 1) is None):
            return None
        spaces = [m.start() for m in _SPACE.finditer(text, lead, limit + lead + 1)]
        cuts = [cut for cut in spaces if len(text[:cut].split()) >= FIRST_MIN_WORDS]
        if cuts:
            return _phrase_cut(text, cuts)
        # A first word longer than the limit: the segment ends after its second word, whatever its length.
        second = [m.start() for m in _SPACE.finditer(text, lead) if len(text[: m.start()].split()) >= FIRST_MIN_WORDS]
        return second[0] if second else None

    def _settled_end(self, match: re.Match[str]) -> bool:
        """A sentence end whose meaning no later text can change: the word after it has begun."""
        if not self._buffer[match.end() :].strip():
            return False
        return self._is_sentence_end(match.start(), match.end())

    def _clause_cut(self) -> int | None:
        window = self._buffer[: self.max_chars]
        cuts = [m.start() + 1 for m in _CLAUSE.finditer(window) if m.start() + 1 >= self.min_chars]
        return cuts[-1] if cuts else None


def _phrase_cut(text: str, cuts: list[int]) -> int:
    """The best of the word boundaries ``cuts`` for a first segment cut for time: the last before a word that begins
    a phrase, else the last not inside a number ("two | hundred"), else the last."""

    def word_after(cut: int) -> str:
        rest = text[cut:].split(maxsplit=1)
        return rest[0].strip(".,;:!?\"'()").lower() if rest else ""

    def word_before(cut: int) -> str:
        head = text[:cut].split()
        return head[-1].strip(".,;:!?\"'()").lower() if head else ""

    before_phrase = [cut for cut in cuts if word_after(cut) in PHRASE_STARTS]
    if before_phrase:
        return before_phrase[-1]
    outside_numbers = [
        cut
        for cut in cuts
        if not (
            (word_before(cut) in NUMBER_WORDS or word_before(cut).isdigit())
            and (word_after(cut) in NUMBER_WORDS or word_after(cut).isdigit())
        )
    ]
    return (outside_numbers or cuts)[-1]


def _next_starts_sentence(text: str, after: int) -> bool:
    rest = text[after:].lstrip()
    return bool(rest) and rest[0].isupper()


def heard_share(text: str, share: float) -> tuple[str, str]:
    """A sentence the caller heard ``share`` (0 to 1) of, by its length: the words heard and the words not, cut in
    proportion (what a transport can say of a sentence its audio stopped in)."""
    words = text.split()
    cut = round(len(words) * min(1.0, max(0.0, share)))
    return " ".join(words[:cut]), " ".join(words[cut:])

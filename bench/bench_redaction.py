"""Benchmark: the built-in redactor against two written-form detectors, on two test sets, in one process.

The sets:

- **independent** (``tests/data/redaction/independent-dev.jsonl`` and ``independent-heldout.jsonl``, their README
  says how they were made): conversations written from issue 28's list of classes by someone who had not read the
  redactor — lower case, numbers as words, fillers, self-corrections, numbers split across turns, the agent's question
  as the only context — and hard negatives. The redactor was tuned on the dev file only; the held-out file is measured.
- **generated** (:mod:`voicebridge_dev.redaction_cases`): the project's own set, written beside the redactor and kept
  as a regression set: card numbers of five schemes and four lengths, expiry dates, security codes, SSNs, e-mail
  addresses and phone numbers in written and spoken forms, and ordinary sentences full of numbers.

The contenders:

- ``voicebridge builtin``: :class:`~voicebridge.redaction.BuiltinRedactor`, what ``RedactTranscripts=builtin`` runs.
- ``pattern scanner``: the regular expressions a PCI data scanner starts from: 13–19 digits with spaces or dashes
  between them that pass the Luhn check, ``ddd-dd-dddd``, an e-mail address and a North American phone number as
  written; expiry dates and security codes after their keywords.
- ``comprehend emulator``: the local cloud's Comprehend emulator's own detector (an independent reading of the
  written forms; not Amazon Comprehend's model).

How the independent set is scored. Every turn of a conversation is redacted as the call record redacts a caller's
turn (call/record.py): with the words said before it since the caller's previous turn (that turn, and the agent's
question after it) as ``before``, and the caller's next turn as ``after``. An entity is **found** when none of the
letters and digits of its span survive: each lies inside something the redactor replaced. A negative conversation's
turn (an ordinary sentence) is **changed** when the redactor replaces anything in it. Recall is per class and over
all entities; microseconds per turn is the median over rounds of the mean over every turn of the set.

On the generated set, recall is the share of entities none of whose digits (four or more in a row) or address
survive, and ordinary sentences changed is the false-positive rate, as before.

**Identifiers**: 100,000 seeded identifiers of each kind of :data:`~voicebridge_dev.redaction_cases.IDENTIFIER_KINDS`
(contact and request ids, X-Ray and W3C trace ids, ARNs, S3 keys and URLs, hashes, Kinesis Video fragment numbers,
epoch milliseconds, ISO-8601 times), through the built-in redactor (in lines of 1,000, one after another) and through
the log serialiser (a Powertools line holding them in its message, its correlation id and other keys): how many
changed. Zero is the only right answer.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from voicebridge.redaction import BuiltinRedactor, luhn_valid
from voicebridge.redaction.logs import redacting
from voicebridge_dev.local.comprehend.detector import detect
from voicebridge_dev.redaction_cases import (
    IDENTIFIER_KINDS,
    Case,
    Conversation,
    Span,
    applied,
    entity_cases,
    identifiers,
    load_independent,
    ordinary_sentences,
    score,
)

ROUNDS = 5
FILES = ("dev", "held-out")

Find = Callable[[str, str, str], list[Span]]
"""``find(text, before, after)``: the spans of ``text`` a contender replaces."""

_CARD = re.compile(r"\b\d(?:[ -]?\d){12,18}\b")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_PHONE = re.compile(r"(?:\+\d{1,3}[ .-]?)?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}\b")
_AFTER_WORD = re.compile(
    r"(?i)\b(?:expiry|expires|exp|expiration date is|cvv|cvc|security code is)\s+(\d[\d/ ]{1,6}\d)"
)


def _pattern_scanner(text: str, before: str = "", after: str = "") -> list[Span]:
    spans = [m.span() for m in _CARD.finditer(text) if luhn_valid(re.sub(r"\D", "", m.group()))]
    spans += [m.span() for pattern in (_SSN, _EMAIL, _PHONE) for m in pattern.finditer(text)]
    return spans + [m.span(1) for m in _AFTER_WORD.finditer(text)]


def _emulator_detector(text: str, before: str = "", after: str = "") -> list[Span]:
    return [(found.begin, found.end) for found in detect(text)]


def _builtin() -> Find:
    redactor = BuiltinRedactor()

    def find(text: str, before: str = "", after: str = "") -> list[Span]:
        return [(e.start, e.end) for e in redactor.redact(text, before=before, after=after).entities]

    return find


CONTENDERS: dict[str, Callable[[], Find]] = {
    "voicebridge builtin": _builtin,
    "pattern scanner": lambda: _pattern_scanner,
    "comprehend emulator": lambda: _emulator_detector,
}


def _timed(find: Find, conversations: Sequence[Conversation]) -> float:
    calls = [
        (text, *conversation.context(i))
        for conversation in conversations
        for i, (_, text) in enumerate(conversation.turns)
    ]
    timings = []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        for text, before, after in calls:
            find(text, before, after)
        timings.append((time.perf_counter() - began) / len(calls) * 1e6)
    return statistics.median(timings)


def _recall(find: Find, cases: list[Case]) -> float:
    return sum(not case.leaked(applied(case.sentence, find(case.sentence, "", ""))) for case in cases) / len(cases)


IDENTIFIERS = 100_000
LINE = 1_000


def identifiers_changed(count: int = IDENTIFIERS) -> dict[str, dict[str, int]]:
    """Per kind: how many of ``count`` identifiers the redactor and the log serialiser changed."""
    redactor = BuiltinRedactor()
    serialise = redacting(json.dumps)
    out = {}
    for kind in IDENTIFIER_KINDS:
        made = identifiers(kind, count)
        by_redactor = by_logs = 0
        for at in range(0, count, LINE):
            batch = made[at : at + LINE]
            text = " ; ".join(batch)
            redacted = redactor.redact(text).text.split(" ; ")
            by_redactor += sum(a != b for a, b in zip(batch, redacted, strict=False)) + abs(len(redacted) - len(batch))
            line = {"message": f"stored {text}", "correlation_id": batch[0], "uri": batch[1], "items": batch[2:4]}
            written = json.loads(serialise(line))
            logged = written["message"].removeprefix("stored ").split(" ; ")
            by_logs += sum(a != b for a, b in zip(batch, logged, strict=False)) + abs(len(logged) - len(batch))
            by_logs += sum(written[k] != line[k] for k in ("correlation_id", "uri", "items"))
        out[kind] = {"count": count, "redactor": by_redactor, "logs": by_logs}
    return out


def run() -> dict[str, Any]:
    cases = entity_cases()
    ordinary = ordinary_sentences()
    sets = {name: load_independent(name) for name in FILES}
    rows: dict[str, dict[str, Any]] = {}
    for name, make in CONTENDERS.items():
        find = make()
        row: dict[str, Any] = {
            "generated": {
                "recall": _recall(find, cases),
                "ordinary_changed": sum(bool(find(s, "", "")) for s in ordinary) / len(ordinary),
            }
        }
        for set_name, conversations in sets.items():
            scored = score(find, conversations)
            row[set_name] = {
                "recall": scored.recall,
                "by_type": {
                    t: scored.recall_of(t.lower() + "/")
                    for t in ("CARD", "CVV", "EXPIRY", "SSN", "EMAIL", "PHONE", "MULTI")
                },
                "by_class": {k: v[0] / v[1] for k, v in sorted(scored.found.items())},
                "ordinary_changed": scored.changed_rate,
                "us_per_turn": _timed(find, conversations),
            }
        rows[name] = row
    return {
        "generated": {"entities": len(cases), "ordinary_sentences": len(ordinary)},
        "independent": {name: len(c) for name, c in sets.items()},
        "contenders": rows,
        "identifiers": identifiers_changed(),
    }


def report(figures: dict[str, Any]) -> str:
    lines = []
    for set_name in FILES:
        lines.append(f"independent {set_name} ({figures['independent'][set_name]} conversations)")
        lines.append(
            f"{'redactor':<22}{'recall':>8}"
            + "".join(f"{t.lower():>8}" for t in ("CARD", "CVV", "EXPIRY", "SSN", "EMAIL", "PHONE", "MULTI"))
            + f"{'ordinary changed':>18}{'us/turn':>9}"
        )
        for name, row in figures["contenders"].items():
            r = row[set_name]
            lines.append(
                f"{name:<22}{r['recall']:>8.1%}"
                + "".join(f"{v:>8.1%}" for v in r["by_type"].values())
                + f"{r['ordinary_changed']:>18.1%}{r['us_per_turn']:>9.1f}"
            )
    lines.append("")
    lines.append("per class (builtin): " + "  ".join(FILES))
    ours = figures["contenders"]["voicebridge builtin"]
    for kind in ours["dev"]["by_class"]:
        lines.append(f"  {kind:<36}" + "".join(f"{ours[s]['by_class'].get(kind, float('nan')):>9.1%}" for s in FILES))
    g = figures["generated"]
    lines.append("")
    lines.append(f"generated set: {g['entities']} entities, {g['ordinary_sentences']} ordinary sentences")
    for name, row in figures["contenders"].items():
        r = row["generated"]
        lines.append(f"  {name:<22}recall {r['recall']:>7.1%}  ordinary changed {r['ordinary_changed']:>6.1%}")
    lines.append("")
    lines.append("identifiers changed (of each kind's count): redactor, log serialiser")
    for kind, row in figures["identifiers"].items():
        lines.append(f"  {kind:<18}{row['count']:>8,}{row['redactor']:>6}{row['logs']:>6}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))

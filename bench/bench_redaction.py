"""Benchmark: the built-in redactor against two written-form detectors, on the generated test set.

The set is :mod:`voicebridge_dev.redaction_cases`: card numbers (Visa, Mastercard, American Express, Discover, 13 to
19 digits), expiry dates, security codes, SSNs, e-mail addresses and phone numbers, each in written and spoken forms
inside a sentence, and ordinary sentences full of numbers that must come through unchanged. In one process:

- ``voicebridge builtin``: :class:`~voicebridge.redaction.BuiltinRedactor`, what ``RedactTranscripts=builtin`` runs.
- ``pattern scanner``: the regular expressions a PCI data scanner starts from: 13–19 digits with spaces or dashes
  between them that pass the Luhn check, ``ddd-dd-dddd``, an e-mail address and a North American phone number as
  written; expiry dates and security codes after their keywords.
- ``comprehend emulator``: the local cloud's Comprehend emulator's own detector (an independent reading of the
  written forms; not Amazon Comprehend's model).

Recall is the share of entities none of whose digits (four or more in a row) or address survive; ordinary sentences
changed is the false-positive rate; microseconds per turn is the mean over the whole set, every sentence once a round.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from typing import Any

from voicebridge.redaction import BuiltinRedactor, luhn_valid
from voicebridge_dev.local.comprehend.detector import detect
from voicebridge_dev.redaction_cases import Case, entity_cases, ordinary_sentences

ROUNDS = 20

_CARD = re.compile(r"\b\d(?:[ -]?\d){12,18}\b")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_PHONE = re.compile(r"(?:\+\d{1,3}[ .-]?)?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}\b")
_AFTER_WORD = re.compile(
    r"(?i)\b(?:expiry|expires|exp|expiration date is|cvv|cvc|security code is)\s+(\d[\d/ ]{1,6}\d)"
)


def _pattern_scanner(text: str) -> str:
    text = _CARD.sub(lambda m: "[CARD]" if luhn_valid(re.sub(r"\D", "", m.group())) else m.group(), text)
    text = _SSN.sub("[SSN]", text)
    text = _EMAIL.sub("[EMAIL]", text)
    text = _PHONE.sub("[PHONE]", text)
    return _AFTER_WORD.sub(lambda m: m.group().replace(m.group(1), "[REDACTED]"), text)


def _emulator_detector(text: str) -> str:
    out, at = [], 0
    for found in sorted(detect(text), key=lambda d: d.begin):
        if found.begin < at:
            continue
        out += [text[at : found.begin], f"[{found.type}]"]
        at = found.end
    return "".join([*out, text[at:]])


def _builtin() -> Callable[[str], str]:
    redactor = BuiltinRedactor()
    return lambda text: redactor.redact(text).text


CONTENDERS: dict[str, Callable[[], Callable[[str], str]]] = {
    "voicebridge builtin": _builtin,
    "pattern scanner": lambda: _pattern_scanner,
    "comprehend emulator": lambda: _emulator_detector,
}


def _recall(redact: Callable[[str], str], cases: list[Case]) -> float:
    return sum(not case.leaked(redact(case.sentence)) for case in cases) / len(cases)


def run() -> dict[str, Any]:
    cases = entity_cases()
    written = [c for c in cases if c.form.startswith(("written", "month"))]
    spoken = [c for c in cases if c not in written]
    ordinary = ordinary_sentences()
    texts = [c.sentence for c in cases] + ordinary
    rows: dict[str, dict[str, float]] = {}
    for name, make in CONTENDERS.items():
        redact = make()
        timings = []
        for _ in range(ROUNDS):
            began = time.perf_counter()
            for text in texts:
                redact(text)
            timings.append((time.perf_counter() - began) / len(texts) * 1e6)
        rows[name] = {
            "recall_written": _recall(redact, written),
            "recall_spoken": _recall(redact, spoken),
            "recall": _recall(redact, cases),
            "ordinary_changed": sum(redact(s) != s for s in ordinary) / len(ordinary),
            "us_per_turn": statistics.median(timings),
        }
    ours = rows["voicebridge builtin"]
    return {
        "entities": len(cases),
        "written": len(written),
        "spoken": len(spoken),
        "ordinary_sentences": len(ordinary),
        "contenders": rows,
        "time_vs_pattern_scanner": ours["us_per_turn"] / rows["pattern scanner"]["us_per_turn"],
    }


def report(figures: dict[str, Any]) -> str:
    lines = [
        f"{figures['entities']} entities ({figures['written']} written, {figures['spoken']} spoken), "
        f"{figures['ordinary_sentences']} ordinary sentences",
        f"{'redactor':<22}{'recall':>8}{'written':>9}{'spoken':>8}{'ordinary changed':>18}{'us/turn':>9}",
    ]
    for name, row in figures["contenders"].items():
        lines.append(
            f"{name:<22}{row['recall']:>8.1%}{row['recall_written']:>9.1%}{row['recall_spoken']:>8.1%}"
            f"{row['ordinary_changed']:>18.1%}{row['us_per_turn']:>9.1f}"
        )
    lines.append(f"builtin's time per turn: {figures['time_vs_pattern_scanner']:.1f}x the pattern scanner's")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))

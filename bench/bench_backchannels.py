"""Which short words said over the agent are kept as backchannels, against an independent set.

Two sets of short things callers say while the agent is mid-sentence, as a recogniser writes them, each labelled
``acknowledges`` (the agent should go on) or ``asks`` (it should stop and answer), both written apart from the
product without reading its code, in English, Spanish, French, German, Portuguese and Italian: the **development
set** (``bench/backchannels/<language>.tsv``: the lists were
extended from what it showed them missing, so its figures are an upper bound) and the **held-out set**
(``bench/backchannels/held_out/``, written without reading the code or the development set, used for nothing but its
figures). For each, whether the product's rule
(:func:`voicebridge.acknowledgements.only_acknowledges`) keeps it as a backchannel, beside two peers: **timing
alone**, the rule before the words were read (every short voice over the agent is a backchannel), and **fewer than
three words**, the word-count rule of pipecat's ``MinWordsInterruptionStrategy`` (the agent is interrupted only by
that many words or more; 3 here). Figures per language: acknowledgements kept (the agent goes on), asks answered (the
agent stops), and what each rule gets wrong, listed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from voicebridge.acknowledgements import only_acknowledges

FOLDER = Path(__file__).parent / "backchannels"
SETS = {"development": FOLDER, "held-out": FOLDER / "held_out"}
LANGUAGES = ("en", "es", "fr", "de", "pt", "it")
MIN_WORDS = 3


def _cases(folder: Path, language: str) -> list[tuple[str, str]]:
    cases = []
    for line in (folder / f"{language}.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, said = line.split("\t", 1)
        cases.append((label.strip(), said.strip()))
    return cases


def _rules(language: str) -> dict[str, Any]:
    return {
        "ours": lambda said: only_acknowledges(said, language) is not False,
        "timing alone": lambda said: True,
        f"fewer than {MIN_WORDS} words": lambda said: len(re.findall(r"\w+", said)) < MIN_WORDS,
    }


def run() -> dict[str, Any]:
    return {name: _measure(folder) for name, folder in SETS.items()}


def _measure(folder: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for language in LANGUAGES:
        cases = _cases(folder, language)
        acks = [said for label, said in cases if label == "acknowledges"]
        asks = [said for label, said in cases if label == "asks"]
        figures[language] = {"acknowledges": len(acks), "asks": len(asks)}
        for name, kept in _rules(language).items():
            figures[language][name] = {
                "acknowledgements_kept": sum(map(kept, acks)) / len(acks),
                "asks_answered": sum(not kept(said) for said in asks) / len(asks),
                "accuracy": (sum(map(kept, acks)) + sum(not kept(said) for said in asks)) / len(cases),
                "acknowledgements_answered": [said for said in acks if not kept(said)],
                "asks_kept": [said for said in asks if kept(said)],
            }
    return figures


def report(figures: dict[str, Any]) -> str:
    lines = []
    for name, language in ((name, language) for name in SETS for language in LANGUAGES):
        rows = figures[name][language]
        lines.append(f"{name}, {language}: {rows['acknowledges']} acknowledgements, {rows['asks']} asks")
        for rule in _rules(language):
            row = rows[rule]
            lines.append(
                f"  {rule:<22} acknowledgements kept {row['acknowledgements_kept']:6.1%}   "
                f"asks answered {row['asks_answered']:6.1%}   accuracy {row['accuracy']:6.1%}"
            )
        ours = rows["ours"]
        lines.append(f"  ours answers: {ours['acknowledgements_answered']}")
        lines.append(f"  ours keeps:   {ours['asks_kept']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))

"""Whether a caller's words only acknowledge the agent ("uh-huh", "okay", "sí, claro") or ask for something ("stop",
"no, wait", "what?").

A caller's short voice over the agent, who went on, is a backchannel: kept and not answered, so the reply goes on
(:mod:`voicebridge.call.backchannel`, the streaming session's barge-in). Timing alone cannot tell "uh-huh" from
"stop": both are short and said over the agent. The words can, once Ink has them: a backchannel is made of
acknowledgements alone; any other word makes the turn one the agent answers.

The lists are the product's own, of the acknowledgements and fillers callers say over someone talking in each
language; a transcript is split into words (case, punctuation and hyphens aside: "Uh-huh." is "uh huh") and must be
covered by them entirely, repeats included ("yeah, yeah, okay"); a question mark makes any words a question, which
asks. A language without a list (:data:`LISTED`) is judged by timing alone, as before the words were read. How the
lists do on sets written apart from them, in each language listed: docs/benchmarks.md, "Backchannels".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Final

from voicebridge.language import primary

_PHRASES: Final[Mapping[str, str]] = {
    "en": (
        "okay|ok|k|yeah|yes|yep|yup|ya|yah|uh huh|uh hum|uhhuh|mhm|mm|mmm|hmm|hm|mm hmm|m hm|mmhmm|um|uh|er|right|"
        "alright|all right|sure|fine|good|great|cool|gotcha|got it|i see|oh|ah|aha|ahh|ooh|wow|nice|perfect|exactly|"
        "absolutely|definitely|true|indeed|understood|thanks|thank you|that's right|of course|sounds good|makes sense|"
        "oh okay|oh ok|oh i see|i got it|sure thing|go on|go ahead|uh yeah|yeah yeah|i understand|that makes sense|"
        "yes ma'am|yes sir|ma'am|sir|oh really|interesting|i know|correct|that's great|that's good|that's fine|"
        "that works|oh man|man|oh my gosh|oh my god|oh gosh|gosh|oh no|i got you|i hear you|fair enough|awesome|"
        "wonderful|excellent|sounds great|will do|no problem|no worries|uh okay|mhmm|oh wow|wow"
    ),
    "es": (
        "sí|si|vale|ajá|aja|ah ja|claro|bueno|ok|okey|okay|ya|mhm|mm|mmm|hmm|eh|ah|oh|entiendo|entendido|perfecto|"
        "correcto|exacto|de acuerdo|muy bien|bien|está bien|esta bien|ya veo|ah ya|gracias|cierto|sale|órale|orale|"
        "claro que sí|sí sí|ajá sí|um|este|ándale|andale|ándale pues|andale pues|ta bien|aha|señor|señora|señorita|eso|"
        "eso es|ay|ay no|uy|qué bien|que bien|qué bueno|que bueno|híjole|hijole|guau|wow|muchas gracias|por supuesto|"
        "dale|listo|va|simón|simon|así es|asi es|mira|ya sé|ya se|qué padre|que padre|chévere|chevere|genial|excelente|"
        "okey okey|claro claro|con razón|ah bueno|ok gracias"
    ),
    "fr": (
        "oui|ouais|ok|okay|d'accord|dacord|hum|hm|mm|mhm|ah|oh|bien|très bien|tres bien|je vois|entendu|voilà|voila|"
        "parfait|exactement|merci|bon|euh|ah oui|oui oui|c'est ça|c'est ca|bien sûr|bien sur|super|mm hmm|mmh|hmm|"
        "d'acc|pas de souci|pas de soucis|pas de problème|pas de probleme|sans problème|sans probleme|je comprends|"
        "compris|j'ai compris|c'est bien ça|c'est bien ca|effectivement|en effet|c'est noté|c'est note|ça marche|"
        "ca marche|ça roule|ca roule|ça joue|ca joue|c'est correct|c'est juste|tout à fait|tout a fait|absolument|"
        "impeccable|nickel|génial|genial|oui madame|oui monsieur|ouin|tiguidou"
    ),
    "de": (
        "ja|jo|jap|jep|okay|ok|mhm|mm|hm|aha|ah|oh|genau|gut|alles klar|klar|stimmt|richtig|verstehe|ich verstehe|"
        "in ordnung|super|prima|danke|ja ja|ach so|äh|ähm|na gut|mm hmm|hmm|natürlich|naturlich|selbstverständlich|"
        "verstanden|exakt|genau so|na klar|eh klar|jawohl|jaja|sicher|sicherlich|geht klar|passt|passt scho|"
        "passt schon|alles gut|sehr gut|wunderbar|toll|perfekt|ok danke|okay danke|ok merci|merci|merci vielmal|"
        "danke schön|danke schon|guet|isch guet|jo eh"
    ),
    "pt": (
        "sim|tá|ta|ok|okay|certo|uhum|aham|hum|hm|mm|entendi|entendo|claro|beleza|tudo bem|está bem|esta bem|tá bom|"
        "ta bom|bom|perfeito|exato|obrigado|obrigada|ah|oh|é|pois|pois é|sei|ahn|né|mhm|mm hmm|hmm|isso|isso mesmo|"
        "é isso|e isso|exatamente|exactamente|de acordo|positivo|fechado|combinado|legal|show|joia|jóia|ótimo|otimo|"
        "tá ótimo|ta otimo|muito bem|com certeza|percebi|percebo|ah percebo|compreendo|certinho|pronto|sim senhor|"
        "sim senhora|tá bem|ta bem"
    ),
    "it": (
        "sì|si|ok|okay|certo|va bene|bene|capito|ho capito|giusto|esatto|perfetto|ah|oh|mhm|mm|hm|d'accordo|daccordo|"
        "grazie|ecco|sì sì|già|ehm|eh|mm hmm|hmm|uhm|chiaro|capisco|ho inteso|ottimo|benissimo|va benissimo|certamente|"
        "sicuro|senz'altro|assolutamente|esattamente|appunto|infatti|come no|a posto|apposto|vabbè|vabbe|va be'|va be|"
        "vabbuò|vabbuo|beh sì|beh si|okei|sì signora|sì signore|si signora|si signore"
    ),
}
LISTED: Final = frozenset(_PHRASES)
"""The languages whose acknowledgements are listed."""

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def _words(text: str) -> tuple[str, ...]:
    return tuple(match.group(0) for match in _WORD.finditer(text.casefold()))


@functools.cache
def _phrases(language: str) -> frozenset[tuple[str, ...]]:
    return frozenset(_words(phrase) for phrase in _PHRASES[language].split("|"))


def only_acknowledges(transcript: str, language: str) -> bool | None:
    """Whether ``transcript`` is acknowledgements alone in ``language`` (a BCP-47 tag); None when the language has
    no list, or the transcript no words. A question ("Okay?", "¿Bueno?": on a Mexican line, "hello?") asks."""
    base = primary(language)
    words = _words(transcript)
    if base not in LISTED or not words:
        return None
    if "?" in transcript or "¿" in transcript:
        return False
    phrases = _phrases(base)
    longest = max(len(phrase) for phrase in phrases)
    # covered[i]: the first i words are acknowledgements, end to end.
    covered = [True] + [False] * len(words)
    for end in range(1, len(words) + 1):
        covered[end] = any(
            covered[end - size] and words[end - size : end] in phrases for size in range(1, min(longest, end) + 1)
        )
    return covered[-1]

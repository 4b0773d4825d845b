"""How a transport listens to the caller: the same on the flows path (the KVS consumer, :mod:`voicebridge.call`) and
the streaming one (an agent session, :mod:`voicebridge.a2a`).

Both hand the caller's audio to a :class:`~voicebridge.ink.transcriber.TrackTranscriber` in frames of
``ink_frame_ms``, its voice judged by ``voice_detector``, in the Ink model and turn policy of the contact's language.
Each transport's settings are these and its own (:class:`~voicebridge.call.consumer.ConsumerSettings`,
:class:`~voicebridge.a2a.session.StreamSettings`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Self

from voicebridge.audio.vad import FrameDetector
from voicebridge.config import Settings, VoiceDetectorName
from voicebridge.ink.transcriber import TurnEnding, turn_ending
from voicebridge.language import Languages, Listening


class Transcribing(TurnEnding):
    """How a :class:`~voicebridge.ink.transcriber.TrackTranscriber` listens to a track, on either transport."""

    mode: str
    language: str
    """The contact's language tag: which words only acknowledge the agent."""
    frame_ms: int
    voice_detector: VoiceDetectorName | FrameDetector
    """The detector's name, or a detector shared with another tracker of the same audio (the streaming agent's
    barge-in)."""


@dataclass(frozen=True, slots=True)
class ListeningSettings:
    """What a transport reads of the settings to listen to the caller."""

    languages: Languages
    """How each contact's language is listened to (Ink's endpoint and model, and who ends its turns)."""
    ink_frame_ms: int
    voice_detector: VoiceDetectorName

    @classmethod
    def of(cls, settings: Settings) -> Self:
        """Each field from the setting of the same name (a transport's settings that name theirs as the deployment
        does)."""
        return cls(**{field.name: getattr(settings, field.name) for field in fields(cls)})

    def transcribing(self, listening: Listening, *, answered: bool) -> Transcribing:
        """How a track of a contact in ``listening``'s language is transcribed (``answered``: the caller's track,
        whose turns are answered, as :func:`~voicebridge.ink.transcriber.turn_ending` tells)."""
        return {
            **turn_ending(listening, answered=answered),
            "mode": listening.mode,
            "language": listening.language,
            "frame_ms": self.ink_frame_ms,
            "voice_detector": self.voice_detector,
        }

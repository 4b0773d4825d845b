"""One voice contact over Connect's socket: the conversation engine the flows path runs, with the socket for its
ears and mouth.

What is shared with the flows path (nothing of it is repeated here): the caller's audio goes to a
:class:`~voicebridge.ink.transcriber.TrackTranscriber` (Ink's session, pacing, the position ledger, replay after a
dropped socket, exactly-once turns in the turn table, and the end-of-turn model whose "complete" is an eager end of
our own), finished and eager turns to a
:class:`~voicebridge.converse.worker.ReplyWorker` (the responder, sentence splitting, speculation, the history), and
when the session ends the contact's record is written as the consumer writes it (redacted, to S3, announced on
EventBridge). What is this transport's own:

- **negotiation**: the caller's audio is asked for at 8 kHz (what Ink and the voice detector read; Connect resamples
  the caller's leg), the agent's at the rate Connect proposes unless a rate is configured (Sonic makes 8, 16 and
  24 kHz itself, so nothing is resampled either way);
- **the output gate**: nothing is sent before ``CHANNEL_STATE READY``; then the greeting, unless the session
  continues a conversation;
- **a conversation it did not start** (docs/protocols.md, *History and redials*): a handoff whose ``history``
  holds earlier turns seeds the responder's history with them and does not greet; a caller's message the history ends
  with unanswered is the session's first turn, answered after READY. A redial of a dropped socket (the contact was
  this product's already) continues from the turn table instead, where every turn of the first socket is stored once:
  it waits for the dropped socket's session to give its claim up (or for the claim to lapse), takes the contact over
  under the next generation, finishes a reply the drop cut short, and does not greet;
- **the claim**: a session holds its contact by the turn table's :class:`~voicebridge.store.turns.Lease`, as the flows
  path's consumer does: renewed every ``RENEW_S`` (with where the caller's turns stand) while Connect is heard on the
  socket, given up when the session ends. A session whose socket went quiet (half-open: Connect gone, no close seen)
  stops renewing, so a redial elsewhere takes the contact over once the lease lapses; the old session learns it at
  its next look, stops speaking and closes its socket;
- **the voice**: each sentence's Sonic audio goes to the :class:`~voicebridge.a2a.output.Player` as it arrives; a
  speculative reply's audio waits in it until the reply is committed, and a reply's first audio while the caller
  speaks a later turn than the one it answers (the turn was ended and they went on: the transcriber's speaking mark),
  so it does not begin over them; their turn's end drops it unheard, and its own reply is made;
- **barge-in**: the session's own voice detector (held to the line's noise floor, so babble and hiss on the
  caller's line are nobody; each frame judged once, for barge-in and the transcriber's turns) hears the caller over
  the agent: after ``a2a_barge_in_pause_ms`` of voice the agent
  pauses, after ``a2a_barge_in_ms`` it is interrupted (``INTERRUPTION``, the reply and its synthesis
  stopped, the history told what was not said); shorter voice (a cough, "uh-huh") and the agent goes on where it
  paused — but if Ink makes a turn of it that is no backchannel ("stop", "no, wait"), the agent stops as that turn
  ends. Connect's own ``INTERRUPTION`` (a key pressed, or voice) stops the agent the same way;
- **a turn's end on the wire**: each response's audio, then its ``TRACING_SPAN``, then the task's terminal status; a
  reply that transfers or hangs up ends the session (``ESCALATE``, ``COMPLETE``) once its audio has played and the
  handover note is in the contact's attributes; a reply that could not be spoken fails its task
  (``TASK_STATE_FAILED``, 424);
- keys pressed (``DTMF_INPUT_COMPLETE``) are a turn, except a card number: once a reply asks for the card on the
  keypad (``Collect=card``), the agent says its card line (``a2a_card_text``) and hands the contact back (``ESCALATE``,
  ``VoicebridgeCollect=card``) for a person or the flow to take it; keys pressed for it, or any that form a card
  number, never reach the responder, the turn table, the record or a log;
- **a slow reply**: once a turn's reply has been ``converse_hold_after_ms`` in the making with nothing of it heard,
  the agent says its holding line (``a2a_hold_text``, "One moment."), once a turn, as the voice-agent flow does;
- **a quiet line**: after ``a2a_silence_ms`` with nobody speaking and no reply being made or played, the agent asks
  whether anyone is there, and the second time says goodbye (``COMPLETE``). Connect's silence marker counts the same
  when the line is quiet by the agent's account too: whether Connect sends one in audio streaming, and after how long,
  is not published (docs/protocols.md), so the agent does not wait on it;
- **its own lines in the contact's language**: ``a2a_lines`` gives them per language (a contact's ``Language``
  attribute, as it picks Ink's model and Sonic's voice); a line it does not give is ``a2a_*_text``.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.a2a import protocol
from voicebridge.a2a.output import Player, Response
from voicebridge.a2a.protocol import AudioConfig
from voicebridge.a2a.tracing import TurnTrace
from voicebridge.a2a.voice import StreamingVoice
from voicebridge.audio.vad import BYTES_PER_MS, SharedDetector, VoiceActivity, detector
from voicebridge.call.record import record_handoff
from voicebridge.call.speaking import open_turn
from voicebridge.config import AGENT_LINES, Settings
from voicebridge.conversation import Action, Exchange
from voicebridge.converse.making import ReplyInProgress, ReplySettings, Spoken
from voicebridge.converse.responder import Responder
from voicebridge.converse.sentences import heard_share
from voicebridge.converse.worker import ReplyWorker
from voicebridge.errors import ModelUnavailable, Superseded, VoiceBridgeError
from voicebridge.ink.listening import ListeningSettings
from voicebridge.ink.pacer import CATCH_UP_AFTER_MS, Pacer
from voicebridge.ink.session import InkSession, TurnListener
from voicebridge.ink.transcriber import MetricSink, TrackTranscriber
from voicebridge.language import Listening, for_language, primary
from voicebridge.redaction import luhn_valid
from voicebridge.sonic.synthesizer import SynthesisCancelled
from voicebridge.store.replies import ReplyStore
from voicebridge.store.turns import (
    AGENT,
    CUSTOMER,
    LEASE_MS,
    LISTENING,
    RENEW_S,
    STOPPED,
    Checkpoint,
    Claim,
    Lease,
    TrackProgress,
    Turn,
    TurnStore,
)
from voicebridge.telemetry import in_context, logger

INPUT_RATE = 8000
TICK_S = 0.01
"""How often the output is looked at: the longest a chunk waits once it may be sent."""
KEEPALIVE_IDLE_MS = 200
"""Caller audio missing this long (Connect stalled): Ink is sent silence so a turn in progress can end."""
LINE_LOOK_S = 0.25
"""How often the agent looks whether a reply is slow in coming, or the line has been quiet for ``a2a_silence_ms``."""
FINISH = {
    Action.TRANSFER: ("ESCALATE", "the caller asked for a person"),
    Action.HANGUP: ("COMPLETE", "the caller is done"),
}
CARD_FINISH = ("ESCALATE", "the caller is to give a card number, which the agent does not take")
"""The hand-back once a reply asked for a card on the keypad (the flows path's ``CardKeypad=transfer``)."""
QUIET_S = 1.0
"""Connect streams the caller's audio without pause from READY on (docs/protocols.md, *Caller audio*): a socket
that brought no frame for this long is not heard from, and its session does not renew its claim."""
REDIAL_POLL_S = 0.1
"""How often a redial looks whether the contact's claim was given up or has lapsed (one consistent read)."""


def redial_wait_s() -> float:
    """The longest a redial waits for the contact's claim: a session renews only while its socket is heard, so its
    last renewal came at most ``QUIET_S`` after Connect left it, and its lease lapses ``LEASE_MS`` after that; one
    renewal period more covers the clocks of two server tasks and a renewal's write in flight."""
    return LEASE_MS / 1000 + QUIET_S + RENEW_S


def continuation(history: Sequence[tuple[str, str]]) -> tuple[list[Exchange], str]:
    """Connect's ``history`` (role, text; oldest first) as the responder's exchanges, and the caller's words it ends
    with unanswered ("" when the agent spoke last). Consecutive messages of one side are one turn of it; an agent's
    message before any of the caller's is an exchange with no caller's words; a message of another role, or with no
    text, is left out."""
    exchanges: list[Exchange] = []
    caller: list[str] = []
    agent: list[str] = []
    for role, text in history:
        words = text.strip()
        if not words:
            continue
        if role in protocol.CALLER_ROLES:
            if agent:
                exchanges.append(Exchange(" ".join(caller), " ".join(agent)))
                caller, agent = [], []
            caller.append(words)
        elif role in protocol.AGENT_ROLES:
            agent.append(words)
    if agent:
        exchanges.append(Exchange(" ".join(caller), " ".join(agent)))
        caller = []
    return exchanges, " ".join(caller)


def card_number_in(keys: str) -> bool:
    """Whether keys pressed form a payment card number: 13 to 19 digits (``#`` and ``*`` aside) that pass the Luhn
    check."""
    digits = "".join(key for key in keys if key.isdigit())
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


def speaker(role: str) -> str:
    """Who spoke a message of Connect's ``history``, as the call record names the sides (another role as given)."""
    if role in protocol.CALLER_ROLES:
        return CUSTOMER
    return AGENT if role in protocol.AGENT_ROLES else role


@dataclass(frozen=True, slots=True)
class AgentLines:
    """What the agent says of its own, not a reply (``A2A_GREETING_TEXT`` ... ``A2A_CARD_TEXT``, or ``A2A_LINES`` in
    a contact's language)."""

    greeting: str
    reprompt: str
    """The line is quiet the first time."""
    goodbye: str
    """The line is quiet the second time."""
    hold: str
    """A reply is slow in coming."""
    card: str
    """The caller is handed over to give a card number."""


@dataclass(frozen=True, slots=True)
class StreamSettings(ListeningSettings):
    """What a session reads of the settings: how it listens, as the flows path does, and how it speaks."""

    lines: AgentLines
    """The agent's own lines in a language ``lines_by_language`` does not name."""
    lines_by_language: tuple[tuple[str, AgentLines], ...]
    hold_after_ms: int
    lead_ms: int
    pause_ms: int
    barge_in_ms: int
    output_rate: int | None
    sonic_deadline_ms: int
    silence_ms: int
    replies: ReplySettings

    @classmethod
    def of(cls, settings: Settings) -> StreamSettings:
        # Each line's setting is named for it (``a2a_greeting_text``), as A2A_LINES names the lines.
        lines = AgentLines(**{name: getattr(settings, f"a2a_{name}_text") for name in AGENT_LINES})
        return cls(
            lines=lines,
            lines_by_language=tuple((tag, replace(lines, **given)) for tag, given in _layered(settings.a2a_lines)),
            hold_after_ms=settings.converse_hold_after_ms,
            lead_ms=settings.a2a_output_lead_ms,
            pause_ms=settings.a2a_barge_in_pause_ms,
            barge_in_ms=settings.a2a_barge_in_ms,
            output_rate=settings.a2a_output_sample_rate,
            languages=settings.languages,
            ink_frame_ms=settings.ink_frame_ms,
            voice_detector=settings.voice_detector,
            sonic_deadline_ms=settings.sonic_deadline_ms,
            silence_ms=settings.a2a_silence_ms,
            replies=ReplySettings.of(settings, polled=False),
        )

    def lines_in(self, language: str) -> AgentLines:
        """The agent's own lines for a contact in ``language`` (by tag, then primary language)."""
        found = for_language(dict(self.lines_by_language), language)
        return found if found is not None else self.lines


def _layered(by_language: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]) -> list[tuple[str, dict[str, str]]]:
    """Each language's lines over its primary language's (``es-MX`` gives its greeting, ``es`` the rest)."""
    given = {tag: dict(lines) for tag, lines in by_language}
    return [(tag, {**given.get(primary(tag), {}), **lines}) for tag, lines in given.items()]


@dataclass(frozen=True)
class Engine:
    """The conversation engine's parts, as the container builds them (shared with the flows path)."""

    store: TurnStore
    replies: ReplyStore
    open_ink: Callable[[TurnListener, str, tuple[str, ...] | None, Listening | None], InkSession]
    """An Ink session (listener, name, keyterms, how the contact's language is listened to)."""
    responder: Callable[[], Responder]
    voice: Callable[[int, str], StreamingVoice]
    """Sonic at a sample rate, in a contact's language."""
    contact_language: Callable[[str, str], str | None]
    """The contact attribute ``Language`` a flow set (instance ARN, contact id), None when there is none: Connect's
    INIT_SESSION names no language (docs/protocols.md, "Amazon Connect UpdateContactAttributes")."""
    write_record: Callable[[str, int, MetricSink], None]
    """The contact's call record, once the session is over (contact id, generation)."""
    update_attributes: Callable[[str, str, Mapping[str, str]], None]
    """Contact attributes for the flow and the person who picks up (instance ARN, contact id, attributes)."""


@dataclass(eq=False)
class _Task:
    """A turn's task on the wire: its response, and what ends it."""

    task_id: str
    response: Response
    trace: TurnTrace
    reply: ReplyInProgress | None = None
    asked: str = ""
    """What the caller asked that an agent's own line answers (a reply's task reads its reply's words)."""
    finish: tuple[str, str] | None = None
    ended: bool = False
    """Its audio is all made (the response has its end), or it failed."""
    failed: tuple[int, str, str] | None = None
    segments: list[tuple[str, int, int]] = field(default_factory=list)
    """Each sentence spoken into the response: its text and where its audio lies in it (bytes)."""
    first_audio_reported: bool = False


class AgentSession:
    """One contact: fed every frame Connect sends; sends through ``send``."""

    def __init__(
        self,
        engine: Engine,
        settings: StreamSettings,
        send: Callable[[str], Awaitable[None]],
        *,
        sink: MetricSink,
        trace_parent: str | None = None,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._send = send
        self._sink = sink
        self._trace_parent = trace_parent
        self._reader = protocol.Reader()
        self._loop = asyncio.get_running_loop()
        self.init: protocol.InitSession | None = None
        self.ready = False
        self.finished: tuple[str, str] | None = None
        self._player: Player | None = None
        self._voice: StreamingVoice | None = None
        self._transcriber: TrackTranscriber | None = None
        self._worker: ReplyWorker | None = None
        self._checkpoint: Checkpoint | None = None
        self._generation = 0
        self._tasks: list[_Task] = []
        self._untold: set[int] = set()
        """Responses cut short off the event loop (at a turn's end) whose ``INTERRUPTION`` is not sent yet (ids): their
        tasks end only after it, so Connect never sees a task end with an artifact left open."""
        self._by_reply: dict[int, _Task] = {}
        self._lock = threading.Lock()
        self._audio: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._listener: threading.Thread | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._hush: asyncio.Task[None] | None = None
        """The agent's own watch on the line: a slow reply, a quiet line."""
        self._thinking: tuple[int, float] | None = None
        """The caller's turn whose reply has not begun (its number, when it ended: monotonic seconds), until it begins
        or a holding line is said for it."""
        self._work = asyncio.Event()
        """Set (on the loop) when a turn's task begins: the ticker, idle while the agent has nothing to say, wakes."""
        # One detector judges each caller frame for both barge-in and the transcriber's turns (the same audio, on the
        # listener thread): scoring every frame twice doubled the server's costliest per-frame work.
        self._caller_voice = SharedDetector(detector(settings.voice_detector))
        self._barge = VoiceActivity(detector=self._caller_voice.reader(), close_ms=200)
        self._barge_started: float | None = None
        """When the caller's voice over the agent began (epoch seconds), while it is paused for it."""
        self._backchannels: deque[tuple[float, float]] = deque(maxlen=32)
        """Voice over the agent too short to interrupt it (epoch seconds): a turn Ink makes of it is not answered."""
        self._silences = 0
        self._lines = settings.lines
        """The agent's own lines, in the contact's language once it is known (:meth:`_start_engine`)."""
        self._card_for: str | None = None
        """What the caller asked when a reply asked for their card on the keypad (None: no reply has)."""
        self._last_turn = -1
        """The caller's latest turn that ended (not a backchannel; keys that were a turn included)."""
        self._caller_turn: int | None = None
        """The caller's turn in progress, as the transcriber marks it (its voice heard, or Ink's ``turn.start``, until
        it is stored or comes to nothing): a response to an earlier turn does not begin over it."""
        self._closed = asyncio.Event()
        self.barge_ins = 0
        self._traced = 0
        self._responder_name = ""
        self.continuing = False
        """The session continues a conversation (history from Connect, or a redial): the agent does not greet."""
        self._lease: Lease | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._heard_at = time.monotonic()
        """When Connect last sent a frame (monotonic seconds): the claim is renewed only while it is heard."""
        self.superseded = False
        """Another session took the contact over: this one has stopped speaking and ends."""

    # -- frames in

    async def feed(self, frame: str | bytes) -> None:
        """One frame from Connect; never raises for what the frame holds."""
        self._heard_at = time.monotonic()
        event = self._reader.feed(frame)
        if isinstance(event, protocol.Malformed):
            logger.warning("frame refused", reason=event.reason, code=event.code)
            await self._send(event.frame())
            return
        try:
            await self._dispatch(event)
        except VoiceBridgeError as exc:
            logger.error("session event failed", error_code=exc.code, reason=exc.safe_message)
            self._sink.add("StreamingErrors", MetricUnit.Count, 1)

    async def _dispatch(self, event: protocol.Event) -> None:
        if isinstance(event, protocol.InitSession):
            await self._init(event)
        elif self.init is None or self.finished is not None or self.superseded:
            logger.info("frame before INIT_SESSION or after FINISH ignored", event=type(event).__name__)
        elif isinstance(event, protocol.ChannelState):
            if event.state == "READY" and not self.ready:
                self.ready = True
                self._start_output()
        elif isinstance(event, protocol.AudioIn):
            self._caller_audio(event.pcm)
        elif isinstance(event, protocol.DtmfComplete):
            await self._stop_output(inform_connect=False)
            if self._card_for is not None or card_number_in(event.digits):
                # Never a turn, never logged: the card is a person's (or the flow's) to take.
                logger.info("keys for a card are not kept", keys=len(event.digits))
                self._sink.add("CardKeysDropped", MetricUnit.Count, 1)
                # What was saying the hand-over line stopped for the keys: it is said again, then the hand-back.
                self._collect_card(self._card_for or "")
            elif event.digits:
                self._typed(event.digits)
        elif isinstance(event, protocol.Interruption):
            # Connect stopped playing (a key, or voice it heard): what it buffered is gone already.
            await self._stop_output(inform_connect=False)
        elif isinstance(event, protocol.TextIn):
            await self._text(event)
        elif isinstance(event, protocol.ConnectError):
            logger.warning("Connect reported an error", code=event.code, reason=event.reason, category=event.category)

    async def _init(self, init: protocol.InitSession) -> None:
        if self.init is not None:
            await self._send(
                protocol.error_frame(
                    init.request_id, protocol.INVALID_REQUEST, "Invalid Request", "SESSION_ALREADY_INITIALIZED"
                )
            )
            return
        if init.audio_in is None or init.audio_out is None:
            # A text session (chat, or voice without audio streaming) is not what this agent serves.
            await self._send(
                protocol.error_frame(
                    init.request_id, protocol.INVALID_PARAMS, "Invalid params", "AUDIO_STREAMING_REQUIRED"
                )
            )
            return
        output_rate = self._settings.output_rate or init.audio_out.sample_rate
        # This session's own: a context variable, so the other sessions on the server keep theirs; the engine's threads
        # take it with them (telemetry.in_context; asyncio.to_thread copies the context too).
        logger.thread_safe_append_keys(correlation_id=init.contact_id)
        try:
            await asyncio.to_thread(self._start_engine, init, output_rate)
        except VoiceBridgeError as exc:
            logger.error("session not started", error_code=exc.code, reason=exc.safe_message)
            self._sink.add("StreamingErrors", MetricUnit.Count, 1)
            await self._send(protocol.error_frame(init.request_id, -32603, "Internal error", exc.code))
            return
        self.init = init
        self._keeper = self._loop.create_task(self._keep_claim())
        await self._send(protocol.init_response_frame(init, AudioConfig(INPUT_RATE), AudioConfig(output_rate)))

    def _start_engine(self, init: protocol.InitSession, output_rate: int) -> None:
        """Claim the contact in the turn table, open the transcriber and the reply worker (blocking calls)."""
        store = self._engine.store
        # Before the claim: a language no Ink model transcribes starts nothing.
        listening = self._settings.languages.listening(
            self._engine.contact_language(init.instance_arn, init.contact_id)
        )
        claim, _, previous = self._claim(init, listening.language)
        self._lines = self._settings.lines_in(listening.language)
        redial = claim is Claim.TAKEN_OVER
        exchanges, unanswered = ([], "") if redial else continuation(init.history)
        self.continuing = redial or bool(exchanges or unanswered)
        if not redial and init.history:
            # What Connect handed over, listed in the contact's record (a redial's history repeats the first socket's).
            record_handoff(store, init.contact_id, [(speaker(role), text) for role, text in init.history])
        if exchanges:
            # The responder's history, as the reply worker reads it; redacted at rest with the contact's record.
            self._engine.replies.record_exchange(
                init.contact_id, exchanges[-1], keep=self._settings.replies.history_turns, before=exchanges[:-1]
            )
        self._voice = self._engine.voice(output_rate, listening.language)
        self._player = Player(
            init.context_id,
            output_rate,
            lead_ms=self._settings.lead_ms,
            chunk_bytes=min(protocol.audio_chunk_bytes(output_rate), output_rate * 2 // 10),
        )
        progress = self._checkpoint.tracks.get(CUSTOMER, TrackProgress()) if self._checkpoint else TrackProgress()
        if redial and previous is not None:
            # The new socket's audio goes on where the dropped one's stopped in the contact's stream, so the turns of
            # both keep their order in the record (the claim keeps only the turns' numbering).
            progress = replace(progress, stream_bytes=resumed_stream_bytes(store, init.contact_id, previous))
        responder = self._engine.responder()
        self._responder_name = responder.name
        self._worker = ReplyWorker(
            init.contact_id,
            responder=responder,
            speak=self._speak,
            replies=self._engine.replies,
            settings=replace(self._settings.replies, language=listening.language),
            report=self._sink.add,
            on_finished=self._reply_finished,
        )
        transcribing = self._settings.transcribing(listening, answered=True)
        # The detector barge-in reads: each caller frame is judged once for both.
        transcribing["voice_detector"] = self._caller_voice.reader()
        self._transcriber = TrackTranscriber(
            contact_id=init.contact_id,
            track=CUSTOMER,
            progress=progress,
            store=store,
            open_session=lambda listener, name: self._engine.open_ink(listener, name, None, listening),
            sink=self._sink,
            **transcribing,
            pacer=Pacer(catch_up_after_ms=CATCH_UP_AFTER_MS),
            on_turn=self._turn_stored,
            on_eager_end=self._worker.eager_end,
            on_resume=self._worker.turn_resumed,
            on_turn_ended=self._turn_ended,
            on_speaking=self._speaking,
            talked_over=self._went_on_over,
        )
        self._listener = threading.Thread(target=in_context(self._listen), name="caller-audio", daemon=True)
        self._listener.start()
        if unanswered:
            # The caller's last words before the handoff: this session's first turn, stored and answered as typed
            # words are (the record redacts them as it does every turn).
            self._transcriber.typed(unanswered)
        if redial:
            self._worker.resume_unfinished(store)

    def _claim(self, init: protocol.InitSession, language: str | None) -> tuple[Claim, int, Checkpoint | None]:
        """The contact claimed in the turn table and held by this session's lease, and its checkpoint before (None for
        a new contact). A claim another session holds is waited for until it is given up (that session ended and
        saved where the caller's turns stand) or has lapsed (its socket went quiet: it saved them at its last
        renewal), at most :func:`redial_wait_s`; a claim still renewed after that keeps the contact."""
        store = self._engine.store
        deadline = time.monotonic() + redial_wait_s()
        previous = store.load(init.contact_id)
        while previous is not None and previous.alive(store.now_ms(), LEASE_MS) and time.monotonic() < deadline:
            time.sleep(REDIAL_POLL_S)
            previous = store.load(init.contact_id)
        claim, generation = store.claim(
            init.contact_id,
            f"a2a:{init.context_id}",
            "0",
            [CUSTOMER],
            start_timestamp_ms=int(time.time() * 1000),
            lease_ms=LEASE_MS,
            converse=True,
            language=language,
        )
        if claim is Claim.ALIVE:
            raise Superseded(f"contact {init.contact_id} is still served by another session")
        self._generation = generation
        self._checkpoint = store.load(init.contact_id)
        if self._checkpoint is None or self._checkpoint.generation != generation:
            raise Superseded(f"contact {init.contact_id} was taken over while this session claimed it")
        self._lease = Lease(store, self._checkpoint)
        return claim, generation, previous

    async def _keep_claim(self) -> None:
        """Renew the claim while Connect is heard; only look at it while the socket is quiet; once another session
        owns the contact, give way."""
        lease = self._lease
        assert lease is not None
        while not lease.lost.is_set():
            await asyncio.sleep(RENEW_S)
            heard = time.monotonic() - self._heard_at < QUIET_S
            await asyncio.to_thread(self._renew_claim if heard else lease.check)
        await self._give_way()

    def _renew_claim(self) -> None:
        lease, transcriber = self._lease, self._transcriber
        assert lease is not None
        lease.renew(LISTENING, tracks={CUSTOMER: transcriber.settled} if transcriber is not None else None)

    async def _give_way(self) -> None:
        """Another session took the contact over (a redial, while this socket was quiet): stop speaking — what this
        session still had to say is dropped, and nothing more is sent — and end, leaving the record to that session."""
        logger.warning("another session took this contact over; this one stops")
        self.superseded = True
        self._sink.add("StreamingSuperseded", MetricUnit.Count, 1)
        player, worker = self._player, self._worker
        if player is not None:
            player.interrupt(time.monotonic())
        if worker is not None:
            worker.stop_speaking()
        self._closed.set()

    # -- the caller

    def _caller_audio(self, pcm: bytes) -> None:
        # Barge-in is judged on the listener thread, not here: this loop reads every session's frames, and the voice
        # detector's work on each (about 0.2 ms alone, more on a busy core), done here for twenty sessions on a busy
        # machine, left the loop reading their caller audio at ~75 % of real time (docs/benchmarks.md, streaming-load).
        self._audio.put(pcm)

    def _listen(self) -> None:
        """The caller's audio to Ink, on a thread of its own (the SDK's socket is blocking); silence when Connect's
        audio stalls, so a turn in progress can end."""
        transcriber = self._transcriber
        assert transcriber is not None
        offset = 0
        while True:
            try:
                pcm = self._audio.get(timeout=KEEPALIVE_IDLE_MS / 1000)
            except queue.Empty:
                transcriber.keepalive(idle_ms=KEEPALIVE_IDLE_MS)
                continue
            if pcm is None:
                return
            pcm, ended = self._queued_after(pcm)
            self._hear_barge_in(pcm)
            transcriber.audio("0", offset, pcm, time.time() * 1000)
            offset += len(pcm)
            if ended:
                return

    def _queued_after(self, pcm: bytes) -> tuple[bytes, bool]:
        """``pcm`` with the frames queued behind it, in one piece (a listener that fell behind catches up in one pass
        instead of a wake-up a frame), and whether the socket's end was among them."""
        parts = [pcm]
        while True:
            try:
                more = self._audio.get_nowait()
            except queue.Empty:
                return (pcm if len(parts) == 1 else b"".join(parts)), False
            if more is None:
                return b"".join(parts), True
            parts.append(more)

    def _turn_stored(self, turn: Turn) -> None:
        self._silences = 0
        assert self._worker is not None
        self._worker.submit(turn)

    def _went_on_over(self, start_ms: float, end_ms: float) -> bool:
        """Whether the caller's voice from ``start_ms`` to ``end_ms`` (epoch ms, as the listener received it) is voice
        the agent paused for and went on over: inside a backchannel's span, give or take (the transcriber's detector
        and barge-in's group the same frames a little differently)."""
        start, end = start_ms / 1000, end_ms / 1000
        # A copy: the listener thread adds spans while Ink's receiver thread asks.
        return any(low - 0.3 <= start and end <= high + 0.3 for low, high in list(self._backchannels))

    def _speaking(self, seq: int, speaking: bool) -> None:
        """The transcriber's mark: the caller began turn ``seq``, or it is over (an earlier turn's end leaves a later
        one open)."""
        with self._lock:
            self._caller_turn = open_turn(self._caller_turn, seq, speaking)

    def _spoke_after(self, seq: int) -> bool:
        """Whether the caller has spoken (or is speaking) a turn after ``seq``."""
        return self._caller_went_on(seq) or self._last_turn > seq

    def _caller_went_on(self, seq: int | None) -> bool:
        """Whether the caller is speaking a turn after ``seq`` (None: any turn), so a response to it waits: said over
        them it would be cut as their turn ends, and the turn's own reply takes its place."""
        turn = self._caller_turn
        return turn is not None and (seq is None or turn > seq)

    def _typed(self, digits: str) -> None:
        transcriber = self._transcriber
        if transcriber is not None:
            # Stored and answered as a spoken turn is; the record redacts it as it redacts what callers say.
            threading.Thread(target=in_context(transcriber.typed), args=(digits,), name="keys", daemon=True).start()

    async def _text(self, event: protocol.TextIn) -> None:
        if not event.silence:
            self._typed(event.text)
            return
        if self._quiet(time.monotonic()):
            self._silence("Connect's silence marker")
        else:
            logger.info("Connect's silence marker ignored: the line is not quiet")

    def _quiet(self, now: float) -> bool:
        """Nobody is speaking and nothing is on its way: a pause (below) with no reply being made or waiting, and no
        voice on the caller's line."""
        worker = self._worker
        return worker is not None and self._pause(now) and not worker.making and not self._barge.speaking

    def _pause(self, now: float) -> bool:
        """The agent says nothing and has nothing of its own waiting (no response open), and the caller is not
        mid-turn."""
        player = self._player
        return player is not None and not self._tasks and not player.busy(now) and self._caller_turn is None

    def _silence(self, noticed_by: str) -> None:
        """The line was quiet: the first time the agent asks whether anyone is there, the second it says goodbye."""
        self._silences += 1
        logger.info("the line is quiet", noticed_by=noticed_by, silences=self._silences)
        if self._silences == 1:
            self._say(self._lines.reprompt)
        else:
            self._say(self._lines.goodbye, finish=("COMPLETE", "the caller said nothing"))

    async def _watch_line(self, silence_s: float) -> None:
        """The agent's own ear on the line: a reply slow in coming gets a holding line; ``silence_s`` of a quiet line
        (0: not watched) counts as a silence, and anything said or made starts the count again (the agent's own
        question included)."""
        quiet_since = time.monotonic()
        while self.finished is None and not self.superseded:
            await asyncio.sleep(LINE_LOOK_S)
            now = time.monotonic()
            self._hold_if_slow(now)
            if not silence_s:
                continue
            if not self._quiet(now):
                quiet_since = now
            elif now - quiet_since >= silence_s:
                quiet_since = now
                self._silence("the agent")

    def _hold_if_slow(self, now: float) -> None:
        """A turn's reply ``hold_after_ms`` in the making since the turn ended, nothing of it begun: "One moment.",
        once a turn, and only into a quiet moment (the agent silent, nothing of its own waiting, the caller not
        mid-turn), so never inside a reply; the reply follows it."""
        thinking = self._thinking
        if thinking is None or now - thinking[1] < self._settings.hold_after_ms / 1000 or not self._pause(now):
            return
        self._thinking = None
        logger.info("the reply is slow in coming: a holding line", turn=thinking[0])
        self._say(self._lines.hold)

    # -- barge-in

    def _hear_barge_in(self, pcm: bytes) -> None:
        """The caller's voice over the agent's: pause it, then interrupt it or let it go on (on the listener thread;
        the player is thread-safe, and the interruption is handed to the event loop)."""
        player = self._player
        vad = self._barge
        vad.feed(pcm)
        while vad.closed:
            vad.take()
        if player is None:
            return
        now = time.monotonic()
        start = vad.next_start_ms()
        voiced_ms = 0.0 if start is None else (vad.last_voiced_end_ms or vad.position_ms) - start
        if start is not None and vad.last_voiced_end_ms is not None and vad.last_voiced_end_ms < start:
            voiced_ms = vad.position_ms - start
        talking_over = player.paused or player.audible(now)
        if not talking_over:
            self._barge_started = None
            return
        if vad.speaking and voiced_ms >= self._settings.pause_ms and not player.paused:
            player.pause()
            self._barge_started = time.time() - (vad.position_ms - (start or vad.position_ms)) / 1000
        elif player.paused and vad.speaking and voiced_ms >= self._settings.barge_in_ms:
            self.barge_ins += 1
            self._sink.add("BargeIns", MetricUnit.Count, 1)
            asyncio.run_coroutine_threadsafe(self._stop_output(inform_connect=True), self._loop)
        elif player.paused and not vad.speaking:
            # A cough or a backchannel: the agent goes on where it paused.
            player.resume()
            if self._barge_started is not None:
                self._backchannels.append((self._barge_started, time.time()))
            self._barge_started = None

    async def _stop_output(self, *, inform_connect: bool) -> None:
        player, worker = self._player, self._worker
        if player is None or worker is None:
            return
        now = time.monotonic()
        cut = player.interrupt(now)
        worker.stop_speaking()
        await self._cut_short(player, cut, now, inform_connect=inform_connect)

    def _turn_ended(self, turn: Turn) -> None:
        """A caller's turn ended (on Ink's receiver thread). Said while the agent is still heard, and no backchannel —
        "stop", "no, wait", shorter than a barge-in, the agent paused and went on — it stops what is being said now,
        as a barge-in does, rather than after the sentence; a reply held for this very turn (made speculatively on
        its words) stays, to be committed as the turn ends; a response that waited for the caller and never began is
        dropped unheard (no ``INTERRUPTION``, no barge-in counted). Then the worker is told, as for every turn."""
        player, worker = self._player, self._worker
        assert worker is not None
        now = time.monotonic()
        if not turn.backchannel:
            self._last_turn = max(self._last_turn, turn.seq)
        with self._lock:
            begun = any(task.reply is not None and task.reply.seq >= turn.seq for task in self._tasks)
        if not turn.backchannel and not begun:
            self._thinking = (turn.seq, now)
        if player is not None and not turn.backchannel and (player.audible(now) or player.waiting_to_begin()):
            with self._lock:
                # Cut here, told on the loop: the ticker must not end these tasks before Connect is told.
                cut = player.interrupt(now, keep_held=True)
                self._untold.update(id(response) for response in cut)
            # A response that waited for the caller and never began is dropped unheard: Connect holds none of it.
            heard = [response for response in cut if response.sent_bytes]
            if heard:
                self.barge_ins += 1
                self._sink.add("BargeIns", MetricUnit.Count, 1)
            if cut:
                asyncio.run_coroutine_threadsafe(
                    self._cut_short(player, cut, now, inform_connect=bool(heard)), self._loop
                )
        worker.turn_ended(turn)

    async def _cut_short(self, player: Player, cut: list[Response], now: float, *, inform_connect: bool) -> None:
        """Responses were cut short at ``now``: Connect is told to flush what it holds, and the history what the
        caller did not hear of each."""
        worker = self._worker
        assert worker is not None
        try:
            if inform_connect and cut:
                await self._send(protocol.interruption_frame(player.context_id))
        finally:
            with self._lock:
                self._untold.difference_update(id(response) for response in cut)
        for task in self._tasks:
            if task.response in cut and task.reply is not None:
                heard, unsaid = self._heard(task, player, now)
                if unsaid:
                    await asyncio.to_thread(worker.amend_heard, task.reply, heard, unsaid)

    def _heard(self, task: _Task, player: Player, now: float) -> tuple[str, str]:
        """What the caller heard of a response cut short, and what they did not, by the audio Connect played."""
        played = player.heard_bytes(task.response, now)
        heard, unsaid = [], []
        for text, start, end in task.segments:
            if end <= played:
                heard.append(text)
            elif start >= played:
                unsaid.append(text)
            else:
                said, not_said = heard_share(text, (played - start) / max(1, end - start))
                heard.append(said)
                unsaid.append(not_said)
        return " ".join(w for w in heard if w), " ".join(w for w in unsaid if w)

    # -- the agent's voice

    def _start_output(self) -> None:
        self._ticker = self._loop.create_task(self._tick())
        self._hush = self._loop.create_task(self._watch_line(self._settings.silence_ms / 1000))
        if not self.continuing:
            self._say(self._lines.greeting)

    def _task_for(self, reply: ReplyInProgress | None, name: str) -> _Task:
        player = self._player
        assert player is not None
        with self._lock:
            if reply is not None and id(reply) in self._by_reply:
                return self._by_reply[id(reply)]
            task_id = str(uuid.uuid4())
            if reply is None:
                response = player.open(task_id, waits=lambda: self._caller_went_on(None))
            else:
                response = player.open(
                    task_id,
                    released=lambda: reply.committed,
                    dropped=lambda: reply.cancel.is_set() and not reply.committed,
                    waits=lambda: self._caller_went_on(reply.seq),
                )
            # The first turn's trace continues the context Connect propagated on the upgrade; later ones link to it.
            first, self._traced = self._traced == 0, self._traced + 1
            parent = self._trace_parent
            trace = TurnTrace(name, parent if first else None, link=None if first else parent)
            task = _Task(task_id, response, trace, reply)
            self._tasks.append(task)
            thinking = self._thinking
            if reply is not None and thinking is not None and reply.seq >= thinking[0]:
                # The reply has begun: no holding line for its turn.
                self._thinking = None
            self._loop.call_soon_threadsafe(self._work.set)
            if reply is not None:
                self._by_reply[id(reply)] = task
        return task

    def _speak(
        self, text: str, deadline: float, cancel: threading.Event | None = None, *, reply: ReplyInProgress | None = None
    ) -> Spoken:
        """The reply worker's voice: ``text`` into the call, as Sonic makes it."""
        task = self._task_for(reply, "reply")
        if reply is not None and task.trace.input is None:
            task.trace.heard(reply.transcript, reply.turn)
        said = self._say_into(task, text, deadline, lambda: bool(cancel and cancel.is_set()))
        return Spoken(f"a2a://{task.response.artifact_id}", said.synthesis_ms, said.first_byte_at)

    def _say_into(self, task: _Task, text: str, deadline: float, stopped: Callable[[], bool]) -> Any:
        player, voice = self._player, self._voice
        assert player is not None and voice is not None
        start = task.response.pushed_bytes
        began = time.time()
        said = voice.say(text, player, task.response, deadline=deadline, stop=lambda: stopped() or task.response.closed)
        task.segments.append((text, start, task.response.pushed_bytes))
        task.trace.spoke(text, began, time.time())
        return said

    def _say(self, text: str, *, finish: tuple[str, str] | None = None, asked: str = "") -> None:
        """A sentence of the agent's own (greeting, re-prompt, goodbye, the card hand-over): a turn's task of its own;
        ``asked``, what the caller said that it answers."""
        task = self._task_for(None, "prompt")
        task.finish, task.asked = finish, asked
        task.trace.meant.append(text)

        def speak() -> None:
            # The response ends whatever became of the sentence: one never ended keeps every later one from being heard.
            try:
                self._say_into(task, text, time.monotonic() + self._settings.sonic_deadline_ms / 1000, lambda: False)
            except SynthesisCancelled:
                pass
            except ModelUnavailable as exc:
                logger.warning("the agent's sentence was not spoken", reason=exc.safe_message)
                task.failed = (424, f"Sonic could not speak: {exc.safe_message}", "DEPENDENCY_FAILURE")
            except VoiceBridgeError as exc:
                logger.error("the agent's sentence was not spoken", error_code=exc.code, reason=exc.safe_message)
                self._sink.add("StreamingErrors", MetricUnit.Count, 1)
                task.failed = (500, f"the sentence failed: {exc.safe_message}", "INTERNAL_ERROR")
            except Exception:
                logger.exception("the agent's sentence failed")
                self._sink.add("StreamingErrors", MetricUnit.Count, 1)
                task.failed = (500, "the sentence failed", "INTERNAL_ERROR")
            finally:
                assert self._player is not None
                self._player.end(task.response)
                task.ended = True

        threading.Thread(target=in_context(speak), name="prompt", daemon=True).start()

    def _reply_finished(self, reply: ReplyInProgress) -> None:
        """The reply worker's word that ``reply`` is made whole (or cut short): its task can end."""
        task = self._task_for(reply, "reply")
        if reply.responder_started_ms is not None:
            task.trace.answered(self._responder_name, reply.responder_started_ms / 1000, time.time())
        action, attributes = reply.finished or (Action.CONTINUE, {})
        if action in FINISH:
            task.finish = FINISH[action]
        elif attributes.get("Collect") == "card" and not self._spoke_after(reply.seq):
            # (A caller who spoke a turn after the one it answers is answered instead; keys pressed over it are the
            # card the reply asked for.)
            self._collect_card(reply.transcript)
        if not task.segments and not reply.spoken and reply.heard is None:
            task.failed = (424, "no sentence of the reply could be spoken", "DEPENDENCY_FAILURE")
        assert self._player is not None
        self._player.end(task.response)
        task.ended = True

    def _collect_card(self, asked: str) -> None:
        """The caller is to give a card number, which this agent never takes (a model would hear it): after what is
        being said, its card line, then the contact goes back to the flow (``ESCALATE``, ``VoicebridgeCollect``)
        for a person, or the flow's own encrypted keypad input, to take it."""
        self._card_for = asked
        self._say(self._lines.card, finish=CARD_FINISH, asked=asked)

    async def _tick(self) -> None:
        player = self._player
        assert player is not None
        while self.finished is None and not self.superseded:
            now = time.monotonic()
            for frame in player.due(now):
                await self._send(frame)
            await self._end_tasks(now)
            if self._tasks or player.busy(now):
                await asyncio.sleep(TICK_S)
                continue
            # Nothing to say or play: sleep until a turn's task begins, rather than wake every tick for nothing (every
            # session's ticks share the one event loop that reads the callers' audio).
            self._work.clear()
            await self._work.wait()

    async def _end_tasks(self, now: float) -> None:
        player = self._player
        assert player is not None
        for task in list(self._tasks):
            response = task.response
            self._report_first_audio(task)
            with self._lock:
                # One look, under the lock a turn's end cuts responses under: cut but not yet told, it waits.
                untold, closed, interrupted = id(response) in self._untold, response.closed, response.interrupted
            if untold or not closed:
                continue
            if response.dropped() and not response.frames:
                # A speculation the caller's words did not confirm: nothing of it reached Connect.
                self._forget(task)
                continue
            if not interrupted and not task.ended:
                continue
            if task.finish is not None and not interrupted and player.audible(now):
                # The hand-back waits until the caller has heard the last word.
                continue
            self._forget(task)
            await self._end_task(task, interrupted=interrupted)

    def _report_first_audio(self, task: _Task) -> None:
        turn = task.reply.turn if task.reply is not None else None
        sent = task.response.first_sent_at
        if task.first_audio_reported or sent is None or turn is None or turn.latency_ms is None:
            return
        task.first_audio_reported = True
        sent_ms = (time.time() - (time.monotonic() - sent)) * 1000
        stopped_ms = turn.ended_at_ms - turn.latency_ms
        self._sink.add("StreamingFirstAudioLatency", MetricUnit.Milliseconds, max(0.0, sent_ms - stopped_ms))

    def _forget(self, task: _Task) -> None:
        with self._lock:
            if task in self._tasks:
                self._tasks.remove(task)
            if task.reply is not None:
                self._by_reply.pop(id(task.reply), None)

    async def _end_task(self, task: _Task, *, interrupted: bool) -> None:
        init = self.init
        assert init is not None
        if init.tracing:
            await self._send(
                protocol.tracing_frame(
                    init.context_id, task.task_id, task.trace.otlp(interrupted=interrupted, failed=task.failed)
                )
            )
        # A hand-back or goodbye cut short, or dropped before any of it was heard, is not done.
        finish = None if interrupted or task.response.unheard else task.finish
        if task.failed is not None and not interrupted:
            await self._send(protocol.status_frame(init.context_id, task.task_id, error=task.failed))
            self._sink.add("StreamingErrors", MetricUnit.Count, 1)
            return
        if finish is not None and finish[0] not in init.finish_types:
            finish = ("COMPLETE", finish[1]) if "COMPLETE" in init.finish_types else None
        if finish is not None:
            await asyncio.to_thread(self._hand_over, task, finish)
        await self._send(protocol.status_frame(init.context_id, task.task_id, finish=finish))
        if finish is not None:
            self.finished = finish
            self._closed.set()

    def _hand_over(self, task: _Task, finish: tuple[str, str]) -> None:
        """The contact's attributes for the flow and the person who picks up: what the caller asked, what was done,
        where the record is. A failure is logged: the hand-back goes ahead."""
        init = self.init
        assert init is not None
        asked = task.reply.transcript if task.reply is not None else task.asked
        note = {
            "VoicebridgeOutcome": finish[0].title(),
            "VoicebridgeHandoverNote": f"Caller said: {asked[:400]}. Agent: {finish[1]}."[:1000],
        }
        if finish == CARD_FINISH:
            note["VoicebridgeCollect"] = "card"
        try:
            self._engine.update_attributes(init.instance_arn, init.contact_id, note)
        except Exception as exc:
            # The hand-back must happen whatever became of the attribute write.
            logger.warning("contact attributes not written", reason=type(exc).__name__)
            self._sink.add("StreamingErrors", MetricUnit.Count, 1)

    # -- the end

    async def wait_finished(self) -> None:
        await self._closed.wait()

    async def close(self, reason: str) -> None:
        """The socket is gone (or the session finished): stop listening and replying, and write the record. A
        response the caller was still hearing (they hung up in it, or the socket dropped) was heard only so far: the
        history and the record say so, as for one they talked over."""
        for task in (self._ticker, self._keeper, self._hush):
            if task is not None:
                task.cancel()
        player = self._player
        if player is not None and self._worker is not None:
            now = time.monotonic()
            try:
                await self._cut_short(player, player.interrupt(now), now, inform_connect=False)
            except Exception:
                # It refines the record; the session closes and the record is written whatever it does.
                logger.exception("what the caller heard of the last response was not kept")
        self._audio.put(None)
        await asyncio.to_thread(self._close_engine, reason)

    def _close_engine(self, reason: str) -> None:
        if self._listener is not None:
            self._listener.join(2.0)
        if self._transcriber is not None:
            self._transcriber.close(flush_ms=0, timeout_s=1.0)
        if self._worker is not None:
            self._worker.close(timeout_s=1.0)
        checkpoint, init, lease = self._checkpoint, self.init, self._lease
        if checkpoint is None or lease is None:
            return
        lease.end()
        if self.superseded or lease.lost.is_set():
            # The session that took the contact over goes on from its stored place and writes the whole call's record.
            return
        if init is None or self._transcriber is None:
            # Claimed, but the session could not start: the claim is given up, with nothing to record.
            try:
                self._engine.store.release(checkpoint.contact_id, self._generation, reason[:240])
            except VoiceBridgeError as exc:
                logger.warning("could not give the claim up", reason=exc.safe_message)
            return
        checkpoint.tracks[CUSTOMER] = self._transcriber.settled
        checkpoint.state, checkpoint.stop_reason = STOPPED, reason[:240]
        try:
            # Gives the claim up: a redial waiting for it takes the contact over at once.
            self._engine.store.save(checkpoint)
        except Superseded:
            logger.info("the contact was taken over meanwhile; its record is the new session's")
            return
        except VoiceBridgeError as exc:
            logger.warning("could not record the end of the session", reason=exc.safe_message)
        self._engine.write_record(init.contact_id, self._generation, self._sink)


def resumed_stream_bytes(store: TurnStore, contact_id: str, previous: Checkpoint) -> int:
    """Where a redial's caller audio goes on in the contact's stream: where the previous session last saved it, or past
    the last turn it stored after that (a session whose claim lapsed saved it at its last renewal)."""
    saved = previous.tracks.get(CUSTOMER, TrackProgress()).stream_bytes
    last = store.last_turn(contact_id, CUSTOMER)
    return max(saved, round(last.audio_end_ms * BYTES_PER_MS) if last is not None else 0)

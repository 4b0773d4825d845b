"""Incremental Matroska reader for Kinesis Video Streams GetMedia payloads.

Format: GetMedia returns a concatenation of Matroska (EBML) documents, one per fragment::

    EBML header (1A 45 DF A3)
    Segment (18 53 80 67), size usually "unknown" (all VINT value bits set)
      Info      TimecodeScale (ns per timecode tick, default 1 000 000)
      Tracks    TrackEntry*: TrackNumber, TrackUID, Name, CodecID,
                             Audio{SamplingFrequency, Channels, BitDepth}
      Tags      Tag*: SimpleTag{TagName, TagString} (producer tags: ContactId, MimeType, ...)
      Cluster   Timecode (ticks), SimpleBlock* | BlockGroup{Block}*, size may be unknown
      Tags      appended by GetMedia: AWS_KINESISVIDEO_FRAGMENT_NUMBER, ..._CONTINUATION_TOKEN,
                ..._ERROR_CODE

Every element is ``ID VINT | size VINT | payload`` (RFC 8794). A (Simple)Block payload is ``track-number
VINT | int16 timecode relative to the cluster | flags | [lacing header] frame data``; lacing is none, Xiph,
EBML or fixed-size (RFC 9559, Matroska). Void (EC) and CRC-32 (BF) may appear inside any master. Amazon
Connect labels its tracks ``A_AAC`` although the frames carry 16-bit little-endian PCM, so frame data is
handed over untouched.

:class:`MatroskaReader` is sans-I/O: ``feed(bytes)`` returns the events completed by those bytes,
``close()`` the ones completed by the end of input. It descends into master elements and buffers only the
leaf being read (and keeps the two elements read before it, see below), so memory stays bounded by a few
elements whatever the chunking, and each event leaves the reader as soon as the last byte of its element
arrives. An unknown-size master ends when an element arrives that the Matroska hierarchy does not allow
inside it (a new EBML header, a Cluster or Tags at segment level).

Sizes are trusted: while the input reads as well-formed, no byte is searched for the next EBML header.
Damage shows as an invalid ID or size VINT; an element that the open master cannot hold (Matroska lists
every child of a Segment, a Cluster and a BlockGroup, and a Segment holds one Info and one Tracks, a Cluster
one Timecode); a Segment without its EBML header; a size that overruns the parent or exceeds
:data:`MAX_ELEMENT_SIZE`; a block for an unknown track or with reserved flag bits set; input that ends
inside an element. It yields :class:`MalformedInput`, and only then does the reader search for the next EBML
header, from the start of the older of the last two elements it read whole. So damage the reader sees
where it is costs at most its fragment. So does a fragment cut short inside an element, whose trusted size
then runs over the next document's header, as long as the damage shows within the next element or two, as
bytes read from the wrong place almost always make it: the reader resumes at that header. A frame already
out stays out, though, and the block cut short may have carried the next document's first bytes; a size
that ends exactly on an element boundary of the next document reads as well-formed, and costs that one too.

    reader = MatroskaReader()
    for chunk in chunks:
        for event in reader.feed(chunk):
            if isinstance(event, AudioFrame) and event.track_name == "AUDIO_FROM_CUSTOMER":
                send(event.pcm)
    for event in reader.close():
        ...

Malformed input a caller treats as fatal becomes a :class:`MatroskaError` (``MalformedInput.error()``), of
the subclass for its kind of damage: :class:`InvalidIdError`, :class:`InvalidSizeError`, :class:`OverrunError`,
:class:`UnexpectedElementError`, :class:`InvalidValueError`, :class:`BadBlockError` or
:class:`TruncatedInputError`.

The modules: :mod:`.elements` (the element table), :mod:`.events` (what the reader yields), :mod:`.errors`,
:mod:`.reader` (buffering and the state machine), with :mod:`.masters` (the open masters), :mod:`.content`
(what elements set), :mod:`.blocks` (block payloads), :mod:`.tags` (Tags), :mod:`.repeats` (what GetMedia
repeats in every fragment) and :mod:`.resync` (the scan after damage).
"""

from voicebridge.kvs.mkv.elements import DEFAULT_TIMECODE_SCALE, EBML_MAGIC, MAX_ELEMENT_SIZE
from voicebridge.kvs.mkv.errors import (
    BadBlockError,
    InvalidIdError,
    InvalidSizeError,
    InvalidValueError,
    MatroskaError,
    OverrunError,
    ReaderClosedError,
    TruncatedInputError,
    UnexpectedElementError,
)
from voicebridge.kvs.mkv.events import (
    AudioFrame,
    ClusterStart,
    DocumentStart,
    Event,
    MalformedInput,
    Tags,
    TrackInfo,
    TracksChanged,
)
from voicebridge.kvs.mkv.reader import MatroskaReader

__all__ = [
    "DEFAULT_TIMECODE_SCALE",
    "EBML_MAGIC",
    "MAX_ELEMENT_SIZE",
    "AudioFrame",
    "BadBlockError",
    "ClusterStart",
    "DocumentStart",
    "Event",
    "InvalidIdError",
    "InvalidSizeError",
    "InvalidValueError",
    "MalformedInput",
    "MatroskaError",
    "MatroskaReader",
    "OverrunError",
    "ReaderClosedError",
    "Tags",
    "TrackInfo",
    "TracksChanged",
    "TruncatedInputError",
    "UnexpectedElementError",
]

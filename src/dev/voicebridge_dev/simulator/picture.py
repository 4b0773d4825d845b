"""The call's timeline as a PNG picture, drawn with numpy and written with zlib (no plotting library).

Two lanes share a time axis in seconds: the caller's audio on top, the bot's below, each drawn as its level
per pixel column and coloured by what it is (the caller's speech, a prompt from S3, Connect's voice, a hold).
Each of the bot's prompts — a reply's segments one after another — begins with a thin white gap, so a reply's
segments show apart. A red line marks each moment Ink ended a caller's turn, a purple one on the bot's lane each
moment a reply segment was ready (stored, its audio in S3).

Under it, a waterfall for every turn: one row per turn, its time axis in milliseconds after the caller stopped
speaking, with a mark for each of the turn's moments (:meth:`~voicebridge_dev.simulator.report.TurnFigures.
waterfall_ms`): Ink's eager end, its turn end, the responder's first token and first clause, Sonic's first byte,
segment 0 stored, ConverseFunction's answer and Connect playing it; a bar runs from the stop to the playing, and the
row is labelled with the turn and whether its reply was speculative (HIT, MISS, OFF).

The file is an 8-bit RGB PNG: signature, IHDR, one IDAT (filter 0 on every row), IEND.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import numpy.typing as npt

from voicebridge_dev.simulator.engine import CallResult
from voicebridge_dev.simulator.events import BOT, CALLER, Segment
from voicebridge_dev.simulator.report import TurnFigures, turn_figures

__all__ = ["timeline_png"]

Image = npt.NDArray[np.uint8]
Colour = tuple[int, int, int]

_WHITE: Colour = (255, 255, 255)
_LANE: Colour = (242, 242, 242)
_INK: Colour = (60, 60, 60)
_GRID: Colour = (215, 215, 215)
_COLOURS: dict[str, Colour] = {
    "speech": (46, 160, 67),
    "dtmf": (23, 190, 207),
    "prompt": (31, 119, 180),
    "connect-voice": (255, 127, 14),
    "hold": (150, 150, 150),
}
_TURN: Colour = (214, 39, 40)
_READY: Colour = (148, 103, 189)
_WATERFALL: tuple[tuple[str, str, Colour], ...] = (
    ("eager_end", "EAGER END", (255, 127, 14)),
    ("turn_end", "TURN END", _TURN),
    ("responder_first_token", "1ST TOKEN", (140, 86, 75)),
    ("first_clause", "1ST CLAUSE", (227, 119, 194)),
    ("sonic_first_byte", "SONIC 1ST BYTE", (188, 189, 34)),
    ("segment_stored", "STORED", _READY),
    ("converse_answered", "ANSWERED", (23, 190, 207)),
    ("connect_playing", "PLAYING", (31, 119, 180)),
)
_ROW_HEIGHT = 18

_LEFT, _RIGHT, _TOP = 80, 20, 20
_LANE_HEIGHT, _LANE_GAP = 70, 20
_SCALE = 2

# A 3×5 pixel font: each glyph is five rows of three pixels, top row first.
_FONT_TABLE = """
0 111101101101111 1 010110010010111 2 111001111100111 3 111001111001111 4 101101111001001
5 111100111001111 6 111100111101111 7 111001001001001 8 111101111101111 9 111101111001111
A 010101111101101 B 110101110101110 C 011100100100011 D 110101101101110 E 111100110100111
F 111100110100100 G 011100101101011 H 101101111101101 I 111010010010111 J 001001001101010
K 101101110101101 L 100100100100111 M 101111111101101 N 110101101101101 O 010101101101010
P 110101110100100 Q 010101101110011 R 110101110101101 S 011100010001110 T 111010010010010
U 101101101101111 V 101101101101010 W 101101111111101 X 101101010101101 Y 101101010010010
Z 111001010100111 . 000000000000010 - 000000111000000 : 000010000010000
"""
_FONT: dict[str, npt.NDArray[np.bool_]] = {
    char: np.array([bit == "1" for bit in bits], dtype=bool).reshape(5, 3)
    for char, bits in zip(_FONT_TABLE.split()[::2], _FONT_TABLE.split()[1::2], strict=True)
}


def _text(image: Image, x: int, y: int, text: str, colour: Colour = _INK) -> int:
    """Draw ``text`` from its top-left corner (x, y); returns the x after it. Unknown characters are blank."""
    for char in text.upper():
        glyph = _FONT.get(char)
        if glyph is not None:
            pixels = np.kron(glyph, np.ones((_SCALE, _SCALE), dtype=bool))
            height, width = pixels.shape
            region = image[y : y + height, x : x + width]
            region[pixels[: region.shape[0], : region.shape[1]]] = colour
        x += 4 * _SCALE
    return x


def _levels(samples: npt.NDArray[np.int16], columns: int) -> npt.NDArray[np.float64]:
    """Peak level (0–1) of each of ``columns`` equal slices of ``samples``."""
    if samples.size == 0:
        return np.zeros(columns)
    edges = np.linspace(0, samples.size, columns + 1).astype(np.int64)
    magnitude = np.abs(samples.astype(np.int32))
    peaks = np.maximum.reduceat(magnitude, np.minimum(edges[:-1], samples.size - 1))
    peaks[edges[1:] <= edges[:-1]] = 0
    return peaks / 32768.0


def _colour_columns(segments: list[Segment], columns: int, seconds: float) -> list[Colour]:
    colours = [_INK] * columns
    for segment in segments:
        first = int(segment.start / seconds * columns)
        last = int(np.ceil(segment.end / seconds * columns))
        for column in range(max(first, 0), min(last, columns)):
            colours[column] = _COLOURS[segment.kind]
    return colours


def _png(image: Image) -> bytes:
    height, width, _ = image.shape
    rows = np.concatenate([np.zeros((height, 1), dtype=np.uint8), image.reshape(height, width * 3)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            chunk(b"IHDR", header),
            chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)),
            chunk(b"IEND", b""),
        )
    )


def _tick_step(seconds: float) -> int:
    return next((step for step in (1, 2, 5, 10, 15, 30, 60, 120, 300) if seconds / step <= 15), 600)


def timeline_png(result: CallResult, *, width: int = 1200) -> bytes:
    """The picture of ``result`` (see the module docstring) as PNG bytes."""
    plot = width - _LEFT - _RIGHT
    lanes = {CALLER: _TOP, BOT: _TOP + _LANE_HEIGHT + _LANE_GAP}
    axis = _TOP + 2 * _LANE_HEIGHT + _LANE_GAP + 6
    legend = axis + 34
    figures = turn_figures(result)
    waterfall_top = legend + 40
    waterfall_axis = waterfall_top + _ROW_HEIGHT * len(figures) + 4
    height = waterfall_axis + 60 if figures else legend + 24
    image = np.empty((height, width, 3), dtype=np.uint8)
    image[:] = _WHITE
    seconds = max(result.duration, 1e-3)

    step = _tick_step(seconds)
    for tick in range(0, int(seconds) + 1, step):
        x = _LEFT + round(tick / seconds * (plot - 1))
        image[_TOP:axis, x] = _GRID
        image[axis : axis + 5, x] = _INK
        _text(image, x - 4, axis + 8, f"{tick}S")

    for track, top in lanes.items():
        image[top : top + _LANE_HEIGHT, _LEFT : _LEFT + plot] = _LANE
        _text(image, 8, top + _LANE_HEIGHT // 2 - 5, "CALLER" if track == CALLER else "BOT")
        channel = result.recording[:, 0 if track == CALLER else 1]
        levels = _levels(channel, plot)
        colours = _colour_columns([s for s in result.segments if s.track == track], plot, seconds)
        middle = top + _LANE_HEIGHT // 2
        for column, (level, colour) in enumerate(zip(levels, colours, strict=True)):
            half = round(min(level * 2.0, 1.0) * (_LANE_HEIGHT // 2 - 2))
            if half:
                image[middle - half : middle + half + 1, _LEFT + column] = colour
    image[axis, _LEFT : _LEFT + plot] = _INK

    def x_of(moment: float) -> int:
        return _LEFT + min(max(round(moment / seconds * (plot - 1)), 0), plot - 1)

    for segment in result.segments:
        if segment.track == BOT and segment.kind != "hold":
            image[lanes[BOT] : lanes[BOT] + _LANE_HEIGHT, x_of(segment.start)] = _WHITE

    for turn in figures:
        if turn.turn_end is not None:
            image[_TOP:axis, x_of(turn.turn_end)] = _TURN
        for reply in turn.segments:
            if reply.ready is not None:
                image[lanes[BOT] : lanes[BOT] + _LANE_HEIGHT, x_of(reply.ready)] = _READY

    x = _LEFT
    for label, colour in (
        ("CALLER SPEECH", _COLOURS["speech"]),
        ("S3 PROMPT", _COLOURS["prompt"]),
        ("CONNECT VOICE", _COLOURS["connect-voice"]),
        ("TURN END", _TURN),
        ("SEGMENT READY", _READY),
    ):
        image[legend : legend + 10, x : x + 10] = colour
        x = _text(image, x + 16, legend, label) + 20
    if figures:
        _draw_waterfall(image, figures, top=waterfall_top, axis=waterfall_axis, plot=plot)
    return _png(image)


def _draw_waterfall(image: Image, figures: list[TurnFigures], *, top: int, axis: int, plot: int) -> None:
    """One row per turn: its moments after the caller stopped, on a shared axis of milliseconds."""
    rows = []
    for turn in figures:
        moments = turn.waterfall_ms()
        stop = moments["caller_stop"]
        rows.append({name: None if stop is None or value is None else value - stop for name, value in moments.items()})
    latest = max((v for row in rows for v in row.values() if v is not None), default=0)
    span = max(1000, -(-latest // 500) * 500)
    step = 250 if span <= 2000 else 500 if span <= 5000 else 1000
    _text(image, _LEFT, top - 16, "WATERFALL: MS AFTER THE CALLER STOPPED")

    def x_of(ms: float) -> int:
        return _LEFT + min(max(round(ms / span * (plot - 1)), 0), plot - 1)

    for number, (turn, row) in enumerate(zip(figures, rows, strict=True)):
        y = top + number * _ROW_HEIGHT
        _text(image, 8, y + 3, f"{turn.index} {turn.speculative}")
        image[y + 2 : y + _ROW_HEIGHT - 2, _LEFT : _LEFT + plot] = _LANE
        playing = row.get("connect_playing")
        if playing is not None and playing > 0:
            image[y + 7 : y + _ROW_HEIGHT - 7, x_of(0) : x_of(playing)] = _GRID
        for name, _, colour in _WATERFALL:
            value = row.get(name)
            if value is not None:
                x = x_of(value)
                image[y + 2 : y + _ROW_HEIGHT - 2, max(x - 1, _LEFT) : x + 2] = colour
    for tick in range(0, span + 1, step):
        x = x_of(tick)
        image[axis : axis + 5, x] = _INK
        _text(image, x - 4, axis + 8, str(tick))
    image[axis, _LEFT : _LEFT + plot] = _INK
    x = _LEFT
    for _, label, colour in _WATERFALL:
        image[axis + 28 : axis + 38, x : x + 10] = colour
        x = _text(image, x + 16, axis + 28, label) + 16

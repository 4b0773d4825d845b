"""Streaming sample-rate conversion of mono int16 PCM, chunk by chunk as a stream delivers it.

A :class:`StreamResampler` is fed consecutive chunks with :meth:`~StreamResampler.process` and closed with
:meth:`~StreamResampler.flush`. The concatenated outputs do not depend on how the input was split, the
filter delay is compensated (output sample ``k`` is the signal at input time ``k * in_rate / out_rate``), and
a stream of ``n`` input samples yields ``n * out_rate / in_rate`` output samples in total, rounded half up (as
libsoxr does). After ``flush`` the resampler is ready for a new stream.

Two implementations:

- :class:`SoxrResampler` — libsoxr's streaming resampler (``soxr.ResampleStream``), run in float32 and rounded
  here: libsoxr's own int16 path adds TPDF dither, which makes the output differ from run to run and from one
  chunking to another, and turns digital silence into ±1 noise.
- :class:`NumpyResampler` — a polyphase windowed-sinc FIR (Kaiser window, ≥ 80 dB designed stopband) over the
  rational ratio ``out/in`` reduced by their gcd; it keeps the input history across chunks and computes every
  output sample with the same float32 operations whatever the chunking, so chunk boundaries are exact.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal, Protocol

import numpy as np
import soxr
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

from voicebridge.errors import AudioFormatError

__all__ = [
    "NumpyResampler",
    "PassthroughResampler",
    "ResamplerKind",
    "SoxrResampler",
    "StreamResampler",
    "make_resampler",
]

ResamplerKind = Literal["soxr", "numpy"]

_INT16_MIN = -32768.0
_INT16_MAX = 32767.0
_EMPTY = np.zeros(0, dtype=np.int16)
_EMPTY.setflags(write=False)

# The numpy filter: stopband from the lower Nyquist frequency up, passband up to 85 % of it (3.4 kHz at
# 8 kHz, the telephone band), 80 dB designed attenuation so the realised stopband stays well above 60 dB.
_PASSBAND_FRACTION = 0.85
_ATTENUATION_DB = 80.0
# Beyond this the polyphase bank (up-factor × taps per phase) grows past a few MB; no telephony pair needs it.
_MAX_UP_FACTOR = 1024
_MAX_DOWN_FACTOR = 1024


class StreamResampler(Protocol):
    """Converts a stream of mono int16 chunks from one sample rate to another."""

    @property
    def in_rate(self) -> int: ...

    @property
    def out_rate(self) -> int: ...

    def process(self, pcm: NDArray[np.int16]) -> NDArray[np.int16]:
        """Take the next chunk of input; return the output samples it completes (possibly none)."""
        ...

    def flush(self) -> NDArray[np.int16]:
        """End the stream: return the remaining output samples and reset for a new stream."""
        ...


def _round_to_int16(samples: NDArray[np.float32]) -> NDArray[np.int16]:
    np.rint(samples, out=samples)
    np.clip(samples, _INT16_MIN, _INT16_MAX, out=samples)
    return samples.astype(np.int16)


class _Rates:
    """The two rates of a resampler, refused unless positive."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        if in_rate <= 0 or out_rate <= 0:
            raise AudioFormatError(f"sample rates must be positive, got {in_rate} -> {out_rate}")
        self._in_rate = in_rate
        self._out_rate = out_rate

    @property
    def in_rate(self) -> int:
        return self._in_rate

    @property
    def out_rate(self) -> int:
        return self._out_rate


class PassthroughResampler(_Rates):
    """The identity, for a stream already at the target rate."""

    def __init__(self, rate: int) -> None:
        super().__init__(rate, rate)

    def process(self, pcm: NDArray[np.int16]) -> NDArray[np.int16]:
        return np.asarray(pcm, dtype=np.int16)

    def flush(self) -> NDArray[np.int16]:
        return _EMPTY


class SoxrResampler(_Rates):
    """libsoxr streaming resampler (``quality`` one of ``QQ LQ MQ HQ VHQ``; HQ is 20-bit, ≈ 120 dB)."""

    def __init__(self, in_rate: int, out_rate: int, quality: str = "HQ") -> None:
        super().__init__(in_rate, out_rate)
        try:
            self._stream = soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32", quality=quality)
        except ValueError as exc:
            raise AudioFormatError(f"soxr cannot resample {in_rate} -> {out_rate}: {exc}") from exc

    def process(self, pcm: NDArray[np.int16]) -> NDArray[np.int16]:
        # int16 values go through as float32 unscaled: the filter is linear and libsoxr's float path does not
        # clip, so scaling to ±1 and back would only cost two passes.
        out = self._stream.resample_chunk(np.asarray(pcm).astype(np.float32))
        return _round_to_int16(out)

    def flush(self) -> NDArray[np.int16]:
        out = _round_to_int16(self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True))
        self._stream.clear()
        return out


class _PolyphaseBank:
    """The FIR of a rational resampler, split into its ``up`` phases with taps ordered oldest → newest."""

    def __init__(self, up: int, down: int) -> None:
        self.up = up
        self.down = down
        # In units of gcd(in_rate, out_rate) Hz the input rate is `down`, the output rate `up`, and the
        # zero-stuffed rate the filter runs at is up·down.
        rate_up = float(up * down)
        stop = min(up, down) / 2.0
        passband = _PASSBAND_FRACTION * stop
        transition = (stop - passband) / rate_up
        # Kaiser's estimates of the length and window shape that reach the attenuation over the transition.
        length = math.ceil((_ATTENUATION_DB - 7.95) / (14.36 * transition)) + 1
        taps_per_phase = math.ceil(length / up)
        # An odd total length gives an integer group delay, so the delay can be removed exactly.
        length = taps_per_phase * up
        if length % 2 == 0:
            length -= 1
        beta = 0.1102 * (_ATTENUATION_DB - 8.7)
        cutoff = (passband + stop) / 2.0 / rate_up  # cycles per upsampled sample
        centre = (length - 1) / 2.0
        n = np.arange(length) - centre
        prototype = 2.0 * cutoff * np.sinc(2.0 * cutoff * n) * np.kaiser(length, beta)
        # Zero stuffing divides the signal's level by `up`; unit DC gain per phase restores it.
        prototype *= up / prototype.sum()
        padded = np.zeros(taps_per_phase * up)
        padded[:length] = prototype
        # Phase p holds h[p + j·up] for j = 0 … taps-1, the weight of input x[n - j]; reversed so that
        # column c multiplies x[n - taps + 1 + c] and each output is a dot product with a contiguous window.
        # float32 halves the memory each chunk gathers; its rounding (~1e-7 of full scale) stays far below
        # the int16 output's own.
        self.filters: NDArray[np.float32] = np.ascontiguousarray(
            padded.reshape(taps_per_phase, up).T[:, ::-1], dtype=np.float32
        )
        self.filters.setflags(write=False)
        self.taps = taps_per_phase
        self.delay = (length - 1) // 2


@lru_cache(maxsize=16)
def _polyphase_bank(up: int, down: int) -> _PolyphaseBank:
    return _PolyphaseBank(up, down)


class NumpyResampler(_Rates):
    """Polyphase windowed-sinc FIR resampler (linear phase, delay compensated, exact across chunk splits)."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        super().__init__(in_rate, out_rate)
        divisor = math.gcd(in_rate, out_rate)
        up, down = out_rate // divisor, in_rate // divisor
        if up > _MAX_UP_FACTOR or down > _MAX_DOWN_FACTOR:
            raise AudioFormatError(f"ratio {in_rate} -> {out_rate} reduces to {up}/{down}: too fine")
        self._bank = _polyphase_bank(up, down) if up != down else None
        self._reset()

    def _reset(self) -> None:
        taps = self._bank.taps if self._bank is not None else 1
        # The samples before the stream began are zeros.
        self._history = np.zeros(taps - 1, dtype=np.float32)
        self._first = -(taps - 1)  # stream index of _history[0]
        self._received = 0  # input samples taken so far
        self._produced = 0  # output samples returned so far

    def process(self, pcm: NDArray[np.int16]) -> NDArray[np.int16]:
        bank = self._bank
        if bank is None:
            return np.asarray(pcm, dtype=np.int16)
        samples = np.asarray(pcm)
        self._received += samples.shape[0]
        self._history = np.concatenate((self._history, samples.astype(np.float32)))
        # Output k needs input up to x[(k·down + delay) // up]: every k below `ready` has all of it.
        ready = -(-(self._received * bank.up - bank.delay) // bank.down)
        return self._emit(bank, ready)

    def flush(self) -> NDArray[np.int16]:
        bank = self._bank
        if bank is None:
            return _EMPTY
        total = (2 * self._received * bank.up + bank.down) // (2 * bank.down)
        if total > self._produced:
            # The last outputs see input that never came: pad with the zeros that follow the stream.
            last_needed = ((total - 1) * bank.down + bank.delay) // bank.up
            missing = last_needed + 1 - (self._first + self._history.shape[0])
            if missing > 0:
                self._history = np.concatenate((self._history, np.zeros(missing, dtype=np.float32)))
        out = self._emit(bank, total)
        self._reset()
        return out

    def _emit(self, bank: _PolyphaseBank, end: int) -> NDArray[np.int16]:
        """Compute the outputs from the next one up to ``end`` (exclusive) from the input history."""
        up, down, delay = bank.up, bank.down, bank.delay
        start = self._produced
        if end <= start:
            return _EMPTY
        windows = sliding_window_view(self._history, bank.taps)
        offset = bank.taps - 1 + self._first  # row of `windows` whose newest sample is x[n] is n - offset
        # einsum runs each output's dot product as one pass over its taps, with no temporary the size of
        # outputs × taps; the order of that pass does not depend on how many outputs are computed at once.
        if up == 1:
            first_row = start * down + delay - offset
            rows = windows[first_row : first_row + (end - start - 1) * down + 1 : down]
            out = np.einsum("ij,j->i", rows, bank.filters[0])
        else:
            position = np.arange(start, end, dtype=np.int64) * down + delay
            newest = position // up
            out = np.einsum("ij,ij->i", windows[newest - offset], bank.filters[position - newest * up])
        self._produced = end
        keep_from = (end * down + delay) // up - (bank.taps - 1)
        drop = keep_from - self._first
        if drop > 0:
            self._history = self._history[drop:]
            self._first = keep_from
        return _round_to_int16(out)


def make_resampler(in_rate: int, out_rate: int, kind: ResamplerKind = "soxr") -> StreamResampler:
    """A streaming resampler ``in_rate → out_rate``; the identity when the rates are equal.

    >>> r = make_resampler(24000, 8000)
    >>> len(r.process(np.zeros(480, dtype=np.int16))) + len(r.flush())
    160
    """
    if in_rate == out_rate:
        return PassthroughResampler(in_rate)
    if kind == "soxr":
        return SoxrResampler(in_rate, out_rate)
    if kind == "numpy":
        return NumpyResampler(in_rate, out_rate)
    raise AudioFormatError(f"unknown resampler kind {kind!r}")

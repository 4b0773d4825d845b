"""How a deployment's callers' turns ended, from the call records it wrote: ``voicebridge records turn-ends``.

The end-of-turn policy trades two figures (docs/benchmarks.md, "End of turn"): how long after the caller stops a turn
ends, and how often a caller who was not done is cut off. The benchmark can only measure them on synthetic voices;
the records measure them on the deployment's own callers. Per language and per who ended the turns (Ink's turns
endpoint, or the product on the manual endpoint):

- **stop → end**: each caller's turn's ``latencyMs.turnEnd``, from the last voiced frame (Connect's clock) to the
  turn's end;
- **went on**: of the turns followed by another spoken one, those after which the caller's voice came back within
  ``within_ms`` of the end (``nextVoiceAfterMs``): the caller was not done — a pause mid-sentence cut off, or words
  added at once. No reply can be heard and answered that soon, so these are the cut-offs, as far as audio can tell.

A source is a record file, a folder of them (every ``*.json`` below it), or ``s3://bucket/prefix`` (the stack's
``CallRecordBucket``; records are under ``records/YYYY/MM/DD/``). A file that is not a call record is named on
standard error and skipped.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from voicebridge.call.record import CALLER_WENT_ON_MS, went_on
from voicebridge.store.turns import CUSTOMER

DEFAULT_LANGUAGE = "(default)"
"""A record whose contact named no language: the deployment's ``INK_LANGUAGE``."""


class NotARecord(ValueError):
    """A source that holds no call record."""


@dataclass(frozen=True)
class TurnEnds:
    """One language's caller turns ended by one side."""

    language: str
    ended_by: str
    calls: int
    turns: int
    """Spoken caller turns with a stop → end time (backchannels and typed turns left out)."""
    median_ms: float | None
    p90_ms: float | None
    followed: int
    """Of them, those followed by another spoken turn: the ones whose caller could have gone on."""
    went_on: int

    @property
    def went_on_rate(self) -> float | None:
        return self.went_on / self.followed if self.followed else None


def summarise(records: Iterable[Mapping[str, Any]], within_ms: float = CALLER_WENT_ON_MS) -> list[TurnEnds]:
    """The records' caller turns, by language and by who ended them, in that order."""
    stops: dict[tuple[str, str], list[float]] = {}
    after: dict[tuple[str, str], list[bool]] = {}
    calls: dict[tuple[str, str], set[str]] = {}
    for record in records:
        language = str((record.get("listening") or {}).get("language") or DEFAULT_LANGUAGE)
        for turn in record.get("turns", []):
            if not isinstance(turn, Mapping):
                continue
            latency = (turn.get("latencyMs") or {}).get("turnEnd")
            if turn.get("track") != CUSTOMER or turn.get("backchannel") or latency is None:
                continue
            key = (language, str(turn.get("endedBy") or "ink"))
            stops.setdefault(key, []).append(float(latency))
            calls.setdefault(key, set()).add(str(record.get("recordId") or record.get("contactId")))
            verdict = went_on(turn, within_ms)
            if verdict is not None:
                after.setdefault(key, []).append(verdict)
    return [
        TurnEnds(
            language=language,
            ended_by=ended_by,
            calls=len(calls[(language, ended_by)]),
            turns=len(times),
            median_ms=statistics.median(times),
            p90_ms=_p90(times),
            followed=len(after.get((language, ended_by), [])),
            went_on=sum(after.get((language, ended_by), [])),
        )
        for (language, ended_by), times in sorted(stops.items())
    ]


def _p90(values: list[float]) -> float | None:
    """The 90th percentile (inclusive method); None for fewer than two values."""
    return statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else None


def as_table(rows: list[TurnEnds], within_ms: float) -> str:
    """The summary as aligned text lines."""
    header = ("language", "ended by", "calls", "turns", "stop → end median", "p90", f"went on (< {within_ms:g} ms)")
    lines = [header]
    for row in rows:
        rate = "–" if row.went_on_rate is None else f"{row.went_on} of {row.followed} ({row.went_on_rate:.1%})"
        lines.append(
            (
                row.language,
                row.ended_by,
                str(row.calls),
                str(row.turns),
                _ms(row.median_ms),
                _ms(row.p90_ms),
                rate,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def as_json(rows: list[TurnEnds], within_ms: float) -> dict[str, Any]:
    return {"within_ms": within_ms, "rows": [{**asdict(row), "went_on_rate": row.went_on_rate} for row in rows]}


def read_records(
    sources: Iterable[str], s3: Callable[[], Any], skipped: Callable[[str, str], None]
) -> Iterator[Mapping[str, Any]]:
    """Every call record the sources hold; each file that is not one is passed to ``skipped`` (where, why)."""
    for source in sources:
        if source.startswith("s3://"):
            yield from _s3_records(source, s3(), skipped)
            continue
        path = Path(source)
        if not path.exists():
            raise NotARecord(f"{source}: no such file or folder")
        for file in sorted(path.rglob("*.json")) if path.is_dir() else [path]:
            try:
                yield _record(file.read_bytes())
            except (NotARecord, OSError) as exc:
                skipped(str(file), str(exc))


def _s3_records(uri: str, s3: Any, skipped: Callable[[str, str], None]) -> Iterator[Mapping[str, Any]]:
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            key = str(item["Key"])
            if not key.endswith(".json"):
                continue
            try:
                yield _record(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
            except NotARecord as exc:
                skipped(f"s3://{bucket}/{key}", str(exc))


def _record(body: bytes) -> Mapping[str, Any]:
    try:
        record = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotARecord(f"not JSON ({exc})") from None
    if not (isinstance(record, dict) and isinstance(record.get("turns"), list) and "contactId" in record):
        raise NotARecord("not a call record (no contactId and turns)")
    return record

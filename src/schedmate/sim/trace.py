"""Job traces: loaders for the public GPU-cluster traces and a native CSV/JSONL format.

Every loader yields `TraceJob`s sorted by submit time (seconds from the trace start) and
raises InputError naming the file and line of a malformed row: nothing is dropped
silently. Rows a trace marks as never started (zero duration) are kept and counted.

Native format (CSV with a header, or JSONL), one job per row:
    job_id, submit_s, duration_s, gpus [, vc, user, name, share_class, status]
(`share_class` 0/1/2 as Lucid's sharing labels; `status` `failed` marks a failed job).

Interference classes where a trace says how much of a GPU a job uses (Alibaba 2023's
`gpu_milli`): at most half a GPU -> 0 (share freely), more than half -> 1, a whole GPU or
more -> 2 (do not share); CPU-only pods -> 0. Elsewhere unknown (-1): the engine uses the
default mid class 1.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from schedmate.core.errors import InputError
from schedmate.inputs import MAX_TABLE_BYTES, open_regular

MAX_LINE_BYTES = 1024 * 1024  # one trace row; a longer line is not a trace

__all__ = ["TraceJob", "load_trace", "TRACE_FORMATS", "synthetic_trace", "DEFAULT_CLUSTERS"]


@dataclass(frozen=True, slots=True)
class TraceJob:
    job_id: str
    submit_s: float
    duration_s: float
    gpus: int
    vc: str = "default"
    user: str = ""
    name: str = ""
    share: int = -1  # interference class (0 share freely, 1 with care, 2 do not share); -1: unknown
    failed: bool = False  # the trace records that the job ended in a failure


# documented default cluster per shipped trace: {vc: gpus}; None = read from the trace's config
DEFAULT_CLUSTERS: dict[str, str] = {
    "philly": "philly/vc_config.csv (135 nodes x 8 GPUs, per-VC quotas)",
    "helios": "vcvGl=20 nodes, vcvlY=2 nodes (x 8 GPUs), as in the slice's header",
    "alibaba": "one pool of 1,213 GPU nodes' GPUs from openb_node_list_gpu_node.csv (fractional GPUs rounded up)",
    "rfold": "one pool sized to the largest job x 4 (set --cluster for real studies)",
    "native": "one pool sized to the largest job x 4 (set --cluster)",
}


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-empty text lines with their 1-based numbers, read through the input-limits layer:
    a regular file only (never blocks on a FIFO or a device), bounded lines, no binary."""
    raw = open_regular(path, what="trace", max_bytes=MAX_TABLE_BYTES)
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="") as fh:
        no = 0
        while True:
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            no += 1
            if len(line) > MAX_LINE_BYTES:
                raise InputError(f"{path}:{no}: line longer than {MAX_LINE_BYTES:,} characters: not a trace")
            if "\x00" in line:
                raise InputError(f"{path}:{no}: binary data (NUL byte): not a text trace")
            if line.strip():
                yield no, line


def _split(path: Path, no: int, line: str) -> list[str]:
    if '"' not in line:  # the common case: no quoting, a plain split is the CSV parse
        return line.rstrip("\r\n").split(",")
    try:
        return next(csv.reader([line]))
    except (csv.Error, StopIteration) as exc:
        raise InputError(f"{path}:{no}: malformed CSV: {exc}") from None


def _rows(path: Path, *, hash_header: bool = False) -> Iterator[tuple[int, dict[str, str]]]:
    """CSV rows with their 1-based line numbers; '#' comment lines are skipped (with
    `hash_header`, the first line is the header even if it starts with '#', as RFold's)."""
    lines = _lines(path)
    header: list[str] | None = None
    for no, line in lines:
        if line.startswith("#") and not (hash_header and header is None):
            continue
        if header is None:
            header = [h.strip().lstrip("#").strip() for h in _split(path, no, line)]
            continue
        vals = _split(path, no, line)
        if len(vals) != len(header):
            raise InputError(f"{path}:{no}: expected {len(header)} columns, got {len(vals)}")
        yield no, dict(zip(header, vals, strict=True))
    if header is None:
        raise InputError(f"{path}: empty trace")


def _num(path: Path, no: int, row: dict[str, str], key: str, *, allow_empty: bool = False) -> float:
    raw = row.get(key)
    if raw is None:
        raise InputError(f"{path}:{no}: missing column '{key}'")
    raw = raw.strip()
    if raw == "" and allow_empty:
        return math.nan
    try:
        v = float(raw)
    except ValueError:
        raise InputError(f"{path}:{no}: column '{key}' is not a number: {raw!r}") from None
    if not math.isfinite(v) or v < 0:
        raise InputError(f"{path}:{no}: column '{key}' must be a finite number >= 0, got {raw!r}")
    return v


_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2}):(\d{2})")
_EPOCH_DAY = datetime(1970, 1, 1).toordinal()


def _utc_seconds(text: str, days: dict[str, int]) -> float:
    """'YYYY-mm-dd HH:MM:SS' as UTC seconds: naive timestamps are never read in the machine's
    time zone (a DST change would move jobs by an hour). Dates are parsed once (cache)."""
    m = _STAMP.fullmatch(text.strip())
    if m is None:
        raise ValueError(text)
    date, hh, mm, ss = m.groups()
    day = days.get(date)
    if day is None:
        day = days[date] = datetime.strptime(date, "%Y-%m-%d").toordinal() - _EPOCH_DAY
    h, mi, se = int(hh), int(mm), int(ss)
    if h > 23 or mi > 59 or se > 59:
        raise ValueError(text)
    return float(day * 86400 + h * 3600 + mi * 60 + se)


def _philly(path: Path) -> Iterator[TraceJob]:
    days: dict[str, int] = {}
    for no, row in _rows(path):
        try:
            ts = _utc_seconds(row["timestamp"], days)
        except (KeyError, ValueError):
            raise InputError(
                f"{path}:{no}: bad timestamp {row.get('timestamp')!r} (want YYYY-mm-dd HH:MM:SS)"
            ) from None
        yield TraceJob(
            f"philly-{no}",
            ts,
            _num(path, no, row, "duration"),
            int(_num(path, no, row, "num_gpus")),
            row.get("cluster", "default").strip() or "default",
        )


def _helios(path: Path) -> Iterator[TraceJob]:
    for no, row in _rows(path):
        yield TraceJob(
            row.get("job_id", str(no)),
            _num(path, no, row, "submit_time") / 1e6,
            _num(path, no, row, "duration_s"),
            int(_num(path, no, row, "num_chips")),
            row.get("tenant", "default") or "default",
            row.get("user", ""),
            row.get("class", ""),
            failed=row.get("final_status", "").strip().upper() == "FAILED",
        )


def _alibaba(path: Path) -> Iterator[TraceJob]:
    for no, row in _rows(path):
        created = _num(path, no, row, "creation_time")
        deleted = _num(path, no, row, "deletion_time")
        scheduled = _num(path, no, row, "scheduled_time", allow_empty=True)
        start = created if math.isnan(scheduled) else scheduled
        gpus = int(_num(path, no, row, "num_gpu"))
        milli = _num(path, no, row, "gpu_milli", allow_empty=True)
        if gpus == 0 and not math.isnan(milli) and milli > 0:
            gpus = 1
        yield TraceJob(
            row.get("name", str(no)),
            created,
            max(0.0, deleted - start),
            gpus,
            row.get("qos", "default") or "default",
            share=_share_from_fraction(gpus, milli),
            failed=row.get("pod_phase", "").strip() == "Failed",
        )


def _share_from_fraction(gpus: int, milli: float) -> int:
    if gpus == 0:
        return 0
    if gpus > 1 or math.isnan(milli) or milli >= 1000:
        return 2
    return 0 if milli <= 500 else 1


def _rfold(path: Path) -> Iterator[TraceJob]:
    for no, row in _rows(path, hash_header=True):
        yield TraceJob(
            row.get("job id", str(no)).strip(),
            _num(path, no, row, "arrival time (sec)"),
            _num(path, no, row, "duration (sec)"),
            max(1, math.ceil(_num(path, no, row, "size"))),
        )


def _native(path: Path) -> Iterator[TraceJob]:
    if path.suffix in (".jsonl", ".ndjson"):
        for no, line in _lines(path):
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                raise InputError(f"{path}:{no}: not valid JSON") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{no}: expected a JSON object")
            row = {k: str(v) for k, v in obj.items()}
            yield _native_row(path, no, row)
        return
    for no, row in _rows(path):
        yield _native_row(path, no, row)


def _native_row(path: Path, no: int, row: dict[str, str]) -> TraceJob:
    gpus = _num(path, no, row, "gpus")
    if gpus != int(gpus) or gpus < 1:
        raise InputError(f"{path}:{no}: 'gpus' must be a positive integer, got {row['gpus']!r}")
    share = (row.get("share_class") or "").strip()
    if share not in ("", "0", "1", "2"):
        raise InputError(f"{path}:{no}: 'share_class' must be 0, 1 or 2, got {share!r}")
    return TraceJob(
        row.get("job_id") or str(no),
        _num(path, no, row, "submit_s"),
        _num(path, no, row, "duration_s"),
        int(gpus),
        row.get("vc") or "default",
        row.get("user", ""),
        row.get("name", ""),
        share=int(share) if share else -1,
        failed=(row.get("status") or "").strip().lower() == "failed",
    )


TRACE_FORMATS: dict[str, Callable[[Path], Iterator[TraceJob]]] = {
    "philly": _philly,
    "helios": _helios,
    "alibaba": _alibaba,
    "rfold": _rfold,
    "native": _native,
}


def load_trace(path: str | Path, fmt: str, *, limit: int | None = None) -> list[TraceJob]:
    """Jobs of a trace, submit times re-based to 0 and sorted; `limit` keeps the first N."""
    p = Path(path)
    try:
        reader = TRACE_FORMATS[fmt]
    except KeyError:
        raise InputError(f"unknown trace format '{fmt}'; valid: {', '.join(TRACE_FORMATS)}") from None
    if limit is not None and limit < 1:
        raise InputError(f"limit must be >= 1, got {limit}")
    jobs = sorted(reader(p), key=lambda j: j.submit_s)  # stable: equal submits keep the trace's order
    if not jobs:
        raise InputError(f"{p}: no jobs")
    if limit is not None:
        jobs = jobs[:limit]
    t0 = jobs[0].submit_s
    if t0 == 0:
        return jobs
    return [
        TraceJob(j.job_id, j.submit_s - t0, j.duration_s, j.gpus, j.vc, j.user, j.name, j.share, j.failed)
        for j in jobs
    ]


def synthetic_trace(
    n: int, *, seed: int = 0, vcs: Iterable[str] = ("a", "b"), mean_gap_s: float = 60.0, users: int = 8
) -> list[TraceJob]:
    """Heavy-tailed durations, power-of-two GPU counts, Poisson arrivals (tests, demo)."""
    rng = random.Random(seed)
    vcs = list(vcs)
    t = 0.0
    out = []
    for i in range(n):
        t += rng.expovariate(1.0 / mean_gap_s)
        dur = math.exp(rng.gauss(7.0, 1.6))
        gpus = rng.choices([1, 2, 4, 8, 16], [50, 15, 15, 15, 5])[0]
        out.append(TraceJob(f"j{i}", t, round(dur, 1), gpus, rng.choice(vcs), f"u{rng.randrange(users)}"))
    return out

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
from operator import itemgetter
from pathlib import Path

from schedmate.core.errors import InputError
from schedmate.inputs import MAX_TABLE_BYTES, open_regular
from schedmate.sim._gc import gc_paused

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


# Lines are read in blocks of this many characters: a line that ends inside one block is
# shorter than MAX_LINE_BYTES by construction, so only lines that span blocks are measured.
_BLOCK_CHARS = MAX_LINE_BYTES


def _too_long(path: Path, no: int) -> InputError:
    return InputError(f"{path}:{no}: line longer than {MAX_LINE_BYTES:,} characters: not a trace")


def _binary(path: Path, no: int) -> InputError:
    return InputError(f"{path}:{no}: binary data (NUL byte): not a text trace")


def _blocks(path: Path) -> Iterator[tuple[int, list[str]]]:
    """All text lines (blank ones too, without their line ends) in blocks, each with the
    1-based number of its first line, read through the input-limits layer: a regular file
    only (never blocks on a FIFO or a device), bounded lines, no binary. A line that breaks a
    limit raises after the lines before it were handed out, as a line-by-line reader would.
    `\\n`, `\\r\\n` and `\\r` end a line (universal newlines); one block is at most
    `_BLOCK_CHARS` characters plus the part of a line carried over from the block before."""
    raw = open_regular(path, what="trace", max_bytes=MAX_TABLE_BYTES)
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as fh:
        no = 1  # number of the first line of the next block
        carry = ""  # the start of a line the last block cut
        while True:
            chunk = fh.read(_BLOCK_CHARS)
            if not chunk:
                break
            text = carry + chunk if carry else chunk
            lines = text.split("\n")
            carry = lines.pop()  # "" when the chunk ended with a line end
            if lines and len(lines[0]) >= MAX_LINE_BYTES:  # with its line end, over the limit
                raise _too_long(path, no)
            if "\x00" in text:
                k = next((i for i, line in enumerate(lines) if "\x00" in line), len(lines))
                if k < len(lines):
                    if k:
                        yield no, lines[:k]
                    raise _binary(path, no + k)
            if lines:
                yield no, lines
                no += len(lines)
            if len(carry) > MAX_LINE_BYTES:
                raise _too_long(path, no)
        if carry:  # the last line, without a line end
            if "\x00" in carry:
                raise _binary(path, no)
            yield no, [carry]


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-empty text lines with their 1-based numbers (`_blocks`)."""
    for first, block in _blocks(path):
        for no, line in enumerate(block, first):
            if line.strip():
                yield no, line


def _split(path: Path, no: int, line: str) -> list[str]:
    if '"' not in line:  # the common case: no quoting, a plain split is the CSV parse
        return line.split(",")
    try:
        return next(csv.reader([line + "\n"]))
    except (csv.Error, StopIteration) as exc:
        raise InputError(f"{path}:{no}: malformed CSV: {exc}") from None


def _header(path: Path, no: int, line: str) -> list[str]:
    return [h.strip().lstrip("#").strip() for h in _split(path, no, line)]


def _width(path: Path, no: int, header: list[str], vals: list[str]) -> InputError:
    return InputError(f"{path}:{no}: expected {len(header)} columns, got {len(vals)}")


def _rows(path: Path, *, hash_header: bool = False) -> Iterator[tuple[int, dict[str, str]]]:
    """CSV rows with their 1-based line numbers; '#' comment lines are skipped (with
    `hash_header`, the first line is the header even if it starts with '#', as RFold's)."""
    header: list[str] | None = None
    for no, line in _lines(path):
        if line.startswith("#") and not (hash_header and header is None):
            continue
        if header is None:
            header = _header(path, no, line)
            continue
        vals = _split(path, no, line)
        if len(vals) != len(header):
            raise _width(path, no, header, vals)
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
_SECONDS = {f":{s:02d}": s for s in range(60)}  # the ':SS' end of a stamp


def _utc_seconds(text: str, days: dict[str, int], minutes: dict[str, int]) -> float:
    """'YYYY-mm-dd HH:MM:SS' as UTC seconds: naive timestamps are never read in the machine's
    time zone (a DST change would move jobs by an hour). Each date ('YYYY-mm-dd') and hour
    and minute (' HH:MM') is checked and parsed once, into seconds (the caches; `_philly`
    looks the parts of a stamp up directly and calls this only for a part not seen yet)."""
    m = _STAMP.fullmatch(text.strip())
    if m is None:
        raise ValueError(text)
    date, hh, mm, ss = m.groups()
    h, mi, se = int(hh), int(mm), int(ss)
    if h > 23 or mi > 59 or se > 59:
        raise ValueError(text)
    day = days.get(date)
    if day is None:
        day = days[date] = (datetime.strptime(date, "%Y-%m-%d").toordinal() - _EPOCH_DAY) * 86400
    minutes[f" {hh}:{mm}"] = h * 3600 + mi * 60
    return float(day + h * 3600 + mi * 60 + se)


# a job as the readers yield it: the fields of TraceJob, in order (one TraceJob is built per
# job, after sorting and re-basing, instead of one per reader and another per re-basing)
_Row = tuple[str, float, float, int, str, str, str, int, bool]
_PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")


def _philly(path: Path) -> Iterator[_Row]:
    """Philly (timestamp, duration, num_gpus, gpu_time, cluster). The columns are found once
    in the header and each line is split and converted directly (no dict per row); a stamp
    whose date, ' HH:MM' and ':SS' are all known (their concatenation is then a valid stamp)
    costs three look-ups. Anything else goes through the general checks, which name it."""
    days: dict[str, int] = {}
    minutes: dict[str, int] = {}
    header: list[str] | None = None
    i_ts = i_d = i_g = i_c = -1
    for first, block in _blocks(path):
        for no, line in enumerate(block, first):
            if not line or line[0] == "#" or line.isspace():
                continue
            if header is None:
                header = _header(path, no, line)
                col = {h: i for i, h in enumerate(header)}  # a repeated name: the last, as a dict
                i_ts, i_d, i_g, i_c = (col.get(c, -1) for c in _PHILLY_COLUMNS)
                continue
            vals = line.split(",") if '"' not in line else _split(path, no, line)
            if len(vals) != len(header):
                raise _width(path, no, header, vals)
            if i_ts < 0 or i_d < 0 or i_g < 0:
                yield _philly_row(path, no, dict(zip(header, vals, strict=True)), days, minutes)
                continue
            t = vals[i_ts].strip()
            day = days.get(t[:10])
            hm = minutes.get(t[10:16])
            sec = _SECONDS.get(t[16:])
            if day is None or hm is None or sec is None:
                try:
                    ts = _utc_seconds(t, days, minutes)
                except ValueError:
                    raise _bad_stamp(path, no, vals[i_ts]) from None
            else:
                ts = float(day + hm + sec)
            try:
                dur = float(vals[i_d])  # float() ignores surrounding white space, as _num
                gpus = float(vals[i_g])
            except ValueError:
                dur = gpus = math.nan
            if not (0 <= dur < math.inf and 0 <= gpus < math.inf):
                row = dict(zip(header, vals, strict=True))
                dur = _num(path, no, row, "duration")
                gpus = _num(path, no, row, "num_gpus")
            vc = (vals[i_c].strip() or "default") if i_c >= 0 else "default"
            yield f"philly-{no}", ts, dur, int(gpus), vc, "", "", -1, False
    if header is None:
        raise InputError(f"{path}: empty trace")


def _bad_stamp(path: Path, no: int, raw: str | None) -> InputError:
    return InputError(f"{path}:{no}: bad timestamp {raw!r} (want YYYY-mm-dd HH:MM:SS)")


def _philly_row(
    path: Path, no: int, row: dict[str, str], days: dict[str, int], minutes: dict[str, int]
) -> _Row:
    """One Philly row by name (the header lacks a column: this raises, naming it)."""
    try:
        ts = _utc_seconds(row["timestamp"], days, minutes)
    except (KeyError, ValueError):
        raise _bad_stamp(path, no, row.get("timestamp")) from None
    return (
        f"philly-{no}",
        ts,
        _num(path, no, row, "duration"),
        int(_num(path, no, row, "num_gpus")),
        row.get("cluster", "default").strip() or "default",
        "",
        "",
        -1,
        False,
    )


def _helios(path: Path) -> Iterator[_Row]:
    for no, row in _rows(path):
        yield (
            row.get("job_id", str(no)),
            _num(path, no, row, "submit_time") / 1e6,
            _num(path, no, row, "duration_s"),
            int(_num(path, no, row, "num_chips")),
            row.get("tenant", "default") or "default",
            row.get("user", ""),
            row.get("class", ""),
            -1,
            row.get("final_status", "").strip().upper() == "FAILED",
        )


def _alibaba(path: Path) -> Iterator[_Row]:
    for no, row in _rows(path):
        created = _num(path, no, row, "creation_time")
        deleted = _num(path, no, row, "deletion_time")
        scheduled = _num(path, no, row, "scheduled_time", allow_empty=True)
        start = created if math.isnan(scheduled) else scheduled
        gpus = int(_num(path, no, row, "num_gpu"))
        milli = _num(path, no, row, "gpu_milli", allow_empty=True)
        if gpus == 0 and not math.isnan(milli) and milli > 0:
            gpus = 1
        yield (
            row.get("name", str(no)),
            created,
            max(0.0, deleted - start),
            gpus,
            row.get("qos", "default") or "default",
            "",
            "",
            _share_from_fraction(gpus, milli),
            row.get("pod_phase", "").strip() == "Failed",
        )


def _share_from_fraction(gpus: int, milli: float) -> int:
    if gpus == 0:
        return 0
    if gpus > 1 or math.isnan(milli) or milli >= 1000:
        return 2
    return 0 if milli <= 500 else 1


def _rfold(path: Path) -> Iterator[_Row]:
    for no, row in _rows(path, hash_header=True):
        yield (
            row.get("job id", str(no)).strip(),
            _num(path, no, row, "arrival time (sec)"),
            _num(path, no, row, "duration (sec)"),
            max(1, math.ceil(_num(path, no, row, "size"))),
            "default",
            "",
            "",
            -1,
            False,
        )


def _native(path: Path) -> Iterator[_Row]:
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


def _native_row(path: Path, no: int, row: dict[str, str]) -> _Row:
    gpus = _num(path, no, row, "gpus")
    if gpus != int(gpus) or gpus < 1:
        raise InputError(f"{path}:{no}: 'gpus' must be a positive integer, got {row['gpus']!r}")
    share = (row.get("share_class") or "").strip()
    if share not in ("", "0", "1", "2"):
        raise InputError(f"{path}:{no}: 'share_class' must be 0, 1 or 2, got {share!r}")
    return (
        row.get("job_id") or str(no),
        _num(path, no, row, "submit_s"),
        _num(path, no, row, "duration_s"),
        int(gpus),
        row.get("vc") or "default",
        row.get("user", ""),
        row.get("name", ""),
        int(share) if share else -1,
        (row.get("status") or "").strip().lower() == "failed",
    )


_READERS: dict[str, Callable[[Path], Iterator[_Row]]] = {
    "philly": _philly,
    "helios": _helios,
    "alibaba": _alibaba,
    "rfold": _rfold,
    "native": _native,
}


def _jobs_of(reader: Callable[[Path], Iterator[_Row]]) -> Callable[[Path], Iterator[TraceJob]]:
    def read(path: Path) -> Iterator[TraceJob]:
        return (TraceJob(*r) for r in reader(path))

    return read


# format -> reader of a trace's jobs in file order (submit times as the trace has them)
TRACE_FORMATS: dict[str, Callable[[Path], Iterator[TraceJob]]] = {
    fmt: _jobs_of(reader) for fmt, reader in _READERS.items()
}


def load_trace(path: str | Path, fmt: str, *, limit: int | None = None) -> list[TraceJob]:
    """Jobs of a trace, submit times re-based to 0 and sorted; `limit` keeps the first N."""
    p = Path(path)
    try:
        reader = _READERS[fmt]
    except KeyError:
        raise InputError(f"unknown trace format '{fmt}'; valid: {', '.join(TRACE_FORMATS)}") from None
    if limit is not None and limit < 1:
        raise InputError(f"limit must be >= 1, got {limit}")
    # the rows are acyclic: a paused collector cannot leak, and it would otherwise traverse
    # the growing list again and again (a third of the loader's time on Philly)
    with gc_paused():
        rows = sorted(reader(p), key=itemgetter(1))  # stable: equal submits keep the trace's order
        if not rows:
            raise InputError(f"{p}: no jobs")
        _unique_ids(p, rows)
        if limit is not None:
            rows = rows[:limit]
        t0 = rows[0][1]
        if t0 == 0:
            return [TraceJob(*r) for r in rows]
        return [TraceJob(i, s - t0, d, g, vc, u, n, sh, f) for i, s, d, g, vc, u, n, sh, f in rows]


def _unique_ids(path: Path, rows: list[_Row]) -> None:
    """A job id names one job: per-job results and what-if answers are keyed by it."""
    seen: set[str] = set()
    for job_id, *_ in rows:
        if job_id in seen:
            n = len(rows) - len({r[0] for r in rows})
            more = f" (and {n - 1:,} more repeated rows)" if n > 1 else ""
            raise InputError(
                f"{path}: job id '{job_id[:80]}' appears more than once{more}: job ids must be unique"
            )
        seen.add(job_id)


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

"""Slurm's own start-time estimates: `squeue --start` read as `SlurmStart`s.

The backfill scheduler writes an expected start time into every pending job it has
considered (its plan, built from time limits); other jobs show `N/A`. `whatif --live`
prints these beside its own predictions. We ask for a fixed, `|`-separated format so the
parse does not depend on column widths; the default table (`squeue --start` as users type
it) is read too, so a saved copy of either can be parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from schedmate.core.errors import BackendError, InputError

if TYPE_CHECKING:
    from schedmate.integrations.slurm.backend import SlurmBackend

__all__ = [
    "SlurmStart",
    "START_FORMAT",
    "check_partition",
    "parse_squeue_start",
    "squeue_start_args",
    "read_slurm_starts",
]

START_FORMAT = "%i|%S|%P|%r"
_FIELDS = ("JOBID", "START_TIME", "PARTITION", "REASON")
_JOB_ID = re.compile(r"^\d{1,12}(?:_(?:\d{1,9}|\[[\d,\-%]{1,200}\]))?(?:\+\d{1,6})?$")
_PARTITION = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
# what squeue prints when it has no estimate
_NO_ESTIMATE = frozenset({"", "N/A", "NONE", "UNKNOWN", "(NULL)", "0"})
_REASON = re.compile(r"\s(\([^()]*\))\s*$")
_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S")


@dataclass(frozen=True, slots=True)
class SlurmStart:
    """One pending job as `squeue --start` shows it; `start_time` is POSIX seconds, None when
    Slurm has no estimate (N/A)."""

    job_id: str
    start_time: float | None
    partition: str | None = None
    reason: str | None = None


def check_partition(name: str) -> str:
    """A partition name safe to pass to a Slurm command (else a one-line InputError)."""
    if not _PARTITION.match(name):
        raise InputError(f"--partition: {name[:40]!r} is not a Slurm partition name")
    return name


def squeue_start_args(partition: str | None = None) -> list[str]:
    """The argument list that asks slurmctld for its expected start times."""
    args = ["squeue", "--start", "--noheader", "--states=PENDING", f"--format={START_FORMAT}"]
    if partition is not None:
        args.append(f"--partition={check_partition(partition)}")
    return args


def _start_time(text: str, where: str) -> float | None:
    word = text.strip()
    if word.upper() in _NO_ESTIMATE:
        return None
    if word.isdigit():  # SLURM_TIME_FORMAT=%s
        return float(word)
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(word, fmt).timestamp()  # Slurm prints local time
        except ValueError:
            continue
    raise InputError(f"{where}: start time {word[:40]!r} not understood")


def _row(job_id: str, start: str, partition: str, reason: str, where: str) -> SlurmStart:
    job_id = job_id.strip()
    if not _JOB_ID.match(job_id):
        raise InputError(f"{where}: {job_id[:40]!r} is not a job id")
    part = partition.strip() or None
    why = reason.strip().strip("()") or None
    return SlurmStart(job_id, _start_time(start, where), part, None if why == "None" else why)


def parse_squeue_start(text: str) -> dict[str, SlurmStart]:
    """`squeue --start` output -> job id -> SlurmStart.

    Reads our `--format=%i|%S|%P|%r` (with or without its header) and the default table
    (`JOBID PARTITION NAME USER ST START_TIME NODES SCHEDNODES NODELIST(REASON)`, columns
    found by the header's names). A line that fits neither is an InputError naming it."""
    out: dict[str, SlurmStart] = {}
    columns: dict[str, int] | None = None
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        where = f"squeue --start line {no}"
        if "|" in line:
            parts = line.split("|")
            if len(parts) != len(_FIELDS):
                raise InputError(f"{where}: {len(parts)} fields, expected {len(_FIELDS)} ({START_FORMAT})")
            if parts[0].strip().upper() == "JOBID":
                continue
            rec = _row(parts[0], parts[1], parts[2], parts[3], where)
        else:
            words = line.split()
            if words[0].upper() == "JOBID":
                columns = {w.upper(): i for i, w in enumerate(words)}
                if "START_TIME" not in columns:
                    raise InputError(f"{where}: a header without START_TIME")
                continue
            if columns is None:
                raise InputError(f"{where}: neither '{START_FORMAT}' fields nor a table row after a header")
            rec = _table_row(line, columns, where)
        out[rec.job_id] = rec
    return out


def _table_row(line: str, columns: dict[str, int], where: str) -> SlurmStart:
    """One row of the default table; the reason (last, in parentheses) and NAME may hold spaces."""
    n = len(columns)
    reason = ""
    if "REASON" in max(columns, key=columns.__getitem__):
        m = _REASON.search(line)
        if m is None:
            raise InputError(f"{where}: no (reason) at the end of the row")
        reason, line, n = m.group(1), line[: m.start()], n - 1
    words = line.split()
    if len(words) < n:
        raise InputError(f"{where}: {len(words)} columns, expected {n}")
    if len(words) > n:  # a job name with spaces
        extra = len(words) - n
        at = columns.get("NAME", 2)
        words = [*words[:at], " ".join(words[at : at + extra + 1]), *words[at + extra + 1 :]]
    return _row(
        words[columns.get("JOBID", 0)],
        words[columns["START_TIME"]],
        words[columns["PARTITION"]] if "PARTITION" in columns else "",
        reason,
        where,
    )


def read_slurm_starts(backend: SlurmBackend, partition: str | None = None) -> dict[str, SlurmStart]:
    """Ask slurmctld (through the backend's timeouts and environment) for its expected starts."""
    text = backend.run(squeue_start_args(partition))
    try:
        return parse_squeue_start(text)
    except InputError as exc:
        raise BackendError(f"slurm: {exc}") from None

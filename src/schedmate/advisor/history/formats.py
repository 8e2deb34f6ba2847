"""The history JSONL format: one job per line, validated, with line-numbered errors.

Required: `job_id`, `duration_s` (for history; absent for jobs to advise). Optional:
`submit_time` (ISO-8601 or epoch seconds), `status`, `n_gpus`, `n_nodes`, `gpu_model`, `user`,
`name`, `code_dir` (relative paths resolve against the JSONL file's folder), `command`,
`config_files` (paths relative to `code_dir`). Unknown keys are ignored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schedmate.advisor.history.base import JobRecord
from schedmate.core.errors import InputError
from schedmate.inputs import MAX_TABLE_BYTES, open_regular, read_bytes

__all__ = ["JobLine", "LineError", "read_jobs", "parse_time", "MAX_LINE_BYTES"]

MAX_LINE_BYTES = 1_000_000


def parse_time(value: Any) -> float | None:
    """Epoch seconds from a number or an ISO-8601 string; None for empty."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a time")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError("not a finite time")
        return float(value)
    s = str(value).strip()
    try:
        return float(s)
    except ValueError:
        pass
    dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


MAX_DURATION_S = 10 * 366 * 86400.0  # ten years: a longer "duration" is a unit mix-up or a typo


class JobLine(BaseModel):
    """One line of a history or batch file."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    job_id: str = Field(min_length=1, max_length=256)
    duration_s: float | None = Field(None, gt=0, le=MAX_DURATION_S, allow_inf_nan=False)
    submit_time: float | None = None
    status: str | None = Field(None, max_length=64)
    n_gpus: int | None = Field(None, ge=0, le=1_000_000)
    n_nodes: int | None = Field(None, ge=1, le=100_000)
    gpu_model: str | None = Field(None, max_length=64)
    user: str | None = Field(None, max_length=256)
    name: str | None = Field(None, max_length=1024)
    code_dir: str | None = Field(None, max_length=4096)
    command: str | None = Field(None, max_length=100_000)
    config_files: tuple[str, ...] = ()

    @field_validator("job_id", mode="before")
    @classmethod
    def _id_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("duration_s", "n_gpus", "n_nodes", mode="before")
    @classmethod
    def _not_a_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("a number, not true/false")
        return v

    @field_validator("submit_time", mode="before")
    @classmethod
    def _time(cls, v: Any) -> float | None:
        return parse_time(v)

    @field_validator("config_files", mode="before")
    @classmethod
    def _files(cls, v: Any) -> Any:
        if v is None:
            return ()
        if isinstance(v, str):
            return (v,)
        return v

    def record(self, base: Path | None = None) -> JobRecord:
        code_dir = self.code_dir
        if code_dir and base is not None and not Path(code_dir).is_absolute():
            code_dir = str((base / code_dir).resolve())
        return JobRecord(
            job_id=self.job_id,
            duration_s=self.duration_s,
            submit_time=self.submit_time,
            status=self.status,
            n_gpus=self.n_gpus,
            n_nodes=self.n_nodes,
            gpu_model=self.gpu_model,
            user=self.user,
            name=self.name,
            code_dir=code_dir,
            command=self.command,
            config_files=tuple(self.config_files),
        )


@dataclass(frozen=True)
class LineError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def _reason(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err["loc"]) or "line"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


MAX_BAD_RUN = 20  # this many unreadable lines in a row, with nothing read yet: not a JSONL history


def _lines(fh: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """(line, too_long) with at most MAX_LINE_BYTES held in memory: a longer line is skipped in
    chunks, so `/dev/zero`-like content without newlines cannot exhaust memory."""
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw, False
            continue
        while raw and not raw.endswith(b"\n"):
            raw = fh.readline(1 << 20)
        yield b"", True


def read_jobs(path: str | Path, *, need_duration: bool) -> Iterator[JobRecord | LineError]:
    """Records (relative `code_dir` resolved against the file's folder) or line errors, in order.

    The file must be a regular file (a FIFO or a device is refused at once); lines are bounded;
    a file that starts with MAX_BAD_RUN unreadable lines (a binary file) stops with one error."""
    p = Path(path)
    fh = open_regular(p, what="job file", max_bytes=MAX_TABLE_BYTES)
    base = p.resolve().parent
    good = 0
    bad_run = 0
    with fh:
        for no, (raw, too_long) in enumerate(_lines(fh), start=1):
            if bad_run >= MAX_BAD_RUN and good == 0:
                yield LineError(
                    no,
                    f"stopped: the first {MAX_BAD_RUN} lines are not job records (a binary file, not JSONL?)",
                )
                return
            if too_long:
                bad_run += 1
                yield LineError(no, f"line longer than {MAX_LINE_BYTES} bytes")
                continue
            if b"\0" in raw:
                if good == 0 and bad_run == 0:  # the very first line: a binary file, not a history
                    yield LineError(no, "binary data (NUL byte): not a JSON-lines file; stopped")
                    return
                bad_run += 1
                yield LineError(no, "binary data (NUL byte), not a JSON line")
                continue
            if no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark (editors on Windows write one)
            text = raw.decode("utf-8", errors="replace").strip()
            if not text or text.startswith("#"):
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                bad_run += 1
                yield LineError(no, f"invalid JSON: {exc.msg} at column {exc.colno}")
                continue
            except RecursionError:
                bad_run += 1
                yield LineError(no, "invalid JSON: nested too deeply")
                continue
            if not isinstance(obj, dict):
                bad_run += 1
                yield LineError(no, "expected a JSON object")
                continue
            try:
                line = JobLine.model_validate(obj)
            except ValidationError as exc:
                bad_run += 1
                yield LineError(no, _reason(exc))
                continue
            except ValueError as exc:
                bad_run += 1
                yield LineError(no, str(exc))
                continue
            if need_duration and line.duration_s is None:
                bad_run += 1
                yield LineError(no, "duration_s: required for history")
                continue
            try:
                rec = line.record(base)
            except (OSError, ValueError) as exc:  # a code_dir no path can be
                yield LineError(no, f"code_dir: {exc}")
                continue
            good += 1
            bad_run = 0
            yield rec


def _tres_gpus(tres: Any) -> int | None:
    items = tres.get("allocated") or tres.get("requested") or [] if isinstance(tres, dict) else []
    for t in items if isinstance(items, list) else []:
        if isinstance(t, dict) and t.get("type") == "gres" and str(t.get("name", "")).startswith("gpu"):
            try:
                return int(t.get("count", 0))
            except (TypeError, ValueError):
                return None
    return None


def _num_of(v: Any) -> float | None:
    """sacct numbers are plain or wrapped as {"set": true, "number": N}."""
    if isinstance(v, dict):
        return (
            float(v["number"]) if v.get("set", True) and isinstance(v.get("number"), (int, float)) else None
        )
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def read_sacct_json(path: str | Path) -> Iterator[JobRecord | LineError]:
    """Jobs from `sacct --json` (Slurm 21-24 layouts): finished jobs with their elapsed time.

    `working_directory` becomes `code_dir` and `submit_line` the command, so the job's code is
    read like any other history job's. Errors name the job's position in the `jobs` list.
    """
    p = Path(path)
    raw = read_bytes(p, what="sacct export", max_bytes=2_000_000_000)
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{p}: not sacct --json output ({type(exc).__name__})") from None
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        raise InputError(f"{p}: no 'jobs' list (expected `sacct --json` output)")
    for i, job in enumerate(jobs, start=1):
        if not isinstance(job, dict) or "job_id" not in job:
            yield LineError(i, "job entry without job_id")
            continue
        t: dict[str, Any] = job["time"] if isinstance(job.get("time"), dict) else {}
        elapsed = _num_of(t.get("elapsed"))
        end, start = _num_of(t.get("end")), _num_of(t.get("start"))
        if elapsed is None and end and start:
            elapsed = end - start
        state = job.get("state")
        status = (state.get("current") if isinstance(state, dict) else state) or None
        if isinstance(status, list):
            status = status[0] if status else None
        if not elapsed or elapsed <= 0:
            yield LineError(i, f"job {job['job_id']}: no elapsed time (still running or never started)")
            continue
        nodes = _num_of(job.get("allocation_nodes"))
        yield _checked(
            i,
            job_id=str(job["job_id"]),
            duration_s=float(elapsed),
            submit_time=_num_of(t.get("submission")),
            status=str(status).lower() if status else None,
            n_gpus=_tres_gpus(job.get("tres")),
            n_nodes=nodes or None,
            user=job.get("user") if isinstance(job.get("user"), str) else None,
            name=job.get("name") if isinstance(job.get("name"), str) else None,
            code_dir=job.get("working_directory") or None,
            command=job.get("submit_line") or None,
        )


def _checked(i: int, **fields: Any) -> JobRecord | LineError:
    """A job from another format, held to the history file's rules (`JobLine`): a negative GPU
    count or a list where the command belongs is this job's error, not the import's end."""
    try:
        return JobLine(**fields).record()
    except ValidationError as exc:
        return LineError(i, f"job {fields.get('job_id')}: {_reason(exc)}")


def read_trace_jobs(path: str | Path, fmt: str) -> Iterator[JobRecord | LineError]:
    """History from a simulator trace (philly, helios, alibaba, rfold, native): no code, just
    user, name, GPUs and duration. Malformed rows stop the import with file:line."""
    from schedmate.sim.trace import load_trace

    for i, j in enumerate(load_trace(path, fmt), start=1):
        if j.duration_s <= 0:
            yield LineError(i, f"job {j.job_id}: zero duration (the trace says it never ran)")
            continue
        yield _checked(
            i,
            job_id=j.job_id,
            duration_s=j.duration_s,
            submit_time=j.submit_s,
            n_gpus=j.gpus,
            user=j.user or None,
            name=j.name or None,
            status="failed" if getattr(j, "failed", False) else None,
        )

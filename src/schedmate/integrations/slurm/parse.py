"""Slurm's outputs -> core views. Pure functions, no I/O: unit-tested on recorded-style text.

squeue/sinfo `--json` (OpenAPI v0.0.38 in 22.05; later versions wrap numbers as
{"set": .., "infinite": .., "number": ..}, both are read), `scontrol show job -o` lines and
`sacct -P` rows. Anything malformed is an `InputError` naming the command.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from schedmate.core.cluster import JobState, JobView, NodeState, NodeView
from schedmate.core.errors import InputError
from schedmate.core.hostlist import expand_hostlist

__all__ = [
    "SacctRow",
    "SACCT_FIELDS",
    "expand_output_path",
    "format_limit",
    "job_from_squeue",
    "jobs_from_squeue_json",
    "node_from_sinfo",
    "nodes_from_sinfo_json",
    "parse_duration",
    "parse_sacct",
    "parse_scontrol_record",
    "job_from_scontrol",
    "mem_request",
]

_UNLIMITED = {"UNLIMITED", "INFINITE", "NONE", "N/A", "PARTITION_LIMIT", ""}


def _number(v: Any) -> float | None:
    """A JSON number of any Slurm version: 5, {"set": true, "number": 5}, null / infinite -> None."""
    if isinstance(v, Mapping):
        if not v.get("set", True) or v.get("infinite"):
            return None
        v = v.get("number")
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return float(v)
    return None


def _time(v: Any) -> float | None:
    """POSIX time; 0 means unset in Slurm's JSON."""
    t = _number(v)
    return t if t else None


def _str(v: Any) -> str | None:
    if v is None:
        return None
    s = str(v).strip()
    return s if s and s not in ("(null)", "N/A") else None


def parse_duration(text: str | None) -> float | None:
    """Slurm durations: '30' (minutes), 'MM:SS', 'HH:MM:SS', 'D-HH[:MM[:SS]]', 'UNLIMITED' -> None."""
    t = (text or "").strip()
    if t.upper() in _UNLIMITED:
        return None
    days = 0
    if "-" in t:
        d, _, t = t.partition("-")
        if not d.isdigit():
            raise InputError(f"slurm duration {text!r}: bad days")
        days = int(d)
        parts = t.split(":")
        if not all(p.isdigit() for p in parts) or len(parts) > 3:
            raise InputError(f"slurm duration {text!r}: bad time")
        h, m, s = (int(x) for x in (parts + ["0", "0"])[:3])
        return float(days * 86400 + h * 3600 + m * 60 + s)
    parts = t.split(":")
    if not all(p.isdigit() for p in parts) or len(parts) > 3:
        raise InputError(f"slurm duration {text!r}: not a duration")
    if len(parts) == 1:
        return float(int(parts[0]) * 60)
    if len(parts) == 2:
        return float(int(parts[0]) * 60 + int(parts[1]))
    return float(int(parts[0]) * 3600 + int(parts[1]) * 60 + int(parts[2]))


def format_limit(seconds: float) -> str:
    """A time limit for `scontrol update TimeLimit=`: whole minutes, rounded up, at least 1."""
    return str(max(1, -(-int(seconds) // 60)))


_GPU_TRES = re.compile(r"gres[:/]gpu(?::[\w.-]+)?[:=](\d+)")


def _gpus(d: Mapping[str, Any]) -> int:
    """GPUs of a job: allocated ('gres/gpu=2' in tres_alloc_str), else requested per node / job."""
    for key in ("tres_alloc_str", "tres_per_job", "tres_req_str"):
        m = _GPU_TRES.search(str(d.get(key) or ""))
        if m:
            return int(m.group(1))
    m = _GPU_TRES.search(str(d.get("tres_per_node") or ""))
    if m:
        nodes = _number(d.get("node_count")) or 1
        return int(m.group(1)) * int(nodes)
    return 0


_PATTERN = re.compile(r"%(\d*)([%AajNnstux])")


def expand_output_path(
    pattern: str | None, job: JobView, *, array_job: str = "", task: str = ""
) -> str | None:
    """A job's StdOut as Slurm writes it: `%j`, `%x`, `%u`, `%N`, `%A`, `%a` (`%5j` padded);
    relative to the work dir; `slurm-%j.out` when the job named none. Steps (%s, %t, %n) are 0."""
    if not pattern:
        pattern = f"slurm-{job.job_id}.out" if not array_job else f"slurm-{array_job}_{task}.out"
    if "\\" in pattern:  # sbatch: a backslash disables the replacement symbols
        out = pattern.replace("\\", "")
    else:

        def sub(m: re.Match[str]) -> str:
            width, sym = m.group(1), m.group(2)
            val = {
                "%": "%",
                "j": job.job_id,
                "x": job.name or "",
                "u": job.user or "",
                "N": job.nodes[0] if job.nodes else "",
                "A": array_job or job.job_id,
                "a": task or "4294967294",
                "n": "0",
                "s": "batch",
                "t": "0",
            }[sym]
            return val.zfill(int(width)) if width and val.isdigit() else val

        out = _PATTERN.sub(sub, pattern)
    p = PurePosixPath(out)
    if not p.is_absolute() and job.work_dir:
        p = PurePosixPath(job.work_dir) / p
    return str(p)


_MEM = re.compile(r"^(\d+)([KMGT]?)(n?)$")


def mem_request(text: str | None) -> str | None:
    """A per-node memory request as `scontrol update MinMemoryNode=` takes it: '300M', '64G';
    sacct's '300Mn' (per node) too. Per-CPU requests ('4000Mc') and 0 (all of the node) are
    not a per-node amount: None."""
    m = _MEM.match((text or "").strip())
    if m is None or int(m.group(1)) == 0:
        return None
    return f"{int(m.group(1))}{m.group(2) or 'M'}"


def _mem_mb(v: Any) -> str | None:
    """squeue --json `memory_per_node` (MB; a number or Slurm's {"set", "number"})."""
    n = _number(v)
    return f"{int(n)}M" if n is not None and n > 0 else None


def job_from_squeue(d: Mapping[str, Any]) -> JobView:
    """One job of `squeue --json` -> JobView (stdout/stderr paths expanded)."""
    job_id = d.get("job_id")
    if not isinstance(job_id, int | str) or isinstance(job_id, bool) or not str(job_id).isdigit():
        raise InputError(f"squeue --json: job without a numeric job_id ({job_id!r})")
    state = d.get("job_state")
    if isinstance(state, list):  # newer Slurm: a list of flags, base state first
        state = state[0] if state else None
    limit_min = _number(d.get("time_limit"))
    nodes_expr = _str(d.get("nodes")) or ""
    array_job = _number(d.get("array_job_id"))
    task = _number(d.get("array_task_id"))
    view = JobView(
        job_id=str(job_id),
        user=_str(d.get("user_name")),
        state=JobState.parse(str(state or "")),
        name=_str(d.get("name")),
        partition=_str(d.get("partition")),
        gpus=_gpus(d),
        nodes=tuple(expand_hostlist(nodes_expr)),
        submit_time=_time(d.get("submit_time")),
        start_time=_time(d.get("start_time")),
        end_time=_time(d.get("end_time")),
        time_limit_s=None if limit_min is None else limit_min * 60.0,
        work_dir=_str(d.get("current_working_directory")),
        command=_str(d.get("command")),
        exit_code=_exit_code(d.get("exit_code")),
        reason=_str(d.get("state_reason")),
        restarts=int(_number(d.get("restart_cnt")) or 0),
        comment=_str(d.get("comment")),
        mem=_mem_mb(d.get("memory_per_node")),
    )
    arr = str(int(array_job)) if array_job else ""
    tsk = str(int(task)) if task is not None and arr else ""
    stdout = expand_output_path(_str(d.get("standard_output")), view, array_job=arr, task=tsk)
    stderr_pat = _str(d.get("standard_error"))
    stderr = expand_output_path(stderr_pat, view, array_job=arr, task=tsk) if stderr_pat else stdout
    return view.with_(stdout_path=stdout, stderr_path=stderr)


def _exit_code(v: Any) -> int | None:
    if isinstance(v, Mapping):  # newer: {"status": [...], "return_code": {...}}
        v = v.get("return_code")
    n = _number(v)
    return None if n is None else int(n)


def _load(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: not JSON ({exc.msg} at char {exc.pos})") from None
    except ValueError as exc:
        raise InputError(f"{what}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{what}: expected a JSON object")
    errors = data.get("errors") or []
    if errors:
        first = errors[0]
        msg = first.get("error") or first.get("description") if isinstance(first, Mapping) else first
        raise InputError(f"{what}: {str(msg).splitlines()[0] if msg else 'error'}")
    return data


def jobs_from_squeue_json(text: str) -> list[JobView]:
    """`squeue --json` -> JobViews; a malformed job entry is an InputError naming it."""
    data = _load(text, "squeue --json")
    jobs = data.get("jobs")
    if not isinstance(jobs, list):
        raise InputError("squeue --json: no 'jobs' list")
    out = []
    for i, d in enumerate(jobs):
        if not isinstance(d, Mapping):
            raise InputError(f"squeue --json: jobs[{i}] is not an object")
        out.append(job_from_squeue(d))
    return out


_GRES_GPU = re.compile(r"gpu(?::[\w.-]+)?:(\d+)")


def _gres_count(text: Any) -> int:
    return sum(int(m.group(1)) for m in _GRES_GPU.finditer(str(text or "")))


def node_from_sinfo(d: Mapping[str, Any]) -> NodeView:
    name = _str(d.get("name")) or _str(d.get("hostname"))
    if not name:
        raise InputError("sinfo --json: node without a name")
    state = d.get("state")
    words = [*state] if isinstance(state, list) else [str(state or "")]
    words += [str(f) for f in d.get("state_flags") or []]
    parts = d.get("partitions") or []
    return NodeView(
        name=name,
        state=NodeState.parse("+".join(words)),
        gpus=_gres_count(d.get("gres")),
        gpus_alloc=_gres_count(d.get("gres_used")),
        partitions=tuple(str(p) for p in parts) if isinstance(parts, list) else (),
        reason=_str(d.get("reason")),
    )


def nodes_from_sinfo_json(text: str) -> list[NodeView]:
    data = _load(text, "sinfo --json")
    nodes = data.get("nodes")
    if not isinstance(nodes, list):
        raise InputError("sinfo --json: no 'nodes' list")
    seen: dict[str, NodeView] = {}
    for i, d in enumerate(nodes):
        if not isinstance(d, Mapping):
            raise InputError(f"sinfo --json: nodes[{i}] is not an object")
        n = node_from_sinfo(d)
        seen.setdefault(n.name, n)
    return list(seen.values())


# `scontrol show job -o`: Key=Value pairs separated by spaces, but some values are free text
# (a Comment, a Reason, a Command with arguments) and may hold spaces and even 'X=y'. A new
# field starts only at a key Slurm itself prints; anything else continues the previous value.
_KEY = re.compile(r"(?:^|(?<= ))([A-Za-z][A-Za-z0-9_/:]*)=")
_KNOWN_KEYS = frozenset(
    [
        "JobId",
        "ArrayJobId",
        "ArrayTaskId",
        "JobName",
        "UserId",
        "GroupId",
        "MCS_label",
        "Priority",
        "Nice",
        "Account",
        "QOS",
        "JobState",
        "Reason",
        "Dependency",
        "Requeue",
        "Restarts",
        "BatchFlag",
        "Reboot",
        "ExitCode",
        "DerivedExitCode",
        "RunTime",
        "TimeLimit",
        "TimeMin",
        "SubmitTime",
        "EligibleTime",
        "AccrueTime",
        "StartTime",
        "EndTime",
        "Deadline",
        "SuspendTime",
        "SecsPreSuspend",
        "LastSchedEval",
        "Scheduler",
        "Partition",
        "AllocNode:Sid",
        "ReqNodeList",
        "ExcNodeList",
        "NodeList",
        "BatchHost",
        "NumNodes",
        "NumCPUs",
        "NumTasks",
        "CPUs/Task",
        "ReqB:S:C:T",
        "TRES",
        "Socks/Node",
        "NtasksPerN:B:S:C",
        "CoreSpec",
        "MinCPUsNode",
        "MinMemoryNode",
        "MinMemoryCPU",
        "MinTmpDiskNode",
        "Features",
        "DelayBoot",
        "OverSubscribe",
        "Contiguous",
        "Licenses",
        "Network",
        "Command",
        "WorkDir",
        "StdErr",
        "StdIn",
        "StdOut",
        "Power",
        "TresPerNode",
        "TresPerJob",
        "Comment",
        "AdminComment",
        "SystemComment",
        "Cluster",
        "MemPerTres",
        "CpusPerTres",
        "TresPerTask",
        "Prefer",
        "Container",
        "ContainerID",
        "ReservationName",
        "HetJobId",
        "HetJobOffset",
        "HetJobIdSet",
        "CPU_IDs",
        "Mem",
        "GRES",
        "JOB_GRES",
        "Nodes",
        "BurstBuffer",
        "BurstBufferState",
        "PreemptEligibleTime",
        "PreemptTime",
        "Reservation",
        "Profile",
        "RequeueExit",
        "MailUser",
        "MailType",
        "NtasksPerTRES",
        "KillOInInvalidDependent",
    ]
)


def parse_scontrol_record(line: str) -> dict[str, str]:
    """One `scontrol show job -o` line -> {key: value}; free-text values keep their spaces."""
    out: dict[str, str] = {}
    last: str | None = None
    pos = 0
    matches = []
    seen: set[str] = set()
    for m in _KEY.finditer(line):
        key = m.group(1)
        if key in _KNOWN_KEYS and key not in seen:  # a repeated key is text inside a free-text value
            seen.add(key)
            matches.append(m)
    if not matches:
        raise InputError(f"scontrol show job: no Key=Value fields in {line[:60]!r}")
    for i, m in enumerate(matches):
        if last is not None:
            out[last] = line[pos : m.start()].strip()
        last, pos = m.group(1), m.end()
        if i == len(matches) - 1:
            out[last] = line[pos:].strip()
    return out


def _scontrol_time(v: str | None) -> float | None:
    from datetime import datetime

    s = _str(v)
    if not s or s in ("Unknown", "None"):
        return None
    try:
        return datetime.fromisoformat(s).timestamp()
    except ValueError:
        return None


def job_from_scontrol(rec: Mapping[str, str]) -> JobView:
    """A parsed `scontrol show job -o` record -> JobView."""
    job_id = rec.get("JobId", "")
    if not job_id.isdigit():
        raise InputError(f"scontrol show job: bad JobId {job_id!r}")
    user = _str(rec.get("UserId"))
    m = _GPU_TRES.search(rec.get("TRES", "")) or _GPU_TRES.search(rec.get("TresPerNode", ""))
    try:
        limit = parse_duration(rec.get("TimeLimit"))
    except InputError:
        limit = None
    code = rec.get("ExitCode", "")
    return JobView(
        job_id=job_id,
        user=user.split("(")[0] if user else None,
        state=JobState.parse(rec.get("JobState")),
        name=_str(rec.get("JobName")),
        partition=_str(rec.get("Partition")),
        gpus=int(m.group(1)) if m else 0,
        nodes=tuple(expand_hostlist(_str(rec.get("NodeList")) or "")),
        submit_time=_scontrol_time(rec.get("SubmitTime")),
        start_time=_scontrol_time(rec.get("StartTime")),
        end_time=_scontrol_time(rec.get("EndTime")),
        time_limit_s=limit,
        work_dir=_str(rec.get("WorkDir")),
        stdout_path=_str(rec.get("StdOut")),
        stderr_path=_str(rec.get("StdErr")),
        command=_str(rec.get("Command")),
        exit_code=int(code.split(":")[0]) if code.split(":")[0].isdigit() else None,
        reason=_str(rec.get("Reason")),
        restarts=int(rec["Restarts"]) if rec.get("Restarts", "").isdigit() else 0,
        comment=_str(rec.get("Comment")),
        mem=mem_request(rec.get("MinMemoryNode")),
    )


SACCT_FIELDS = (
    "JobIDRaw",
    "JobName",
    "User",
    "Partition",
    "State",
    "ExitCode",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "TimelimitRaw",
    "NNodes",
    "NodeList",
    "AllocTRES",
    "ReqMem",
    "WorkDir",  # last: free text that may hold a '|'
)


@dataclass(frozen=True, slots=True)
class SacctRow:
    """One finished job from `sacct -P` (steps are skipped)."""

    job: JobView
    elapsed_s: float | None


def parse_sacct(
    lines: Sequence[str] | Iterator[str], fields: Sequence[str] = SACCT_FIELDS
) -> Iterator[SacctRow]:
    """`sacct -P --noheader -o <fields>` rows -> SacctRow; a row with the wrong field count is an
    InputError naming it. Job steps (`123.batch`) are skipped."""
    n = len(fields)
    for no, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) < n:
            raise InputError(f"sacct line {no}: {len(parts)} fields, expected {n}")
        if len(parts) > n:  # a '|' inside the last free-text field (WorkDir)
            parts = parts[: n - 1] + ["|".join(parts[n - 1 :])]
        r = dict(zip(fields, parts, strict=True))
        job_id = r.get("JobIDRaw", "")
        if not job_id.isdigit():
            continue
        elapsed = r.get("ElapsedRaw", "")
        limit = r.get("TimelimitRaw", "")
        m = _GPU_TRES.search(r.get("AllocTRES", ""))
        code = r.get("ExitCode", "")
        nodes: list[str] = []
        try:
            nodes = expand_hostlist(r.get("NodeList"))
        except InputError:
            nodes = []
        job = JobView(
            job_id=job_id,
            user=(_str(r.get("User")) or "").split("(")[0] or None,
            state=JobState.parse(r.get("State")),
            name=_str(r.get("JobName")),
            partition=_str(r.get("Partition")),
            gpus=int(m.group(1)) if m else 0,
            nodes=tuple(nodes),
            submit_time=_scontrol_time(r.get("Submit")),
            start_time=_scontrol_time(r.get("Start")),
            end_time=_scontrol_time(r.get("End")),
            time_limit_s=float(limit) * 60 if limit.isdigit() else None,
            work_dir=_str(r.get("WorkDir")),
            exit_code=int(code.split(":")[0]) if code.split(":")[0].isdigit() else None,
            mem=mem_request(r.get("ReqMem")),
        )
        yield SacctRow(job, float(elapsed) if elapsed.isdigit() else None)

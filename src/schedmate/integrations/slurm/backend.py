"""SlurmBackend: the `ClusterBackend` protocol over Slurm's own commands.

Every call is an argument list (never a shell string), has a timeout and a bound on its
output, and turns any failure into a one-line `BackendError` naming the command. Job ids
and node names are checked before they reach a command line; free text (a Comment) is
passed as one argument with its control characters removed.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from schedmate.core.cluster import ClusterSnapshot, JobView
from schedmate.core.errors import BackendError, BackendUnavailable, InputError
from schedmate.core.hostlist import compress_hostlist, is_hostname
from schedmate.core.settings import SlurmSettings
from schedmate.integrations.slurm.parse import (
    SACCT_FIELDS,
    SacctRow,
    format_limit,
    jobs_from_squeue_json,
    mem_request,
    nodes_from_sinfo_json,
    parse_sacct,
    parse_scontrol_record,
)

__all__ = ["SlurmBackend", "MAX_OUTPUT_BYTES", "MAX_SCRIPT_BYTES", "MAX_COMMENT_CHARS"]

MAX_OUTPUT_BYTES = 512 * 1024 * 1024
MAX_SCRIPT_BYTES = 4 * 1024 * 1024
MAX_COMMENT_CHARS = 240
_JOB_ID = re.compile(r"^\d{1,12}(?:_\d{1,9})?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_UNKNOWN_JOB = ("invalid job id", "job id not found", "unknown job")
_NO_DBD = ("slurmdbd", "accounting storage is disabled", "accounting_storage/none")


def _check_job(job_id: str) -> str:
    if not _JOB_ID.match(job_id):
        raise BackendError(f"slurm: refusing job id {job_id[:40]!r} (not a Slurm job id)")
    return job_id


def _check_node(node: str) -> str:
    if not is_hostname(node):
        raise BackendError(f"slurm: refusing node name {node[:40]!r} (not a hostname)")
    return node


_MEM_UNIT_MB = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}


def _megabytes(mem: str) -> int:
    """'600M' / '64G' / '1T' / '4096' -> MB (rounded up): 22.05's `scontrol update
    MinMemoryNode=` refuses a unit suffix ('Invalid MinMemoryNode value: 600M')."""
    m = re.match(r"^(\d+)([KMGT]?)$", mem)
    if m is None:
        raise BackendError(f"slurm: refusing memory {mem[:20]!r} (expected e.g. 64G)")
    return max(1, math.ceil(int(m.group(1)) * _MEM_UNIT_MB[m.group(2)]))


def clean_text(text: str, limit: int = MAX_COMMENT_CHARS) -> str:
    """Free text for a Slurm field: one line, no control characters, bounded."""
    return _CONTROL.sub(" ", text).strip()[:limit]


class SlurmBackend:
    """Talks to slurmctld through squeue, sinfo, sacct and scontrol (needs them on PATH or in
    `settings.bin_dir`; actions need a Slurm operator or root)."""

    name = "slurm"

    def __init__(self, settings: SlurmSettings | None = None) -> None:
        self.settings = settings or SlurmSettings()
        env = dict(os.environ)
        if self.settings.conf:
            env["SLURM_CONF"] = self.settings.conf
        env["SLURM_TIME_FORMAT"] = "standard"
        env.pop("SQUEUE_FORMAT", None)
        env.pop("SQUEUE_FORMAT2", None)
        env.pop("SACCT_FORMAT", None)
        self._env = env
        self._jobcomp: bool | None = None  # sacct needs -c (no slurmdbd): learned on first use

    # -- running commands ------------------------------------------------------------------
    def _exe(self, cmd: str) -> str:
        if self.settings.bin_dir:
            path = Path(self.settings.bin_dir) / cmd
            if not path.is_file():
                raise BackendUnavailable(f"slurm: {path} not found (slurm.bin_dir)")
            return str(path)
        found = shutil.which(cmd, path=self._env.get("PATH"))
        if found is None:
            raise BackendUnavailable(
                f"slurm: {cmd} not found on PATH (install the Slurm client or set slurm.bin_dir)"
            )
        return found

    def run(self, args: Sequence[str], *, timeout_s: float | None = None) -> str:
        """Run one Slurm command (an argument list); its stdout, or a one-line BackendError."""
        cmd = args[0]
        argv = [self._exe(cmd), *args[1:]]
        limit = timeout_s or self.settings.timeout_s
        try:
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=limit,
                env=self._env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise BackendUnavailable(f"slurm: {cmd} timed out after {limit:g} s") from None
        except OSError as exc:
            raise BackendUnavailable(f"slurm: {cmd}: {exc.strerror or exc}") from None
        if len(proc.stdout) > MAX_OUTPUT_BYTES:
            raise BackendError(f"slurm: {cmd} wrote more than {MAX_OUTPUT_BYTES // 2**20} MiB")
        if proc.returncode != 0:
            err = (
                proc.stderr.decode("utf-8", "replace").strip()
                or proc.stdout.decode("utf-8", "replace").strip()
            )
            line = next(
                (ln.strip() for ln in err.splitlines() if ln.strip()), f"exit status {proc.returncode}"
            )
            down = any(s in line.lower() for s in ("unable to contact", "connection refused", "timed out"))
            kind = BackendUnavailable if down else BackendError
            raise kind(f"slurm: {cmd}: {line[:300]}")
        return proc.stdout.decode("utf-8", "replace")

    # -- observing ---------------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        """Every job slurmctld still holds (pending, running, ended within MinJobAge) and every node."""
        now = time.time()
        try:
            jobs = jobs_from_squeue_json(self.run(["squeue", "--json", "--states=all"]))
            nodes = nodes_from_sinfo_json(self.run(["sinfo", "--json"]))
        except InputError as exc:
            raise BackendError(f"slurm: {exc}") from None
        return ClusterSnapshot(now, tuple(jobs), tuple(nodes))

    def job(self, job_id: str) -> JobView | None:
        _check_job(job_id)
        try:
            text = self.run(["squeue", "--json", "--states=all", f"--jobs={job_id}"])
        except BackendError as exc:
            if any(s in str(exc).lower() for s in _UNKNOWN_JOB):
                return None
            raise
        try:
            jobs = jobs_from_squeue_json(text)
        except InputError as exc:
            if any(s in str(exc).lower() for s in _UNKNOWN_JOB):
                return None
            raise BackendError(f"slurm: {exc}") from None
        view = next((j for j in jobs if j.job_id == job_id), None)
        if view is not None and view.mem is None:
            view = view.with_(mem=self._mem(job_id))
        return view

    def _mem(self, job_id: str) -> str | None:
        """The per-node memory request from scontrol (22.05's squeue --json leaves it out)."""
        try:
            rec = parse_scontrol_record(self.run(["scontrol", "show", "job", "-o", job_id]).strip())
        except (BackendError, InputError):
            return None
        return mem_request(rec.get("MinMemoryNode"))

    def job_script(self, job_id: str) -> str | None:
        _check_job(job_id)
        try:
            text = self.run(["scontrol", "write", "batch_script", job_id, "-"])
        except BackendError as exc:
            low = str(exc).lower()
            if any(s in low for s in (*_UNKNOWN_JOB, "no batch script", "not a batch job")):
                return None
            raise
        return text[:MAX_SCRIPT_BYTES]

    def history(self, *, since: float | None = None, until: float | None = None) -> Iterator[SacctRow]:
        """Ended jobs from sacct (slurmdbd, or `sacct -c` on a jobcomp/filetxt cluster)."""
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since or time.time() - 7 * 86400))
        end = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(until or time.time()))
        base = ["sacct", "-P", "--noheader", "-a", "-X", "-o", ",".join(SACCT_FIELDS), "-S", start, "-E", end]
        if self._jobcomp:
            base.insert(1, "-c")
        try:
            text = self.run(base)
        except BackendError as exc:
            if self._jobcomp or not any(s in str(exc).lower() for s in _NO_DBD):
                raise
            self._jobcomp = True
            text = self.run(["sacct", "-c", *base[1:]])
        try:
            yield from parse_sacct(text.splitlines())
        except InputError as exc:
            raise BackendError(f"slurm: {exc}") from None

    # -- acting ------------------------------------------------------------------------------
    def update(
        self,
        job_id: str,
        *,
        time_limit_s: float | None = None,
        comment: str | None = None,
        nice: int | None = None,
    ) -> None:
        args = ["scontrol", "update", f"JobId={_check_job(job_id)}"]
        if time_limit_s is not None:
            args.append(f"TimeLimit={format_limit(time_limit_s)}")
        if comment is not None:
            args.append(f"Comment={clean_text(comment)}")
        if nice is not None:
            args.append(f"Nice={int(nice)}")
        if len(args) > 3:
            self.run(args)

    def hold(self, job_id: str) -> None:
        self.run(["scontrol", "hold", _check_job(job_id)])

    def release(self, job_id: str) -> None:
        self.run(["scontrol", "release", _check_job(job_id)])

    def requeue(
        self,
        job_id: str,
        *,
        exclude_nodes: Sequence[str] = (),
        time_limit_s: float | None = None,
        mem: str | None = None,
    ) -> None:
        """Requeue a (failed, timed-out or running) batch job, then set what changes for its
        next run; Slurm delays a requeued job's start, so the update lands before it starts."""
        _check_job(job_id)
        nodes = [_check_node(n) for n in exclude_nodes]
        if mem is not None and not re.match(r"^\d+[KMGT]?$", mem):
            raise BackendError(f"slurm: refusing memory {mem[:20]!r} (expected e.g. 64G)")
        self.run(["scontrol", "requeue", job_id])
        args = ["scontrol", "update", f"JobId={job_id}"]
        if nodes:
            args.append(f"ExcNodeList={compress_hostlist(nodes)}")
        if time_limit_s is not None:
            args.append(f"TimeLimit={format_limit(time_limit_s)}")
        if mem is not None:
            args.append(f"MinMemoryNode={_megabytes(mem)}")  # scontrol update takes MB only
        if len(args) > 3:
            self.run(args)

    def drain(self, node: str, reason: str) -> None:
        self.run(
            [
                "scontrol",
                "update",
                f"NodeName={_check_node(node)}",
                "State=DRAIN",
                f"Reason={clean_text(reason) or 'schedmate'}",
            ]
        )

    def resume(self, node: str) -> None:
        self.run(["scontrol", "update", f"NodeName={_check_node(node)}", "State=RESUME"])

    def start_now(self, job_id: str) -> None:
        """Let a requeued job start at once instead of after Slurm's requeue delay."""
        self.run(["scontrol", "update", f"JobId={_check_job(job_id)}", "StartTime=now"])

    def env(self) -> Mapping[str, str]:
        return dict(self._env)

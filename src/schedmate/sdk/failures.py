"""SDK operations of the Failure Handler: build it from settings, diagnose logs, recover a job.

- `build_failure_handler(settings, backend)`: the facade (diagnosis + recovery planner);
- `job_context(...)`: what the caller knows about the job (the CLI's flags) as a JobContext;
- `diagnose_logs(settings, files, job=...)`: one report per file (the `diagnose` command);
  with `failure.backend = "slurm"` and a job id, the job's facts come from Slurm and the
  plan is executed through it unless `failure.dry_run`;
- `recover_job(handler, view, guard=...)`: `watch`'s call, a scheduler `JobView` in, a report
  out, actions executed through the handler's backend unless `failure.dry_run`, after the
  caller's guard rails.

One recovery policy (`failure.recovery.RecoveryPlanner`) and one ledger (the audit log,
`audit_log_path`) serve both commands, so an action `watch` executed is never executed again
by `diagnose --execute`, and the other way round.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from schedmate.core.cluster import ClusterBackend, JobView
from schedmate.core.diagnosis import FailureReport, RecoveryAction
from schedmate.core.errors import InputError
from schedmate.core.hostlist import expand_hostlist
from schedmate.core.settings import Settings
from schedmate.failure import (
    AuditLog,
    FailureClassifier,
    FailureHandler,
    FailureLocator,
    JobContext,
    KnowledgeBase,
    RecoveryPlanner,
    parse_mem_mb,
)
from schedmate.sdk._common import embedder_of, llm_of
from schedmate.tracker import LineClassifier

__all__ = [
    "build_failure_handler",
    "job_context",
    "diagnose_logs",
    "recover_job",
    "audit_log_path",
    "failure_backend",
]


def failure_backend(settings: Settings) -> ClusterBackend | None:
    """The scheduler `diagnose` acts through (`failure.backend`): None for "none"."""
    if settings.failure.backend == "slurm":
        from schedmate.integrations.slurm import SlurmBackend

        return SlurmBackend(settings.slurm)
    return None


def audit_log_path(settings: Settings) -> Path:
    fs = settings.failure
    return Path(fs.audit_log) if fs.audit_log else Path(settings.cache_dir) / "audit.jsonl"


def build_failure_handler(
    settings: Settings,
    backend: ClusterBackend | None = None,
    *,
    plan: bool = True,
    audit: AuditLog | None = None,
) -> FailureHandler:
    """A FailureHandler: tracker's line classifier for the search, the signature KB, the
    embedder and LLM for uncertain cases, and a recovery planner over `backend` (None: plans
    are made and audited, nothing can be executed). `audit`: an open ledger to share (watch's)."""
    fs = settings.failure
    kb = KnowledgeBase.load(fs.signatures_file or None)
    embedder = embedder_of(settings)
    locator = FailureLocator(LineClassifier(embedder=None), kb, fs)
    classifier = FailureClassifier(kb, embedder, llm_of(settings), llm_below=fs.llm_below)
    planner = None
    if plan:
        planner = RecoveryPlanner(
            backend, audit if audit is not None else AuditLog(audit_log_path(settings)), fs
        )
    return FailureHandler(locator, classifier, planner, fs)


def job_context(
    *,
    job_id: str | None = None,
    user: str | None = None,
    nodes: str | None = None,
    job_dir: str | None = None,
    time_limit_s: float | None = None,
    mem: str | None = None,
) -> JobContext:
    """The caller's facts about a job (`nodes` in hostlist syntax: `gpu-[01-04]`); a bad
    hostlist, time limit or memory request is an `InputError`."""
    if time_limit_s is not None and not (
        math.isfinite(time_limit_s) and 0 < time_limit_s <= 10 * 366 * 86400
    ):
        raise InputError(f"--time-limit-s: a number of seconds > 0 (at most ten years), got {time_limit_s}")
    if mem is not None and not parse_mem_mb(mem):
        raise InputError(f"--mem: a memory size such as 64G, 65536M or 4096 (MB), got {mem!r}")
    return JobContext(
        job_id=job_id or None,
        user=user or None,
        nodes=tuple(expand_hostlist(nodes)),
        job_dir=job_dir,
        time_limit_s=time_limit_s,
        mem=mem,
    )


def diagnose_logs(
    settings: Settings,
    files: Sequence[str | Path],
    *,
    job: JobContext | None = None,
    plan: bool = True,
    backend: ClusterBackend | None = None,
) -> Iterator[FailureReport]:
    """One report per file, in order (one bad file is that file's `error`). With a scheduler
    backend and a job id, the scheduler's view of the job replaces the caller's flags (its
    nodes, user, state, restarts, limits are facts; flags are claims)."""
    if backend is None:
        backend = failure_backend(settings)
    handler = build_failure_handler(settings, backend, plan=plan)
    view: JobView | None = None
    if backend is not None and job is not None and job.job_id:
        view = backend.job(job.job_id)
        if view is None:
            raise InputError(f"job {job.job_id}: unknown to the scheduler ({backend.name})")
    for f in files:
        if view is not None:
            yield handler.handle(view, log=f, mem=view.mem or (job.mem if job else None))
        else:
            yield handler.diagnose(f, job)


def recover_job(
    handler: FailureHandler,
    view: JobView,
    *,
    log: str | Path | None = None,
    mem: str | None = None,
    read_log: bool = True,
    guard: Callable[[RecoveryAction], str | None] | None = None,
    dry_run: bool | None = None,
) -> FailureReport:
    """Diagnose a failed job the scheduler describes and recover it through the handler's
    backend (dry run unless `failure.dry_run = false`); `guard` is the caller's operator
    guard rails, applied between plan and execution."""
    return handler.handle(view, log=log, mem=mem, read_log=read_log, guard=guard, dry_run=dry_run)

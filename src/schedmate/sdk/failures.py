"""SDK operations of the Failure Handler: build it from settings, diagnose logs, recover a job.

- `build_failure_handler(settings, backend)`: the facade (diagnosis + recovery planner);
- `job_context(...)`: what the caller knows about the job (the CLI's flags) as a JobContext;
- `diagnose_logs(settings, files, job=...)`: one report per file (the `diagnose` command);
- `recover_job(handler, view)`: the live agent's call, a scheduler `JobView` in, a report
  out, actions executed through the handler's backend unless `failure.dry_run`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from schedmate.core.cluster import ClusterBackend, JobView
from schedmate.core.diagnosis import FailureReport
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
)
from schedmate.sdk._common import embedder_of, llm_of
from schedmate.tracker import LineClassifier

__all__ = ["build_failure_handler", "job_context", "diagnose_logs", "recover_job", "audit_log_path"]


def audit_log_path(settings: Settings) -> Path:
    fs = settings.failure
    return Path(fs.audit_log) if fs.audit_log else Path(settings.cache_dir) / "audit.jsonl"


def build_failure_handler(
    settings: Settings,
    backend: ClusterBackend | None = None,
    *,
    plan: bool = True,
) -> FailureHandler:
    """A FailureHandler: tracker's line classifier for the search, the signature KB, the
    embedder and LLM for uncertain cases, and a recovery planner over `backend` (None: plans
    are made and audited, nothing can be executed)."""
    fs = settings.failure
    kb = KnowledgeBase.load(fs.signatures_file or None)
    embedder = embedder_of(settings)
    locator = FailureLocator(LineClassifier(embedder=None), kb, fs)
    classifier = FailureClassifier(kb, embedder, llm_of(settings), llm_below=fs.llm_below)
    planner = None
    if plan:
        planner = RecoveryPlanner(backend, AuditLog(audit_log_path(settings)), fs)
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
    hostlist is an `InputError`."""
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
    """One report per file, in order (one bad file is that file's `error`)."""
    handler = build_failure_handler(settings, backend, plan=plan)
    for f in files:
        yield handler.diagnose(f, job)


def recover_job(
    handler: FailureHandler, view: JobView, *, log: str | Path | None = None, mem: str | None = None
) -> FailureReport:
    """Diagnose a failed job the scheduler describes and recover it through the handler's
    backend (dry run unless `failure.dry_run = false`)."""
    return handler.handle(view, log=log, mem=mem)

"""SDK operations of the live agent: `watch` (cycles over a cluster) and the per-job report.

The only place where the Advisor, the Tracker and the Failure Handler meet the live loop:
`SdkCapabilities` calls their public facades (built by the other SDK modules) and maps
their answers onto the loop's small types, so their internals can change without touching
`watch`. Each capability is built on first use.

Recovery goes through `sdk.failures.recover_job`: the Failure Handler's planner is the one
recovery policy and its audit log (`sdk.failures.audit_log_path`) the one ledger of recovery
actions, shared with `schedmate diagnose --execute`.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from schedmate.core.cluster import ClusterBackend, ClusterSnapshot, JobState, JobView
from schedmate.core.diagnosis import FailureReport
from schedmate.core.errors import SchedmateError
from schedmate.core.settings import Settings
from schedmate.core.types import SCHEMA_VERSION, TrackResult

if TYPE_CHECKING:
    from schedmate.advisor import Advisor
    from schedmate.failure import AuditLog, FailureHandler
    from schedmate.integrations.watch import Guard, Prediction, Watcher
    from schedmate.tracker import MetricTracker

__all__ = ["SdkCapabilities", "build_watcher", "run_watch", "job_report", "watch_store_path"]


def watch_store_path(settings: Settings) -> Path:
    return Path(settings.watch.state_db) if settings.watch.state_db else Path(settings.cache_dir) / "watch.db"


class SdkCapabilities:
    """The watch loop's view of the three capabilities (each built lazily from settings)."""

    def __init__(self, settings: Settings, backend: ClusterBackend | None = None) -> None:
        self.settings = settings
        self.backend = backend
        self._tracker: MetricTracker | None = None
        self._handler: FailureHandler | None = None
        self._audit_log: AuditLog | None = None
        self._cycle: ClusterSnapshot | None = None
        self._advisor: Advisor | None = None

    @property
    def tracker(self) -> MetricTracker:
        if self._tracker is None:
            from schedmate.sdk.tracking import build_tracker

            self._tracker = build_tracker(self.settings)
        return self._tracker

    @property
    def handler(self) -> FailureHandler:
        if self._handler is None:
            from schedmate.sdk.failures import build_failure_handler

            self._handler = build_failure_handler(self.settings, self.backend, audit=self._audit())
            if self._handler.planner is not None and self._cycle is not None:
                self._handler.planner.new_cycle(self._cycle)
        return self._handler

    @property
    def advisor(self) -> Advisor:
        if self._advisor is None:
            from schedmate.sdk.advising import build_advisor

            self._advisor = build_advisor(self.settings)
        return self._advisor

    def advise(self, job: JobView, script: str | None) -> Prediction:
        from schedmate.advisor import JobRecord
        from schedmate.integrations.watch import Prediction

        rec = JobRecord(
            job_id=job.job_id,
            submit_time=job.submit_time,
            n_gpus=job.gpus or None,
            n_nodes=len(job.nodes) or None,
            user=job.user,
            name=job.name,
            code_dir=job.work_dir,
            command=script,
        )
        try:
            adv = self.advisor.advise(rec)
        except SchedmateError as exc:
            return Prediction(None, None, error=str(exc))
        return Prediction(adv.p50_s, adv.p90_s, adv.method, len(adv.neighbors), adv.error)

    def recover(self, job: JobView, log: str | None, guard: Guard, dry_run: bool) -> FailureReport:
        from schedmate.sdk.failures import recover_job

        if job.state is JobState.OUT_OF_MEMORY and job.mem is None and self.backend is not None:
            try:  # the snapshot may lack the memory request (squeue --json of 22.05): ask once
                fresh = self.backend.job(job.job_id)
            except SchedmateError:
                fresh = None
            if fresh is not None and fresh.mem:
                job = job.with_(mem=fresh.mem)
        return recover_job(self.handler, job, log=log, read_log=log is not None, guard=guard, dry_run=dry_run)

    def _audit(self) -> AuditLog:
        """The recovery ledger, opened without building the Failure Handler (no model is loaded
        until a job fails)."""
        if self._audit_log is None:
            from schedmate.failure import AuditLog
            from schedmate.sdk.failures import audit_log_path

            self._audit_log = AuditLog(audit_log_path(self.settings))
        return self._audit_log

    def new_recovery_cycle(self, snapshot: ClusterSnapshot) -> None:
        self._cycle = snapshot
        self._audit().refresh()
        if self._handler is not None and self._handler.planner is not None:
            self._handler.planner.new_cycle(snapshot)

    def recovery_budget(self, job_id: str) -> tuple[int, int]:
        return self._audit().executed_count(job_id), self.settings.failure.retry_budget

    def drains_in_last_hour(self) -> int:
        audit = self._audit()
        return audit.executed_since("drain_node", audit.now() - 3600)

    def unfinished_recoveries(self) -> list[dict[str, Any]]:
        return self._audit().unfinished()

    def track(self, lines: Sequence[str], file: str) -> TrackResult:
        return self.tracker.track_lines(lines, file=file)

    def remember(self, jobs: Sequence[tuple[JobView, str | None]]) -> None:
        from schedmate.advisor import JobRecord

        recs = [
            JobRecord(
                job_id=j.job_id,
                duration_s=(j.end_time or 0) - (j.start_time or 0),
                submit_time=j.submit_time,
                status=j.state.value,
                n_gpus=j.gpus or None,
                n_nodes=len(j.nodes) or None,
                user=j.user,
                name=j.name,
                code_dir=j.work_dir,
                command=script,
            )
            for j, script in jobs
            if j.start_time and j.end_time and j.end_time > j.start_time
        ]
        if recs:
            self.advisor.import_jobs(recs)


def _slurm_backend(settings: Settings) -> ClusterBackend:
    from schedmate.integrations.slurm import SlurmBackend

    return SlurmBackend(settings.slurm)


def build_watcher(
    settings: Settings,
    *,
    backend: ClusterBackend | None = None,
    log: TextIO | None = None,
    metrics: bool = True,
) -> Watcher:
    """A Watcher over `backend` (Slurm by default) with its store and, when a metrics port is
    set, its Prometheus metrics (the server is started by `run_watch`)."""
    from schedmate.integrations.watch import Watcher, WatchStore

    wm = None
    if metrics and settings.watch.metrics_port:
        from schedmate.integrations.watch.metrics import WatchMetrics

        wm = WatchMetrics()
    store = WatchStore(watch_store_path(settings))
    backend = backend or _slurm_backend(settings)
    return Watcher(
        backend,
        SdkCapabilities(settings, backend),
        store,
        settings.watch,
        metrics=wm,
        log=log,
    )


def run_watch(settings: Settings, *, once: bool = False, log: TextIO | None = None) -> int:
    """Run watch until SIGTERM/SIGINT (or one cycle with `once`); 0 when the last cycle worked."""
    watcher = build_watcher(settings, log=log)
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    if watcher.metrics is not None:
        port = watcher.metrics.serve(settings.watch.metrics_port, settings.watch.metrics_host)
        watcher.log("metrics_serving", host=settings.watch.metrics_host, port=port)
    watcher.log("watch_started", execute=settings.watch.execute, once=once, store=str(watcher.store.path))
    try:
        failures = watcher.run(once=once, stop=stop.is_set)
    finally:
        if watcher.metrics is not None:
            watcher.metrics.stop()
        watcher.store.close()
    return 0 if failures == 0 else 1


def job_report(settings: Settings, job_id: str, *, backend: ClusterBackend | None = None) -> dict[str, Any]:
    """A jobstats-style record for one job: the scheduler's view, watch's prediction, progress,
    ETA, events, diagnosis and actions (the `schedmate job --json` contract)."""
    from schedmate.integrations.watch import WatchStore

    path = watch_store_path(settings)
    rec: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    actions: list[dict[str, Any]] = []
    if path.exists():
        store = WatchStore(path)
        try:
            rec = store.job(job_id) or {}
            events = store.events(job_id)
            actions = store.actions(job_id)
        finally:
            store.close()
    view: JobView | None = None
    scheduler_error = None
    try:
        view = (backend or _slurm_backend(settings)).job(job_id)
    except SchedmateError as exc:
        scheduler_error = str(exc)
    recoveries = _recoveries(settings, job_id)
    if view is None and not rec and not recoveries:
        raise SchedmateError(f"job {job_id}: unknown to the scheduler and to watch ({path})")
    start = view.start_time if view else rec.get("start_time")
    end = view.end_time if view and view.state.ended else rec.get("end_time")
    actual = (end - start) if start and end and end >= start else None
    diagnosis = json.loads(rec["diagnosis"]) if rec.get("diagnosis") else None
    return {
        "schema_version": SCHEMA_VERSION,
        "job_id": job_id,
        "state": view.state.value if view else rec.get("state"),
        "user": view.user if view else rec.get("user"),
        "partition": view.partition if view else rec.get("partition"),
        "name": view.name if view else rec.get("name"),
        "nodes": list(view.nodes) if view else [],
        "time_limit_s": view.time_limit_s if view else None,
        "requested_time_limit_s": rec.get("limit_before_s"),
        "restarts": view.restarts if view else None,
        "comment": view.comment if view else None,
        "prediction": {
            "p50_s": rec.get("p50_s"),
            "p90_s": rec.get("p90_s"),
            **json.loads(rec.get("prediction") or "{}"),
        },
        "actual_s": actual,
        "progress": rec.get("progress"),
        "step": rec.get("step"),
        "total_steps": rec.get("total_steps"),
        "eta_s": rec.get("eta_s"),
        "step_time_s": rec.get("step_time_s"),
        "slowdown": bool(rec.get("slowdown")),
        "stalled": bool(rec.get("stalled")),
        "events": events,
        "diagnosis": diagnosis,
        "actions": [
            {
                k: a.get(k)
                for k in ("action_id", "kind", "node", "status", "reason", "error", "created", "finished")
            }
            | {"detail": json.loads(a.get("detail") or "{}")}
            for a in actions
        ]
        + recoveries,
        "scheduler_error": scheduler_error,
    }


_PHASE_STATUS = {"started": "unconfirmed", "done": "done", "failed": "failed"}
_RECOVERY_KIND = {"requeue": "requeue", "exclude_node": "requeue", "resubmit_with_limit": "requeue"}


def _recoveries(settings: Settings, job_id: str) -> list[dict[str, Any]]:
    """The recovery actions executed for a job, from the audit log (their one ledger)."""
    from schedmate.failure import AuditLog
    from schedmate.sdk.failures import audit_log_path

    path = audit_log_path(settings)
    if not path.exists():
        return []
    out = []
    for r in AuditLog(path).job_executions(job_id):
        action = str(r.get("action") or "")
        out.append(
            {
                "action_id": r.get("action_id"),
                "kind": r.get("kind") or _RECOVERY_KIND.get(action, "drain"),
                "node": r.get("node"),
                "status": _PHASE_STATUS.get(str(r.get("phase")), str(r.get("phase"))),
                "reason": r.get("reason"),
                "error": r.get("error"),
                "created": r.get("started"),
                "finished": r.get("finished"),
                "detail": {
                    "recovery": action,
                    "time_limit_s": r.get("new_time_limit_s"),
                    "mem": r.get("new_mem"),
                    "exclude_nodes": r.get("exclude_nodes") or [],
                    "attempt": r.get("attempt"),
                },
            }
        )
    return out

"""Watcher: one cycle = snapshot -> per job (pending: advise; running: track; ended: diagnose
and recover; completed: remember) -> actions through the backend, each once.

Capabilities come in through the small `Capabilities` protocol (the SDK wires the Advisor,
Tracker and Failure Handler into it), so this loop knows views and decisions only.

Recovery of an ended job is the Failure Handler's: its planner decides (budgets, limits,
exclusions, corroborated drains) and executes through its audit log, the one ledger of
recovery actions (shared with `diagnose --execute`); watch only adds its operator guard rails
(partition allowlist, drains per hour, share of a partition drained) between plan and
execution, and reports. Watch's own actions (a pending job's TimeLimit) go through the
store's ledger: recorded before they run, marked after, never repeated; in dry run recorded
as planned and logged once.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from schedmate.core.cluster import (
    Action,
    ActionKind,
    ClusterBackend,
    ClusterSnapshot,
    JobState,
    JobView,
    apply_action,
)
from schedmate.core.diagnosis import ActionStatus, FailureReport, RecoveryAction, RecoveryKind
from schedmate.core.errors import BackendError, InputError, SchedmateError
from schedmate.core.settings import WatchSettings
from schedmate.core.types import TrackResult
from schedmate.integrations.watch.follow import JobLog, owner_uid
from schedmate.integrations.watch.metrics import WatchMetrics
from schedmate.integrations.watch.policy import (
    drain_allowed,
    fmt_duration,
    join_notes,
    limit_from_prediction,
    ours_to_write,
)
from schedmate.integrations.watch.store import LedgerStatus, WatchStore

__all__ = ["Capabilities", "CycleReport", "Guard", "Prediction", "Watcher"]

Guard = Callable[[RecoveryAction], str | None]


@dataclass(frozen=True, slots=True)
class Prediction:
    p50_s: float | None
    p90_s: float | None
    method: str | None = None
    neighbors: int = 0
    error: str | None = None


class Capabilities(Protocol):
    def advise(self, job: JobView, script: str | None) -> Prediction: ...

    def recover(self, job: JobView, log: str | None, guard: Guard, dry_run: bool) -> FailureReport:
        """Diagnose an ended job (`log`: None when it is not to be read) and recover it through
        the Failure Handler's planner, executing what `guard` lets through unless `dry_run`."""
        ...

    def new_recovery_cycle(self, snapshot: ClusterSnapshot) -> None:
        """A new cycle for the planner: its per-cycle drain quota; this cycle's snapshot as its
        node facts."""
        ...

    def recovery_budget(self, job_id: str) -> tuple[int, int]:
        """(executed recovery actions of the job, the retry budget)."""
        ...

    def drains_in_last_hour(self) -> int: ...

    def unfinished_recoveries(self) -> list[dict[str, Any]]:
        """Recovery actions started and never confirmed (a crash): for an operator."""
        ...

    def track(self, lines: Sequence[str], file: str) -> TrackResult: ...

    def remember(self, jobs: Sequence[tuple[JobView, str | None]]) -> None: ...


@dataclass
class CycleReport:
    jobs: int = 0
    pending: int = 0
    running: int = 0
    ended: int = 0
    actions: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


class Watcher:
    def __init__(
        self,
        backend: ClusterBackend,
        caps: Capabilities,
        store: WatchStore,
        settings: WatchSettings | None = None,
        *,
        metrics: WatchMetrics | None = None,
        log: TextIO | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.backend = backend
        self.caps = caps
        self.store = store
        self.s = settings or WatchSettings()
        self.metrics = metrics
        self._log_to = log if log is not None else sys.stderr
        self.clock = clock
        self.logs: dict[str, JobLog] = {}
        self._planned_comments: dict[str, str] = {}
        self._report = CycleReport()
        unfinished = [
            (str(a["action_id"]), str(a["kind"]), a["job_id"])
            for a in store.actions(status=LedgerStatus.STARTED)
        ]
        unfinished += [
            (str(r.get("action_id")), str(r.get("action")), r.get("job_id"))
            for r in caps.unfinished_recoveries()
        ]
        for aid, kind, job_id in unfinished:
            self.log("action_unfinished", level="warning", action_id=aid, kind=kind, job_id=job_id)

    # -- logging -----------------------------------------------------------------------------
    def log(self, event: str, *, level: str = "info", **fields: Any) -> None:
        rec: dict[str, Any] = {"time": round(self.clock(), 3), "level": level, "event": event, **fields}
        try:
            self._log_to.write(json.dumps(rec, default=str) + "\n")
            self._log_to.flush()
        except (OSError, ValueError):
            pass

    # -- the loop ----------------------------------------------------------------------------
    def run(self, *, once: bool = False, stop: Callable[[], bool] = lambda: False) -> int:
        """Cycle until `stop()`; after a failed cycle wait longer (doubling, capped). Returns the
        number of failed cycles in a row at the end (0 = the last cycle worked)."""
        failures = 0
        while True:
            t0 = self.clock()
            try:
                self.cycle()
                failures = 0
            except SchedmateError as exc:
                failures += 1
                self.log("cycle_failed", level="error", error=str(exc), retry_in_s=self._backoff(failures))
                if self.metrics:
                    self.metrics.cycle_errors.inc()
            if once:
                return failures
            wait = self._backoff(failures) if failures else max(0.0, self.s.interval_s - (self.clock() - t0))
            end = time.monotonic() + wait
            while time.monotonic() < end:
                if stop():
                    return failures
                time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            if stop():
                return failures

    def _backoff(self, failures: int) -> float:
        return float(min(self.s.max_backoff_s, self.s.interval_s * 2 ** min(failures - 1, 10)))

    def cycle(self) -> CycleReport:
        t0 = time.perf_counter()
        self._report = rep = CycleReport()
        snap = self.backend.snapshot()
        self.caps.new_recovery_cycle(snap)
        rep.jobs = len(snap.jobs)
        done: list[tuple[JobView, str | None]] = []
        for job in snap.jobs:
            try:
                if job.state is JobState.PENDING:
                    rep.pending += 1
                    self._pending(job)
                elif job.state is JobState.RUNNING:
                    rep.running += 1
                    self._running(job)
                elif job.state.ended:
                    rep.ended += 1
                    self._ended(job, snap, done)
            except BackendError as exc:
                if str(exc).startswith("watch store"):
                    raise  # the store is down: the whole cycle backs off
                rep.errors.append(f"job {job.job_id}: {exc}")
                self.log("job_error", level="warning", job_id=job.job_id, error=str(exc))
            except Exception as exc:  # noqa: BLE001  (one job's failure, in any capability, is that job's error)
                rep.errors.append(f"job {job.job_id}: {_one_line(exc)}")
                self.log("job_error", level="error", job_id=job.job_id, error=_one_line(exc))
        if done:
            try:
                self.caps.remember(done)
                for j, _ in done:
                    self.store.put_job(j.job_id, remembered=1)
                self.log("history_added", jobs=[j.job_id for j, _ in done])
            except Exception as exc:  # noqa: BLE001  (the history is best effort; retried next time)
                self.log("history_failed", level="warning", error=_one_line(exc))
        running = {j.job_id for j in snap.running}
        for job_id in [k for k in self.logs if k not in running]:
            del self.logs[job_id]
        if self.metrics:
            self.metrics.keep_only(running)
            for st in (JobState.PENDING, JobState.RUNNING):
                self.metrics.jobs.labels(st.value.lower()).set(len(snap.in_state(st)))
        rep.seconds = time.perf_counter() - t0
        if self.metrics:
            self.metrics.cycle.set(rep.seconds)
        self.log(
            "cycle",
            jobs=rep.jobs,
            pending=rep.pending,
            running=rep.running,
            ended=rep.ended,
            actions=len(rep.actions),
            errors=len(rep.errors),
            seconds=round(rep.seconds, 3),
            dry_run=not self.s.execute,
        )
        return rep

    # -- acting ------------------------------------------------------------------------------
    def _allowed(self, job: JobView) -> bool:
        return not self.s.partitions or job.partition in self.s.partitions

    def _act(self, action: Action) -> bool:
        """Carry out a state-changing action at most once (ledger); True when it was done now."""
        aid = action.action_id
        status = self.store.action_status(aid)
        if status in (LedgerStatus.STARTED, LedgerStatus.DONE, LedgerStatus.FAILED, LedgerStatus.SKIPPED):
            return False
        rec: dict[str, Any] = {
            "action_id": aid,
            "kind": action.kind.value,
            "job_id": action.job_id,
            "node": action.node,
            "time_limit_s": action.time_limit_s,
            "exclude_nodes": list(action.exclude_nodes),
            "reason": action.reason,
        }
        if not self.s.execute:
            if status != LedgerStatus.PLANNED:
                self.store.record_action(action, LedgerStatus.PLANNED)
                self.log("action", mode="dry-run", **rec)
                self._report.actions.append({**rec, "mode": "dry-run"})
                if self.metrics:
                    self.metrics.actions.labels(action.kind.value, "dry-run").inc()
            return False
        self.store.record_action(action, LedgerStatus.STARTED)  # committed before the scheduler is touched
        try:
            apply_action(self.backend, action)
        except BackendError as exc:
            self.store.record_action(action, LedgerStatus.FAILED, error=str(exc))
            self.log("action_failed", level="warning", error=str(exc), **rec)
            self._report.actions.append({**rec, "mode": "failed", "error": str(exc)})
            return False
        self.store.record_action(action, LedgerStatus.DONE)
        self.log("action", mode="execute", **rec)
        self._report.actions.append({**rec, "mode": "execute"})
        if self.metrics:
            self.metrics.actions.labels(action.kind.value, "execute").inc()
        return True

    def _annotate(self, job: JobView, text: str) -> None:
        """Write watch's note into the job's Comment (idempotent by value, not in the ledger)."""
        if not self.s.annotate or not ours_to_write(job.comment) or job.comment == text[:240]:
            return
        if not self.s.execute:
            if self._planned_comments.get(job.job_id) != text:
                self._planned_comments[job.job_id] = text
                self.log("comment", mode="dry-run", job_id=job.job_id, comment=text)
            return
        try:
            self.backend.update(job.job_id, comment=text)
        except BackendError as exc:
            self.log("comment_failed", level="warning", job_id=job.job_id, error=str(exc))
            return
        self.log("comment", mode="execute", job_id=job.job_id, comment=text)

    def _event(self, job: JobView, kind: str, message: str) -> None:
        self.store.add_event(job.job_id, kind, message, self.clock())
        self.log("job_event", job_id=job.job_id, kind=kind, message=message)
        self._report.events.append({"job_id": job.job_id, "kind": kind, "message": message})

    # -- pending -----------------------------------------------------------------------------
    def _pending(self, job: JobView) -> None:
        rec = self.store.job(job.job_id)
        if rec is None or rec.get("prediction") is None:
            script = self._script(job)
            pred = self.caps.advise(job, script)
            self.store.put_job(
                job.job_id,
                user=job.user,
                partition=job.partition,
                state=job.state.value,
                name=job.name,
                submit_time=job.submit_time,
                p50_s=pred.p50_s,
                p90_s=pred.p90_s,
                limit_before_s=job.time_limit_s,
                prediction=json.dumps(
                    {"method": pred.method, "neighbors": pred.neighbors, "error": pred.error}
                ),
            )
            self.log(
                "advised", job_id=job.job_id, p50_s=pred.p50_s, p90_s=pred.p90_s, neighbors=pred.neighbors
            )
            rec = self.store.job(job.job_id) or {}
        if not self._allowed(job) or job.restarts > 0:
            return  # a requeued job keeps the limit its recovery gave it
        p50, p90 = rec.get("p50_s"), rec.get("p90_s")
        neighbors = int(json.loads(rec.get("prediction") or "{}").get("neighbors") or 0)
        if p50 is None or p90 is None:
            return
        notes = [f"predicted {fmt_duration(p50)} (p90 {fmt_duration(p90)}, {neighbors} similar jobs)"]
        if self.s.set_time_limit and neighbors > 0:
            new = limit_from_prediction(float(p90), rec.get("limit_before_s"), self.s)
            if new is not None:
                notes.append(f"limit {fmt_duration(new)}")
                if job.time_limit_s != new:
                    self._act(
                        Action(
                            ActionKind.UPDATE,
                            job_id=job.job_id,
                            time_limit_s=new,
                            reason=f"p90 {fmt_duration(p90)} + margin",
                        )
                    )
        self._annotate(job, join_notes(notes))

    def _script(self, job: JobView) -> str | None:
        try:
            return self.backend.job_script(job.job_id)
        except BackendError as exc:
            self.log("script_unavailable", level="warning", job_id=job.job_id, error=str(exc))
            return None

    # -- running -----------------------------------------------------------------------------
    def _running(self, job: JobView) -> None:
        if not job.stdout_path:
            return
        jl = self.logs.get(job.job_id)
        if jl is None or jl.path != job.stdout_path:
            jl = self.logs[job.job_id] = JobLog(job.stdout_path, window=self.s.window_lines)
        now = self.clock()
        try:
            new = jl.read_new(max_bytes=self.s.read_bytes, now=now, uid=owner_uid(job.user))
        except InputError as exc:
            if jl.first_time("unreadable", 0):
                self.log("log_unreadable", level="warning", job_id=job.job_id, error=str(exc))
            return
        rec = self.store.job(job.job_id) or {}
        if new:
            # the newest lines only: the tracker's cost is per line, and progress, step time and
            # ETA need only the latest samples; the total and the usual speed are kept across cycles
            lines = list(jl.lines)[-self.s.track_lines :]
            result = self.caps.track(lines, job.stdout_path)
            base = jl.total_lines - len(lines)
            for ev in result.events:
                if ev.kind not in ("slowdown", "recovered") and jl.first_time(ev.kind, base + ev.line_no):
                    self._event(job, ev.kind, ev.message)
            progress, eta = result.progress, result.eta_s
            total = result.total_steps or rec.get("total_steps")
            if result.total_steps is None and total and result.step is not None and result.step <= total:
                progress = result.step / total
                eta = (total - result.step) * result.step_time_s if result.step_time_s else None
            slowdown = self._slowdown(job, jl, result.step_time_s, bool(rec.get("slowdown")))
            if jl.stalled:
                jl.stalled = False
                self._event(job, "recovered", "the log is growing again")
            fields: dict[str, Any] = {
                "user": job.user,
                "partition": job.partition,
                "state": job.state.value,
                "name": job.name,
                "start_time": job.start_time,
                "progress": progress,
                "eta_s": eta,
                "step_time_s": result.step_time_s,
                "step": result.step,
                "total_steps": total,
                "slowdown": int(slowdown),
                "stalled": 0,
            }
            self.store.put_job(job.job_id, **fields)
            rec.update(fields)
        else:
            step = rec.get("step_time_s")
            quiet_for = now - (jl.last_growth or job.start_time or now)
            threshold = max(self.s.interval_s, 300.0, 10.0 * float(step) if step else 0.0)
            if not jl.stalled and rec.get("progress") is not None and quiet_for > threshold:
                jl.stalled = True
                self._event(job, "stall", f"no output for {fmt_duration(quiet_for)}")
                self.store.put_job(job.job_id, stalled=1)
                rec["stalled"] = 1
        if self.metrics:
            self.metrics.job(
                job,
                progress=rec.get("progress"),
                eta_s=rec.get("eta_s"),
                step_s=rec.get("step_time_s"),
                slowdown=bool(rec.get("slowdown")),
                stalled=bool(rec.get("stalled")),
            )
        if self._allowed(job) and rec.get("progress") is not None:
            self._annotate(job, join_notes(self._progress_notes(rec)))

    def _slowdown(self, job: JobView, jl: JobLog, step_s: float | None, was: bool) -> bool:
        """Slowdown / recovered across cycles: this cycle's step time against the job's usual one."""
        if step_s is None or step_s <= 0:
            return was
        if jl.baseline is None:
            jl.baseline = step_s
            return was
        ratio = step_s / jl.baseline
        factor = self.s.slowdown_factor
        if not was and ratio >= factor:
            self._event(
                job, "slowdown", f"step time {step_s:.3g} s, {ratio:.1f}x the usual {jl.baseline:.3g} s"
            )
            return True
        if was and ratio < 1 + (factor - 1) / 2:
            self._event(job, "recovered", f"step time {step_s:.3g} s, back to the usual {jl.baseline:.3g} s")
            return False
        if not was:
            jl.baseline = 0.8 * jl.baseline + 0.2 * step_s
        return was

    @staticmethod
    def _progress_notes(rec: dict[str, Any]) -> list[str]:
        prog = float(rec["progress"])
        step = f" (step {rec['step']}/{rec['total_steps']})" if rec.get("total_steps") else ""
        notes = [f"{prog:.0%} done{step}", f"ETA {fmt_duration(rec.get('eta_s'))}"]
        if rec.get("stalled"):
            notes.append("stalled")
        elif rec.get("slowdown"):
            notes.append("slowed down")
        if rec.get("p50_s") is not None:
            notes.append(f"predicted {fmt_duration(rec['p50_s'])}")
        return notes

    # -- ended -------------------------------------------------------------------------------
    def _ended(self, job: JobView, snap: ClusterSnapshot, done: list[tuple[JobView, str | None]]) -> None:
        key = f"{job.restarts}:{job.end_time or 0:.0f}"
        mark = key if self.s.execute else f"dry:{key}"
        rec = self.store.job(job.job_id) or {}
        if rec.get("ended_key") in (key, mark):
            return
        fields: dict[str, Any] = {
            "user": job.user,
            "partition": job.partition,
            "state": job.state.value,
            "name": job.name,
            "end_time": job.end_time,
            "start_time": job.start_time,
        }
        if job.state is JobState.COMPLETED:
            if not rec.get("remembered") and job.start_time and job.end_time:
                done.append((job, self._script(job)))
            self.store.put_job(job.job_id, ended_key=mark, **fields)
            return
        if job.state in (JobState.CANCELLED, JobState.PREEMPTED, JobState.DEADLINE):
            self.store.put_job(job.job_id, ended_key=mark, **fields)
            return
        rep = self._recover(job, snap)
        fields["diagnosis"] = json.dumps(
            {
                "category": rep.category,
                "kind": rep.kind,
                "confidence": round(rep.confidence, 3),
                "root_cause": rep.root_cause_line,
                "checkpoint": rep.checkpoint,
                "node_named_in_log": rep.node,
                "method": rep.method,
                "recovery": [a.to_dict() for a in rep.recovery],
                "error": rep.error,
            }
        )
        if self.metrics:
            self.metrics.failures.labels(rep.category, rep.kind or "unknown").inc()
        self.log("diagnosed", job_id=job.job_id, state=job.state.value, category=rep.category, kind=rep.kind)
        self.store.put_job(job.job_id, ended_key=mark, **fields)

    def _guard(self, job: JobView, snap: ClusterSnapshot) -> Guard:
        """Watch's operator guard rails between the planner's plan and its execution: the
        partition allowlist, drains per hour, the share of a partition drained."""

        def guard(a: RecoveryAction) -> str | None:
            if not self._allowed(job):
                return f"partition {job.partition} is not in watch.partitions"
            if a.action is RecoveryKind.DRAIN_NODE and a.node:
                ok, why = drain_allowed(
                    a.node, snap, drains_last_hour=self.caps.drains_in_last_hour(), s=self.s
                )
                return None if ok else why
            return None

        return guard

    def _recover(self, job: JobView, snap: ClusterSnapshot) -> FailureReport:
        """Diagnose and recover through the Failure Handler's planner (the one recovery policy),
        then report what it did: events, logs, the requeued job's Comment."""
        path = job.stdout_path
        readable = bool(path) and _readable_by(str(path), job.user)
        rep = self.caps.recover(job, path if readable else None, self._guard(job, snap), not self.s.execute)
        if path and not readable:
            self.log("log_not_trusted", level="warning", job_id=job.job_id, path=path)
        if rep.node and rep.node not in job.nodes:
            self.log("log_node_ignored", job_id=job.job_id, named=rep.node, job_nodes=list(job.nodes))
        what = f"{rep.category} failure ({rep.kind or 'unknown'})"
        drained = {a.node for a in rep.recovery if a.action is RecoveryKind.DRAIN_NODE}
        job_steps = [a for a in rep.recovery if a.action in _JOB_STEPS]
        if not self._allowed(job):  # diagnosed (the planner's facts); every action refused by the guard
            self._event(
                job,
                "diagnosis",
                f"{what}: not acted on (partition {job.partition} is not in watch.partitions)",
            )
            return rep
        for a in rep.recovery:
            if a.action_id is not None:
                self._report_step(a)
            elif a.action is RecoveryKind.NOTIFY and job_steps:
                self.log("recovery_note", job_id=job.job_id, node=a.node, reason=a.reason)
        for a in job_steps:
            for node in a.exclude_nodes:
                if node not in drained:
                    self.log("drain_not_corroborated", node=node, job_id=job.job_id)
        if not job_steps:
            cause = f": {rep.root_cause_line[:120]}" if rep.root_cause_line else ""
            notes = "; ".join(a.reason for a in rep.recovery if a.reason) or rep.error or "no recovery"
            self._event(job, "diagnosis", f"{what}{cause}; not requeued: {notes}")
            return rep
        step = job_steps[0]
        used, budget = self.caps.recovery_budget(job.job_id)
        n = used if step.status is ActionStatus.EXECUTED else used + 1
        detail = _step_detail(step)
        state = (
            "" if step.status in (ActionStatus.EXECUTED, ActionStatus.DRY_RUN) else f" ({step.status.value})"
        )
        verb = "resubmit" if step.action is RecoveryKind.RESUBMIT_WITH_LIMIT else "requeue"
        self._event(job, "diagnosis", f"{what}: {verb} {n}/{budget}{detail}{state}")
        if step.status is ActionStatus.EXECUTED:
            self._after_requeue(job, f"{what}; requeued {n}/{budget}{detail}")
        return rep

    def _report_step(self, a: RecoveryAction) -> None:
        """One executable recovery step as watch's logs, cycle report and metrics show it."""
        kind = _CLUSTER_KIND[a.action]
        rec: dict[str, Any] = {
            "action_id": a.action_id,
            "kind": kind,
            "recovery": a.action.value,
            "job_id": a.job_id,
            "node": a.node,
            "time_limit_s": a.new_time_limit_s,
            "mem": a.new_mem,
            "exclude_nodes": list(a.exclude_nodes),
            "reason": a.reason,
        }
        st = a.status
        if st in (ActionStatus.EXECUTED, ActionStatus.DRY_RUN):
            mode = "execute" if st is ActionStatus.EXECUTED else "dry-run"
            self.log("action", mode=mode, **rec)
            self._report.actions.append({**rec, "mode": mode})
            if self.metrics:
                self.metrics.actions.labels(kind, mode).inc()
        elif st is ActionStatus.FAILED:
            self.log("action_failed", level="warning", error=a.error, **rec)
            self._report.actions.append({**rec, "mode": "failed", "error": a.error})
        elif st is ActionStatus.NOT_EXECUTABLE:
            self.log("action_refused", kind=kind, job_id=a.job_id, node=a.node, why=a.error)
        else:  # already done / unconfirmed: the ledger kept it from running twice
            self.log("action_not_repeated", status=st.value, error=a.error, **rec)

    def _after_requeue(self, job: JobView, note: str) -> None:
        """The job is pending again: now its Comment can carry the why."""
        try:
            fresh = self.backend.job(job.job_id)
        except BackendError:
            fresh = None
        if fresh is not None:
            self._annotate(fresh, join_notes([note]))


_JOB_STEPS = (RecoveryKind.REQUEUE, RecoveryKind.EXCLUDE_NODE, RecoveryKind.RESUBMIT_WITH_LIMIT)
_CLUSTER_KIND = {
    RecoveryKind.REQUEUE: ActionKind.REQUEUE.value,
    RecoveryKind.EXCLUDE_NODE: ActionKind.REQUEUE.value,
    RecoveryKind.RESUBMIT_WITH_LIMIT: ActionKind.REQUEUE.value,
    RecoveryKind.DRAIN_NODE: ActionKind.DRAIN.value,
}


def _step_detail(a: RecoveryAction) -> str:
    parts = []
    if a.exclude_nodes:
        parts.append(f" excluding {','.join(a.exclude_nodes)}")
    if a.new_time_limit_s is not None:
        parts.append(f", new limit {fmt_duration(a.new_time_limit_s)}")
    if a.new_mem:
        parts.append(f", memory {a.new_mem}")
    if a.checkpoint:
        parts.append(f", resume from {a.checkpoint}")
    return "".join(parts)


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def _readable_by(path: str, user: str | None) -> bool:
    """A log watch may read for this job: a regular file (no symlink) owned by the job's user."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    uid = owner_uid(user)
    return uid is not None and st.st_uid == uid

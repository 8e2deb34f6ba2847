"""Watcher: one cycle = snapshot -> per job (pending: advise; running: track; ended: diagnose,
recover; completed: remember) -> actions through the backend, each once.

Capabilities come in through the small `Capabilities` protocol (the SDK wires the Advisor,
Tracker and Failure Handler into it), so this loop knows views and decisions only. Every
state-changing action goes through the store's ledger: recorded before it runs, marked after,
never repeated; in dry run it is recorded as planned and logged once.
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
from schedmate.core.errors import BackendError, InputError, SchedmateError
from schedmate.core.settings import WatchSettings
from schedmate.core.types import TrackResult
from schedmate.integrations.watch.follow import JobLog, owner_uid
from schedmate.integrations.watch.metrics import WatchMetrics
from schedmate.integrations.watch.policy import (
    drain_allowed,
    fmt_duration,
    join_notes,
    limit_after_timeout,
    limit_from_prediction,
    ours_to_write,
    trusted_node,
)
from schedmate.integrations.watch.store import ActionStatus, WatchStore

__all__ = ["Capabilities", "CycleReport", "Diagnosis", "Prediction", "Watcher"]


@dataclass(frozen=True, slots=True)
class Prediction:
    p50_s: float | None
    p90_s: float | None
    method: str | None = None
    neighbors: int = 0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Diagnosis:
    failed: bool
    category: str = "unknown"  # infrastructure | application | unknown
    kind: str | None = None
    confidence: float = 0.0
    root_cause: str | None = None
    node_named: str | None = None  # named by the log: untrusted
    checkpoint: str | None = None
    error: str | None = None


class Capabilities(Protocol):
    def advise(self, job: JobView, script: str | None) -> Prediction: ...

    def diagnose(self, job: JobView, path: str) -> Diagnosis: ...

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
        for a in store.actions(status=ActionStatus.STARTED):
            self.log(
                "action_unfinished",
                level="warning",
                action_id=a["action_id"],
                kind=a["kind"],
                job_id=a["job_id"],
            )

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
        if status in (ActionStatus.STARTED, ActionStatus.DONE, ActionStatus.FAILED, ActionStatus.SKIPPED):
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
            if status != ActionStatus.PLANNED:
                self.store.record_action(action, ActionStatus.PLANNED)
                self.log("action", mode="dry-run", **rec)
                self._report.actions.append({**rec, "mode": "dry-run"})
                if self.metrics:
                    self.metrics.actions.labels(action.kind.value, "dry-run").inc()
            return False
        self.store.record_action(action, ActionStatus.STARTED)  # committed before the scheduler is touched
        try:
            apply_action(self.backend, action)
        except BackendError as exc:
            self.store.record_action(action, ActionStatus.FAILED, error=str(exc))
            self.log("action_failed", level="warning", error=str(exc), **rec)
            self._report.actions.append({**rec, "mode": "failed", "error": str(exc)})
            return False
        self.store.record_action(action, ActionStatus.DONE)
        self.log("action", mode="execute", **rec)
        self._report.actions.append({**rec, "mode": "execute"})
        if self.metrics:
            self.metrics.actions.labels(action.kind.value, "execute").inc()
        return True

    def _skip(self, action: Action, why: str) -> None:
        """A decision a guard rail refused: recorded once, with why."""
        if self.store.action_status(action.action_id) is None:
            self.store.record_action(action, ActionStatus.SKIPPED, error=why)
            self.log(
                "action_refused", kind=action.kind.value, job_id=action.job_id, node=action.node, why=why
            )

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
        diag = self._diagnose(job)
        fields["diagnosis"] = json.dumps(
            {
                "category": diag.category,
                "kind": diag.kind,
                "confidence": round(diag.confidence, 3),
                "root_cause": diag.root_cause,
                "checkpoint": diag.checkpoint,
                "node_named_in_log": diag.node_named,
                "error": diag.error,
            }
        )
        if self.metrics:
            self.metrics.failures.labels(diag.category, diag.kind or "unknown").inc()
        self.log(
            "diagnosed", job_id=job.job_id, state=job.state.value, category=diag.category, kind=diag.kind
        )
        if self._allowed(job):
            self._recover(job, diag, snap)
        self.store.put_job(job.job_id, ended_key=mark, **fields)

    def _diagnose(self, job: JobView) -> Diagnosis:
        if job.state is JobState.TIMEOUT:
            base = Diagnosis(
                True,
                "timeout",
                "time_limit",
                1.0,
                f"killed at its time limit {fmt_duration(job.time_limit_s)}",
            )
        elif job.state is JobState.NODE_FAIL:
            base = Diagnosis(
                True, "infrastructure", "node_fail", 1.0, "the scheduler reports the node failed"
            )
        elif job.state is JobState.OUT_OF_MEMORY:
            base = Diagnosis(True, "application", "out_of_memory", 1.0, "the job ran out of memory")
        else:
            base = Diagnosis(False)
        path = job.stdout_path
        if not path or not _readable_by(path, job.user):
            return (
                base
                if base.failed
                else Diagnosis(True, error=f"job log {path}: not readable by the job's user")
            )
        diag = self.caps.diagnose(job, path)
        if base.failed:  # the scheduler's verdict stands; the log adds its checkpoint and details
            return Diagnosis(
                True, base.category, base.kind, base.confidence, diag.root_cause or base.root_cause,
                diag.node_named, diag.checkpoint, diag.error,
            )  # fmt: skip
        return diag

    def _recover(self, job: JobView, diag: Diagnosis, snap: ClusterSnapshot) -> None:
        s = self.s
        requeues = self.store.count_actions(ActionKind.REQUEUE.value, job_id=job.job_id)
        what = f"{diag.category} failure ({diag.kind or 'unknown'})"
        if diag.category == "timeout":
            new = limit_after_timeout(job.time_limit_s, s) if s.timeout_requeue else None
            if new is None:
                self._event(
                    job, "diagnosis", f"{what}: not requeued (limit already at the cap or requeue off)"
                )
                return
            if requeues >= s.requeue_budget:
                self._event(job, "diagnosis", f"{what}: requeue budget ({s.requeue_budget}) exhausted")
                return
            ckpt = f", resume from {diag.checkpoint}" if diag.checkpoint else ""
            action = Action(
                ActionKind.REQUEUE, job_id=job.job_id, time_limit_s=new, attempt=job.restarts,
                reason=f"time limit {fmt_duration(job.time_limit_s)} hit; limit {fmt_duration(new)}{ckpt}",
            )  # fmt: skip
            self._event(job, "diagnosis", f"{what}: requeue with limit {fmt_duration(new)}{ckpt}")
            if self._act(action):
                self._after_requeue(job, f"requeued after time limit, new limit {fmt_duration(new)}{ckpt}")
            return
        if diag.category != "infrastructure" or diag.confidence < s.min_failure_confidence:
            why = (
                "not requeued: fix the job and resubmit"
                if diag.category == "application"
                else "not requeued (uncertain)"
            )
            cause = f": {diag.root_cause[:120]}" if diag.root_cause else ""
            self._event(job, "diagnosis", f"{what}{cause}; {why}")
            return
        node = trusted_node(job, diag.node_named)
        if diag.node_named and diag.node_named not in job.nodes:
            self.log("log_node_ignored", job_id=job.job_id, named=diag.node_named, job_nodes=list(job.nodes))
        if node:
            self.store.add_failure(job.job_id, job.restarts, job.user, node, diag.category, diag.kind)
            self._maybe_drain(job, node, diag, snap)
        if requeues >= s.requeue_budget:
            self._event(
                job, "diagnosis", f"{what}: requeue budget ({s.requeue_budget}) exhausted; needs a human"
            )
            return
        exclude = (node,) if node else ()
        action = Action(
            ActionKind.REQUEUE, job_id=job.job_id, exclude_nodes=exclude, attempt=job.restarts,
            reason=f"{what}, confidence {diag.confidence:.2f}" + (f"; excluding {node}" if node else ""),
        )  # fmt: skip
        self._event(
            job,
            "diagnosis",
            f"{what}: requeue {requeues + 1}/{s.requeue_budget}" + (f" excluding {node}" if node else ""),
        )
        if self._act(action):
            self._after_requeue(
                job,
                f"{what}; requeued {requeues + 1}/{s.requeue_budget}"
                + (f" excluding {node}" if node else ""),
            )

    def _after_requeue(self, job: JobView, note: str) -> None:
        """The job is pending again: now its Comment can carry the why."""
        try:
            fresh = self.backend.job(job.job_id)
        except BackendError:
            fresh = None
        if fresh is not None:
            self._annotate(fresh, join_notes([note]))

    def _maybe_drain(self, job: JobView, node: str, diag: Diagnosis, snap: ClusterSnapshot) -> None:
        since = self.clock() - self.s.corroboration_window_s
        sources = self.store.sources_implicating(node, since)
        if len(sources) < self.s.corroborating_users:
            self.log("drain_not_corroborated", node=node, job_id=job.job_id, sources=len(sources))
            return
        drains = self.store.count_actions(ActionKind.DRAIN.value, since=self.clock() - 3600)
        ok, why = drain_allowed(node, snap, drains_last_hour=drains, s=self.s)
        action = Action(
            ActionKind.DRAIN, node=node, attempt=int(since // 3600),
            reason=f"schedmate: {diag.kind or 'infrastructure'} failures of {len(sources)} users' jobs",
        )  # fmt: skip
        if ok:
            self._act(action)
        else:
            self._skip(action, why)


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

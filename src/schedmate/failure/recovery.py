"""Recovery planning and execution with guard rails.

Entry point: `RecoveryPlanner.recover(job, finding)`, where `job` is a `JobContext` built
from the scheduler's `JobView` (`JobContext.from_view`) or from the caller's flags, and the
planner acts through a `schedmate.core.cluster.ClusterBackend` (in-memory here, Slurm from
the live agent).

Policy:
- application fault, or an uncertain diagnosis -> `notify` (never a restart);
- a time or memory limit ended the job -> `resubmit_with_limit` from the last checkpoint
  with limit x factor (capped), never a node exclusion or drain;
- other infrastructure faults -> `requeue`, or `exclude_node` when the fault points at a
  node the SCHEDULER placed the job on (a log-named node only narrows that list);
- `drain_node` only from facts: the scheduler reports the node failed, or jobs of at least
  `corroborating_users` distinct users (as the scheduler records them) failed with
  node-specific infrastructure causes on it, `min_node_events` times within the window; at
  most `max_drains_per_cycle` per cycle; none when more than `max_suspect_nodes` nodes are
  suspect at once (a systemic event: reported). Failing open: an unreachable scheduler or
  unreadable history means no drain, never a blocked requeue.
- The budget (`retry_budget`) is keyed by the scheduler's or the caller's job id and counts
  executed actions only; dry-run plans are recorded as such and are free.
- A time or memory limit the SCHEDULER reports (TIMEOUT, OUT_OF_MEMORY) is a resubmission
  whatever the log says (the log adds the checkpoint).
- Execution: every action has an id derived from job, attempt and action; it is claimed in
  the audit log (`started`, under the file lock, after re-reading what other processes
  wrote) before and recorded `done`/`failed` after the backend call; an id already started
  is never executed again (a crash between the two leaves it `unconfirmed` for a human).
  The audit log is the one ledger of recovery: `watch` and `diagnose --execute` share it.
- Operator guard rails of the caller (`watch`: drains per hour, share of a partition
  drained) come in as a `guard` between plan and execution: a refused action is recorded
  (`refused`) and not executed; the other actions of the plan go on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from schedmate.core.cluster import (
    Action,
    ActionKind,
    ClusterBackend,
    ClusterSnapshot,
    InMemoryClusterBackend,
    JobState,
    JobView,
    NodeView,
    apply_action,
)
from schedmate.core.diagnosis import ActionStatus, RecoveryAction, RecoveryKind
from schedmate.core.errors import BackendError, InputError
from schedmate.core.settings import FailureSettings
from schedmate.failure.audit import AuditLog
from schedmate.failure.checkpoint import find_checkpoint
from schedmate.failure.nodes import find_node, find_nodes

Guard = Callable[[RecoveryAction], str | None]
"""A caller's guard rail between plan and execution: the reason to refuse an action, or None."""

__all__ = [
    "Guard",
    "ClusterBackend",
    "InMemoryClusterBackend",
    "AuditLog",
    "RecoveryPlanner",
    "JobContext",
    "Finding",
    "find_checkpoint",
    "find_node",
    "find_nodes",
    "parse_mem_mb",
]

_NODE_RECOVERIES = ("requeue_exclude_node", "drain_node_and_requeue")
_LIMIT_KINDS = {"time_limit": "time", "memory_limit": "mem"}


@dataclass(frozen=True, slots=True)
class JobContext:
    """What recovery knows about the failed job beyond its log.

    `nodes`, `user`, `state`, `restarts` and `time_limit_s` are the scheduler's facts (from a
    `JobView`, or from an operator's flags); nothing here is ever taken from log text."""

    job_id: str | None = None
    user: str | None = None
    nodes: tuple[str, ...] = ()
    job_dir: str | None = None
    time_limit_s: float | None = None
    mem: str | None = None  # the job's memory request, Slurm syntax (`64G`, `65536M`)
    state: JobState | None = None
    restarts: int | None = None
    from_scheduler: bool = False

    @classmethod
    def from_view(cls, view: JobView, *, mem: str | None = None, job_dir: str | None = None) -> JobContext:
        return cls(
            job_id=view.job_id,
            user=view.user,
            nodes=tuple(view.nodes),
            job_dir=job_dir or view.work_dir,
            time_limit_s=view.time_limit_s,
            mem=mem,
            state=view.state,
            restarts=view.restarts,
            from_scheduler=True,
        )


@dataclass(frozen=True, slots=True)
class Finding:
    """The diagnosis recovery acts on."""

    category: str
    kind: str | None
    confidence: float
    recovery_hint: str | None = None  # the signature's suggested recovery
    root_line_no: int | None = None
    checkpoint: str | None = None
    log_nodes: tuple[str, ...] = ()  # named by the log near the failure: untrusted


# -- memory sizes -----------------------------------------------------------------------------
_MEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.I)
_MEM_UNITS = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_mem_mb(text: str | None) -> int | None:
    """'64G' / '65536M' / '1.5T' / '4096' (MB, Slurm's default unit) -> MB; None if unreadable."""
    m = _MEM.match(text or "")
    if m is None:
        return None
    return int(float(m.group(1)) * _MEM_UNITS[m.group(2).upper()])


def _mem_str(mb: int) -> str:
    return f"{mb // 1024}G" if mb % 1024 == 0 else f"{mb}M"


class RecoveryPlanner:
    """Plans recovery for one diagnosed failure and, unless dry-run, executes it."""

    def __init__(
        self,
        backend: ClusterBackend | None,
        audit: AuditLog,
        settings: FailureSettings | None = None,
    ) -> None:
        self.backend = backend
        self.audit = audit
        self.settings = settings or FailureSettings()
        self._drains = 0
        self._snapshot: ClusterSnapshot | None = None

    def new_cycle(self, snapshot: ClusterSnapshot | None = None) -> None:
        """Start a new cycle (the live agent calls this once per poll): the drain quota resets,
        and the cycle's `snapshot` (the caller's, taken this cycle) is the node facts of every
        decision in it instead of one scheduler query per failed job."""
        self._drains = 0
        self._snapshot = snapshot

    # -- entry point ----------------------------------------------------------------------
    def recover(
        self,
        job: JobContext,
        finding: Finding,
        *,
        guard: Guard | None = None,
        dry_run: bool | None = None,
    ) -> tuple[tuple[RecoveryAction, ...], tuple[str, ...]]:
        """Plan, audit and (unless dry-run: `dry_run`, else `failure.dry_run`) execute what
        `guard` (the caller's operator guard rails) lets through. Returns actions, warnings."""
        dry = self.settings.dry_run if dry_run is None else dry_run
        warnings: list[str] = []
        self.audit.refresh()  # what other processes (watch, diagnose) executed meanwhile
        if self.audit.read_error:
            warnings.append(f"{self.audit.read_error}; budgets and corroboration start empty")
        nodes_now, known = self._cluster_nodes(warnings)
        actions, record = self._plan(job, finding, nodes_now, known)
        record["dry_run"] = dry
        audited = True
        try:
            self.audit.append(record)
        except InputError as exc:
            warnings.append(str(exc))
            audited = False
        actions = self._execute(job, actions, audited, warnings, guard, dry)
        return tuple(actions), tuple(warnings)

    def budget_used(self, job_id: str) -> int:
        """Executed recovery actions of a job (its retry-budget use)."""
        return self.audit.executed_count(job_id)

    def plan(self, job: JobContext, finding: Finding) -> list[RecoveryAction]:
        """Only decide (nothing audited or executed): for previews and tests."""
        warnings: list[str] = []
        nodes_now, known = self._cluster_nodes(warnings)
        return self._plan(job, finding, nodes_now, known)[0]

    # -- facts from the scheduler ---------------------------------------------------------
    def _cluster_nodes(self, warnings: list[str]) -> tuple[dict[str, NodeView], frozenset[str] | None]:
        if self.backend is None:
            return {}, None
        if self._snapshot is not None:
            nodes = {n.name: n for n in self._snapshot.nodes}
            return nodes, (frozenset(nodes) if nodes else None)
        try:
            snap = self.backend.snapshot()
        except BackendError as exc:
            warnings.append(f"cluster backend: {exc}; no drain this time")
            return {}, None
        nodes = {n.name: n for n in snap.nodes}
        return nodes, (frozenset(nodes) if nodes else None)

    # -- decisions ------------------------------------------------------------------------
    def _plan(
        self,
        job: JobContext,
        f: Finding,
        nodes_now: dict[str, NodeView],
        known: frozenset[str] | None,
    ) -> tuple[list[RecoveryAction], dict[str, Any]]:
        s = self.settings
        ev = (f"line:{f.root_line_no}",) if f.root_line_no is not None else ()
        scheduler_nodes = tuple(n for n in job.nodes if known is None or n in known)
        log_nodes = tuple(n for n in f.log_nodes if known is None or n in known)
        suspects = self._suspects(scheduler_nodes, log_nodes)
        node_specific = f.category == "infrastructure" and (
            f.recovery_hint in _NODE_RECOVERIES or f.recovery_hint is None
        )
        record: dict[str, Any] = {
            "type": "decision",
            "job_id": job.job_id,
            "user": job.user,
            "facts_from": "scheduler" if job.from_scheduler else "caller",
            "scheduler_nodes": list(scheduler_nodes),
            "log_nodes": list(f.log_nodes)[:20],
            "suspect_nodes": list(suspects) if node_specific else [],
            "category": f.category,
            "kind": f.kind,
            "confidence": round(f.confidence, 3),
            "root_line_no": f.root_line_no,
            "checkpoint": f.checkpoint,
            "dry_run": s.dry_run,
        }

        def done(decision: str, actions: list[RecoveryAction]) -> tuple[list[RecoveryAction], dict[str, Any]]:
            record["decision"] = decision
            record["actions"] = [a.to_dict() for a in actions]
            return actions, record

        def notify(reason: str, extra: tuple[str, ...] = ()) -> RecoveryAction:
            return RecoveryAction(
                RecoveryKind.NOTIFY,
                job_id=job.job_id,
                reason=reason,
                evidence_ids=ev + extra,
                checkpoint=f.checkpoint,
                status=ActionStatus.NOT_EXECUTABLE,
            )

        if job.from_scheduler and job.state is not None and not job.state.unsuccessful:
            return done(
                "not_failed", [notify(f"the scheduler reports the job {job.state.value}: nothing to do")]
            )
        scheduler_limit = self._scheduler_limit(job)
        if scheduler_limit is not None:
            if self._budget_exhausted(job):
                return done("budget_exhausted", [notify(self._budget_reason(job))])
            return done("resubmit_with_limit", [self._resubmit(job, f, scheduler_limit, ev, notify)])
        if f.category == "application":
            return done("no_restart", [notify(f"application failure ({f.kind}): fix the job and resubmit")])
        if f.category != "infrastructure" or f.confidence < s.min_recover_confidence:
            reason = f"uncertain diagnosis ({f.category}, confidence {f.confidence:.2f}): not restarted"
            return done("uncertain", [notify(reason)])
        if self._budget_exhausted(job):
            return done("budget_exhausted", [notify(self._budget_reason(job))])
        limit = self._limit_kind(job, f)
        if limit is not None:
            return done("resubmit_with_limit", [self._resubmit(job, f, limit, ev, notify)])
        actions: list[RecoveryAction] = []
        if node_specific and suspects:
            actions.append(
                RecoveryAction(
                    RecoveryKind.EXCLUDE_NODE,
                    job_id=job.job_id,
                    exclude_nodes=suspects,
                    checkpoint=f.checkpoint,
                    evidence_ids=ev + tuple(f"scheduler:placed:{n}" for n in suspects),
                    reason=f"infrastructure failure ({f.kind}): requeue avoiding {', '.join(suspects)}",
                )
            )
        else:
            actions.append(
                RecoveryAction(
                    RecoveryKind.REQUEUE,
                    job_id=job.job_id,
                    checkpoint=f.checkpoint,
                    evidence_ids=ev,
                    reason=f"infrastructure failure ({f.kind}): requeue"
                    + (f" from {f.checkpoint}" if f.checkpoint else " (no checkpoint found)"),
                )
            )
        decision = actions[0].action.value
        if node_specific and suspects:
            drains, systemic = self._drains_for(job, suspects, nodes_now, ev)
            actions.extend(drains)
            if systemic is not None:
                actions.append(notify(systemic))
                decision += "+systemic"
        return done(decision, actions)

    def _budget_exhausted(self, job: JobContext) -> bool:
        return job.job_id is not None and self.audit.executed_count(job.job_id) >= self.settings.retry_budget

    def _budget_reason(self, job: JobContext) -> str:
        n = self.settings.retry_budget
        return f"retry budget ({n}) exhausted: {n} executed actions for job {job.job_id}; needs a human"

    @staticmethod
    def _scheduler_limit(job: JobContext) -> str | None:
        """A limit kill the scheduler reports: a fact that outranks any log text."""
        if job.from_scheduler and job.state is JobState.TIMEOUT:
            return "time"
        if job.from_scheduler and job.state is JobState.OUT_OF_MEMORY:
            return "mem"
        return None

    @staticmethod
    def _suspects(scheduler_nodes: tuple[str, ...], log_nodes: tuple[str, ...]) -> tuple[str, ...]:
        """Nodes the fault points at: only nodes the scheduler placed the job on. A log-named
        node narrows a multi-node placement; alone it is never enough."""
        named = tuple(n for n in scheduler_nodes if n in log_nodes)
        if named:
            return named
        return scheduler_nodes if len(scheduler_nodes) == 1 else ()

    @staticmethod
    def _limit_kind(job: JobContext, f: Finding) -> str | None:
        if job.from_scheduler and job.state is JobState.TIMEOUT:
            return "time"
        if job.from_scheduler and job.state is JobState.OUT_OF_MEMORY:
            return "mem"
        if f.kind in _LIMIT_KINDS:
            return _LIMIT_KINDS[f.kind]
        if f.recovery_hint == "resubmit_with_limit":
            return "mem" if f.kind and "mem" in f.kind else "time"
        return None

    def _resubmit(
        self,
        job: JobContext,
        f: Finding,
        limit: str,
        ev: tuple[str, ...],
        notify: Callable[[str], RecoveryAction],
    ) -> RecoveryAction:
        s = self.settings
        if limit == "time":
            if not job.time_limit_s:
                return notify(
                    "time limit reached; the job's limit is unknown: resubmit with a larger one "
                    "from the last checkpoint"
                )
            new_t = min(job.time_limit_s * s.time_limit_factor, s.max_time_limit_s)
            if new_t <= job.time_limit_s:
                return notify(f"time limit reached at the cap ({s.max_time_limit_s:.0f} s): needs a human")
            return RecoveryAction(
                RecoveryKind.RESUBMIT_WITH_LIMIT,
                job_id=job.job_id,
                new_time_limit_s=round(new_t),
                checkpoint=f.checkpoint,
                evidence_ids=ev + (("scheduler:state:TIMEOUT",) if job.state is JobState.TIMEOUT else ()),
                reason=f"time limit reached: resubmit with {new_t:.0f} s (was {job.time_limit_s:.0f} s)",
            )
        mem_mb = parse_mem_mb(job.mem)
        if mem_mb is None:
            return notify(
                "memory limit reached; the job's memory request is unknown: resubmit with more "
                "from the last checkpoint"
            )
        new_mb = min(int(mem_mb * s.mem_factor), s.max_mem_mb)
        if new_mb <= mem_mb:
            return notify(f"memory limit reached at the cap ({s.max_mem_mb} MB): needs a human")
        return RecoveryAction(
            RecoveryKind.RESUBMIT_WITH_LIMIT,
            job_id=job.job_id,
            new_mem=_mem_str(new_mb),
            checkpoint=f.checkpoint,
            evidence_ids=ev
            + (("scheduler:state:OUT_OF_MEMORY",) if job.state is JobState.OUT_OF_MEMORY else ()),
            reason=f"memory limit reached: resubmit with {_mem_str(new_mb)} (was {job.mem})",
        )

    def _drains_for(
        self,
        job: JobContext,
        suspects: tuple[str, ...],
        nodes_now: dict[str, NodeView],
        ev: tuple[str, ...],
    ) -> tuple[list[RecoveryAction], str | None]:
        """Drains corroborated by facts, within the per-cycle quota and the systemic guard."""
        s = self.settings
        since = self.audit.now() - s.corroboration_window_s
        events = self.audit.infra_events(since)
        by_node: dict[str, list[dict[str, Any]]] = {}
        for r in events:
            if r.get("facts_from") != "scheduler":
                continue  # a caller's flags (a dry run's --nodes) neither corroborate nor make an event systemic
            for n in r.get("suspect_nodes") or []:
                by_node.setdefault(str(n), []).append(r)
        suspect_now = set(by_node) | set(suspects)
        if len(suspect_now) > s.max_suspect_nodes:
            return [], (
                f"systemic event: {len(suspect_now)} nodes suspect within the window "
                f"(> {s.max_suspect_nodes}); no node drained, an operator should look"
            )
        out: list[RecoveryAction] = []
        for node in suspects:
            view = nodes_now.get(node)
            if view is not None and view.state.name == "DRAIN":
                continue  # already out of service
            facts: tuple[str, ...] = ()
            why = ""
            if view is not None and view.state.failed:
                facts = (f"scheduler:node:{node}:{view.state.value}",)
                why = f"the scheduler reports {node} {view.state.value}"
            else:
                # only the scheduler's records count: placement and user as it recorded them
                past = [
                    r
                    for r in by_node.get(node, [])
                    if r.get("facts_from") == "scheduler" and r.get("job_id") != job.job_id
                ]
                jobs = {str(r.get("job_id")) for r in past}
                users = {str(r["user"]) for r in past if r.get("user")}
                if job.from_scheduler:
                    jobs.add(str(job.job_id))
                    if job.user:
                        users.add(job.user)
                if len(jobs) >= s.min_node_events and len(users) >= s.corroborating_users:
                    facts = tuple(f"audit:{r.get('job_id')}@{node}" for r in past[-5:])
                    why = (
                        f"{len(jobs)} infrastructure failures on {node} from {len(users)} users "
                        "(as the scheduler records them) within the window"
                    )
            if not facts:
                continue
            if self._drains >= s.max_drains_per_cycle:
                out.append(
                    RecoveryAction(
                        RecoveryKind.NOTIFY,
                        job_id=job.job_id,
                        node=node,
                        evidence_ids=ev + facts,
                        reason=f"{why}; drain quota of this cycle used up: not drained",
                        status=ActionStatus.NOT_EXECUTABLE,
                    )
                )
                continue
            self._drains += 1
            out.append(
                RecoveryAction(
                    RecoveryKind.DRAIN_NODE,
                    job_id=job.job_id,
                    node=node,
                    evidence_ids=ev + facts,
                    reason=f"drain {node}: {why}",
                )
            )
        return out, None

    # -- execution ------------------------------------------------------------------------
    def _attempt(self, job: JobContext) -> int:
        if job.from_scheduler and job.restarts is not None:
            return job.restarts
        return self.audit.executed_count(job.job_id) if job.job_id else 0

    @staticmethod
    def cluster_action(a: RecoveryAction, attempt: int) -> Action | None:
        """The typed cluster action a recovery step becomes (None: nothing to execute)."""
        if a.action in (RecoveryKind.REQUEUE, RecoveryKind.EXCLUDE_NODE, RecoveryKind.RESUBMIT_WITH_LIMIT):
            if not a.job_id:
                return None
            return Action(
                ActionKind.REQUEUE,
                job_id=a.job_id,
                exclude_nodes=a.exclude_nodes,
                time_limit_s=a.new_time_limit_s,
                mem=a.new_mem,
                reason=a.reason,
                attempt=attempt,
            )
        if a.action is RecoveryKind.DRAIN_NODE and a.node:
            return Action(ActionKind.DRAIN, job_id=a.job_id, node=a.node, reason=a.reason, attempt=attempt)
        return None

    def _execute(
        self,
        job: JobContext,
        actions: list[RecoveryAction],
        audited: bool,
        warnings: list[str],
        guard: Guard | None = None,
        dry: bool = True,
    ) -> list[RecoveryAction]:
        attempt = self._attempt(job)
        out: list[RecoveryAction] = []
        stop = False
        for a in actions:
            ca = self.cluster_action(a, attempt)
            if ca is None:
                out.append(replace(a, status=ActionStatus.NOT_EXECUTABLE))
                continue
            a = replace(a, action_id=ca.action_id)
            why = guard(a) if guard is not None else None
            if why:
                out.append(self._refuse(a, why, warnings, dry))
                continue
            if dry:
                out.append(replace(a, status=ActionStatus.DRY_RUN))
                continue
            if self.backend is None:
                out.append(replace(a, status=ActionStatus.NOT_EXECUTABLE, error="no cluster backend"))
                continue
            if stop or not audited:
                out.append(replace(a, status=ActionStatus.FAILED, error="audit log unwritable: not executed"))
                continue
            out.append(self._execute_one(a, ca, warnings))
            if out[-1].status is ActionStatus.FAILED and out[-1].error and "audit log" in out[-1].error:
                stop = True
        return out

    def _refuse(self, a: RecoveryAction, why: str, warnings: list[str], dry: bool) -> RecoveryAction:
        """An action the caller's guard rail refused: recorded, not executed."""
        try:
            self.audit.append(
                {
                    "type": "refused",
                    "action_id": a.action_id,
                    "action": a.action.value,
                    "job_id": a.job_id,
                    "node": a.node,
                    "why": why,
                    "dry_run": dry,
                }
            )
        except InputError as exc:
            warnings.append(str(exc))
        return replace(a, status=ActionStatus.NOT_EXECUTABLE, error=f"refused by a guard rail: {why}")

    def _execute_one(self, a: RecoveryAction, ca: Action, warnings: list[str]) -> RecoveryAction:
        assert self.backend is not None and a.action_id is not None
        phases = self.audit.executions(a.action_id)
        if "done" in phases:
            return replace(a, status=ActionStatus.ALREADY_DONE)
        if "started" in phases and "failed" not in phases:
            return replace(
                a,
                status=ActionStatus.UNCONFIRMED,
                error="started before but never confirmed: check the scheduler, not repeated",
            )
        base = {
            "type": "execution",
            "action_id": a.action_id,
            "action": a.action.value,
            "job_id": a.job_id,
            "node": a.node,
            "exclude_nodes": list(a.exclude_nodes),
            "new_time_limit_s": a.new_time_limit_s,
            "new_mem": a.new_mem,
            "attempt": ca.attempt,
            "kind": ca.kind.value,
            "reason": a.reason[:300],
        }
        try:
            claimed = self.audit.claim(base)
        except InputError as exc:
            return replace(a, status=ActionStatus.FAILED, error=f"audit log: {exc}; not executed")
        if not claimed:  # another process started or finished it between our read and the lock
            return replace(
                a,
                status=ActionStatus.UNCONFIRMED,
                error="started by another process: check the scheduler, not repeated",
            )
        try:
            apply_action(self.backend, ca)
        except BackendError as exc:
            try:
                self.audit.append({**base, "phase": "failed", "error": str(exc)})
            except InputError as exc2:
                warnings.append(str(exc2))
            return replace(a, status=ActionStatus.FAILED, error=str(exc))
        try:
            self.audit.append({**base, "phase": "done"})
        except InputError as exc:
            warnings.append(f"{exc} (action {a.action_id} was executed)")
        return replace(a, status=ActionStatus.EXECUTED)

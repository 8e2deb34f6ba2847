"""One observation and action model for the simulator and for real clusters.

In the manner of Blox: observe (a `ClusterSnapshot` of `JobView`s and `NodeView`s) ->
advise -> order / what-if -> act (typed `Action`s applied through a `ClusterBackend`).
Policies and recovery read views, never a scheduler's or an engine's internals, so the same
code runs on a trace, on the in-memory fake and on Slurm. No I/O here: backends that talk to
a real scheduler live in `schedmate.integrations`.

Times are POSIX seconds (UTC); durations and limits are seconds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Protocol, runtime_checkable

from schedmate.core.errors import BackendError

__all__ = [
    "JobState",
    "NodeState",
    "JobView",
    "NodeView",
    "ClusterSnapshot",
    "ActionKind",
    "Action",
    "ClusterBackend",
    "InMemoryClusterBackend",
    "apply_action",
]


class JobState(StrEnum):
    """A job's state, in Slurm's vocabulary (other schedulers map onto it)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    REQUEUED = "REQUEUED"
    UNKNOWN = "UNKNOWN"

    @classmethod
    def parse(cls, text: str | None) -> JobState:
        """A scheduler's state word ('CANCELLED by 0', 'requeued', 'CD') -> JobState."""
        word = (text or "").strip().split(" ")[0].upper()
        word = _JOB_STATE_CODES.get(word, word)
        try:
            return cls(word)
        except ValueError:
            return cls.UNKNOWN

    @property
    def ended(self) -> bool:
        return self in _ENDED

    @property
    def unsuccessful(self) -> bool:
        """Ended without success (what the Failure Handler looks at)."""
        return self.ended and self is not JobState.COMPLETED


_ENDED = frozenset(
    {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.TIMEOUT,
        JobState.NODE_FAIL,
        JobState.OUT_OF_MEMORY,
        JobState.PREEMPTED,
        JobState.BOOT_FAIL,
        JobState.DEADLINE,
    }
)
# squeue/sacct short codes
_JOB_STATE_CODES = {
    "PD": "PENDING",
    "R": "RUNNING",
    "S": "SUSPENDED",
    "CG": "COMPLETING",
    "CD": "COMPLETED",
    "F": "FAILED",
    "CA": "CANCELLED",
    "TO": "TIMEOUT",
    "NF": "NODE_FAIL",
    "OOM": "OUT_OF_MEMORY",
    "PR": "PREEMPTED",
    "BF": "BOOT_FAIL",
    "DL": "DEADLINE",
    "RQ": "REQUEUED",
}


class NodeState(StrEnum):
    """A node's base state; `DRAIN` covers draining and drained."""

    IDLE = "IDLE"
    MIXED = "MIXED"
    ALLOCATED = "ALLOCATED"
    DRAIN = "DRAIN"
    DOWN = "DOWN"
    FAIL = "FAIL"
    UNKNOWN = "UNKNOWN"

    @classmethod
    def parse(cls, text: str | None) -> NodeState:
        """'idle', 'MIXED+DRAIN', 'drained*', 'down*', 'ALLOC' -> NodeState (worst flag wins)."""
        words = {w.strip("*~#!%$@^-").upper() for w in (text or "").replace("+", " ").split()}
        words = {_NODE_STATE_CODES.get(w, w) for w in words}
        for worst in ("FAIL", "DOWN", "DRAIN"):
            if worst in words:
                return cls(worst)
        for w in words:
            if w in cls.__members__:
                return cls(w)
        return cls.UNKNOWN

    @property
    def failed(self) -> bool:
        """The scheduler itself says the node is broken (a fact, not log text)."""
        return self in (NodeState.DOWN, NodeState.FAIL)


_NODE_STATE_CODES = {
    "ALLOC": "ALLOCATED",
    "MIX": "MIXED",
    "DRAINED": "DRAIN",
    "DRAINING": "DRAIN",
    "DRNG": "DRAIN",
    "DRNG*": "DRAIN",
    "FAILING": "FAIL",
    "UNK": "UNKNOWN",
}


@dataclass(frozen=True, slots=True)
class JobView:
    """What a policy, the advisor or recovery may know about one job."""

    job_id: str
    user: str | None = None
    state: JobState = JobState.PENDING
    name: str | None = None
    partition: str | None = None
    gpus: int = 0
    nodes: tuple[str, ...] = ()
    submit_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    time_limit_s: float | None = None
    work_dir: str | None = None
    stdout_path: str | None = None
    stderr_path: str | None = None
    command: str | None = None
    exit_code: int | None = None
    reason: str | None = None
    restarts: int = 0
    comment: str | None = None
    estimate_s: float | None = None
    eta_s: float | None = None
    mem: str | None = None  # memory request in the scheduler's syntax ('64G', '4000M')

    def with_(self, **changes: object) -> JobView:
        """A copy with some fields changed (views are immutable)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    state: NodeState = NodeState.UNKNOWN
    gpus: int = 0
    gpus_alloc: int = 0
    partitions: tuple[str, ...] = ()
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """The whole cluster at one moment: the input of what-if and of `watch`'s cycle."""

    time: float
    jobs: tuple[JobView, ...] = ()
    nodes: tuple[NodeView, ...] = ()

    def job(self, job_id: str) -> JobView | None:
        return next((j for j in self.jobs if j.job_id == job_id), None)

    def node(self, name: str) -> NodeView | None:
        return next((n for n in self.nodes if n.name == name), None)

    def in_state(self, *states: JobState) -> tuple[JobView, ...]:
        return tuple(j for j in self.jobs if j.state in states)

    @property
    def pending(self) -> tuple[JobView, ...]:
        return self.in_state(JobState.PENDING)

    @property
    def running(self) -> tuple[JobView, ...]:
        return self.in_state(JobState.RUNNING)

    @property
    def node_names(self) -> frozenset[str]:
        return frozenset(n.name for n in self.nodes)


class ActionKind(StrEnum):
    UPDATE = "update"  # time limit, comment, nice
    HOLD = "hold"
    RELEASE = "release"
    REQUEUE = "requeue"  # optionally excluding nodes, with a new time limit / memory
    DRAIN = "drain"
    RESUME = "resume"


@dataclass(frozen=True, slots=True)
class Action:
    """One typed action on a cluster. `action_id` is derived from what it does, so the same
    decision taken twice (a restarted `watch`, a replayed plan) has the same id."""

    kind: ActionKind
    job_id: str | None = None
    node: str | None = None
    time_limit_s: float | None = None
    mem: str | None = None
    comment: str | None = None
    nice: int | None = None
    exclude_nodes: tuple[str, ...] = ()
    reason: str = ""
    attempt: int = 0

    def __post_init__(self) -> None:
        if self.kind in (ActionKind.DRAIN, ActionKind.RESUME):
            if not self.node:
                raise ValueError(f"{self.kind.value} needs a node")
        elif not self.job_id:
            raise ValueError(f"{self.kind.value} needs a job id")

    @property
    def action_id(self) -> str:
        parts = [
            self.kind.value,
            self.job_id or "",
            self.node or "",
            str(self.attempt),
            ",".join(sorted(self.exclude_nodes)),
            "" if self.time_limit_s is None else f"{self.time_limit_s:.0f}",
            self.mem or "",
        ]
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


@runtime_checkable
class ClusterBackend(Protocol):
    """What schedmate needs from a scheduler. Every method raises `BackendError` with a
    one-line message when the scheduler refuses or cannot be reached."""

    name: str

    def snapshot(self) -> ClusterSnapshot:
        """Jobs (pending, running, recently ended) and nodes, now."""
        ...

    def job(self, job_id: str) -> JobView | None:
        """One job, including an ended one (None when the scheduler does not know it)."""
        ...

    def job_script(self, job_id: str) -> str | None:
        """The batch script the job was submitted with, when the scheduler keeps it."""
        ...

    def update(
        self,
        job_id: str,
        *,
        time_limit_s: float | None = None,
        comment: str | None = None,
        nice: int | None = None,
    ) -> None: ...

    def hold(self, job_id: str) -> None: ...

    def release(self, job_id: str) -> None: ...

    def requeue(
        self,
        job_id: str,
        *,
        exclude_nodes: Sequence[str] = (),
        time_limit_s: float | None = None,
        mem: str | None = None,
    ) -> None: ...

    def drain(self, node: str, reason: str) -> None: ...

    def resume(self, node: str) -> None: ...


@dataclass
class InMemoryClusterBackend:
    """A cluster in dicts: the fake for tests and dry runs. Applied actions are recorded
    in `log` as (kind, target, details) in order."""

    jobs: dict[str, JobView] = field(default_factory=dict)
    nodes: dict[str, NodeView] = field(default_factory=dict)
    scripts: dict[str, str] = field(default_factory=dict)
    time: float = 0.0
    log: list[tuple[str, str, dict[str, object]]] = field(default_factory=list)
    name: str = "memory"

    @classmethod
    def with_nodes(cls, names: Iterable[str], gpus: int = 8) -> InMemoryClusterBackend:
        return cls(nodes={n: NodeView(n, NodeState.IDLE, gpus=gpus) for n in names})

    def add_job(self, job: JobView, script: str | None = None) -> None:
        self.jobs[job.job_id] = job
        if script is not None:
            self.scripts[job.job_id] = script

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(self.time, tuple(self.jobs.values()), tuple(self.nodes.values()))

    def job(self, job_id: str) -> JobView | None:
        return self.jobs.get(job_id)

    def job_script(self, job_id: str) -> str | None:
        return self.scripts.get(job_id)

    def _job(self, job_id: str) -> JobView:
        job = self.jobs.get(job_id)
        if job is None:
            raise BackendError(f"memory cluster: no job {job_id}")
        return job

    def _node(self, node: str) -> NodeView:
        found = self.nodes.get(node)
        if found is None:
            raise BackendError(f"memory cluster: no node {node}")
        return found

    def update(
        self,
        job_id: str,
        *,
        time_limit_s: float | None = None,
        comment: str | None = None,
        nice: int | None = None,
    ) -> None:
        job = self._job(job_id)
        changes: dict[str, object] = {}
        if time_limit_s is not None:
            changes["time_limit_s"] = time_limit_s
        if comment is not None:
            changes["comment"] = comment
        self.jobs[job_id] = job.with_(**changes)
        self.log.append(("update", job_id, {**changes, "nice": nice}))

    def hold(self, job_id: str) -> None:
        self._job(job_id)
        self.log.append(("hold", job_id, {}))

    def release(self, job_id: str) -> None:
        self._job(job_id)
        self.log.append(("release", job_id, {}))

    def requeue(
        self,
        job_id: str,
        *,
        exclude_nodes: Sequence[str] = (),
        time_limit_s: float | None = None,
        mem: str | None = None,
    ) -> None:
        job = self._job(job_id)
        changes: dict[str, object] = {"state": JobState.PENDING, "restarts": job.restarts + 1, "nodes": ()}
        if time_limit_s is not None:
            changes["time_limit_s"] = time_limit_s
        self.jobs[job_id] = job.with_(**changes)
        self.log.append(
            (
                "requeue",
                job_id,
                {"exclude_nodes": tuple(exclude_nodes), "time_limit_s": time_limit_s, "mem": mem},
            )
        )

    def drain(self, node: str, reason: str) -> None:
        self.nodes[node] = replace(self._node(node), state=NodeState.DRAIN, reason=reason)
        self.log.append(("drain", node, {"reason": reason}))

    def resume(self, node: str) -> None:
        self.nodes[node] = replace(self._node(node), state=NodeState.IDLE, reason=None)
        self.log.append(("resume", node, {}))


def apply_action(backend: ClusterBackend, action: Action) -> None:
    """Carry out one action through a backend (the only way actions reach a scheduler)."""
    k = action.kind
    if k is ActionKind.UPDATE:
        assert action.job_id is not None  # checked in Action.__post_init__
        backend.update(
            action.job_id, time_limit_s=action.time_limit_s, comment=action.comment, nice=action.nice
        )
    elif k is ActionKind.HOLD:
        assert action.job_id is not None
        backend.hold(action.job_id)
    elif k is ActionKind.RELEASE:
        assert action.job_id is not None
        backend.release(action.job_id)
    elif k is ActionKind.REQUEUE:
        assert action.job_id is not None
        backend.requeue(
            action.job_id,
            exclude_nodes=action.exclude_nodes,
            time_limit_s=action.time_limit_s,
            mem=action.mem,
        )
    elif k is ActionKind.DRAIN:
        assert action.node is not None
        backend.drain(action.node, action.reason or "schedmate")
    elif k is ActionKind.RESUME:
        assert action.node is not None
        backend.resume(action.node)

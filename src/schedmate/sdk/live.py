"""Start-time predictions for a live queue (`schedmate whatif --live`).

`live_report(settings)` snapshots the cluster through its backend (Slurm by default), learns
from the jobs that finished in the last `history_days` (sacct), takes each pending job's
duration from the Advisor's prediction when `watch` made one, and asks `sdk.sim.predict_starts`
(the same forward simulation as a trace what-if) for p10/p50/p90 start times. Slurm's own
estimate (`squeue --start`, built from time limits by the backfill planner) is set beside
each prediction. `predict_live` returns only the predictions.

Partitions that share nodes compete for the same GPUs, so they are simulated as one pool
(named after its first partition); jobs that cannot start whatever the queue does (held,
waiting for a dependency, asking for no GPU) are reported without a prediction.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from schedmate.core.cluster import ClusterBackend, ClusterSnapshot, JobState, JobView, NodeState
from schedmate.core.errors import BackendError, InputError
from schedmate.core.settings import Settings
from schedmate.core.types import SCHEMA_VERSION

if TYPE_CHECKING:
    from schedmate.integrations.slurm.start import SlurmStart
    from schedmate.sim.whatif import StartPrediction

__all__ = [
    "DurationSource",
    "LivePrediction",
    "LiveReport",
    "live_report",
    "predict_live",
    "prediction_from_comment",
]

# Reasons for which a pending job will not start however the queue moves.
_BLOCKED = (
    "JobHeld",
    "BadConstraints",
    "PartitionDown",
    "PartitionInactive",
    "Dependency",
    "DependencyNeverSatisfied",
    "InvalidAccount",
    "InvalidQOS",
    "launch failed requeued held",
)
# watch's Comment: "schedmate: predicted 1h02m (p90 1h30m, 3 similar jobs); limit 2h00m"
_COMMENT = re.compile(r"^schedmate:.*?\bpredicted (?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?[ ;(]")


class DurationSource(StrEnum):
    """Where a pending job's duration came from."""

    ADVISOR = "advisor"  # watch's store: the Advisor's p50 for this job
    COMMENT = "comment"  # the Comment watch wrote into the job
    ESTIMATE = "estimate"  # the snapshot's own estimate_s (a backend that knows it)
    HISTORY = "history"  # drawn, per sampled future, from similar finished jobs
    TIME_LIMIT = "time_limit"  # no history at all: the time limit, as Slurm assumes
    DEFAULT = "default"  # nothing known (the simulator's 1-hour default)
    NONE = "none"  # not simulated (see the prediction's note)


@dataclass(frozen=True, slots=True)
class LivePrediction:
    """One pending job: our p10/p50/p90 start (POSIX seconds) beside Slurm's estimate."""

    job_id: str
    time: float  # the snapshot's time
    user: str | None
    partition: str | None
    gpus: int
    queue_position: int  # 1 = the head of its pool's queue (submit order); 0 = not queued
    submit_time: float | None
    time_limit_s: float | None
    duration_s: float | None  # what the simulation took; None when drawn from history
    duration_source: DurationSource
    p10_s: float | None
    p50_s: float | None
    p90_s: float | None
    slurm_start_s: float | None  # squeue --start (None: N/A)
    samples: int = 0
    started_in: int = 0  # sampled futures in which it started within the horizon
    reason: str | None = None
    note: str | None = None  # why there is no prediction

    def wait(self, t: float | None) -> float | None:
        return None if t is None else max(0.0, t - self.time)

    def to_json_dict(self) -> dict[str, Any]:
        """The `whatif --live --json` record (no NaN: absent values are null)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "job_id": self.job_id,
            "user": self.user,
            "partition": self.partition,
            "gpus": self.gpus,
            "queue_position": self.queue_position,
            "submit_time": self.submit_time,
            "time_limit_s": self.time_limit_s,
            "duration_s": self.duration_s,
            "duration_source": self.duration_source.value,
            "snapshot_time": self.time,
            "p10_start": self.p10_s,
            "p50_start": self.p50_s,
            "p90_start": self.p90_s,
            "p10_wait_s": self.wait(self.p10_s),
            "p50_wait_s": self.wait(self.p50_s),
            "p90_wait_s": self.wait(self.p90_s),
            "slurm_start": self.slurm_start_s,
            "slurm_wait_s": self.wait(self.slurm_start_s),
            "samples": self.samples,
            "started_in": self.started_in,
            "reason": self.reason,
            "note": self.note,
        }


@dataclass(frozen=True)
class LiveReport:
    time: float
    running: int
    predictions: tuple[LivePrediction, ...]
    history_jobs: int
    warnings: tuple[str, ...] = ()


def prediction_from_comment(comment: str | None) -> float | None:
    """The p50 `watch` wrote into a Comment ('schedmate: predicted 1h02m ...'), in seconds."""
    m = _COMMENT.match((comment or "") + " ")
    if m is None or not any(m.groups()):
        return None
    d, h, mi, s = (int(g or 0) for g in m.groups())
    return float(((d * 24 + h) * 60 + mi) * 60 + s) or None


def _queue_key(job: JobView, now: float) -> tuple[float, int, str]:
    """Queue order: submit (eligible) time, then job id as a number."""
    return (job.submit_time if job.submit_time is not None else now, len(job.job_id), job.job_id)


def _blocked(reason: str | None) -> bool:
    return bool(reason) and any(str(reason).startswith(b) for b in _BLOCKED)


def _pools(snap: ClusterSnapshot) -> tuple[dict[str, str], dict[str, int]]:
    """Partitions that share a node -> one pool (union-find); each pool's usable GPUs (a
    drained or down node keeps only the GPUs its running jobs hold)."""
    parent: dict[str, str] = {}

    def find(p: str) -> str:
        parent.setdefault(p, p)
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for n in snap.nodes:
        parts = sorted(n.partitions or ("default",))
        root = find(parts[0])
        for p in parts[1:]:
            other = find(p)
            if other != root:
                parent[max(other, root)] = min(other, root)
                root = min(other, root)
    pool_of = {p: find(p) for p in parent}
    gpus: dict[str, int] = {}
    for n in snap.nodes:
        pool = pool_of[find(sorted(n.partitions or ("default",))[0])]
        usable = n.gpus_alloc if n.state in (NodeState.DRAIN, NodeState.DOWN, NodeState.FAIL) else n.gpus
        gpus[pool] = gpus.get(pool, 0) + max(usable, 0)
    return pool_of, gpus


def _pool_of_job(job: JobView, pool_of: Mapping[str, str]) -> str | None:
    for p in (job.partition or "default").split(","):
        if p.strip() in pool_of:
            return pool_of[p.strip()]
    return None


def _advisor_predictions(
    settings: Settings, pending: Sequence[JobView], running: Sequence[JobView]
) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """p50s (pending) and ETAs (running, less their age) that `watch` keeps in its store, when
    the store exists; never fatal (a warning)."""
    from schedmate.sdk.watch import watch_store_path

    path = watch_store_path(settings)
    p50: dict[str, float] = {}
    eta: dict[str, float] = {}
    if not path.exists():
        return p50, eta, []
    from schedmate.integrations.watch import WatchStore

    wall = time.time()  # the store's clock (its `updated`), which a fake backend's need not be

    def number(v: object) -> float | None:
        return float(v) if isinstance(v, int | float) and math.isfinite(v) else None

    try:
        store = WatchStore(path)
        try:
            for j in pending:
                v = number((store.job(j.job_id) or {}).get("p50_s"))
                if v is not None and v > 0:
                    p50[j.job_id] = v
            for j in running:
                rec = store.job(j.job_id) or {}
                left, at = number(rec.get("eta_s")), number(rec.get("updated"))
                if left is not None:
                    eta[j.job_id] = max(left - (max(wall - at, 0.0) if at is not None else 0.0), 1.0)
        finally:
            store.close()
    except BackendError as exc:
        return {}, {}, [f"watch store not read ({exc})"]
    return p50, eta, []


def _history(backend: ClusterBackend, days: float, now: float) -> tuple[list[JobView], list[str]]:
    from schedmate.integrations.slurm import SlurmBackend

    if days <= 0 or not isinstance(backend, SlurmBackend):
        return [], []
    try:
        rows = list(backend.history(since=now - days * 86400, until=now))
    except BackendError as exc:  # no accounting at all is common on small clusters
        return [], [f"no history from sacct ({exc}); durations from time limits"]
    return [r.job for r in rows if r.job.state.ended and r.job.start_time and r.job.end_time], []


def live_report(
    settings: Settings,
    *,
    backend: ClusterBackend | None = None,
    partition: str | None = None,
    samples: int = 8,
    history_days: float = 14.0,
    arrivals: bool = True,
    policy: str = "fifo",
    seed: int = 0,
    history: Sequence[JobView] | None = None,
    slurm_starts: Mapping[str, SlurmStart] | None = None,
) -> LiveReport:
    """Predict the start of every pending job (of `partition`, else of the cluster).

    `backend` defaults to Slurm from `settings.slurm`; with another backend (the in-memory
    fake), `history` and `slurm_starts` are given by the caller (default: none). Pending
    durations: the Advisor's p50 from watch's store, else the p50 in watch's Comment, else the
    view's `estimate_s`, else drawn from similar finished jobs, else (no history at all) the
    time limit; all capped at the time limit. Running jobs: the tracker's ETA, else drawn from
    history, else (no history) what is left of their time limit."""
    from schedmate.integrations.slurm import SlurmBackend
    from schedmate.integrations.slurm.start import check_partition, read_slurm_starts
    from schedmate.sdk.sim import predict_starts

    if not 1 <= samples <= 1000:
        raise InputError(f"--samples must be 1..1000, got {samples}")
    if not math.isfinite(history_days) or history_days < 0:
        raise InputError(f"--history-days must be a finite number >= 0, got {history_days}")
    if partition is not None:
        check_partition(partition)
    be: ClusterBackend = backend if backend is not None else SlurmBackend(settings.slurm)
    snap = be.snapshot()
    now = snap.time
    warnings: list[str] = []
    pool_of, capacity = _pools(snap)
    if (
        partition is not None
        and partition not in pool_of
        and not any(j.partition == partition for j in snap.jobs)
    ):
        known = ", ".join(sorted(pool_of)[:10])
        raise InputError(f"--partition: no partition {partition!r} on the cluster (known: {known})")
    if slurm_starts is None:
        slurm_starts = read_slurm_starts(be, partition) if isinstance(be, SlurmBackend) else {}
    if history is None:
        history, warn = _history(be, history_days, now)
        warnings += warn
    hist = [h.with_(partition=_pool_of_job(h, pool_of) or h.partition) for h in history if h.gpus > 0]
    pending_all = sorted(snap.pending, key=lambda j: _queue_key(j, now))
    mine = [j for j in pending_all if partition is None or partition in (j.partition or "").split(",")]
    if not mine:
        return LiveReport(now, len(snap.running), (), len(hist), tuple(warnings))
    p50_store, eta_store, warn = _advisor_predictions(settings, pending_all, snap.running)
    warnings += warn

    # what enters the simulation, and why the others do not
    notes: dict[str, str] = {}
    durations: dict[str, tuple[float | None, DurationSource]] = {}
    sim_jobs: list[JobView] = []
    for j in snap.running:
        pool = _pool_of_job(j, pool_of)
        if j.gpus <= 0 or pool is None or not capacity.get(pool):
            continue
        left_of_limit = (
            max(j.start_time + j.time_limit_s - now, 1.0)
            if j.start_time is not None and j.time_limit_s
            else None
        )
        eta = j.eta_s if j.eta_s is not None else eta_store.get(j.job_id)
        if eta is None and not hist:
            eta = left_of_limit
        if eta is not None and left_of_limit is not None:
            eta = min(eta, left_of_limit)
        sim_jobs.append(j.with_(partition=pool, eta_s=eta))
    for j in pending_all:
        pool = _pool_of_job(j, pool_of)
        if _blocked(j.reason):
            notes[j.job_id] = f"cannot start until {j.reason} clears"
        elif j.gpus <= 0:
            notes[j.job_id] = "asks for no GPU: not predicted"
        elif pool is None or not capacity.get(pool):
            notes[j.job_id] = "its partition has no usable GPUs"
        elif j.gpus > capacity[pool]:
            notes[j.job_id] = f"asks for {j.gpus} GPUs, its partitions have {capacity[pool]}"
        if j.job_id in notes:
            continue
        dur, source = _pending_duration(j, p50_store, bool(hist))
        durations[j.job_id] = (dur, source)
        submit = j.submit_time if j.submit_time is not None else now
        slurm = slurm_starts.get(j.job_id)
        if j.reason == "BeginTime" and slurm is not None and slurm.start_time is not None:
            submit = max(submit, slurm.start_time)  # not eligible before its begin time
        sim_jobs.append(j.with_(partition=pool, estimate_s=dur, submit_time=submit))
    preds: dict[str, StartPrediction] = {}
    if any(v.state is JobState.PENDING for v in sim_jobs):
        cluster = {p: g for p, g in capacity.items() if g > 0}
        for sp in predict_starts(
            ClusterSnapshot(now, tuple(sim_jobs)),
            policy=policy,
            cluster=cluster,
            history=hist,
            samples=samples,
            arrivals=arrivals,
            history_window_s=history_days * 86400.0,
            seed=seed,
        ):
            preds[sp.job_id] = sp
    positions: dict[str, int] = {}
    per_pool: dict[str, int] = {}
    for v in sorted(sim_jobs, key=lambda j: _queue_key(j, now)):
        if v.state is JobState.PENDING:
            pool = v.partition or ""
            per_pool[pool] = per_pool.get(pool, 0) + 1
            positions[v.job_id] = per_pool[pool]
    out = []
    for j in mine:
        p = preds.get(j.job_id)
        dur, source = durations.get(j.job_id, (None, DurationSource.NONE))
        slurm = slurm_starts.get(j.job_id)
        note = notes.get(j.job_id)
        if p is not None and p.p50_s is None:
            note = "did not start within the horizon in any sampled future"
        out.append(
            LivePrediction(
                job_id=j.job_id,
                time=now,
                user=j.user,
                partition=j.partition,
                gpus=j.gpus,
                queue_position=positions.get(j.job_id, 0),
                submit_time=j.submit_time,
                time_limit_s=j.time_limit_s,
                duration_s=dur,
                duration_source=source,
                p10_s=p.p10_s if p is not None else None,
                p50_s=p.p50_s if p is not None else None,
                p90_s=p.p90_s if p is not None else None,
                slurm_start_s=slurm.start_time if slurm is not None else None,
                samples=p.samples if p is not None else 0,
                started_in=p.started_in if p is not None else 0,
                reason=j.reason,
                note=note,
            )
        )
    return LiveReport(now, len(snap.running), tuple(out), len(hist), tuple(warnings))


def _pending_duration(
    job: JobView, advisor: Mapping[str, float], have_history: bool
) -> tuple[float | None, DurationSource]:
    limit = job.time_limit_s if job.time_limit_s and job.time_limit_s > 0 else None

    def capped(v: float) -> float:
        return min(v, limit) if limit is not None else v

    if job.job_id in advisor:
        return capped(advisor[job.job_id]), DurationSource.ADVISOR
    from_comment = prediction_from_comment(job.comment)
    if from_comment is not None:
        return capped(from_comment), DurationSource.COMMENT
    if job.estimate_s:
        return capped(job.estimate_s), DurationSource.ESTIMATE
    if have_history:
        return None, DurationSource.HISTORY
    if limit is not None:
        return limit, DurationSource.TIME_LIMIT
    return None, DurationSource.DEFAULT


def predict_live(settings: Settings, **kwargs: Any) -> list[LivePrediction]:
    """`live_report(settings, **kwargs).predictions` (its arguments)."""
    return list(live_report(settings, **kwargs).predictions)

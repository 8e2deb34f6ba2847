"""What-if analysis and queue-wait prediction.

`predict_from_snapshot` (`sdk.sim.predict_starts`) answers "when will each pending job
start?" from a `ClusterSnapshot` by simulating sampled futures forward: durations and arrivals
drawn from what the cluster knows (`startmodel`), p10/p50/p90 over the futures.
`snapshot_from_trace` cuts such a snapshot out of a replay, so predictions can be checked
against what the replay later did. `predict_starts` / `snapshot_at` /
`evaluate_wait_prediction` are the single-future predictor before issue 14 (true remaining
times, estimated durations, no arrivals), kept as the benchmark's baseline.
"""

from __future__ import annotations

import copy
import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from schedmate.core.cluster import ClusterSnapshot, JobView
from schedmate.core.cluster import JobState as ViewState
from schedmate.core.errors import InputError
from schedmate.sim.engine import SimResult, Simulator
from schedmate.sim.estimators import Estimator, OracleEstimator
from schedmate.sim.policies import SchedulingPolicy
from schedmate.sim.startmodel import ArrivalModel, Correlation, DurationModel, FutureDraw, HistoryRow
from schedmate.sim.state import JobState as EngineJob
from schedmate.sim.trace import TraceJob


@dataclass(frozen=True, slots=True)
class StartPrediction:
    """When a pending job is predicted to start (POSIX or trace seconds, as the snapshot's
    time): p10 / p50 / p90 over the sampled futures; None when it never started in any."""

    job_id: str
    gpus: int
    partition: str
    p10_s: float | None
    p50_s: float | None
    p90_s: float | None
    samples: int = 0
    started_in: int = 0  # samples in which it started within the horizon
    waits: tuple[float, ...] = field(default=(), repr=False)


__all__ = [
    "StartPrediction",
    "ArrivalModel",
    "Correlation",
    "DurationModel",
    "HistoryRow",
    "Snapshot",
    "evaluate_wait_prediction",
    "predict_from_snapshot",
    "predict_starts",
    "snapshot_at",
    "snapshot_from_trace",
]


@dataclass(frozen=True)
class Snapshot:
    time: float
    running: list[tuple[TraceJob, float]]  # job, TRUE remaining seconds
    pending: list[TraceJob]


def snapshot_at(jobs: Sequence[TraceJob], truth: SimResult, t: float) -> Snapshot:
    """The state at time `t` of a finished simulation. With the run's own record of that
    moment (`Simulator(observe_at=t)`) a job preempted before `t` waits; without it, running
    means started before `t` and ending after (exact for policies that never preempt)."""
    obs = truth.observed
    if obs is not None and obs.time == t:
        return Snapshot(
            t,
            [(jobs[i], left) for i, left in obs.running.items()],
            [jobs[i] for i in sorted(obs.waiting)],
        )
    running, pending = [], []
    for tj, st in zip(jobs, truth.jobs, strict=False):
        if st.end < 0 or tj.submit_s > t:
            continue
        if 0 <= st.first_start <= t < st.end:
            running.append((tj, st.end - t))
        elif st.first_start > t:
            pending.append(tj)
    return Snapshot(t, running, pending)


def predict_starts(
    snap: Snapshot,
    cluster: dict[str, int],
    policy: SchedulingPolicy,
    estimator: Estimator,
    *,
    remaining_error: float = 0.0,
    placement: str = "pool",
    gpus_per_node: int = 8,
    node_sizes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, float]:
    """Predicted start time of every pending job. Running jobs' remaining times come from the
    tracker's ETA (true remaining x (1 + `remaining_error`)); pending jobs' durations from
    `estimator` (the Advisor's, or history). With node placement the snapshot's running jobs
    are placed by the rules in snapshot order (spread over nodes if they no longer fit: a
    snapshot does not say which nodes they hold)."""
    from schedmate.sim.engine import JobState

    pend = []
    for j in snap.pending:
        probe = JobState(0, j.job_id, j.submit_s, j.duration_s, j.gpus, j.vc, j.user, remaining=j.duration_s)
        est = max(estimator.estimate(probe), 1.0)
        pend.append(replace(j, duration_s=est))
    running = [(j, r * (1.0 + remaining_error)) for j, r in snap.running]
    # inside a prediction the (estimated) durations are taken as given
    sim = Simulator(
        pend or [TraceJob("_none", snap.time, 0.0, 1, next(iter(cluster)))],
        cluster,
        policy,
        OracleEstimator(),
        start_at=snap.time,
        running=running,
        placement=placement,
        gpus_per_node=gpus_per_node,
        node_sizes=node_sizes,
    )
    res = sim.run()
    return {
        st.job_id: st.first_start
        for st in res.jobs
        if st.job_id != "_none" and st.first_start >= 0 and st.idx < len(pend)
    }


def evaluate_wait_prediction(
    jobs: Sequence[TraceJob],
    truth: SimResult,
    cluster: dict[str, int],
    policy: SchedulingPolicy,
    estimator: Estimator,
    times: Sequence[float],
    *,
    placement: str = "pool",
    gpus_per_node: int = 8,
    node_sizes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, float]:
    """Absolute errors of predicted start times vs the full simulation, over snapshots."""
    errors: list[float] = []
    waits: list[float] = []
    by_id = {st.job_id: st for st in truth.jobs}
    for t in times:
        snap = snapshot_at(jobs, truth, t)
        pred = predict_starts(
            snap,
            cluster,
            policy,
            estimator,
            placement=placement,
            gpus_per_node=gpus_per_node,
            node_sizes=node_sizes,
        )
        for jid, p in pred.items():
            actual = by_id[jid].first_start
            errors.append(abs(p - actual))
            waits.append(actual - t)
    if not errors:
        return {"n": 0}
    return {
        "n": len(errors),
        "median_abs_error_s": statistics.median(errors),
        "mean_abs_error_s": statistics.fmean(errors),
        "median_remaining_wait_s": statistics.median(waits),
    }


# -- start-time prediction from a ClusterSnapshot, with an arrival model ------------------------


def snapshot_from_trace(
    jobs: Sequence[TraceJob], truth: SimResult, t: float
) -> tuple[ClusterSnapshot, list[HistoryRow], list[HistoryRow]]:
    """The state at time `t` of a replay as a `ClusterSnapshot` (what a live cluster shows:
    no durations of pending or running jobs), plus what the cluster knew then: the jobs
    finished before `t` and every job submitted before `t` (duration and end when finished,
    else -1), as `HistoryRow`s."""
    views: list[JobView] = []
    finished: list[HistoryRow] = []
    submitted: list[HistoryRow] = []
    obs = truth.observed if truth.observed is not None and truth.observed.time == t else None
    for i, (tj, st) in enumerate(zip(jobs, truth.jobs, strict=False)):
        if tj.submit_s > t:
            continue
        done = 0 <= st.end <= t
        row = HistoryRow(tj.submit_s, tj.user, tj.vc, tj.gpus)
        if done:
            row = replace(row, duration=tj.duration_s, end=st.end)
            finished.append(row)
        submitted.append(row)
        if done:
            continue
        # (with the run's record of the moment, a job preempted before `t` is pending)
        running = i in obs.running if obs is not None else 0 <= st.first_start <= t
        views.append(
            JobView(
                tj.job_id,
                user=tj.user,
                state=ViewState.RUNNING if running else ViewState.PENDING,
                partition=tj.vc,
                gpus=tj.gpus,
                submit_time=tj.submit_s,
                start_time=st.first_start if running else None,
            )
        )
    return ClusterSnapshot(t, tuple(views)), finished, submitted


def _history_rows(history: Sequence[object]) -> list[HistoryRow]:
    """HistoryRows from TraceJobs (finished, end unknown), JobViews (finished when ended),
    HistoryRows, or (submit, user, vc, gpus, duration[, end]) tuples (duration <= 0: not finished)."""
    rows: list[HistoryRow] = []
    for h in history:
        if isinstance(h, HistoryRow):
            rows.append(h)
        elif isinstance(h, TraceJob):
            rows.append(HistoryRow(h.submit_s, h.user, h.vc, h.gpus, h.duration_s))
        elif isinstance(h, JobView):
            dur = end = -1.0
            if h.end_time is not None and h.start_time is not None and h.state.ended:
                dur, end = h.end_time - h.start_time, h.end_time
            user, vc = h.user or "", h.partition or "default"
            rows.append(HistoryRow(h.submit_time or 0.0, user, vc, max(h.gpus, 1), dur, end))
        elif isinstance(h, tuple) and len(h) in (5, 6):
            end = float(h[5]) if len(h) == 6 else -1.0
            rows.append(HistoryRow(float(h[0]), str(h[1]), str(h[2]), int(h[3]), float(h[4]), end))
        else:
            raise InputError(
                "history: expected TraceJob, JobView, HistoryRow or "
                f"(submit, user, vc, gpus, duration[, end]), got {h!r}"
            )
    return rows


def predict_from_snapshot(
    snapshot: ClusterSnapshot,
    *,
    policy: str = "fifo",
    cluster: Mapping[str, int] | None = None,
    history: Sequence[object] = (),
    samples: int = 8,
    arrivals: bool = True,
    horizon_s: float = 7 * 86400.0,
    history_window_s: float = 14 * 86400.0,
    semantics: str = "default",
    seed: int = 0,
    correlation: Correlation | str = Correlation.CURRENT,
    placement: str = "pool",
    gpus_per_node: int = 8,
) -> list[StartPrediction]:
    """Predicted start times of the snapshot's pending jobs.

    The forward simulation starts from the snapshot: running jobs keep their GPUs for their
    ETA (the tracker's `eta_s`, else a draw from the durations of similar finished jobs that
    ran at least as long), pending jobs take their `estimate_s` or a draw from similar jobs'
    durations, and (with `arrivals`) new jobs arrive as learned from `history` (`TraceJob`s,
    `JobView`s or `HistoryRow`s of the last `history_window_s`: rate per hour of week and
    partition, sizes and durations drawn from the same jobs). `samples` futures give
    p10/p50/p90; a future in which a job has not started within `horizon_s` counts as a start
    after the horizon (a quantile that falls there is None). `cluster` maps partitions to
    GPUs (default: the snapshot's nodes). `correlation`: how the drawn durations of alike
    jobs (one user, partition and GPU count) relate within a future (`startmodel.Correlation`).
    The policy orders pending jobs by what the scheduler knew when each was submitted."""
    from schedmate.sim.policies import make_policy
    from schedmate.sim.semantics import parse_semantics

    if samples < 1 or samples > 1000:
        raise InputError(f"samples must be 1..1000, got {samples}")
    for name, v in (("horizon_s", horizon_s), ("history_window_s", history_window_s)):
        if not math.isfinite(v) or v < 0:
            raise InputError(f"{name} must be a finite number >= 0, got {v}")
    try:
        corr = Correlation(correlation)
    except ValueError:
        names = ", ".join(c.value for c in Correlation)
        raise InputError(f"correlation must be one of {names}, got {correlation!r}") from None
    t = snapshot.time
    sem = parse_semantics(semantics)
    cl = dict(cluster) if cluster else _cluster_of(snapshot)
    rows = _history_rows(history)
    finished = [r for r in rows if r.finished]
    recent = [r for r in rows if t - history_window_s <= r.submit < t and r.finished]
    durations = DurationModel(finished, now=t)
    arrival_model = ArrivalModel(recent, t - history_window_s, t) if arrivals and recent else None
    pending = list(snapshot.pending)
    running = _holding(snapshot.running, cl)
    order = _ordering_estimator(policy, semantics, finished, pending, t)
    starts: dict[str, list[float]] = {j.job_id: [] for j in pending}
    for k in range(samples if pending else 0):
        draw = FutureDraw(random.Random(seed * 1_000_003 + k), corr, k, samples, seed)
        run = [_running_job(j, t, durations, draw) for j in running]  # first: pending draw on them
        pend = [_pending_job(j, t, durations, draw) for j in pending]
        future = arrival_model.sample(t, horizon_s, draw.rng) if arrival_model is not None else []
        sim = Simulator(
            pend + future,
            cl,
            make_policy(policy, sem),
            copy.deepcopy(order),  # an estimator learns in its future only, not across futures
            start_at=t,
            running=run,
            semantics=sem,
            placement=placement,
            gpus_per_node=gpus_per_node,
        )
        res = sim.run()
        for st in res.jobs[: len(pend)]:
            if 0 <= st.first_start <= t + horizon_s:
                starts[st.job_id].append(st.first_start)
    out = []
    for j in pending:
        s = sorted(starts[j.job_id])
        p10, p50, p90 = (_censored_quantile(s, samples, q) for q in (0.1, 0.5, 0.9))
        out.append(
            StartPrediction(
                j.job_id, max(j.gpus, 1), j.partition or "default", p10, p50, p90, samples, len(s)
            )
        )
    return out


def _pending_job(j: JobView, t: float, durations: DurationModel, draw: FutureDraw) -> TraceJob:
    vc = j.partition or "default"
    dur = j.estimate_s if j.estimate_s else durations.sample(j.user or "", vc, max(j.gpus, 1), draw)
    if j.time_limit_s:  # the scheduler ends it at its limit, whatever the draw says
        dur = min(dur, j.time_limit_s)
    submit = j.submit_time if j.submit_time is not None else t
    return TraceJob(j.job_id, submit, dur, max(j.gpus, 1), vc, j.user or "")


def _holding(running: Sequence[JobView], cluster: Mapping[str, int]) -> list[JobView]:
    """The running jobs that hold GPUs, earliest start first: jobs packed onto GPUs another
    running job holds (a GPU-sharing policy, oversubscription) are beyond their partition's
    capacity and hold none of their own in the forward simulation."""
    used: dict[str, int] = {}
    out = []
    for j in sorted(running, key=lambda v: v.start_time if v.start_time is not None else -math.inf):
        vc = j.partition or "default"
        cap = cluster.get(vc, cluster.get("*"))
        need = max(j.gpus, 1)
        if cap is not None and used.get(vc, 0) + need > cap:
            continue
        used[vc] = used.get(vc, 0) + need
        out.append(j)
    return out


def _running_job(j: JobView, t: float, durations: DurationModel, draw: FutureDraw) -> tuple[TraceJob, float]:
    vc = j.partition or "default"
    elapsed = t - j.start_time if j.start_time is not None else 0.0
    limit = j.time_limit_s or None
    left = durations.remaining(j.user or "", vc, max(j.gpus, 1), draw, elapsed, j.eta_s, limit)
    submit = j.submit_time if j.submit_time is not None else t
    return TraceJob(j.job_id, submit, elapsed + left, max(j.gpus, 1), vc, j.user or ""), left


class _KnownEstimates:
    """Fixed estimates for some jobs (the snapshot's pending ones), else the base estimator."""

    def __init__(self, base: Estimator, known: Mapping[str, float]) -> None:
        self.base, self.known, self.name = base, known, base.name

    def estimate(self, job: EngineJob) -> float:
        v = self.known.get(job.job_id)
        return v if v is not None else self.base.estimate(job)

    def observe(self, job: EngineJob) -> None:
        self.base.observe(job)


def _ordering_estimator(
    policy: str,
    semantics: str,
    finished: Sequence[HistoryRow],
    pending: Sequence[JobView],
    t: float,
) -> Estimator:
    """What the policy orders by inside a sampled future (the drawn durations being the truth
    of that future): a pending job's own `estimate_s` when the snapshot has one, else what the
    policy's estimator (estimators.default_estimator) said when the job was submitted: a
    scheduler keys a job once, at submission, so a history estimator is trained on the jobs
    that had finished by then (those whose end is unknown count as finished before)."""
    from schedmate.sim.estimators import HistoryEstimator, default_estimator, make_estimator

    name = default_estimator(policy, semantics)
    known = {j.job_id: j.estimate_s for j in pending if j.estimate_s}
    if name != "history":
        base = make_estimator(name)
        return _KnownEstimates(base, known) if known else base
    hist = HistoryEstimator()
    done = sorted(finished, key=lambda r: r.end)
    i = 0
    for j in sorted(pending, key=lambda j: j.submit_time if j.submit_time is not None else t):
        at = j.submit_time if j.submit_time is not None else t
        while i < len(done) and done[i].end <= at:
            hist.learn(done[i].user, done[i].vc, done[i].gpus, done[i].duration)
            i += 1
        if j.job_id not in known:
            vc, gpus = j.partition or "default", max(j.gpus, 1)
            probe = EngineJob(0, j.job_id, at, 1.0, gpus, vc, j.user or "", remaining=1.0)
            known[j.job_id] = max(hist.estimate(probe), 1.0)
    for r in done[i:]:
        hist.learn(r.user, r.vc, r.gpus, r.duration)
    return _KnownEstimates(hist, known)


def _censored_quantile(started: list[float], n: int, q: float) -> float | None:
    """The q-quantile of n sampled starts of which `started` (sorted) are within the horizon
    and the rest after it (None when the quantile falls after the horizon)."""
    if not started:
        return None
    pos = q * (n - 1)
    if math.ceil(pos) >= len(started):
        return None
    lo = int(pos)
    hi = min(lo + 1, len(started) - 1)
    return started[lo] + (started[hi] - started[lo]) * (pos - lo)


def _cluster_of(snapshot: ClusterSnapshot) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in snapshot.nodes:
        part = n.partitions[0] if n.partitions else "default"
        out[part] = out.get(part, 0) + n.gpus
    if not out or not sum(out.values()):
        raise InputError("the snapshot has no nodes with GPUs: give the cluster (partition -> GPUs)")
    return out

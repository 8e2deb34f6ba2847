"""What-if analysis and queue-wait prediction.

`predict_starts` answers "when will each pending job start?" from a cluster snapshot: the
running jobs with their estimated remaining time, the pending queue with estimated
durations, and the active policy, by simulating forward with no further arrivals.
`snapshot_at` cuts such a snapshot out of a full simulation, so predictions can be checked
against what the full simulation later did (`evaluate_wait_prediction`).
"""

from __future__ import annotations

import bisect
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
    "DurationModel",
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
    """The state at time `t` of a finished simulation (running = started before t, ending after)."""
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

_WEEK_H = 168


def _key_levels(user: str, vc: str, gpus: int) -> tuple[tuple[str, ...], ...]:
    return ((user, vc, str(gpus)), (user, vc), (vc, str(gpus)), (vc,), ())


class DurationModel:
    """What the cluster knows about durations: the finished jobs of the recent history, by
    (user, partition, GPUs), then coarser keys. A pending job's duration is drawn from the
    most specific key's durations; a running job's remaining time from the durations of
    those similar jobs that ran longer than it has so far (else: as long again)."""

    def __init__(self, history: Sequence[tuple[str, str, int, float]]) -> None:
        self.by_key: dict[tuple[str, ...], list[float]] = {}
        for user, vc, gpus, dur in history:
            for k in _key_levels(user, vc, gpus):
                self.by_key.setdefault(k, []).append(dur)
        for v in self.by_key.values():
            v.sort()

    def sample(
        self,
        user: str,
        vc: str,
        gpus: int,
        rng: random.Random,
        elapsed: float = 0.0,
        shared: dict[tuple[str, ...], float] | None = None,
    ) -> float:
        """A duration (minus `elapsed`). With `shared`, the jobs of one key draw the same
        quantile in one sampled future: a user's jobs of one kind are alike (a batch of 100
        identical runs is not 100 independent draws), so their errors add up instead of
        averaging out, which is what widens [p10, p90] to the real uncertainty."""
        for k in _key_levels(user, vc, gpus):
            durs = self.by_key.get(k)
            if not durs:
                continue
            lo = bisect.bisect_right(durs, elapsed)
            if lo < len(durs):
                if shared is None:
                    u = rng.random()
                else:
                    u = shared.get(k, -1.0)
                    if u < 0:
                        u = shared[k] = rng.random()
                return max(durs[lo + int(u * (len(durs) - lo))] - elapsed, 1.0)
        return max(elapsed, 3600.0)  # nothing that long seen: as long again (Lindy), else an hour


class ArrivalModel:
    """Arrivals learned from the recent history: per partition, a rate per hour of the week
    (the counts of the window / the weeks it covers, blended half and half with the
    partition's mean rate so that one busy hour is not taken as the rule), and jobs (user,
    GPUs, duration) drawn from that partition's recent jobs."""

    def __init__(
        self, history: Sequence[tuple[float, str, str, int, float]], start: float, end: float
    ) -> None:
        span_h = max((end - start) / 3600.0, 1.0)
        weeks = span_h / _WEEK_H
        self.rate: dict[str, list[float]] = {}
        self.jobs: dict[str, list[tuple[str, int, float]]] = {}
        counts: dict[str, list[int]] = {}
        for submit, user, vc, gpus, dur in history:
            if not start <= submit < end:
                continue
            counts.setdefault(vc, [0] * _WEEK_H)[int(submit // 3600) % _WEEK_H] += 1
            self.jobs.setdefault(vc, []).append((user, gpus, dur))
        for vc, c in counts.items():
            mean = sum(c) / span_h
            per_hour = [n / max(weeks, 1.0) for n in c]
            self.rate[vc] = [0.5 * mean + 0.5 * r for r in per_hour]

    def sample(self, t0: float, horizon_s: float, rng: random.Random) -> list[TraceJob]:
        out: list[TraceJob] = []
        h0 = int(t0 // 3600)
        h1 = int((t0 + horizon_s) // 3600) + 1
        for vc, rates in self.rate.items():
            pool = self.jobs[vc]
            for h in range(h0, h1):
                lam = rates[h % _WEEK_H]
                if lam <= 0:
                    continue
                n = _poisson(lam, rng)
                for _ in range(n):
                    at = h * 3600.0 + rng.random() * 3600.0
                    if not t0 < at <= t0 + horizon_s:
                        continue
                    user, gpus, dur = pool[int(rng.random() * len(pool))]
                    out.append(TraceJob(f"_arrival{len(out)}", at, dur, gpus, vc, user))
        out.sort(key=lambda j: j.submit_s)
        return out


def _poisson(lam: float, rng: random.Random) -> int:
    if lam > 30:  # normal approximation: fast and close enough for a count of arrivals
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def snapshot_from_trace(
    jobs: Sequence[TraceJob], truth: SimResult, t: float
) -> tuple[ClusterSnapshot, list[tuple[str, str, int, float]], list[tuple[float, str, str, int, float]]]:
    """The state at time `t` of a replay as a `ClusterSnapshot` (what a live cluster shows:
    no durations of pending or running jobs), plus what the cluster knew then: the jobs
    finished before `t` (user, VC, GPUs, duration) and every job submitted before `t`
    (submit, user, VC, GPUs, duration when finished, else -1)."""
    views: list[JobView] = []
    finished: list[tuple[str, str, int, float]] = []
    submitted: list[tuple[float, str, str, int, float]] = []
    for tj, st in zip(jobs, truth.jobs, strict=False):
        if tj.submit_s > t:
            continue
        done = 0 <= st.end <= t
        submitted.append((tj.submit_s, tj.user, tj.vc, tj.gpus, tj.duration_s if done else -1.0))
        if done:
            finished.append((tj.user, tj.vc, tj.gpus, tj.duration_s))
        elif 0 <= st.first_start <= t:
            views.append(
                JobView(
                    tj.job_id,
                    user=tj.user,
                    state=ViewState.RUNNING,
                    partition=tj.vc,
                    gpus=tj.gpus,
                    submit_time=tj.submit_s,
                    start_time=st.first_start,
                )
            )
        elif st.first_start > t or st.first_start < 0:
            views.append(
                JobView(
                    tj.job_id,
                    user=tj.user,
                    state=ViewState.PENDING,
                    partition=tj.vc,
                    gpus=tj.gpus,
                    submit_time=tj.submit_s,
                )
            )
    return ClusterSnapshot(t, tuple(views)), finished, submitted


def _history_rows(
    history: Sequence[object],
) -> tuple[list[tuple[str, str, int, float]], list[tuple[float, str, str, int, float]]]:
    """Finished jobs and arrivals from TraceJobs, JobViews or (submit, user, vc, gpus, dur) rows."""
    finished: list[tuple[str, str, int, float]] = []
    arrivals: list[tuple[float, str, str, int, float]] = []
    for h in history:
        if isinstance(h, TraceJob):
            row = (h.submit_s, h.user, h.vc, h.gpus, h.duration_s)
        elif isinstance(h, JobView):
            dur = (
                h.end_time - h.start_time
                if h.end_time is not None and h.start_time is not None and h.state.ended
                else -1.0
            )
            row = (h.submit_time or 0.0, h.user or "", h.partition or "default", max(h.gpus, 1), dur)
        elif isinstance(h, tuple) and len(h) == 5:
            row = (float(h[0]), str(h[1]), str(h[2]), int(h[3]), float(h[4]))
        else:
            raise InputError(
                f"history: expected TraceJob, JobView or (submit, user, vc, gpus, duration), got {h!r}"
            )
        arrivals.append(row)
        if row[4] > 0:
            finished.append((row[1], row[2], row[3], row[4]))
    return finished, arrivals


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
    correlated: bool = True,
    placement: str = "pool",
    gpus_per_node: int = 8,
) -> list[StartPrediction]:
    """Predicted start times of the snapshot's pending jobs.

    The forward simulation starts from the snapshot: running jobs keep their GPUs for their
    ETA (the tracker's `eta_s`, else a draw from the durations of similar finished jobs that
    ran at least as long), pending jobs take their `estimate_s` or a draw from similar jobs'
    durations, and (with `arrivals`) new jobs arrive as learned from `history` (finished
    `TraceJob`s or `JobView`s of the last `history_window_s`: rate per hour of week and
    partition, sizes and durations drawn from the same jobs). `samples` futures give
    p10/p50/p90. `cluster` maps partitions to GPUs (default: the snapshot's nodes).
    `correlated`: the jobs of one (user, partition, GPUs) draw the same duration quantile in
    a sampled future (they are alike); False draws each job independently."""
    Pred = StartPrediction
    from schedmate.sim.policies import make_policy
    from schedmate.sim.semantics import parse_semantics

    if samples < 1 or samples > 1000:
        raise InputError(f"samples must be 1..1000, got {samples}")
    for name, v in (("horizon_s", horizon_s), ("history_window_s", history_window_s)):
        if not math.isfinite(v) or v < 0:
            raise InputError(f"{name} must be a finite number >= 0, got {v}")
    t = snapshot.time
    sem = parse_semantics(semantics)
    cl = dict(cluster) if cluster else _cluster_of(snapshot)
    finished, arrived = _history_rows(history)
    recent = [r for r in arrived if t - history_window_s <= r[0] < t and r[4] > 0]
    durations = DurationModel(finished)
    arrival_model = ArrivalModel(recent, t - history_window_s, t) if arrivals and recent else None
    pending = [j for j in snapshot.pending]
    known = {j.job_id: j.estimate_s for j in pending if j.estimate_s}
    running = [j for j in snapshot.running]
    starts: dict[str, list[float]] = {j.job_id: [] for j in pending}
    for k in range(samples):
        rng = random.Random(seed * 1_000_003 + k)
        shared: dict[tuple[str, ...], float] | None = {} if correlated else None
        pend: list[TraceJob] = []
        for j in pending:
            vc = j.partition or "default"
            dur = (
                j.estimate_s
                if j.estimate_s
                else durations.sample(j.user or "", vc, max(j.gpus, 1), rng, shared=shared)
            )
            if j.time_limit_s:  # the scheduler ends it at its limit, whatever the draw says
                dur = min(dur, j.time_limit_s)
            pend.append(
                TraceJob(
                    j.job_id,
                    j.submit_time if j.submit_time is not None else t,
                    dur,
                    max(j.gpus, 1),
                    vc,
                    j.user or "",
                )
            )
        run: list[tuple[TraceJob, float]] = []
        for j in running:
            vc = j.partition or "default"
            elapsed = t - j.start_time if j.start_time is not None else 0.0
            left = (
                j.eta_s
                if j.eta_s is not None
                else durations.sample(j.user or "", vc, max(j.gpus, 1), rng, elapsed, shared=shared)
            )
            if j.time_limit_s:
                left = min(left, max(j.time_limit_s - elapsed, 1.0))
            run.append(
                (
                    TraceJob(j.job_id, j.submit_time or t, elapsed + left, max(j.gpus, 1), vc, j.user or ""),
                    left,
                )
            )
        future = arrival_model.sample(t, horizon_s, rng) if arrival_model is not None else []
        if not pend:
            break
        sim = Simulator(
            pend + future,
            cl,
            make_policy(policy, sem),
            _ordering_estimator(policy, semantics, finished, known),
            start_at=t,
            running=run,
            semantics=sem,
            placement=placement,
            gpus_per_node=gpus_per_node,
        )
        res = sim.run()
        for st in res.jobs[: len(pend)]:
            if st.first_start >= 0:
                starts[st.job_id].append(st.first_start)
    out = []
    for j in pending:
        s = sorted(starts[j.job_id])
        p10: float | None
        p50: float | None
        p90: float | None
        if s:
            p10, p50, p90 = (_quantile(s, q) for q in (0.1, 0.5, 0.9))
        else:
            p10 = p50 = p90 = None
        out.append(Pred(j.job_id, max(j.gpus, 1), j.partition or "default", p10, p50, p90, samples, len(s)))
    return out


class _KnownEstimates:
    """The snapshot's own estimates (`JobView.estimate_s`) first, else the base estimator."""

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
    finished: Sequence[tuple[str, str, int, float]],
    known: Mapping[str, float],
) -> Estimator:
    """What the policy orders by inside a sampled future: a pending job's own estimate
    when the snapshot has one, else the estimator the policy uses in the simulator
    (estimators.default_estimator; a history one is trained on the finished jobs the cluster
    knows). The drawn durations are the truth of that future."""
    from schedmate.sim.estimators import HistoryEstimator, default_estimator, make_estimator

    name = default_estimator(policy, semantics)
    base: Estimator
    if name == "history":
        hist = HistoryEstimator()
        for user, vc, gpus, dur in finished:
            hist.learn(user, vc, gpus, dur)
        base = hist
    else:
        base = make_estimator(name)
    return _KnownEstimates(base, known) if known else base


def _quantile(s: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _cluster_of(snapshot: ClusterSnapshot) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in snapshot.nodes:
        part = n.partitions[0] if n.partitions else "default"
        out[part] = out.get(part, 0) + n.gpus
    if not out or not sum(out.values()):
        raise InputError("the snapshot has no nodes with GPUs: give the cluster (partition -> GPUs)")
    return out

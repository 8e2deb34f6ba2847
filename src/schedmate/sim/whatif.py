"""What-if analysis and queue-wait prediction.

`predict_starts` answers "when will each pending job start?" from a cluster snapshot: the
running jobs with their estimated remaining time, the pending queue with estimated
durations, and the active policy, by simulating forward with no further arrivals.
`snapshot_at` cuts such a snapshot out of a full simulation, so predictions can be checked
against what the full simulation later did (`evaluate_wait_prediction`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from schedmate.sim.engine import SimResult, Simulator
from schedmate.sim.estimators import Estimator, OracleEstimator
from schedmate.sim.policies import SchedulingPolicy
from schedmate.sim.trace import TraceJob

__all__ = ["Snapshot", "snapshot_at", "predict_starts", "evaluate_wait_prediction"]


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

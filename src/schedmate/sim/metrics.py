"""Simulation metrics: JCT, queueing delay, makespan, utilisation, fragmentation, per-VC breakdown."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from schedmate.sim.state import JobState, SimResult

__all__ = ["Metrics", "summarize_sim"]


@dataclass(frozen=True)
class Metrics:
    policy: str
    n_jobs: int
    avg_jct_s: float
    p50_jct_s: float
    p99_jct_s: float
    avg_queue_s: float
    p99_queue_s: float
    makespan_s: float
    gpu_util: float
    unschedulable: int = 0
    preemptions: int = 0
    failures: int = 0  # infrastructure + application failures (each retry counts)
    lost_gpu_h: float = 0.0  # GPU-hours of work redone after failures or spent on doomed retries
    packs: int = 0  # times a job was packed next to another
    unpacks: int = 0  # packed pairs split after a measured slowdown
    stranded_gpu_h: float = (
        0.0  # node placement: GPU-hours free while the best pending job fit by count, on no node
    )
    stranded_frac: float = 0.0  # the same as a share of the cluster's GPU-time (capacity x makespan)
    p999_jct_s: float = float("nan")
    p50_queue_s: float = float("nan")
    p999_queue_s: float = float("nan")

    def to_json_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def _stats(policy: str, jobs: list[JobState], capacity: int, busy_gpu_s: float, unsched: int) -> Metrics:
    if not jobs:
        return Metrics(policy, 0, *(float("nan"),) * 7, unschedulable=unsched)
    submit = np.array([j.submit for j in jobs])
    end = np.array([j.end for j in jobs])
    start = np.array([j.first_start for j in jobs])
    jct = end - submit
    queue = start - submit
    makespan = float(end.max() - submit.min())
    util = busy_gpu_s / (capacity * makespan) if makespan > 0 and capacity else 0.0
    return Metrics(
        policy,
        len(jobs),
        float(jct.mean()),
        float(np.percentile(jct, 50)),
        float(np.percentile(jct, 99)),
        float(queue.mean()),
        float(np.percentile(queue, 99)),
        makespan,
        util,
        unsched,
        int(sum(j.preemptions for j in jobs)),
        p999_jct_s=float(np.percentile(jct, 99.9)),
        p50_queue_s=float(np.percentile(queue, 50)),
        p999_queue_s=float(np.percentile(queue, 99.9)),
    )


def summarize_sim(res: SimResult) -> tuple[Metrics, dict[str, Metrics]]:
    """Overall metrics and a per-virtual-cluster breakdown."""
    done = res.finished()
    overall = replace(
        _stats(res.policy, done, res.capacity, res.busy_gpu_s, res.unschedulable),
        failures=res.infra_failures + res.app_failures,
        lost_gpu_h=res.lost_gpu_s / 3600,
        packs=res.packs,
        unpacks=res.unpacks,
        stranded_gpu_h=res.stranded_gpu_s / 3600,
    )
    if overall.makespan_s > 0 and res.capacity:
        overall = replace(overall, stranded_frac=res.stranded_gpu_s / (res.capacity * overall.makespan_s))
    per_vc: dict[str, Metrics] = {}
    # every VC of the cluster and of the trace, also one that served no job (all of its jobs
    # too large for it, or none submitted): its row says so instead of being left out
    by_vc: dict[str, list[JobState]] = {vc: [] for vc in res.vc_capacity}
    for j in done:
        by_vc.setdefault(j.vc, []).append(j)
    too_large: dict[str, int] = {}
    if res.unschedulable:
        for j in res.jobs:
            if j.end < 0 and j.gpus > res.vc_capacity.get(j.vc, 0):
                too_large[j.vc] = too_large.get(j.vc, 0) + 1
                by_vc.setdefault(j.vc, [])
    for vc, js in sorted(by_vc.items()):
        busy = sum(j.duration * j.gpus for j in js)  # GPU-seconds of work the VC served
        per_vc[vc] = _stats(res.policy, js, res.vc_capacity.get(vc, 0), busy, too_large.get(vc, 0))
    return overall, per_vc

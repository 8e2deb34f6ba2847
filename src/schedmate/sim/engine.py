"""Discrete-event cluster simulator: the engine owns the loop and the state.

Events are arrivals and finishes (a preemption cancels a finish by bumping the job's
version). At each event only the affected virtual cluster runs a scheduling round:
pending jobs wait in per-GPU-count heaps keyed by the policy (so a round looks at one head
per size class, not at the whole queue), the policy's order decides, and the engine
places, starts and preempts. Capacity is counted in GPUs per virtual cluster (node-level
placement is a next step, see docs/sim.md).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from schedmate.core.errors import InputError
from schedmate.sim.estimators import Estimator, OracleEstimator
from schedmate.sim.policies import SchedulingPolicy
from schedmate.sim.trace import TraceJob

__all__ = ["JobState", "Simulator", "SimResult"]

_ARRIVE, _FINISH = 1, 0  # at equal times, finishes free GPUs before arrivals are placed


@dataclass(slots=True)
class JobState:
    idx: int
    job_id: str
    submit: float
    duration: float
    gpus: int
    vc: str
    user: str
    estimate: float = 0.0
    noise: float = 0.0
    remaining: float = 0.0
    run_start: float = -1.0  # start of the current run, -1 when not running
    first_start: float = -1.0
    end: float = -1.0
    preemptions: int = 0
    version: int = 0

    def elapsed(self, now: float) -> float:
        """Service received so far (seconds of running)."""
        ran = self.duration - self.remaining
        return ran + (now - self.run_start if self.run_start >= 0 else 0.0)


@dataclass
class _VC:
    capacity: int
    free: int
    buckets: dict[int, list[tuple[tuple[float, ...], int, int]]] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    n_pending: int = 0


@dataclass
class SimResult:
    policy: str
    jobs: list[JobState]
    busy_gpu_s: float
    unschedulable: int
    timeline: list[tuple[float, int, int]]  # (time, busy GPUs, queue length) samples
    vc_capacity: dict[str, int] = field(default_factory=dict)

    @property
    def capacity(self) -> int:
        """GPUs in the whole cluster."""
        return sum(self.vc_capacity.values())

    def finished(self) -> list[JobState]:
        return [j for j in self.jobs if j.end >= 0]


class Simulator:
    def __init__(self, jobs: Sequence[TraceJob], cluster: dict[str, int], policy: SchedulingPolicy,
                 estimator: Estimator | None = None, *, seed: int = 0, timeline_every: int = 0,
                 start_at: float | None = None, running: Sequence[tuple[TraceJob, float]] = ()) -> None:
        """`start_at` and `running` start the simulation from a snapshot: the `running`
        jobs (with their remaining seconds) hold GPUs at `start_at`; `jobs` arrive at
        max(submit, start_at) (what-if and queue-wait prediction)."""
        if not jobs:
            raise InputError("no jobs to simulate")
        self.policy = policy
        self.estimator = estimator or OracleEstimator()
        rng = random.Random(seed)
        self.vcs: dict[str, _VC] = {}
        default = cluster.get("*")
        for vc, gpus in cluster.items():
            if vc != "*":
                self.vcs[vc] = _VC(gpus, gpus)
        self.jobs: list[JobState] = []
        self.unschedulable = 0
        for i, j in enumerate(jobs):
            vc = j.vc if j.vc in self.vcs else ("*" if default is not None else j.vc)
            if vc not in self.vcs:
                if default is None:
                    raise InputError(f"job {j.job_id}: virtual cluster '{j.vc}' is not in the cluster config")
                self.vcs[vc] = _VC(default, default)
            st = JobState(i, j.job_id, j.submit_s, j.duration_s, max(1, j.gpus), vc, j.user,
                          remaining=j.duration_s, noise=rng.gauss(0.0, 1.0))
            self.jobs.append(st)
        self.timeline_every = timeline_every
        self._seq = 0
        self.start_at = start_at
        self.initial: list[int] = []  # jobs of the snapshot that already run
        for j, remaining in running:
            vc = j.vc if j.vc in self.vcs else "*"
            if vc not in self.vcs:
                raise InputError(f"running job {j.job_id}: virtual cluster '{j.vc}' is not in the cluster config")
            st = JobState(len(self.jobs), j.job_id, j.submit_s, j.duration_s, max(1, j.gpus), vc, j.user,
                          remaining=max(remaining, 0.0), noise=rng.gauss(0.0, 1.0))
            self.jobs.append(st)
            self.initial.append(st.idx)

    # -- the loop ---------------------------------------------------------------------------
    def run(self, progress: Callable[[int], None] | None = None) -> SimResult:
        events: list[tuple[float, int, int, int, int]] = []  # time, kind, seq, job, version
        t0 = self.start_at
        initial = set(self.initial)
        for st in self.jobs:
            if st.idx in initial:
                continue
            if st.gpus > self.vcs[st.vc].capacity:
                self.unschedulable += 1  # counted and reported, never silently dropped
                continue
            events.append((st.submit if t0 is None else max(st.submit, t0), _ARRIVE, st.idx, st.idx, 0))
        heapq.heapify(events)
        busy_gpu_s = 0.0
        last_t = t0 if t0 is not None else (self.jobs[0].submit if self.jobs else 0.0)
        busy = 0
        for i in self.initial:  # snapshot: these already hold their GPUs
            st = self.jobs[i]
            vc = self.vcs[st.vc]
            vc.n_pending += 1  # _start counts it out of the queue
            st.estimate = st.remaining
            self._start(vc, st, last_t, events)
            busy += st.gpus
        timeline: list[tuple[float, int, int]] = []
        done = 0
        n_events = 0
        policy = self.policy
        while events:
            t, kind, _, idx, version = heapq.heappop(events)
            st = self.jobs[idx]
            if kind == _FINISH and version != st.version:
                continue  # cancelled by a preemption
            busy_gpu_s += busy * (t - last_t)
            last_t = t
            vc = self.vcs[st.vc]
            if kind == _ARRIVE:
                st.estimate = max(self.estimator.estimate(st), 1.0)
                self._push(vc, st, t)
            else:
                st.remaining = 0.0
                st.end = t
                st.run_start = -1.0
                vc.running.discard(idx)
                vc.free += st.gpus
                busy -= st.gpus
                self.estimator.observe(st)
                done += 1
                if progress is not None and done % 1000 == 0:
                    progress(1000)
            busy += self._round(vc, t, events, policy)
            n_events += 1
            if self.timeline_every and n_events % self.timeline_every == 0:
                timeline.append((t, busy, sum(v.n_pending for v in self.vcs.values())))
        return SimResult(policy.name, self.jobs, busy_gpu_s, self.unschedulable, timeline,
                         {k: v.capacity for k, v in self.vcs.items()})

    def _push(self, vc: _VC, st: JobState, now: float) -> None:
        self._seq += 1
        heapq.heappush(vc.buckets.setdefault(st.gpus, []), (self.policy.key(st, now), self._seq, st.idx))
        vc.n_pending += 1

    def _start(self, vc: _VC, st: JobState, now: float, events: list[tuple[float, int, int, int, int]]) -> None:
        vc.free -= st.gpus
        if vc.free < 0:  # an engine bug, not bad input: never hand out GPUs twice
            raise RuntimeError(f"engine invariant broken: {st.job_id} over-allocates {st.vc}")
        vc.running.add(st.idx)
        vc.n_pending -= 1
        st.run_start = now
        if st.first_start < 0:
            st.first_start = now
        st.version += 1
        heapq.heappush(events, (now + st.remaining, _FINISH, st.idx, st.idx, st.version))

    def _preempt(self, vc: _VC, st: JobState, now: float) -> None:
        st.remaining = max(st.remaining - (now - st.run_start), 0.0)
        st.run_start = -1.0
        st.version += 1  # its finish event is now stale
        st.preemptions += 1
        vc.running.discard(st.idx)
        vc.free += st.gpus
        self._push(vc, st, now)

    def _best_head(self, vc: _VC, max_gpus: int | None) -> tuple[tuple[float, ...], int, int] | None:
        best = None
        for g, heap in vc.buckets.items():
            if heap and (max_gpus is None or g <= max_gpus) and (best is None or heap[0] < best):
                best = heap[0]
        return best

    def _round(self, vc: _VC, now: float, events: list[tuple[float, int, int, int, int]],
               policy: SchedulingPolicy) -> int:
        """One scheduling round for a virtual cluster; returns the change in busy GPUs."""
        started = 0
        victims_pool: list[tuple[tuple[float, ...], int]] | None = None
        while vc.n_pending:
            head = self._best_head(vc, None)
            if head is None:
                break
            st = self.jobs[head[2]]
            if st.gpus <= vc.free:
                heapq.heappop(vc.buckets[st.gpus])
                self._start(vc, st, now, events)
                started += st.gpus
                continue
            if policy.preemptive:
                if victims_pool is None:  # running jobs, worst (largest key) first
                    victims_pool = sorted(((policy.key(self.jobs[i], now), i) for i in vc.running), reverse=True)
                need = st.gpus - vc.free
                chosen = []
                for k, i in victims_pool:
                    if need <= 0 or not k > head[0]:
                        break
                    if i in vc.running:
                        chosen.append(i)
                        need -= self.jobs[i].gpus
                if need <= 0:
                    for i in chosen:
                        v = self.jobs[i]
                        started -= v.gpus
                        self._preempt(vc, v, now)
                    victims_pool = [(k, i) for k, i in victims_pool if i not in chosen]
                    heapq.heappop(vc.buckets[st.gpus])
                    self._start(vc, st, now, events)
                    started += st.gpus
                    continue
            if not policy.backfill or vc.free == 0:
                break
            small = self._best_head(vc, vc.free)
            if small is None:
                break
            sj = self.jobs[small[2]]
            heapq.heappop(vc.buckets[sj.gpus])
            self._start(vc, sj, now, events)
            started += sj.gpus
        return started


"""Discrete-event cluster simulator: the engine owns the loop and the state.

Events are arrivals, finishes, infrastructure failures and packing checks; anything that
changes a running job (preemption, a new or departed packing partner, a failure) bumps the
job's version, so its old events are ignored. At each event only the affected virtual
cluster runs a scheduling round: pending jobs wait in per-GPU-count heaps keyed by the
policy (so a round looks at one head per size class, not at the whole queue), the policy's
order decides, and the engine places, starts, preempts and packs. Placement is the engine's
(placement.py): `pool` counts GPUs per virtual cluster (the default); `node` places jobs on
nodes x GPUs (one node, best fit, up to a node's GPUs; whole nodes beyond).

Mechanisms a policy opts into (attributes; absent means off, so classic policies run the
original loop unchanged):
- `packing`: a head that cannot start may share the GPUs of a running job of the same size
  (at most two jobs per GPU) if `policy.can_pack(job, host, slowdowns)` agrees; both then
  progress at 1/slowdown, drawn from the interference model, until one of them leaves.
- `cancel_slowdown`: `detect_s` after packing, the tracker's measured slowdown of the pair
  is compared with it; above it, the later job leaves (to free GPUs, else to the queue)
  and is never packed again.
- `failure_aware`: how failures are requeued when a `FailureModel` is given (failures.py).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Mapping, Sequence

from schedmate.core.errors import InputError
from schedmate.sim.estimators import Estimator, OracleEstimator
from schedmate.sim.failures import FailureModel
from schedmate.sim.interference import InterferenceModel
from schedmate.sim.invariants import check_allocation
from schedmate.sim.packing import PACK_MAX_GPUS, PackingMixin
from schedmate.sim.placement import (
    LucidNodePlacement,
    NodePlacement,
    check_placement,
    uniform_nodes,
)
from schedmate.sim.policies import BoundedKey, SchedulingPolicy, TimeVaryingKey
from schedmate.sim.rounds import RoundMixin
from schedmate.sim.semantics import Semantics
from schedmate.sim.state import Event, JobState, Observation, SimResult, VCState
from schedmate.sim.trace import TraceJob

__all__ = ["JobState", "Simulator", "SimResult", "PACK_MAX_GPUS"]

# at equal times, finishes free GPUs before arrivals are placed; a batched round comes last
_FINISH, _ARRIVE, _FAIL, _KEY, _ROUND = 0, 1, 2, 4, 5  # and _CHECK = 3, a pair's check (packing.py)
_HEAD = -math.inf  # key prefix of a job requeued at the head of the queue


class Simulator(RoundMixin, PackingMixin):
    def __init__(
        self,
        jobs: Sequence[TraceJob],
        cluster: dict[str, int],
        policy: SchedulingPolicy,
        estimator: Estimator | None = None,
        *,
        seed: int = 0,
        timeline_every: int = 0,
        start_at: float | None = None,
        running: Sequence[tuple[TraceJob, float]] = (),
        interference: InterferenceModel | None = None,
        failures: FailureModel | None = None,
        check: bool = False,
        placement: str = "pool",
        gpus_per_node: int = 8,
        node_sizes: Mapping[str, Sequence[int]] | None = None,
        semantics: Semantics | None = None,
        observe_at: float | None = None,
    ) -> None:
        """`start_at` and `running` start the simulation from a snapshot: the `running`
        jobs (with their remaining seconds) hold GPUs at `start_at`; `jobs` arrive at
        max(submit, start_at) (what-if and queue-wait prediction). `check` verifies the
        allocation invariants after every round (tests). `placement="node"` splits each VC
        into nodes of `gpus_per_node` GPUs, or the node sizes `node_sizes` gives per VC
        (`*` for the default pool; they must add up to the VC's GPUs). `semantics` holds the
        modelling choices (rounds, preemption cost, placement rules: semantics.py).
        `observe_at` records the state at that moment (`SimResult.observed`: who runs, who
        waits and when each waiting job starts next), for snapshots of a replay."""
        if not jobs:
            raise InputError("no jobs to simulate")
        sem = semantics or Semantics()
        self.semantics = sem
        self.observe_at = observe_at
        self._observed: Observation | None = None
        self._watch: set[int] = set()
        preemptive = bool(policy.preemptive)
        self.interval = sem.interval_for(preemptive)
        self.end_tick = sem.end_tick_s if preemptive else 0.0
        self.key_events = sem.key_events and preemptive and isinstance(policy, TimeVaryingKey)
        self._start_seq = 0
        self.placement = check_placement(placement)
        self.gpus_per_node = gpus_per_node
        self.node_sizes = dict(node_sizes or {})
        self.stranded_gpu_s = 0.0
        self.policy = policy
        self.estimator = estimator or OracleEstimator()
        self.packing = bool(getattr(policy, "packing", False))
        self.cancel: float | None = getattr(policy, "cancel_slowdown", None) if self.packing else None
        self.detect_s = float(getattr(policy, "detect_s", 120.0))
        self.aware = bool(getattr(policy, "failure_aware", False))
        self.interference = interference or (InterferenceModel.shipped() if self.packing else None)
        self._solo_ver: dict[tuple[int, int], int] = {}
        self._no_host: dict[int, int] = {}
        self.failures = failures
        self.check = check
        self.quota = sem.round == "quota" and preemptive and not self.packing
        # running keys only fall between a job's own events (starts, releases, key events):
        # "no victim set lets this head start" then holds until one of those (VCState.ver)
        # (a jump is announced by next_change: the cache holds until the earliest one, JobState.jump_at;
        # runs with and without it are identical to the last digit on Philly and Helios)
        varying = isinstance(policy, TimeVaryingKey)
        self.evict_cache = preemptive and (
            not varying or (self.key_events and bool(getattr(policy, "keys_rise_only_at_events", False)))
        )
        # the heads round finds the running jobs worse than a head from a heap of key bounds
        # (rounds.py: _worse) instead of computing every running job's key
        self.bounded = preemptive and not self.quota and isinstance(policy, BoundedKey)
        self.lazy = None
        self._rng = random.Random(
            seed + 1 + (failures.seed if failures else 0)
        )  # packing draws and failures, apart from the jobs' noise
        self._infra_rate = failures.infra_per_gpu_h / 3600.0 if failures else 0.0
        rng = random.Random(seed)
        self.vcs: dict[str, VCState] = {}
        self._vc_list: list[VCState] = []
        default = cluster.get("*")
        for vc, gpus in cluster.items():
            if vc != "*":
                self.vcs[vc] = self._make_vc(vc, gpus)
        self.jobs: list[JobState] = []
        self.unschedulable = 0
        for i, j in enumerate(jobs):
            vc = j.vc if j.vc in self.vcs else ("*" if default is not None else j.vc)
            if vc not in self.vcs:
                if default is None:
                    raise InputError(f"job {j.job_id}: virtual cluster '{j.vc}' is not in the cluster config")
                self.vcs[vc] = self._make_vc(vc, default)
            st = JobState(
                i,
                j.job_id,
                j.submit_s,
                j.duration_s,
                max(1, j.gpus),
                vc,
                j.user,
                remaining=j.duration_s,
                noise=rng.gauss(0.0, 1.0),
                queued_at=j.submit_s,
            )
            if j.share >= 0:
                st.share = j.share
            self.jobs.append(st)
        if failures is not None:
            from_trace = failures.use_trace_status and any(j.failed for j in jobs)
            for st, j in zip(self.jobs, jobs, strict=True):
                st.app_fail = j.failed if from_trace else self._rng.random() < failures.app_prob
        self.timeline_every = timeline_every
        self._seq = 0
        self._busy = 0
        self.packs = self.unpacks = self.infra_failures = self.app_failures = 0
        self.lost_gpu_s = 0.0
        self.start_at = start_at
        self.initial: list[int] = []  # jobs of the snapshot that already run
        for j, remaining in running:
            vc = j.vc if j.vc in self.vcs else "*"
            if vc not in self.vcs:
                raise InputError(
                    f"running job {j.job_id}: virtual cluster '{j.vc}' is not in the cluster config"
                )
            st = JobState(
                len(self.jobs),
                j.job_id,
                j.submit_s,
                j.duration_s,
                max(1, j.gpus),
                vc,
                j.user,
                remaining=max(remaining, 0.0),
                noise=rng.gauss(0.0, 1.0),
                queued_at=j.submit_s,
            )
            self.jobs.append(st)
            self.initial.append(st.idx)

    def _make_vc(self, name: str, gpus: int) -> VCState:
        vc = VCState(gpus, gpus, vid=len(self._vc_list))
        self._vc_list.append(vc)
        if self.placement == "node":
            sizes = self.node_sizes.get(name)
            if sizes is not None and sum(sizes) != gpus:
                raise InputError(
                    f"virtual cluster '{name}': its nodes have {sum(sizes)} GPUs, the cluster config {gpus}"
                )
            kind = LucidNodePlacement if self.semantics.placement_rules == "lucid" else NodePlacement
            vc.nodes = kind(sizes if sizes is not None else uniform_nodes(gpus, self.gpus_per_node))
        return vc

    # -- the loop ---------------------------------------------------------------------------
    def run(self, progress: Callable[[int], None] | None = None) -> SimResult:
        events: list[Event] = []
        t0 = self.start_at
        initial = set(self.initial)
        for st in self.jobs:
            if st.idx in initial:
                continue
            if st.gpus > self.vcs[st.vc].max_job:
                self.unschedulable += 1  # counted and reported, never silently dropped
                continue
            events.append((st.submit if t0 is None else max(st.submit, t0), _ARRIVE, st.idx, st.idx, 0))
        if self.failures is not None and self.failures.scripted:
            by_id = {st.job_id: st.idx for st in self.jobs}
            for jid, at in self.failures.scripted:
                if jid not in by_id:
                    raise InputError(f"scripted failure: no job '{jid}'")
                events.append((at, _FAIL, by_id[jid], by_id[jid], -1))
        heapq.heapify(events)
        busy_gpu_s = 0.0
        last_t = t0 if t0 is not None else (self.jobs[0].submit if self.jobs else 0.0)
        for i in self.initial:  # snapshot: these already hold their GPUs
            st = self.jobs[i]
            st.estimate = st.remaining
            self._start(self.vcs[st.vc], st, last_t, events, spread=True)
        timeline: list[tuple[float, int, int]] = []
        done = 0
        n_events = 0
        policy = self.policy
        interval = self.interval
        observe = self.observe_at
        while events:
            t, kind, tie, idx, version = heapq.heappop(events)
            if observe is not None and t > observe:
                self._observe(observe)
                observe = None
            if kind == _ROUND:  # batched: one round for the VC after every event up to now
                busy_gpu_s += self._busy * (t - last_t)
                last_t = t
                vc = self._vc_list[tie]
                vc.round_at = -1.0
                self._any_round(vc, t, events, policy)
                if self.check:
                    self._check_invariants(vc)
                continue
            st = self.jobs[idx]
            if kind != _ARRIVE and version != st.version and not (version < 0 and st.run_start >= 0):
                continue  # cancelled by a preemption, a partner change or a failure (scripted: not running)
            busy_gpu_s += self._busy * (t - last_t)
            last_t = t
            vc = self.vcs[st.vc]
            if kind == _ARRIVE:
                st.estimate = max(self.estimator.estimate(st), 1.0)
                self._push(vc, st, t)
            elif kind == _FINISH:
                if st.app_fail and self._app_failure(vc, st, t, events):
                    pass  # resubmitted
                else:
                    if st.end >= 0:  # an engine bug: every job finishes exactly once
                        raise RuntimeError(f"engine invariant broken: {st.job_id} finished twice")
                    st.remaining = 0.0
                    st.end = t
                    self._release(vc, st, t, events)
                    self.estimator.observe(st)
                    done += 1
                    if progress is not None and done % 1000 == 0:
                        progress(1000)
            elif kind == _FAIL:
                if self._infra_failure(vc, st, t, events):
                    done += 1
            elif kind == _KEY:  # a running job's key changed (a demotion, a warm-up's end): re-rank
                vc.ver += 1
                if not self._round_would_act(vc, t, policy):
                    continue  # an exact shortcut: the round would change nothing
            elif not self._check_pair(vc, st, t, events):
                continue  # the pair stays: nothing changed
            if interval > 0:
                r = math.ceil(t / interval) * interval
                if r < t:
                    r += interval
                if vc.round_at != r:
                    vc.round_at = r
                    heapq.heappush(events, (r, _ROUND, vc.vid, -1, 0))
            else:
                self._any_round(vc, t, events, policy)
                if self.check:
                    self._check_invariants(vc)
            n_events += 1
            if self.timeline_every and n_events % self.timeline_every == 0:
                timeline.append((t, self._busy, sum(v.n_pending for v in self.vcs.values())))
        if observe is not None:
            self._observe(observe)  # (the moment is after the last event)
        for vc in self.vcs.values():
            self._strand(vc, last_t, 0)
        return SimResult(
            policy.name,
            self.jobs,
            busy_gpu_s,
            self.unschedulable,
            timeline,
            {k: v.capacity for k, v in self.vcs.items()},
            self.packs,
            self.unpacks,
            self.infra_failures,
            self.app_failures,
            self.lost_gpu_s,
            self.placement,
            self.stranded_gpu_s,
            self._observed,
        )

    def _observe(self, t: float) -> None:
        """Record the state at `t`; the waiting jobs' next starts are filled in as they start."""
        running = {
            st.idx: max(st.remaining - (t - st.run_start) * st.rate, 0.0)
            for st in self.jobs
            if st.run_start >= 0 and st.end < 0
        }
        waiting = {
            st.idx
            for st in self.jobs
            if st.submit <= t and st.end < 0 and st.run_start < 0 and st.gpus <= self.vcs[st.vc].max_job
        }
        self._observed = Observation(t, running, {}, frozenset(waiting))
        self._watch = set(waiting)

    # -- job transitions ----------------------------------------------------------------------
    def _push(self, vc: VCState, st: JobState, now: float, *, head: bool = False) -> None:
        self._seq += 1
        key = (_HEAD, now) if head else self.policy.key(st, now)
        heapq.heappush(vc.buckets.setdefault(st.gpus, []), (key, self._seq, st.idx))
        vc.n_pending += 1

    def _pop(self, vc: VCState, gpus: int) -> JobState:
        vc.n_pending -= 1
        return self.jobs[heapq.heappop(vc.buckets[gpus])[2]]

    def _schedule(self, st: JobState, now: float, events: list[Event]) -> None:
        """(Re)schedule the end of the current run segment and, with failures on, a failure."""
        st.version += 1
        end = now + st.remaining / st.rate + self.end_tick
        heapq.heappush(events, (end, _FINISH, st.idx, st.idx, st.version))
        if self.key_events:
            change = self.policy.next_change(st, now)  # type: ignore[attr-defined]
            if change is not None and change < end:
                heapq.heappush(events, (change, _KEY, st.idx, st.idx, st.version))
                st.jump_at = change - 2e-6  # the jump itself (the event is a hair after it)
                heapq.heappush(self.vcs[st.vc].jumps, (st.jump_at, st.idx, st.version))
            else:
                st.jump_at = math.inf
        if self._infra_rate:
            fail = now + self._rng.expovariate(self._infra_rate * st.gpus)
            if fail < end:
                heapq.heappush(events, (fail, _FAIL, st.idx, st.idx, st.version))

    def _settle(self, st: JobState, now: float) -> None:
        st.remaining = max(st.remaining - (now - st.run_start) * st.rate, 0.0)
        st.run_start = now

    def _start(
        self, vc: VCState, st: JobState, now: float, events: list[Event], host: int = -1, spread: bool = False
    ) -> None:
        if st.run_start >= 0:  # an engine bug: a running job taken from the queue again
            raise RuntimeError(f"engine invariant broken: {st.job_id} started while running")
        if self._watch and st.idx in self._watch and self._observed is not None:
            self._observed.next_start[st.idx] = now  # a job waiting at the observed moment
            self._watch.discard(st.idx)
        if host < 0:
            nodes = vc.nodes
            if nodes is None:
                vc.free -= st.gpus
            else:
                a = nodes.spread(st.gpus) if spread else nodes.allocate(st.gpus)
                if a is None:
                    raise RuntimeError(f"engine invariant broken: {st.job_id} fits on no node of {st.vc}")
                st.alloc = a
                for _, g in a:
                    vc.free -= g
            if vc.free < 0:  # an engine bug, not bad input: never hand out GPUs twice
                raise RuntimeError(f"engine invariant broken: {st.job_id} over-allocates {st.vc}")
            self._busy += st.gpus
        vc.running.add(st.idx)
        vc.ver += 1
        st.run_start = now
        self._start_seq += 1
        st.start_seq = self._start_seq
        if st.first_start < 0:
            st.first_start = now
        if self.bounded:
            self._add_bound(vc, st, now)
        if host >= 0:
            self._pair(vc, st, self.jobs[host], now, events)
            return
        st.rate = 1.0
        if self.packing and st.gpus <= PACK_MAX_GPUS:
            vc.solo.setdefault((st.gpus, st.share), {})[st.idx] = None
            self._solo_changed(vc, st.gpus)
        self._schedule(st, now, events)

    def _release(self, vc: VCState, st: JobState, now: float, events: list[Event]) -> None:
        """`st` stops running; a packing partner keeps the GPUs and returns to full speed."""
        vc.running.discard(st.idx)
        vc.ver += 1
        st.run_start = -1.0
        st.version += 1  # its pending events are now stale
        p = st.partner
        if p >= 0:
            st.partner = -1
            q = self.jobs[p]
            q.partner = -1
            self._settle(q, now)
            q.rate = 1.0
            vc.solo.setdefault((q.gpus, q.share), {})[q.idx] = None
            self._solo_changed(vc, q.gpus)
            self._schedule(q, now, events)
            return
        if vc.nodes is None:
            vc.free += st.gpus
        else:
            vc.nodes.release(st.alloc)
            for _, g in st.alloc:
                vc.free += g
        self._busy -= st.gpus
        if self.packing and vc.solo.get((st.gpus, st.share), {}).pop(st.idx, 0) is None:
            self._solo_changed(vc, st.gpus)

    def _preempt(self, vc: VCState, st: JobState, now: float, events: list[Event]) -> None:
        self._settle(st, now)
        st.preemptions += 1
        cost = self.semantics.overhead(st.gpus)
        if cost:  # checkpoint and restart: more work before it ends
            st.remaining += cost
            st.overhead += cost
        self._release(vc, st, now, events)
        self._push(vc, st, now)

    # -- failures -------------------------------------------------------------------------------
    def _infra_failure(self, vc: VCState, st: JobState, now: float, events: list[Event]) -> bool:
        """An infrastructure failure of a running job; True when the job ended (no requeue)."""
        assert self.failures is not None
        self._settle(st, now)
        done = st.duration - st.remaining
        kept = (done // self.failures.checkpoint_s) * self.failures.checkpoint_s if self.aware else 0.0
        self.lost_gpu_s += (done - kept) * st.gpus
        st.remaining = st.duration - kept
        st.failures += 1
        self.infra_failures += 1
        st.lost_in_a_row = 0 if kept > st.kept else st.lost_in_a_row + 1
        st.kept = kept
        self._release(vc, st, now, events)
        if st.lost_in_a_row > self.failures.max_requeues:  # gave up, as Slurm's MaxBatchRequeue
            st.failed = True
            st.end = now
            self.estimator.observe(st)
            return True
        if self.aware:
            self._push(vc, st, now, head=True)
        else:
            st.queued_at = now
            self._push(vc, st, now)
        return False

    def _app_failure(self, vc: VCState, st: JobState, now: float, events: list[Event]) -> bool:
        """The run ended in an application failure; True when the job was resubmitted."""
        assert self.failures is not None
        st.failures += 1
        st.failed = True
        self.app_failures += 1
        if self.aware or st.retries >= self.failures.blind_retries:
            return False
        st.retries += 1
        self.lost_gpu_s += st.duration * st.gpus
        st.remaining = st.duration
        self._release(vc, st, now, events)
        st.queued_at = now
        self._push(vc, st, now)
        return True

    def _check_invariants(self, vc: VCState) -> None:
        check_allocation(self.jobs, vc.running, vc.capacity, vc.free, vc.nodes)

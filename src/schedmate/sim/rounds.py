"""One scheduling round of a virtual cluster (admit -> order -> place), the engine's part
that decides who starts, who is evicted and who backfills. Two round algorithms: `heads`
(schedmate's: start the best head, else evict strictly worse running jobs for it, else
backfill) and `quota` (Lucid's and Pollux's: a greedy walk of running and pending jobs in key
order against the VC's GPUs). The engine (engine.py) owns the loop and the state."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Iterator
from typing import TYPE_CHECKING

from schedmate.sim.placement import Alloc, NodePlacement
from schedmate.sim.policies import BoundedKey, SchedulingPolicy
from schedmate.sim.state import Bound, EngineCalls, Event, JobState, VCState

__all__ = ["RoundMixin"]


class _LazyWorse:
    """The running jobs strictly worse than `floor` (a round's first head), worst first, each
    found only when a round asks for it ("evict for this head": the worst until it has its
    GPUs), and "not enough" answered without computing the rest when even every remaining
    candidate's GPUs would not do. Candidates come from the VC's sorted key bounds (those
    above `floor`, in falling bound order); a key is computed when its bound could exceed the
    worst found so far. Exactly the old sorted list's order: a found job is next only when its
    (key, index) is above every bound not yet looked at. Pool placement without packing, where
    nothing in a round changes a running job's key but its eviction (a later head's eviction
    skips jobs evicted, or started, since: the start_seq of each entry)."""

    __slots__ = ("sim", "vc", "now", "floor", "cand", "pos", "found", "out", "ub", "seq", "pinned")

    def __init__(self, sim: RoundMixin, vc: VCState, now: float, floor: tuple[float, ...]) -> None:
        bounds = vc.bounds
        end = bisect_left(bounds, (tuple([-x for x in floor]),))
        self.sim, self.vc, self.now, self.floor = sim, vc, now, floor
        self.cand = bounds[:end]  # a copy: the refreshes below change vc.bounds
        self.pos = 0
        self.found: list[tuple[tuple[float, ...], int, tuple[float, ...], int, int]] = []  # a heap
        self.out: list[tuple[tuple[float, ...], int, int]] = []  # (key, job, start_seq), worst first
        # >= GPUs of out + found + not looked at (a pair's GPUs once), counted when first needed
        self.ub: int | None = None
        self.seq = sim._start_seq  # jobs started after this are not candidates
        self.pinned: dict[int, tuple[float, ...]] = {}  # keys taken before a packing re-based them

    def pin(self, i: int) -> None:
        """Running job `i` is about to host a packed job in this round: its progress is re-based,
        which may move its key by an ulp, so take its key now, as the old list did."""
        if i not in self.pinned:
            self.pinned[i] = self.sim.policy.key(self.sim.jobs[i], self.now)

    def _next(self) -> bool:
        """Find the next worst job (False: there is none)."""
        cand, found, sim = self.cand, self.found, self.sim
        jobs, running, key, now, floor = sim.jobs, self.vc.running, sim.policy.key, self.now, self.floor
        bounds = self.vc.bounds
        seq, pinned, ub = self.seq, self.pinned, self.ub
        policy: BoundedKey = sim.policy  # type: ignore[assignment]
        pos, end = self.pos, len(cand)
        while pos < end:
            e = cand[pos]
            if found and found[0][0] < e[0]:
                break  # the worst found is above every bound not yet looked at
            pos += 1
            i = e[1]
            st = jobs[i]
            if i in running and st.start_seq == e[2]:
                p = st.partner
                # a pair is one candidate, its lower index, as it was paired when the search began
                if p >= 0 and p < i and jobs[p].start_seq <= seq:
                    continue
                k = pinned[i] if i in pinned else key(st, now)
                if k > floor:
                    nk = (-k[0], -k[1]) if len(k) == 2 else tuple([-x for x in k])
                    heapq.heappush(found, (nk, -i, k, i, e[2]))
                    continue
                if ub is not None:
                    ub -= st.gpus
                b = policy.key_bound(st, now, k)
                fresh: Bound | None = ((-b[0], -b[1]) if len(b) == 2 else tuple([-x for x in b]), i, e[2])
            else:
                fresh = None  # stale: evicted or finished since (still counted in ub: an upper bound)
            at = bisect_left(bounds, e)
            if at < len(bounds) and bounds[at] == e:
                del bounds[at]
                if fresh is not None:
                    insort(bounds, fresh)
        self.pos, self.ub = pos, ub
        if not found:
            return False
        _, _, k, i, stamp = heapq.heappop(found)
        self.out.append((k, i, stamp))
        return True

    def _upper(self, passed: int) -> int:
        """GPUs of every job found or that could still be found (a pair once, as paired when
        the search began); `passed` = GPUs of the first `n` found, all of them when called."""
        jobs, running, seq = self.sim.jobs, self.vc.running, self.seq
        ub = passed + sum(jobs[f[3]].gpus for f in self.found)
        for e in self.cand[self.pos :]:
            i = e[1]
            st = jobs[i]
            if i in running and st.start_seq == e[2]:
                p = st.partner
                if p < 0 or i < p or jobs[p].start_seq > seq:
                    ub += st.gpus
        return ub

    def choose(self, need: int, head_key: tuple[float, ...]) -> list[int] | None:
        """The worst jobs, worse than `head_key`, still running, until they hold `need` GPUs
        (the old loop over the sorted list), or None if they cannot."""
        jobs, running, out = self.sim.jobs, self.vc.running, self.out
        key, now = self.sim.policy.key, self.now
        chosen: list[int] = []
        n = 0
        seen = 0  # GPUs of out[:n]
        while need > 0:
            if n == len(out):
                if n and self.ub is None:
                    self.ub = self._upper(seen)
                if self.ub is not None and self.ub - seen < need:
                    return None  # even every job not yet passed would not free enough
                if not self._next():
                    return None
            k, i, seq = out[n]
            n += 1
            g = jobs[i].gpus
            seen += g
            if not k > head_key:
                return None
            if i in running and jobs[i].start_seq == seq:
                p = jobs[i].partner
                if p >= 0 and (p in chosen or not key(jobs[p], now) > head_key):
                    continue  # a pair is evicted whole, only when both jobs are worse
                chosen.append(i)
                need -= g
        return chosen


class RoundMixin(EngineCalls):
    """The round of `Simulator` (a mixin: the engine's state is the simulator's)."""

    jobs: list[JobState]
    policy: SchedulingPolicy
    packing: bool
    quota: bool
    interval: float
    evict_cache: bool
    bounded: bool
    lazy: _LazyWorse | None  # this round's search for jobs to evict (packing pins keys in it)
    _start_seq: int
    stranded_gpu_s: float

    if TYPE_CHECKING:

        def _preempt(self, vc: VCState, st: JobState, now: float, events: list[Event]) -> None: ...

        def _pack_some(self, vc: VCState, now: float, events: list[Event]) -> bool: ...

    # -- one scheduling round -------------------------------------------------------------------
    def _best_head(self, vc: VCState, max_gpus: int | None) -> tuple[tuple[float, ...], int, int] | None:
        best = None
        for g, heap in vc.buckets.items():
            if heap and (max_gpus is None or g <= max_gpus) and (best is None or heap[0] < best):
                best = heap[0]
        return best

    def _victims(
        self, vc: VCState, now: float, floor: tuple[float, ...]
    ) -> list[tuple[tuple[float, ...], int]]:
        """Running jobs strictly worse than `floor` (the round's first head: later heads are no
        better, so they can only evict from this set), worst (largest key) first. Only those are
        sorted: a full sort of every running job per round was the hottest path. A packed pair is
        one entry (its partner's key is checked when it is chosen)."""
        if self.bounded:
            out = self._worse(vc, now, floor, 0)
        else:
            key = self.policy.key
            jobs = self.jobs
            if not self.packing:
                out = [(k, i) for i in vc.running if (k := key(jobs[i], now)) > floor]
            else:
                out = [
                    (k, i)
                    for i in vc.running
                    if (jobs[i].partner < 0 or i < jobs[i].partner) and (k := key(jobs[i], now)) > floor
                ]
        out.sort(reverse=True)
        return out

    # -- running jobs by key bound (BoundedKey policies) ------------------------------------------
    def _add_bound(self, vc: VCState, st: JobState, now: float) -> None:
        """A started job enters its VC's list of bounds (stale entries are dropped when they
        outnumber the running jobs)."""
        bounds = vc.bounds
        if len(bounds) > 2 * len(vc.running) + 64:
            jobs, running = self.jobs, vc.running
            bounds[:] = [e for e in bounds if e[1] in running and jobs[e[1]].start_seq == e[2]]
        policy: BoundedKey = self.policy  # type: ignore[assignment]
        b = policy.key_bound(st, now, self.policy.key(st, now))
        insort(bounds, ((-b[0], -b[1]) if len(b) == 2 else tuple([-x for x in b]), st.idx, st.start_seq))

    def _worse(
        self, vc: VCState, now: float, floor: tuple[float, ...], need: int
    ) -> list[tuple[tuple[float, ...], int]]:
        """The running jobs with a key strictly above `floor` (a packed pair once, by its lower
        index), in no particular order; with `need` > 0, stop once they hold `need` GPUs. The
        same set as computing every running job's key, but only the jobs whose bound is above
        `floor` (a prefix of the sorted bounds) are looked at; those found not worse get a
        bound refreshed to now (tighter), stale entries leave."""
        bounds = vc.bounds
        end = bisect_left(bounds, (tuple([-x for x in floor]),))
        if not end:
            return []
        jobs, running, key = self.jobs, vc.running, self.policy.key
        packing = self.packing
        out: list[tuple[tuple[float, ...], int]] = []
        keep: list[Bound] = []
        moved: list[tuple[JobState, tuple[float, ...], Bound]] = []
        for n in range(end):
            e = bounds[n]
            i = e[1]
            st = jobs[i]
            if i not in running or st.start_seq != e[2]:
                continue  # stale: preempted or finished since
            k = key(st, now)
            if not k > floor:
                moved.append((st, k, e))
                continue
            keep.append(e)
            if not packing or st.partner < 0 or i < st.partner:
                out.append((k, i))
                if need:
                    need -= st.gpus
                    if need <= 0:
                        keep.extend(bounds[n + 1 : end])
                        break
        bounds[:end] = keep
        if moved:
            policy: BoundedKey = self.policy  # type: ignore[assignment]
            for st, k, e in moved:
                insort(bounds, (tuple([-x for x in policy.key_bound(st, now, k)]), e[1], e[2]))
        return out

    def _limit(self, vc: VCState) -> int:
        """The largest job that fits in the VC now."""
        return vc.free if vc.nodes is None else vc.nodes.limit()

    def _strand(self, vc: VCState, now: float, gpus: int) -> None:
        """Integrate the stranded free GPUs (node placement's fragmentation metric)."""
        if gpus != vc.stranded:
            self.stranded_gpu_s += vc.stranded * (now - vc.stranded_t)
            vc.stranded, vc.stranded_t = gpus, now

    def _node_victims(
        self,
        vc: VCState,
        nodes: NodePlacement,
        st: JobState,
        head_key: tuple[float, ...],
        victims_pool: list[tuple[tuple[float, ...], int]],
        now: float,
    ) -> list[int] | None:
        """Node placement: the strictly worse running jobs to evict so that `st` fits."""
        key = self.policy.key

        def allowed() -> Iterator[tuple[int, Alloc]]:
            taken: set[int] = set()
            for k, i in victims_pool:
                if not k > head_key:
                    return
                if i in vc.running:
                    p = self.jobs[i].partner
                    if p >= 0 and (p in taken or not key(self.jobs[p], now) > head_key):
                        continue  # a pair is evicted whole, only when both jobs are worse
                    taken.add(i)
                    yield i, self.jobs[i].alloc

        return nodes.evictions(st.gpus, allowed())

    def _round_would_act(self, vc: VCState, now: float, policy: SchedulingPolicy) -> bool:
        """Would a round change anything now? Exact for pool placement (the round's rules: start
        the best head, else pack it, else evict for it, else backfill), asked only after a
        running job's key changed: the last round left nothing to start, pack or backfill, and
        neither a key nor can_pack (the two jobs only) changes who can pack; with packing, the
        worse jobs' GPUs bound what an eviction can free (a pair counts once, by its lower
        index, and is evicted only when both are worse). With nodes, or in batched or quota
        rounds, it answers yes."""
        if not vc.n_pending:
            return False
        if vc.nodes is not None or self.interval > 0 or self.quota:
            return True
        head = self._best_head(vc, None)
        assert head is not None
        need = self.jobs[head[2]].gpus - vc.free
        if need <= 0 or (policy.backfill and vc.free and self._best_head(vc, vc.free) is not None):
            return True
        if not policy.preemptive:
            return False
        if self.bounded:
            return sum(self.jobs[i].gpus for _, i in self._worse(vc, now, head[0], need)) >= need
        key, jobs, floor = policy.key, self.jobs, head[0]
        for i in vc.running:
            if key(jobs[i], now) > floor:
                need -= jobs[i].gpus
                if need <= 0:
                    return True
        return False

    def _any_round(self, vc: VCState, now: float, events: list[Event], policy: SchedulingPolicy) -> None:
        if self.quota:
            self._quota_round(vc, now, events, policy)
        else:
            self._round(vc, now, events, policy)

    def _quota_round(self, vc: VCState, now: float, events: list[Event], policy: SchedulingPolicy) -> None:
        """Lucid's (and Pollux's) preemptive round: walk running and pending jobs in key order
        (running first among equal keys, then in start / queue order) against a quota of the
        VC's GPUs; a job that fits keeps or gets its share, a running job that does not is
        preempted, a pending one waits. Then the preempted jobs leave and the chosen pending
        jobs are placed in key order (placement may still fail on nodes: they wait)."""
        key = policy.key
        jobs = self.jobs
        running = sorted((key(jobs[i], now), jobs[i].start_seq, i) for i in vc.running)
        quota = vc.capacity
        chosen: list[tuple[tuple[float, ...], int, int]] = []
        preempt: list[int] = []
        ri = 0
        while True:
            head = self._best_head(vc, quota) if vc.n_pending and quota > 0 else None
            if ri < len(running) and (head is None or running[ri][0] <= head[0]):
                i = running[ri][2]
                ri += 1
                if jobs[i].gpus <= quota:
                    quota -= jobs[i].gpus
                else:
                    preempt.append(i)
                continue
            if head is None:
                break
            g = jobs[head[2]].gpus
            chosen.append(heapq.heappop(vc.buckets[g]))
            vc.n_pending -= 1
            quota -= g
        for i in preempt:
            self._preempt(vc, jobs[i], now, events)
        for entry in chosen:
            st = jobs[entry[2]]
            if st.gpus <= self._limit(vc):
                self._start(vc, st, now, events)
            else:  # waits where it was in the queue
                heapq.heappush(vc.buckets[st.gpus], entry)
                vc.n_pending += 1

    def _round(self, vc: VCState, now: float, events: list[Event], policy: SchedulingPolicy) -> None:
        """One scheduling round for a virtual cluster: admit the best head if it fits (place),
        else pack it, else evict worse jobs for it, else backfill."""
        victims_pool: list[tuple[tuple[float, ...], int]] | None = None
        lazy: _LazyWorse | None = None
        self.lazy = None
        lazy_ok = self.bounded and vc.nodes is None
        pool_ver = -1
        nodes = vc.nodes
        while vc.n_pending:
            head = self._best_head(vc, None)
            if head is None:
                break
            st = self.jobs[head[2]]
            if st.gpus <= (vc.free if nodes is None else nodes.limit()):
                self._pop(vc, st.gpus)
                self._start(vc, st, now, events)
                continue
            if self.packing and self._pack_some(vc, now, events):
                continue  # sharing GPUs is tried before evicting anyone
            cached = vc.no_evict
            if policy.preemptive and not (
                self.evict_cache
                and cached is not None
                and cached[0] == vc.ver
                and cached[1] == head
                and now < cached[2]
            ):
                if victims_pool is None and lazy is None:
                    if lazy_ok:
                        lazy = self.lazy = _LazyWorse(self, vc, now, head[0])
                    else:
                        victims_pool = self._victims(vc, now, head[0])
                    pool_ver = vc.ver
                chosen: list[int] | None
                if lazy is not None:
                    chosen = lazy.choose(st.gpus - vc.free, head[0])
                elif nodes is None:
                    assert victims_pool is not None
                    need = st.gpus - vc.free
                    chosen = []
                    for k, i in victims_pool:
                        if need <= 0 or not k > head[0]:
                            break
                        if i in vc.running:
                            p = self.jobs[i].partner
                            if p >= 0 and (p in chosen or not policy.key(self.jobs[p], now) > head[0]):
                                continue  # a pair is evicted whole, only when both jobs are worse
                            chosen.append(i)
                            need -= self.jobs[i].gpus
                    if need > 0:
                        chosen = None
                else:
                    assert victims_pool is not None
                    chosen = self._node_victims(vc, nodes, st, head[0], victims_pool, now)
                if chosen is not None:
                    # the head leaves the queue before its victims join it: the job started must
                    # be the one taken from the queue, whatever key a victim requeues with
                    self._pop(vc, st.gpus)
                    for i in chosen:
                        v = self.jobs[i]
                        p = v.partner
                        self._preempt(vc, v, now, events)
                        if p >= 0:
                            self._preempt(vc, self.jobs[p], now, events)
                    if victims_pool is not None:
                        victims_pool = [(k, i) for k, i in victims_pool if i not in chosen]
                    self._start(vc, st, now, events)
                    continue
                if pool_ver == vc.ver:  # (a pool from before a backfill in this round misses that job)
                    jobs = self.jobs
                    jumps = vc.jumps  # the earliest jump_at of a running job
                    while jumps and jobs[jumps[0][1]].version != jumps[0][2]:
                        heapq.heappop(jumps)
                    until = jumps[0][0] if jumps else math.inf
                    vc.no_evict = (vc.ver, head, until)
            room = vc.free if nodes is None else nodes.limit()
            if not policy.backfill or room == 0:
                break
            small = self._best_head(vc, room)
            if small is None:
                break
            self._start(vc, self._pop(vc, self.jobs[small[2]].gpus), now, events)
        if nodes is not None:  # fragmentation: the best job has enough free GPUs, but on no node
            stranded = 0
            if vc.n_pending and vc.free:
                head = self._best_head(vc, None)
                if head is not None and self.jobs[head[2]].gpus <= vc.free:
                    stranded = vc.free
            self._strand(vc, now, stranded)

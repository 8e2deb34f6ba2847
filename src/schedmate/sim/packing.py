"""GPU packing, the engine's part (a mixin of `Simulator`, engine.py): find a running job a
blocked head may share GPUs with, pair them, and un-pack a pair the tracker measures as too
slow. A policy opts in with `packing` and `can_pack(job, host, slowdowns)`, which must depend
on the two jobs only (not on time): the engine then remembers that a head found no host
until a solo job of its size starts or stops (`_solo_ver`)."""

from __future__ import annotations

import heapq
import random
from typing import TYPE_CHECKING

from schedmate.sim.interference import InterferenceModel
from schedmate.sim.policies import SchedulingPolicy
from schedmate.sim.state import EngineCalls, Event, JobState, VCState

if TYPE_CHECKING:
    from schedmate.sim.rounds import _LazyWorse

__all__ = ["PACK_MAX_GPUS", "PackingMixin"]

PACK_MAX_GPUS = 8  # as Lucid: multi-node jobs are never packed
_CHECK = 3  # the event kind of a pair's slowdown check (after the engine's finish, arrival, failure)


class PackingMixin(EngineCalls):
    """Packing for `Simulator` (a mixin: the engine's state is the simulator's)."""

    jobs: list[JobState]
    policy: SchedulingPolicy
    interference: InterferenceModel | None
    lazy: _LazyWorse | None
    cancel: float | None
    detect_s: float
    packs: int
    unpacks: int
    _rng: random.Random
    # (VC, GPUs) -> a counter bumped whenever a solo job of that size starts or stops being one
    _solo_ver: dict[tuple[int, int], int]
    # job -> _solo_ver of its VC and size when it last found no host (a head that waits)
    _no_host: dict[int, int]

    if TYPE_CHECKING:

        def _push(self, vc: VCState, st: JobState, now: float, *, head: bool = False) -> None: ...

        def _release(self, vc: VCState, st: JobState, now: float, events: list[Event]) -> None: ...

        def _schedule(self, st: JobState, now: float, events: list[Event]) -> None: ...

        def _settle(self, st: JobState, now: float) -> None: ...

        def _limit(self, vc: VCState) -> int: ...

    def _solo_changed(self, vc: VCState, gpus: int) -> None:
        k = (vc.vid, gpus)
        self._solo_ver[k] = self._solo_ver.get(k, 0) + 1

    def _pair(self, vc: VCState, guest: JobState, host: JobState, now: float, events: list[Event]) -> None:
        assert self.interference is not None
        if self.lazy is not None:
            self.lazy.pin(host.idx)  # before its progress is re-based
        self._settle(host, now)
        vc.solo[(host.gpus, host.share)].pop(host.idx, None)
        self._solo_changed(vc, host.gpus)
        guest.rate = 1.0 / self.interference.sample(guest.share, host.share, self._rng)
        host.rate = 1.0 / self.interference.sample(host.share, guest.share, self._rng)
        guest.partner, host.partner = host.idx, guest.idx
        guest.alloc = host.alloc  # the same GPUs of the same node(s)
        self._schedule(host, now, events)
        self._schedule(guest, now, events)
        self.packs += 1
        if self.cancel is not None:
            heapq.heappush(events, (now + self.detect_s, _CHECK, guest.idx, guest.idx, guest.version))

    def _host_for(self, vc: VCState, st: JobState) -> int:
        """A running job `st` may share GPUs with, as the policy allows (-1: none)."""
        assert self.interference is not None
        can_pack = self.policy.can_pack  # type: ignore[attr-defined]
        for c in range(len(self.interference.mean)):  # least interfering classes first
            cands = vc.solo.get((st.gpus, c))
            if not cands:
                continue
            slow = (self.interference.expected(st.share, c), self.interference.expected(c, st.share))
            for n, h in enumerate(cands):
                if can_pack(st, self.jobs[h], slow):
                    return h
                if n >= 8:  # bounded search: the oldest few candidates of this class
                    break
        return -1

    def _pack_some(self, vc: VCState, now: float, events: list[Event]) -> bool:
        """Pack the best pending head (one per size class, in key order) that has a host."""
        solo_ver, no_host, vid = self._solo_ver, self._no_host, vc.vid
        for _, _, i in sorted(h[0] for h in vc.buckets.values() if h):
            st = self.jobs[i]
            if st.gpus > PACK_MAX_GPUS or st.no_pack:
                continue
            ver = solo_ver.get((vid, st.gpus), 0)
            if no_host.get(i) == ver:
                continue  # it found no host, and the solo jobs of its size are the same
            host = self._host_for(vc, st)
            if host >= 0:
                self._pop(vc, st.gpus)
                self._start(vc, st, now, events, host=host)
                return True
            no_host[i] = ver
        return False

    def _check_pair(self, vc: VCState, st: JobState, now: float, events: list[Event]) -> bool:
        """The tracker's verdict `detect_s` after packing: un-pack a pair slowed beyond the
        threshold (True when it did)."""
        if st.partner < 0 or self.cancel is None:
            return False
        host = self.jobs[st.partner]
        if max(1.0 / st.rate, 1.0 / host.rate) <= self.cancel:
            return False
        self.unpacks += 1
        st.no_pack = True
        self._settle(st, now)
        self._release(vc, st, now, events)
        if st.gpus <= self._limit(vc):  # migrate to free GPUs
            self._start(vc, st, now, events)
        else:
            st.preemptions += 1
            self._push(vc, st, now)
        return True

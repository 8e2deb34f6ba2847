"""Scheduling policies: they only order jobs; the engine owns the loop and the state.

A policy gives each job a sort key (lower runs first). Keys of *pending* jobs must not
change while they wait (the engine keeps pending jobs in heaps); keys of running jobs may
change with time (preemptive policies compare them at every event).

Optional mechanisms of the engine a policy opts into with attributes (see engine.py):
`packing` with `can_pack(job, host, slowdowns)`, `cancel_slowdown` and `detect_s` (un-pack
a pair the tracker measures as too slow), and `failure_aware` (requeue by failure kind).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from schedmate.core.errors import ConfigError
from schedmate.registry import Registry

if TYPE_CHECKING:
    from schedmate.sim.semantics import Semantics
    from schedmate.sim.state import JobState

__all__ = ["SchedulingPolicy", "TimeVaryingKey", "BoundedKey", "POLICIES", "make_policy"]

# slack on a key bound: a job's progress is re-based (`remaining`, `run_start`) when its rate
# changes, which can move its key by a few ulps either way; GPU-seconds, far below any real gap
_BOUND_REL, _BOUND_ABS = 1e-9, 1e-3


class SchedulingPolicy(Protocol):
    name: str
    preemptive: bool
    backfill: bool  # may a later job start when the head does not fit?

    def key(self, job: JobState, now: float) -> tuple[float, ...]: ...


@runtime_checkable
class TimeVaryingKey(Protocol):
    """A policy whose running jobs' keys jump at known times (a demotion, a warm-up's end):
    the engine makes each such time an event, so the job is re-ranked then and not at the
    next unrelated arrival or finish of its virtual cluster."""

    def next_change(self, job: JobState, now: float) -> float | None:
        """When the running job's key next changes other than continuously, or None.
        A policy whose running keys never rise except at these times may say so with a
        `keys_rise_only_at_events = True` attribute (the engine then caches "nothing to evict")."""
        ...


@runtime_checkable
class BoundedKey(Protocol):
    """A preemptive policy that can bound a running job's future keys. The engine then finds
    the running jobs worse than a head without computing every running job's key: it keeps
    them in a heap by bound and looks only at those whose bound is above the head."""

    def key_bound(self, job: JobState, now: float, key: tuple[float, ...]) -> tuple[float, ...]:
        """A tuple >= `self.key(job, t)` for every t >= now while the job keeps running
        (whatever its rate), given `key == self.key(job, now)`; jumps up included."""
        ...


def _ran(job: JobState, now: float) -> float:
    """Work done so far (full-speed seconds), preemption overhead excluded."""
    return (
        job.duration
        + job.overhead
        - job.remaining
        + ((now - job.run_start) * job.rate if job.run_start >= 0 else 0.0)
    )


@dataclass
class FifoPolicy:
    """First come, first served; strict (the head blocks the queue), as classic schedulers."""

    name: str = "fifo"
    preemptive: bool = False
    backfill: bool = False

    def key(self, job: JobState, now: float) -> tuple[float, ...]:
        return (job.queued_at,)  # the submit time; a resubmission after a failure joins the tail


@dataclass
class SjfPolicy:
    """Shortest (estimated) job first, non-preemptive, with backfill. `by_duration` keys on
    the true duration (an oracle policy: Lucid's SJF sorts by it)."""

    name: str = "sjf"
    preemptive: bool = False
    backfill: bool = True
    by_duration: bool = False

    def key(self, job: JobState, now: float) -> tuple[float, ...]:
        return (job.duration if self.by_duration else job.estimate, job.submit)


@dataclass
class SrtfPolicy:
    """Shortest (estimated) remaining time first, preemptive."""

    name: str = "srtf"
    preemptive: bool = True
    backfill: bool = True

    def key(self, job: JobState, now: float) -> tuple[float, ...]:
        ran = job.duration - job.remaining + ((now - job.run_start) * job.rate if job.run_start >= 0 else 0.0)
        left = job.estimate - ran
        return (left if left > 0.0 else 0.0, job.submit)


@dataclass
class TiresiasPolicy:
    """Discretised 2-queue Least-Attained-Service (Tiresias): jobs whose attained GPU time
    reached `threshold_gpu_s` (passed it, with `demote_above`) drop to the low queue; FIFO
    inside each queue; preemptive. The demotion is an event (`next_change`)."""

    threshold_gpu_s: float = 3600.0 * 8
    name: str = "tiresias"
    preemptive: bool = True
    backfill: bool = True
    demote_above: bool = False
    keys_rise_only_at_events: bool = True

    def key(self, job: JobState, now: float) -> tuple[float, ...]:
        # _ran(job, now) inlined (hot path)
        ran = (
            job.duration
            + job.overhead
            - job.remaining
            + ((now - job.run_start) * job.rate if job.run_start >= 0 else 0.0)
        )
        attained = ran * job.gpus
        if self.demote_above:
            return (0.0 if attained <= self.threshold_gpu_s else 1.0, job.submit)
        return (0.0 if attained < self.threshold_gpu_s else 1.0, job.submit)

    def next_change(self, job: JobState, now: float) -> float | None:
        left = self.threshold_gpu_s / job.gpus - _ran(job, now)
        if left < 0 or (left == 0 and not self.demote_above):
            return None  # already demoted
        # a hair after the crossing, so that the key has changed when the event is handled
        return now + left / job.rate + 1e-6


@dataclass
class QssfPolicy:
    """Quasi-Shortest-Service-First (Helios): smallest estimated GPU time first."""

    name: str = "qssf"
    preemptive: bool = False
    backfill: bool = True

    def key(self, job: JobState, now: float) -> tuple[float, ...]:
        return (job.estimate * job.gpus, job.submit)


@dataclass
class LucidPolicy:
    """Lucid (ASPLOS'23), simplified: smallest estimated GPU time first (its history-based
    estimate), non-preemptive with backfill; a job that cannot start is packed next to a
    running job of the same GPU count when their sharing classes allow it (sum <= 2: 0 with
    anything, 1 with 0 or 1, 2 with 0 only) and, time-aware, when its estimated duration is
    at most twice the host's. No slowdown feedback: a bad pair stays packed."""

    name: str = "lucid"
    preemptive: bool = False
    backfill: bool = True
    packing: bool = True

    def key(self, job: JobState, now: float) -> tuple[float, ...]:
        return (job.estimate * job.gpus, job.submit)

    def can_pack(self, job: JobState, host: JobState, slowdowns: tuple[float, float]) -> bool:
        return job.share + host.share <= 2 and job.estimate <= 2 * host.estimate


@dataclass
class SemanticPolicy:
    """schedmate's policy: shortest remaining *GPU* time first, preemptive, where the
    remaining time comes from the Advisor's prediction before the job runs and from the
    Metric Tracker's ETA once it has run `warmup_s` (progress makes it accurate).

    Failure-aware (the Failure Analyzer classifies failures). With `packing`, a job that
    cannot start shares GPUs when the interference table expects both jobs to slow down by
    at most `cancel_slowdown`, and the pair is un-packed when the tracker measures more
    (the tracker's default slowdown factor, 1.3) after `detect_s`."""

    warmup_s: float = 120.0
    eta_error: float = 0.05
    name: str = "semantic"
    preemptive: bool = True
    backfill: bool = True
    failure_aware: bool = True
    packing: bool = False
    keys_rise_only_at_events: bool = True
    cancel_slowdown: float = 1.3
    detect_s: float = 120.0

    def key(self, job: JobState, now: float) -> tuple[float, ...]:
        # job.elapsed(now), inlined: this is the hottest call of a preemptive simulation
        ran = job.duration - job.remaining + ((now - job.run_start) * job.rate if job.run_start >= 0 else 0.0)
        # warmed up by attained service (as next_change): a preemption's overhead is work added,
        # not progress lost, so a preempted job never falls back into its warm-up
        if ran + job.overhead >= self.warmup_s:
            remaining = job.duration - ran
            remaining = (remaining if remaining > 0.0 else 0.0) * (1.0 + self.eta_error * job.noise)
        else:
            remaining = job.estimate - ran
            if remaining < 0.0:
                remaining = 0.0
        return (remaining * job.gpus, job.submit)

    def key_bound(self, job: JobState, now: float, key: tuple[float, ...]) -> tuple[float, ...]:
        """Both branches of `key` fall while the job runs; the only rise is at the warm-up's end,
        to at most the tracker's ETA of the work after the warm-up (so near the warm-up's end,
        where a re-based `ran` may fall either side, the larger of the two branches there)."""
        b = key[0]
        o = job.overhead  # constant while it runs; the warm-up ends at ran + o = w
        ran = job.duration - job.remaining + ((now - job.run_start) * job.rate if job.run_start >= 0 else 0.0)
        w = self.warmup_s
        f = 1.0 + self.eta_error * job.noise
        if f <= 0.0:  # (a noise below -1 / eta_error) the ETA's keys are <= 0 and rise to 0
            b = max(b, 0.0)
        if ran + o < w + _BOUND_ABS:
            b = max(b, (max(job.duration + o - w, 0.0) * f) * job.gpus)
            if ran + o >= w - _BOUND_ABS:
                b = max(b, max(job.estimate + o - (w - _BOUND_ABS), 0.0) * job.gpus)
        return (b + abs(b) * _BOUND_REL + _BOUND_ABS, *key[1:])

    def can_pack(self, job: JobState, host: JobState, slowdowns: tuple[float, float]) -> bool:
        return not host.no_pack and max(slowdowns) <= self.cancel_slowdown

    def next_change(self, job: JobState, now: float) -> float | None:
        """The warm-up's end, when the key then jumps up (the tracker's ETA is longer than the
        prediction left): only then can the job become a victim. A jump down needs no event."""
        left = self.warmup_s - _ran(job, now)
        if left < 0:
            return None
        # the keys either side of the end (progress then: warmup_s less the overhead)
        before = max(job.estimate + job.overhead - self.warmup_s, 0.0)
        after = max(job.duration + job.overhead - self.warmup_s, 0.0) * (1.0 + self.eta_error * job.noise)
        return now + left / job.rate + 1e-6 if after > before else None


POLICIES: Registry[SchedulingPolicy] = Registry("policy")
for _cls in (FifoPolicy, SjfPolicy, SrtfPolicy, TiresiasPolicy, QssfPolicy, SemanticPolicy, LucidPolicy):
    POLICIES.register(_cls().name)(_cls)
POLICIES.register("semantic-pack")(lambda: SemanticPolicy(name="semantic-pack", packing=True))


def make_policy(name: str, semantics: Semantics | None = None) -> SchedulingPolicy:
    """A policy by name, configured by the semantics' choices that belong to it."""
    name = name.strip().lower()
    if not name:
        raise ConfigError("empty policy name")
    pol = POLICIES.create(name)
    if semantics is None:
        return pol
    own = {f.name for f in fields(pol)}  # type: ignore[arg-type]
    if isinstance(pol, FifoPolicy):
        pol = replace(pol, backfill=semantics.fifo_backfill)
    elif isinstance(pol, SjfPolicy):
        pol = replace(pol, backfill=semantics.sjf_backfill, by_duration=semantics.sjf_key == "duration")
    elif isinstance(pol, TiresiasPolicy) and "threshold_gpu_s" in own:
        pol = replace(
            pol,
            threshold_gpu_s=semantics.tiresias_threshold_gpu_s,
            demote_above=semantics.tiresias_demote_above,
        )
    return pol

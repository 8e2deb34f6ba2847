"""What start-time prediction samples its futures from: job durations and arrivals, learned
from what a cluster knows at a snapshot (the jobs submitted and finished before it).

`DurationModel` draws durations of pending jobs and remaining times of running ones;
`ArrivalModel` draws the jobs that arrive after the snapshot. Both are per-future samplers:
one `FutureDraw` holds the choices shared by the jobs of one sampled future.
"""

from __future__ import annotations

import bisect
import enum
import math
import random
import statistics
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from schedmate.sim.trace import TraceJob

__all__ = ["ArrivalModel", "Correlation", "DurationModel", "FutureDraw", "HistoryRow", "key_levels"]

_WEEK_H = 168
RECENT_S = 86400.0  # a key's jobs started in the last day (or running) are its current batch
MIN_CURRENT = 5  # fewer current jobs than this say too little: the key's history
BACKOFF = 1.0  # a pending job's key with n jobs is used with probability n / (n + 1)
LINDY_FLOOR_S = 3600.0


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One job the cluster knows of at the snapshot: submitted at `submit`; `duration` and
    `end` when it has finished (else -1; `end` is -1 also when unknown)."""

    submit: float
    user: str
    vc: str
    gpus: int
    duration: float = -1.0
    end: float = -1.0

    @property
    def finished(self) -> bool:
        return self.duration > 0


class Correlation(enum.Enum):
    """How the durations of alike jobs (one user, partition and GPU count) relate within one
    sampled future."""

    CURRENT = "current"  # drawn from the key's current jobs (resampled per future)
    QUANTILE = "quantile"  # every job of the key takes the same quantile (one draw)
    INDEPENDENT = "independent"  # each job is an independent draw


def key_levels(user: str, vc: str, gpus: int) -> tuple[tuple[str, ...], ...]:
    """The keys a job is looked up by, most specific first."""
    return ((user, vc, str(gpus)), (user, vc), (vc, str(gpus)), (vc,), ())


@dataclass
class FutureDraw:
    """The choices one sampled future shares between alike jobs. Future `index` of `count`:
    a key's shared choices are stratified over the futures (future i of n takes the (i +
    0.5) / n point of a per-key rotation), so n futures hold a key's batch long or short,
    current or historical, in their exact shares instead of a random count of them."""

    rng: random.Random
    correlation: Correlation = Correlation.CURRENT
    index: int = 0
    count: int = 1
    seed: int = 0
    quantile: dict[tuple[str, ...], float] = field(default_factory=dict)
    trust: dict[tuple[str, ...], float] = field(default_factory=dict)
    running: dict[tuple[str, ...], list[float]] = field(default_factory=dict)  # drawn totals
    pools: dict[tuple[str, ...], list[float]] = field(default_factory=dict)

    def stratified(self, key: tuple[str, ...]) -> float:
        """A uniform number for `key` in this future, stratified over the `count` futures."""
        rotation = zlib.crc32(repr((self.seed, key)).encode()) / 2**32
        return ((self.index + 0.5) / self.count + rotation) % 1.0


class DurationModel:
    """Durations from what the cluster knows: the finished jobs, by (user, partition, GPUs),
    then coarser keys. A running job's remaining time comes from those of its key's finished
    jobs that ran longer than it has so far (none: as long again, at least an hour).

    A pending job's duration, with `Correlation.CURRENT`: alike jobs come in batches, and a
    batch is not a random draw from the key's history (a queue forms when the current batch is
    heavier than usual: that is when a snapshot sees one). So in a share `current_weight` of
    the futures (learned from the history: how often a key's jobs of one day told the next
    day's better than its history did) the key's pending jobs are drawn from its current jobs:
    those that started in the last `recent_s` (finished), and those running now (their totals
    as drawn in the same future), resampled per future (a bootstrap). In the other futures,
    with fewer than `min_current` current jobs, and with `QUANTILE`, every job of the key takes
    one quantile of the key's history (a batch's jobs are alike; independent draws would average
    out). `INDEPENDENT` draws each job on its own."""

    def __init__(
        self,
        history: Sequence[HistoryRow],
        *,
        now: float | None = None,
        recent_s: float = RECENT_S,
        min_current: int = MIN_CURRENT,
    ) -> None:
        self.by_key: dict[tuple[str, ...], list[float]] = {}
        self.current: dict[tuple[str, ...], list[float]] = {}
        self.min_current = min_current
        for r in history:
            if not r.finished:
                continue
            for k in key_levels(r.user, r.vc, r.gpus):
                self.by_key.setdefault(k, []).append(r.duration)
            end = r.end if r.end >= 0 else r.submit + r.duration
            if now is not None and end - r.duration >= now - recent_s:
                self.current.setdefault(key_levels(r.user, r.vc, r.gpus)[0], []).append(r.duration)
        for v in self.by_key.values():
            v.sort()
        self.current_weight = _current_weight(history, recent_s, min_current)

    def remaining(
        self,
        user: str,
        vc: str,
        gpus: int,
        draw: FutureDraw,
        elapsed: float,
        eta: float | None = None,
        limit: float | None = None,
    ) -> float:
        """The remaining time of a job running for `elapsed` (its `eta` when known; never past
        its time `limit`, where the scheduler ends it); the total joins its key's current jobs
        in this future."""
        left = eta if eta is not None else self._history(user, vc, gpus, draw, elapsed)
        if limit:
            left = min(left, max(limit - elapsed, 1.0))
        draw.running.setdefault(key_levels(user, vc, gpus)[0], []).append(elapsed + left)
        return left

    def sample(self, user: str, vc: str, gpus: int, draw: FutureDraw) -> float:
        """A pending job's duration (after the running jobs' `remaining` in this future)."""
        k = key_levels(user, vc, gpus)[0]
        if draw.correlation is Correlation.CURRENT:
            pool = draw.pools.get(k)
            if pool is None:
                cur = self.current.get(k, []) + draw.running.get(k, [])
                pool = draw.pools[k] = []
                if len(cur) >= self.min_current and draw.stratified(("current", *k)) < self.current_weight:
                    pool += (cur[int(draw.rng.random() * len(cur))] for _ in cur)
            if pool:
                return pool[int(draw.rng.random() * len(pool))]
        return self._history(user, vc, gpus, draw, 0.0)

    def _history(self, user: str, vc: str, gpus: int, draw: FutureDraw, elapsed: float) -> float:
        levels = key_levels(user, vc, gpus)
        for i, k in enumerate(levels):
            durs = self.by_key.get(k)
            if not durs or durs[-1] <= elapsed:
                continue
            lo = bisect.bisect_right(durs, elapsed)
            if elapsed <= 0 and i < len(levels) - 1 and BACKOFF > 0:
                # a pending job's key seen n times is used with probability n / (n + 1), else
                # the coarser key: one job of a kind does not make its duration known
                trust = draw.rng.random()
                if draw.correlation is not Correlation.INDEPENDENT:
                    trust = draw.trust.setdefault(k, trust)
                if trust >= len(durs) / (len(durs) + BACKOFF):
                    continue
            u = draw.rng.random()
            if draw.correlation is not Correlation.INDEPENDENT:
                u = draw.quantile.get(k, -1.0)
                if u < 0:
                    u = draw.quantile[k] = draw.stratified(("quantile", *k))
            return max(durs[lo + int(u * (len(durs) - lo))] - elapsed, 1.0)
        return max(elapsed, LINDY_FLOOR_S)  # nothing that long seen: as long again (Lindy)


def _current_weight(history: Sequence[HistoryRow], window_s: float, min_jobs: int) -> float:
    """How often a key's current jobs tell its next ones better than its history does, learned
    from the history: over every key and window of `window_s` (by start time) with at least
    `min_jobs` finished jobs in it, in the next window and before it, the share in which the
    next window's mean duration is nearer (by ratio) to the window's than to the mean of all
    the key's earlier jobs (0.5 without any such window). Only jobs with a known end count,
    and only windows followed by a whole window (a later one may have unfinished jobs)."""
    by: dict[tuple[str, ...], dict[int, list[float]]] = {}
    last = -math.inf
    for r in history:
        if r.finished and r.end >= 0:
            start = r.end - r.duration
            last = max(last, start)
            w = int(start // window_s)
            by.setdefault(key_levels(r.user, r.vc, r.gpus)[0], {}).setdefault(w, []).append(r.duration)
    cut = int(last // window_s) - 1 if by else 0
    votes: list[bool] = []
    for windows in by.values():
        total, n = 0.0, 0
        for w in sorted(windows):
            cur, nxt = windows[w], windows.get(w + 1)
            if n >= min_jobs and w + 1 < cut and nxt and len(cur) >= min_jobs and len(nxt) >= min_jobs:
                m = statistics.fmean(nxt)
                votes.append(abs(math.log(m / statistics.fmean(cur))) < abs(math.log(m * n / total)))
            total, n = total + sum(cur), n + len(cur)
    return sum(votes) / len(votes) if votes else 0.5


class ArrivalModel:
    """Arrivals learned from the recent history: per partition, a rate per hour of the week
    (the counts of the window / the weeks it covers, blended half and half with the
    partition's mean rate so that one busy hour is not taken as the rule), and jobs (user,
    GPUs, duration) drawn from that partition's recent jobs."""

    def __init__(self, history: Sequence[HistoryRow], start: float, end: float) -> None:
        span_h = max((end - start) / 3600.0, 1.0)
        weeks = span_h / _WEEK_H
        self.rate: dict[str, list[float]] = {}
        self.jobs: dict[str, list[tuple[str, int, float]]] = {}
        counts: dict[str, list[int]] = {}
        for r in history:
            if not start <= r.submit < end or not r.finished:
                continue
            counts.setdefault(r.vc, [0] * _WEEK_H)[int(r.submit // 3600) % _WEEK_H] += 1
            self.jobs.setdefault(r.vc, []).append((r.user, r.gpus, r.duration))
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

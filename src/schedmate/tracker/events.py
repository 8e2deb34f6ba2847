"""Slowdown, stall and recovery events over a job's step times (`EventDetector`)."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable

from schedmate.core.types import ProgressSample, TrackEvent

__all__ = ["EventDetector", "trimmed_mean"]


def trimmed_mean(values: Iterable[float], cut: float = 0.2) -> float:
    """Mean without the top and bottom `cut` share: robust to one slow logging step (a
    checkpoint save), and steady on a step time that alternates (0.5 s / 1.5 s gives 1.0 s
    for any window, where a median flips between the two)."""
    v = sorted(values)
    k = int(len(v) * cut)
    kept = v[k : len(v) - k] or v
    return sum(kept) / len(kept)


class EventDetector:
    """Online slowdown / stall detection over step-time observations.

    Baseline = trimmed mean step time of an older window; a slowdown fires when the trimmed
    mean of the recent `k` observations exceeds `factor` x baseline (e.g. another job was packed on the
    same GPUs) and is reported again only after it recovered. Stalls compare the time since
    the last progress with the usual gap between progress lines.
    """

    def __init__(
        self,
        *,
        factor: float = 1.3,
        k: int = 8,
        baseline_n: int = 30,
        stall_factor: float = 10.0,
        stall_min_s: float = 300.0,
    ) -> None:
        self.factor, self.k = factor, k
        self.base: deque[float] = deque(maxlen=baseline_n)
        self.recent: deque[float] = deque(maxlen=k)
        self.slow = False
        self.stall_factor, self.stall_min_s = stall_factor, stall_min_s
        self.gaps: deque[float] = deque(maxlen=50)
        self.last_time: float | None = None
        self.last_ts: float | None = None
        self.last_step: int | None = None
        self.last_line = 0
        self.stalled = False

    def observe(self, s: ProgressSample, *, now: float | None = None) -> list[TrackEvent]:
        """Feed one training sample (log order); `now` is its arrival time when following.

        Step times come from the line, else from log timestamps over step deltas (never
        from arrival times: a backlog read at once would look infinitely fast). Stall gaps
        use arrival times when following, else log timestamps.
        """
        events: list[TrackEvent] = []
        dt = s.step_time_s
        if (
            dt is None
            and s.timestamp is not None
            and self.last_ts is not None
            and s.step is not None
            and self.last_step is not None
            and s.step > self.last_step
        ):
            dt = (s.timestamp - self.last_ts) / (s.step - self.last_step)
        t = now if now is not None else s.timestamp
        if s.step is not None and s.step != self.last_step:
            if t is not None:
                if self.last_time is not None and t > self.last_time:
                    self.gaps.append(t - self.last_time)
                self.last_time = t
            if s.timestamp is not None:
                self.last_ts = s.timestamp
            self.last_step = s.step
            if self.stalled:
                self.stalled = False
                events.append(TrackEvent("recovered", s.line_no, "progress resumed"))
        self.last_line = s.line_no
        if dt is None or dt <= 0:
            return events
        self.recent.append(dt)
        if len(self.base) >= self.k and len(self.recent) == self.k:
            base = trimmed_mean(self.base)
            cur = trimmed_mean(self.recent)
            ratio = cur / base if base > 0 else 1.0
            now_st = statistics.median_high(self.recent)  # the new step time, as reported
            shown = now_st / base if base > 0 else ratio
            # at least half the window is slow too (a large jump lifts the mean after one or two
            # slow steps, while the typical step is still the usual one)
            if not self.slow and ratio >= self.factor and shown >= self.factor:
                self.slow = True
                events.append(
                    TrackEvent(
                        "slowdown",
                        s.line_no,
                        f"step time {now_st:.3g}s is {shown:.2f}x the usual {base:.3g}s",
                        shown,
                    )
                )
            elif self.slow and ratio < 1 + (self.factor - 1) / 2:
                self.slow = False
                events.append(TrackEvent("recovered", s.line_no, f"step time back to {cur:.3g}s", ratio))
        if not self.slow and len(self.recent) == self.k:
            self.base.append(self.recent[0])
        return events

    def check_stall(self, now: float) -> TrackEvent | None:
        """A stall event when no progress arrived for much longer than usual (once)."""
        if self.last_time is None or self.stalled:
            return None
        usual = statistics.median(self.gaps) if self.gaps else None
        limit = (
            max(self.stall_min_s, self.stall_factor * usual)
            if usual
            else self.stall_min_s * self.stall_factor
        )
        idle = now - self.last_time
        if idle > limit:
            self.stalled = True
            return TrackEvent(
                "stall",
                self.last_line,
                f"no progress for {idle:.0f}s (limit {limit:.0f}s)",
                idle / usual if usual else None,
            )
        return None

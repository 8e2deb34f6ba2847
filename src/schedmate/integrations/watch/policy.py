"""Watch's decisions as pure functions of views and settings (no I/O): a pending job's time
limit, whether a drain the recovery planner decided stays within the operator's guard rails,
and Comment texts. Recovery itself (budgets, limits after a kill, which nodes) is the Failure
Handler's planner, not here."""

from __future__ import annotations

import math
from collections.abc import Sequence

from schedmate.core.cluster import ClusterSnapshot, NodeState
from schedmate.core.settings import WatchSettings

__all__ = [
    "COMMENT_PREFIX",
    "fmt_duration",
    "limit_from_prediction",
    "drain_allowed",
    "ours_to_write",
]

COMMENT_PREFIX = "schedmate:"


def fmt_duration(seconds: float | None) -> str:
    """3725 -> '1h02m', 2700 -> '45m', 40 -> '40s', 2 days -> '2d00h'."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    m = s // 60
    if m < 60:
        return f"{m}m"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def _whole_minutes(seconds: float) -> float:
    return float(math.ceil(seconds / 60.0) * 60)


def limit_from_prediction(p90_s: float, requested_s: float | None, s: WatchSettings) -> float | None:
    """The TimeLimit for a pending job predicted to need at most `p90_s`: p90 plus a margin,
    never below it, never above the user's request unless allowed, never above the cap.
    None when there is nothing worth changing."""
    if not math.isfinite(p90_s) or p90_s <= 0:
        return None
    floor = _whole_minutes(max(p90_s * (1.0 + s.time_limit_margin), p90_s + s.time_limit_min_margin_s))
    if floor > s.max_time_limit_s:
        return None  # the cap would cut the job below its own p90 + margin
    if requested_s is not None:
        if floor >= requested_s and not s.allow_above_request:
            return None
        if abs(floor - requested_s) < max(60.0, 0.05 * requested_s):
            return None  # within 5 %: not worth an update
    return floor


def drain_allowed(
    node: str, snap: ClusterSnapshot, *, drains_last_hour: int, s: WatchSettings
) -> tuple[bool, str]:
    """Guard rails on a drain: drains per hour, share of each partition drained, allowlist."""
    view = snap.node(node)
    if view is None:
        return False, f"node {node} is not in the scheduler's node list"
    if view.state in (NodeState.DRAIN, NodeState.DOWN, NodeState.FAIL):
        return False, f"node {node} is already {view.state.value.lower()}"
    if drains_last_hour >= s.drains_per_hour:
        return False, f"{drains_last_hour} drains in the last hour (limit {s.drains_per_hour})"
    if s.partitions and not set(view.partitions) & set(s.partitions):
        return False, f"node {node} is in no allowed partition"
    for part in view.partitions:
        members = [n for n in snap.nodes if part in n.partitions]
        drained = sum(n.state in (NodeState.DRAIN, NodeState.DOWN, NodeState.FAIL) for n in members)
        if (drained + 1) / max(1, len(members)) > s.max_drained_share:
            return (
                False,
                f"draining {node} would take partition {part} over {s.max_drained_share:.0%} drained",
            )
    return True, "within guard rails"


def ours_to_write(comment: str | None) -> bool:
    """Watch writes a job's Comment only when it is empty or watch's own (never a user's)."""
    return not comment or comment.startswith(COMMENT_PREFIX)


def join_notes(parts: Sequence[str]) -> str:
    return f"{COMMENT_PREFIX} " + "; ".join(p for p in parts if p)

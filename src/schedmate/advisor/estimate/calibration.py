"""What the estimator learns from the whole history: throughput and start-up costs per framework."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Sequence

from schedmate.advisor.estimate.estimator import _WORK_KEYS, _factors, _gpus, _ratio, work_units
from schedmate.advisor.history.base import JobRecord

__all__ = ["calibrate", "startup_costs"]


def startup_costs(records: Sequence[JobRecord], *, max_per_program: int = 64) -> dict[str, float]:
    """Start-up cost per framework (and overall), from runs of the same program with different work.

    Two runs of one program (same code dir and entrypoint, same GPUs) whose work differs by a known
    ratio r give d1 = c + v and d2 = c + r * v, so c = d1 - (d2 - d1) / (r - 1). Each program's
    median c (clipped to [0, its shortest run]) is one vote; a framework's cost is the median vote
    of its programs, so no single program decides it.
    """
    votes: dict[str, list[float]] = {}
    for (_, _, fw), rows in _programs(records, max_per_program).items():
        cs = [
            min(max(0.0, d1 - (d2 - d1) / (r - 1.0)), d1, d2)
            for r, d1, d2 in _pairs(rows)
            if (d2 - d1) * (r - 1.0) > 0
        ]  # more work that ran faster is noise
        if cs:
            c = min(statistics.median(cs), min(d for _, _, d in rows))
            votes.setdefault(fw, []).append(c)
            votes.setdefault("", []).append(c)
    out = {f"startup_s:{fw}" if fw else "startup_s": statistics.median(v) for fw, v in votes.items()}
    if "" in votes:
        out["startup_programs"] = float(len(votes[""]))
    return out


def _programs(
    records: Sequence[JobRecord], max_per_program: int
) -> dict[tuple[str, str, str], list[tuple[dict[str, float], float, float]]]:
    """Runs grouped by program (code dir, entrypoint, framework): (work factors, GPUs, duration)."""
    programs: dict[tuple[str, str, str], list[tuple[dict[str, float], float, float]]] = {}
    for r in records:
        m = r.metadata
        if m is None or not r.duration_s or r.duration_s <= 0 or not (r.code_dir or m.entrypoint):
            continue
        rows = programs.setdefault((r.code_dir or "", m.entrypoint or "", m.framework or ""), [])
        if len(rows) < max_per_program:
            rows.append((_factors(m, r.size), _gpus(m, r), float(r.duration_s)))
    return programs


def _pairs(rows: list[tuple[dict[str, float], float, float]]) -> Iterator[tuple[float, float, float]]:
    """(work ratio, d1, d2) for pairs of one program's runs on the same GPUs whose work differs by >= 1.5x."""
    for i, (f1, g1, d1) in enumerate(rows):
        for f2, g2, d2 in rows[i + 1 :]:
            if g1 != g2 or not (set(f1) & set(f2) & _WORK_KEYS):
                continue
            ratio = _ratio(f2, f1)
            if abs(math.log(ratio)) >= math.log(1.5):
                yield ratio, d1, d2


def _throughput(records: Sequence[JobRecord]) -> dict[str, float]:
    """Throughput (work units / s) and its log-spread over past jobs whose work is computable.

    Fits d = overhead + w / rate robustly: overhead = a low quantile of durations of the
    smallest jobs is not identifiable in general, so the median ratio is used (overhead 0)
    unless the history shows many tiny jobs with nearly constant duration.
    """
    pairs = []
    for r in records:
        if r.metadata is None or not r.duration_s or r.duration_s <= 0:
            continue
        w = work_units(r.metadata, r.size)
        if w and math.isfinite(w) and math.isfinite(r.duration_s):
            pairs.append((w / _gpus(r.metadata, r) ** 0.5, r.duration_s))
    if len(pairs) < 3:
        return {}
    durs = sorted(d for _, d in pairs)
    overhead = durs[max(0, len(durs) // 20)] * 0.5  # half the 5th-percentile duration: start-up cost
    rates = [w / max(d - overhead, 1e-3) for w, d in pairs]
    rate = statistics.median(rates)
    errs = [math.log(d / (overhead + w / rate)) for w, d in pairs]
    sigma = math.sqrt(statistics.fmean(e * e for e in errs))
    return {"rate": rate, "overhead_s": overhead, "sigma": sigma, "n": float(len(pairs))}


def calibrate(records: Sequence[JobRecord]) -> dict[str, float]:
    """Everything the estimator learns from the whole history: throughput and start-up costs."""
    return _throughput(records) | startup_costs(records)

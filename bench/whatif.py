"""Start-time prediction benchmark (issue 14): from snapshots of a replay, predict when each
pending job starts (p10/p50/p90 over sampled futures) and compare with the replay's actual
starts. Targets: median absolute error of the p50 start <= 25% of the median actual wait;
>= 70% of actual starts inside [p10, p90]. Side by side: the same predictor without arrivals,
other correlations of alike jobs' durations, and the predictor before issue 14 (no arrivals,
one run, an untrained history estimator).

Snapshots: `--snapshots N` evenly spaced at (i + 0.5) / N of the trace's span: the evaluation
set. `--dev` uses N of the 20 points (i + 0.25) / 10 and (i + 0.75) / 10 instead, the set the
model was developed on (never the evaluation's). What the predictor may know at a snapshot: the finished jobs
(durations, end times), the jobs submitted in the last 14 days (arrival rate and mix), the
running jobs' start times and the pending jobs (no durations): what a live cluster shows.

A prediction whose p50 (p90) falls after the 7-day horizon is scored with the horizon's end as
its p50 (and no upper bound): the start is predicted to be later than that.

    python bench/whatif.py [--traces ../shared/data/traces] [--snapshots 10] [--samples 30]
        [--policy fifo,sjf] [--trace philly,helios] [--modes arrivals,no_arrivals,...] [--dev]
        [--json-out bench/results/whatif.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from schedmate.sdk.sim import predict_starts  # noqa: E402
from schedmate.sim import (  # noqa: E402
    Simulator,
    default_cluster,
    load_trace,
    make_estimator,
    make_policy,
)
from schedmate.sim.estimators import default_estimator  # noqa: E402
from schedmate.sim.whatif import predict_starts as legacy_predict  # noqa: E402
from schedmate.sim.whatif import snapshot_at, snapshot_from_trace  # noqa: E402

TRACES = ROOT.parent / "shared" / "data" / "traces"
SETS = {
    "philly": ("philly", "philly/philly.csv"),
    "helios": ("helios", "helios-venus/helios_venus_2vc_sept.csv"),
}
HORIZON_S = 7 * 86400.0
# mode -> (arrivals, correlation of alike jobs' durations)
MODES = {
    "arrivals": (True, "current"),
    "no_arrivals": (False, "current"),
    "quantile": (True, "quantile"),
    "independent": (True, "independent"),
}
ALL_MODES = [*MODES, "before_issue_14"]
Row = tuple[float, float, float | None, float | None, float | None]


def score(rows: list[Row], horizon_s: float = HORIZON_S) -> dict[str, float]:
    """rows: (snapshot time, actual start, p10, p50, p90); None: after the horizon."""
    if not rows:
        return {"n": 0}
    errs, inside = [], []
    for t, a, lo, p50, hi in rows:
        errs.append(abs((p50 if p50 is not None else t + horizon_s) - a))
        inside.append(lo is not None and lo - 1e-6 <= a <= (hi if hi is not None else float("inf")) + 1e-6)
    waits = [a - t for t, a, *_ in rows]
    med_err, med_wait = statistics.median(errs), statistics.median(waits)
    bias = statistics.median([(p50 if p50 is not None else t + horizon_s) - a for t, a, _, p50, _ in rows])
    return {
        "n": len(rows),
        "median_abs_error_h": med_err / 3600,
        "median_actual_wait_h": med_wait / 3600,
        "error_over_wait": med_err / med_wait if med_wait > 0 else float("nan"),
        "coverage_p10_p90": sum(inside) / len(inside),
        "median_error_h": bias / 3600,  # signed: p50 - actual (negative: predicted too early)
        "p50_after_horizon": sum(p50 is None for *_, p50, _ in rows) / len(rows),
    }


def snapshot_times(span: float, n: int, dev: bool) -> list[float]:
    """Evaluation: (i + 0.5) / n of the span. Dev: n of the 20 points (i + 0.25) / 10 and
    (i + 0.75) / 10, evenly picked: never nearer than 2.5% of the span to an evaluation point
    of the default 10 snapshots."""
    if not dev:
        return [span * (i + 0.5) / n for i in range(n)]
    pool = [(i + o) / 10 for i in range(10) for o in (0.25, 0.75)]
    n = min(n, len(pool))
    return [span * pool[int(k * len(pool) / n)] for k in range(n)]


def run_trace(
    name: str,
    path: Path,
    policy: str,
    times_of: tuple[int, bool],
    samples: int,
    modes: list[str],
    seed: int = 1,
) -> dict[str, object]:
    fmt = SETS[name][0]
    jobs = load_trace(path, fmt)
    cl = default_cluster(fmt, path, jobs)
    truth = Simulator(jobs, cl, make_policy(policy), make_estimator(default_estimator(policy))).run()
    actual = {st.job_id: st.first_start for st in truth.jobs}
    times = snapshot_times(jobs[-1].submit_s, *times_of)
    rows: dict[str, list[Row]] = {m: [] for m in modes}
    per_snapshot: list[dict[str, object]] = []
    t0 = time.perf_counter()
    for t in times:
        # what the cluster knew at t: the jobs submitted before it, durations only of finished ones
        snap, _finished, history = snapshot_from_trace(jobs, truth, t)
        if not snap.pending:
            continue
        snap_rows: dict[str, list[Row]] = {}
        for mode in modes:
            if mode == "before_issue_14":
                old = legacy_predict(
                    snapshot_at(jobs, truth, t), cl, make_policy(policy), make_estimator("history")
                )
                snap_rows[mode] = [(t, actual[jid], None, p, None) for jid, p in old.items()]
                continue
            arrivals, corr = MODES[mode]
            preds = predict_starts(
                snap,
                policy=policy,
                cluster=cl,
                history=history,
                samples=samples,
                arrivals=arrivals,
                correlation=corr,
                horizon_s=HORIZON_S,
                seed=seed,
            )
            snap_rows[mode] = [(t, actual[p.job_id], p.p10_s, p.p50_s, p.p90_s) for p in preds]
        for mode, r in snap_rows.items():
            rows[mode] += r
        per_snapshot.append(
            {"t_h": t / 3600, "pending": len(snap.pending), **{m: score(r) for m, r in snap_rows.items()}}
        )
    out: dict[str, object] = {
        "trace": name,
        "policy": policy,
        "snapshots": len(times),
        "dev": times_of[1],
        "samples": samples,
    }
    out.update({mode: score(r) for mode, r in rows.items()})
    out["per_snapshot"] = per_snapshot
    out["predict_s"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=TRACES)
    ap.add_argument("--trace", default="philly,helios")
    ap.add_argument("--snapshots", type=int, default=10)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--modes", default=",".join(ALL_MODES))
    ap.add_argument("--seed", type=int, default=1, help="of the sampled futures")
    ap.add_argument("--dev", action="store_true", help="the development snapshots, not the evaluation's")
    ap.add_argument("--per-snapshot", action="store_true", help="also print each snapshot's figures")
    ap.add_argument("--json-out", type=Path, default=None)
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    bad = [m for m in modes if m not in ALL_MODES]
    if bad:
        ap.error(f"unknown mode(s) {bad}; valid: {', '.join(ALL_MODES)}")
    results = []
    print(
        f"{'trace':7s} {'policy':6s} {'mode':16s} {'pending':>8s} {'med |err|':>10s} {'med wait':>9s} "
        f"{'err/wait':>9s} {'in p10-p90':>10s} {'med err':>8s}"
    )
    for policy in a.policy.split(","):
        for name in a.trace.split(","):
            r = run_trace(
                name, a.traces / SETS[name][1], policy, (a.snapshots, a.dev), a.samples, modes, a.seed
            )
            results.append(r)
            for mode in modes:
                s = r[mode]
                assert isinstance(s, dict)
                if not s.get("n"):
                    continue
                cov = f"{s['coverage_p10_p90']:.1%}" if mode != "before_issue_14" else "-"
                print(
                    f"{name:7s} {policy:6s} {mode:16s} {s['n']:8,d} {s['median_abs_error_h']:9.2f}h "
                    f"{s['median_actual_wait_h']:8.2f}h {s['error_over_wait']:9.1%} {cov:>10s} {s['median_error_h']:+7.2f}h"
                )
            if a.per_snapshot:
                for ps in r["per_snapshot"]:  # type: ignore[attr-defined]
                    cells = " ".join(
                        f"{m}: {ps[m]['error_over_wait']:.0%}/{ps[m].get('coverage_p10_p90', 0):.0%}"
                        for m in modes
                        if ps[m].get("n")
                    )
                    print(f"    t={ps['t_h']:7.1f}h pending={ps['pending']:5d} {cells}")
            print(
                f"{name:7s} {policy:6s} ({r['snapshots']} snapshots x {r['samples']} samples, {r['predict_s']:.1f} s)"
            )
    if a.json_out:
        a.json_out.parent.mkdir(parents=True, exist_ok=True)
        a.json_out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

"""Start-time prediction benchmark (issue 14): from snapshots of a replay, predict when each
pending job starts (p10/p50/p90 over sampled futures) and compare with the replay's actual
starts. Targets: median absolute error of the p50 start <= 25% of the median actual wait;
>= 70% of actual starts inside [p10, p90]. Side by side: the same predictor without arrivals,
and the predictor before issue 14 (no arrivals, one run, an untrained history estimator).

Snapshots: `--snapshots N` evenly spaced over the middle of the trace ((i + 0.5) / N of the
span). What the predictor may know at a snapshot: the finished jobs (durations), the jobs
submitted in the last 14 days (arrival rate and mix), the running jobs' start times and the
pending jobs (no durations): exactly what a live cluster shows.

    python bench/whatif.py [--traces ../shared/data/traces] [--snapshots 10] [--samples 30]
        [--policy fifo] [--json-out bench/results/whatif.json]
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
from schedmate.sim.whatif import predict_starts as legacy_predict  # noqa: E402
from schedmate.sim.whatif import snapshot_at, snapshot_from_trace  # noqa: E402

TRACES = ROOT.parent / "shared" / "data" / "traces"
SETS = [
    ("philly", "philly", "philly/philly.csv"),
    ("helios", "helios", "helios-venus/helios_venus_2vc_sept.csv"),
]
EST = {"fifo": "oracle", "sjf": "history", "tiresias": "oracle", "semantic": "noisy"}


def _score(rows: list[tuple[float, float, float | None, float | None, float | None]]) -> dict[str, float]:
    """rows: (snapshot time, actual start, p10, p50, p90)."""
    errs = [abs(p50 - a) for t, a, lo, p50, hi in rows if p50 is not None]
    waits = [a - t for t, a, *_ in rows]
    inside = [lo is not None and hi is not None and lo - 1e-6 <= a <= hi + 1e-6 for t, a, lo, _, hi in rows]
    if not rows:
        return {"n": 0}
    med_err = statistics.median(errs) if errs else float("nan")
    med_wait = statistics.median(waits)
    return {
        "n": len(rows),
        "median_abs_error_h": med_err / 3600,
        "median_actual_wait_h": med_wait / 3600,
        "error_over_wait": med_err / med_wait if med_wait > 0 else float("nan"),
        "coverage_p10_p90": sum(inside) / len(inside),
    }


def run_trace(name: str, fmt: str, path: Path, policy: str, n_snap: int, samples: int) -> dict[str, object]:
    jobs = load_trace(path, fmt)
    cl = default_cluster(fmt, path, jobs)
    truth = Simulator(jobs, cl, make_policy(policy), make_estimator(EST.get(policy, "oracle"))).run()
    actual = {st.job_id: st.first_start for st in truth.jobs}
    span = jobs[-1].submit_s
    times = [span * (i + 0.5) / n_snap for i in range(n_snap)]
    modes: dict[str, list[tuple[float, float, float | None, float | None, float | None]]] = {
        "arrivals": [],
        "no_arrivals": [],
        "independent": [],
        "before_issue_14": [],
    }
    t0 = time.perf_counter()
    for t in times:
        # what the cluster knew at t: the jobs submitted before it, durations only of finished ones
        snap, _finished, history = snapshot_from_trace(jobs, truth, t)
        if not snap.pending:
            continue
        for mode, arrivals, corr in (
            ("arrivals", True, True),
            ("no_arrivals", False, True),
            ("independent", True, False),
        ):
            preds = predict_starts(
                snap,
                policy=policy,
                cluster=cl,
                history=history,
                samples=samples,
                arrivals=arrivals,
                correlated=corr,
                seed=1,
            )
            for p in preds:
                modes[mode].append((t, actual[p.job_id], p.p10_s, p.p50_s, p.p90_s))
        old = legacy_predict(snapshot_at(jobs, truth, t), cl, make_policy(policy), make_estimator("history"))
        for jid, p in old.items():
            modes["before_issue_14"].append((t, actual[jid], None, p, None))
    dt = time.perf_counter() - t0
    out: dict[str, object] = {"trace": name, "policy": policy, "snapshots": len(times), "samples": samples}
    out.update({mode: _score(rows) for mode, rows in modes.items()})
    out["predict_s"] = dt
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=TRACES)
    ap.add_argument("--snapshots", type=int, default=10)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--json-out", type=Path, default=None)
    a = ap.parse_args()
    results = []
    print(
        f"{'trace':8s} {'mode':16s} {'pending':>8s} {'med |err|':>10s} {'med wait':>9s} {'err/wait':>9s} {'in p10-p90':>10s}"
    )
    for name, fmt, rel in SETS:
        r = run_trace(name, fmt, a.traces / rel, a.policy, a.snapshots, a.samples)
        results.append(r)
        for mode in ("arrivals", "no_arrivals", "independent", "before_issue_14"):
            s = r[mode]
            assert isinstance(s, dict)
            if not s.get("n"):
                continue
            cov = f"{s['coverage_p10_p90']:.1%}" if mode != "before_issue_14" else "-"
            print(
                f"{name:8s} {mode:16s} {s['n']:8,d} {s['median_abs_error_h']:9.2f}h {s['median_actual_wait_h']:8.2f}h "
                f"{s['error_over_wait']:9.1%} {cov:>10s}"
            )
        print(f"{name:8s} ({r['snapshots']} snapshots x {r['samples']} samples, {r['predict_s']:.1f} s)")
    if a.json_out:
        a.json_out.parent.mkdir(parents=True, exist_ok=True)
        a.json_out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

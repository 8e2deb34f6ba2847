"""Simulator benchmark (issue 4): speed on the full Philly trace; JCT by policy on the
shipped traces; the semantic policy against FIFO, the best non-semantic baseline and the
oracle SRTF lower bound.

    python bench/sim.py [--traces ../shared/data/traces] [--json-out bench/results/sim.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from schedmate.sim import Simulator, default_cluster, load_trace, make_estimator, make_policy, summarize_sim  # noqa: E402
from schedmate.sim.whatif import evaluate_wait_prediction  # noqa: E402

TRACES = ROOT.parent / "shared" / "data" / "traces"
# (policy, estimator): baselines use what they would have in practice (no oracle)
RUNS = [("fifo", "oracle"), ("sjf", "history"), ("qssf", "history"), ("tiresias", "oracle"),
        ("srtf", "oracle"), ("semantic", "noisy")]
SETS = [("philly", "philly/philly.csv", None), ("helios", "helios-venus/helios_venus_2vc_sept.csv", None),
        ("alibaba", "alibaba-gpu-2023/openb_pod_list_default.csv", {"*": 64})]


def run_set(fmt: str, path: Path, cluster: dict[str, int] | None) -> dict:
    jobs = load_trace(path, fmt)
    cl = cluster or default_cluster(fmt, path, jobs)
    out = {"trace": path.name, "jobs": len(jobs), "gpus": sum(cl.values()), "policies": {}}
    for pol, est in RUNS:
        t0 = time.perf_counter()
        res = Simulator(jobs, cl, make_policy(pol), make_estimator(est, seed=0), seed=0).run()
        dt = time.perf_counter() - t0
        m, _ = summarize_sim(res)
        out["policies"][pol] = {**m.to_json_dict(), "estimator": est, "sim_s": dt, "jobs_per_s": len(jobs) / dt}
    p = out["policies"]
    best_base = min(("tiresias", "qssf", "sjf"), key=lambda k: p[k]["avg_jct_s"])
    out["semantic_vs_fifo"] = p["fifo"]["avg_jct_s"] / p["semantic"]["avg_jct_s"]
    out["best_baseline"] = best_base
    out["semantic_vs_best_baseline"] = p[best_base]["avg_jct_s"] / p["semantic"]["avg_jct_s"]
    out["semantic_over_oracle_srtf"] = p["semantic"]["avg_jct_s"] / p["srtf"]["avg_jct_s"] - 1
    if fmt == "philly":  # queue-wait prediction vs what the full simulation later did
        span = jobs[-1].submit_s
        times = [span * f for f in (0.1, 0.3, 0.5, 0.7, 0.9)]
        waits = {}
        for pol, truth_est, pred_est in (("fifo", "oracle", "history"), ("fifo", "oracle", "noisy"),
                                         ("sjf", "history", "history")):
            truth = Simulator(jobs, cl, make_policy(pol), make_estimator(truth_est)).run()
            t0 = time.perf_counter()
            r = evaluate_wait_prediction(jobs, truth, cl, make_policy(pol), make_estimator(pred_est, seed=1), times)
            waits[f"{pol}/{pred_est}"] = {**r, "seconds": time.perf_counter() - t0}
        out["wait_prediction"] = waits
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=Path, default=TRACES)
    ap.add_argument("--json-out", type=Path, default=ROOT / "bench" / "results" / "sim.json")
    args = ap.parse_args()
    results = []
    for fmt, rel, cl in SETS:
        path = args.traces / rel
        if not path.is_file():
            print(f"missing trace: {path}", file=sys.stderr)
            return 2
        results.append(run_set(fmt, path, cl))
    report = {"machine": f"{platform.node()} {os.cpu_count()} cpu", "date": str(date.today()), "sets": results}
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(report, indent=2))
    print(f"\nSimulator benchmark ({report['date']}, {report['machine']}); semantic = noisy estimator sigma 0.7")
    for r in results:
        print(f"\n{r['trace']}: {r['jobs']:,} jobs, {r['gpus']:,} GPUs")
        print(f"  {'policy':10} {'estimator':18} {'avg JCT s':>12} {'p99 JCT s':>12} {'avg queue s':>12} {'util':>6} {'sim s':>7} {'jobs/s':>9}")
        for pol, m in r["policies"].items():
            print(f"  {pol:10} {m['estimator']:18} {m['avg_jct_s']:12,.0f} {m['p99_jct_s']:12,.0f} "
                  f"{m['avg_queue_s']:12,.0f} {m['gpu_util']:6.1%} {m['sim_s']:7.2f} {m['jobs_per_s']:9,.0f}")
        print(f"  semantic vs FIFO: {r['semantic_vs_fifo']:.2f}x (goal >= 1.9x)   "
              f"vs best baseline ({r['best_baseline']}): {r['semantic_vs_best_baseline']:.2f}x (goal >= 1.3x)   "
              f"vs oracle SRTF: {r['semantic_over_oracle_srtf']:+.1%} (goal within 10%)")
    for k, w in results[0].get("wait_prediction", {}).items():
        print(f"queue-wait prediction on Philly ({k}, 5 snapshots, {w['n']:,} pending jobs): median abs error "
              f"{w['median_abs_error_s'] / 3600:,.1f} h (median actual remaining wait {w['median_remaining_wait_s'] / 3600:,.1f} h)")
    ph = results[0]["policies"]
    print(f"\nspeed on Philly: FIFO {ph['fifo']['sim_s']:.2f} s (goal <= 1 s); slowest policy "
          f"{max(m['sim_s'] for m in ph.values()):.2f} s (goal <= 5 s)")
    print(f"JSON: {args.json_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

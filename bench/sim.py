"""Simulator benchmark (issue 4): speed (seconds, jobs/s, peak memory) on the full Philly
trace; JCT by policy on the shipped traces, with and without GPU packing (lucid,
semantic-pack) and with failure injection; the semantic policies against FIFO, the best
non-semantic baseline (including lucid) and the oracle SRTF lower bound (a bound only
without packing); every policy again with node placement (8-GPU nodes: fragmentation) next
to the default pool placement. Each simulation runs in a forked child so its peak memory
(VmHWM, reset through /proc/self/clear_refs) is its own.

Fidelity (issue 14, `--only fidelity`): `--semantics lucid` on Helios and Philly against the
Lucid artifact's published stable-order average JCTs, FIFO/SJF/Tiresias (goal: within 0.5% on
every cell). Speed (`--only speed`): whole-process wall time of `schedmate simulate` on Philly,
each policy in a fresh process (goal: <= 5 s), and the CLI's start-up.

    python bench/sim.py [--traces ../shared/data/traces] [--json-out bench/results/sim.json] [--limit N]
        [--only all|fidelity|speed]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import random
import sys
import time
from dataclasses import replace
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from schedmate.sim import (  # noqa: E402
    SEMANTICS,
    FailureModel,
    InterferenceModel,
    Simulator,
    default_cluster,
    load_trace,
    make_estimator,
    make_policy,
    summarize_sim,
)
from schedmate.sim.whatif import evaluate_wait_prediction  # noqa: E402

TRACES = ROOT.parent / "shared" / "data" / "traces"
# (policy, estimator): baselines use what they would have in practice (no oracle)
RUNS = [
    ("fifo", "fifo", "oracle"),
    ("sjf", "sjf", "history"),
    ("qssf", "qssf", "history"),
    ("tiresias", "tiresias", "oracle"),
    ("srtf", "srtf", "oracle"),
    ("lucid", "lucid", "history"),
    ("semantic", "semantic", "noisy"),
    ("semantic-pack", "semantic-pack", "noisy"),
    ("oracle-pack", "semantic-pack", "oracle"),
]  # label, policy, estimator
# failure injection: the defaults (classic policies retry a failed job once, blindly); FIFO without retries
FAIL_RUNS = [
    ("fifo", "fifo", "oracle", FailureModel()),
    ("fifo-noretry", "fifo", "oracle", FailureModel(blind_retries=0)),
    ("tiresias", "tiresias", "oracle", FailureModel()),
    ("semantic", "semantic", "noisy", FailureModel()),
]
BASELINES = ("tiresias", "qssf", "sjf", "lucid")
SETS = [
    ("philly", "philly/philly.csv", None),
    ("helios", "helios-venus/helios_venus_2vc_sept.csv", None),
    ("alibaba", "alibaba-gpu-2023/openb_pod_list_default.csv", {"*": 64}),
    ("alibaba", "alibaba-gpu-2023/openb_pod_list_default.csv", {"*": 32}),
]
# share classes drawn from the mix of Lucid's profiled workloads (single_data.csv labels 0/1/2: 28/16/22)
CLASS_MIX = (0,) * 28 + (1,) * 16 + (2,) * 22
INTERFERENCE = ROOT.parent / "shared" / "data" / "interference"


def _mem_kib(field: str) -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _in_child(fn, *args):  # type: ignore[no-untyped-def]
    """fn(*args) in a forked child; returns (its result, its peak RSS in MiB). ru_maxrss would
    report the parent's peak after fork; VmHWM is per process and reset by clear_refs."""
    ctx = multiprocessing.get_context("fork")
    q = ctx.SimpleQueue()

    def child() -> None:
        with contextlib.suppress(OSError):
            Path("/proc/self/clear_refs").write_text("5")
        out = fn(*args)
        q.put((out, _mem_kib("VmHWM") / 1024))

    p = ctx.Process(target=child)
    p.start()
    res = q.get()
    p.join()
    return res


def _simulate(
    jobs,
    cl,
    pol: str,
    est: str,
    failures: FailureModel | None = None,  # type: ignore[no-untyped-def]
    placement: str = "pool",
) -> dict:
    t0 = time.perf_counter()
    res = Simulator(
        jobs,
        cl,
        make_policy(pol),
        make_estimator(est, seed=0),
        seed=0,
        failures=failures,
        placement=placement,
    ).run()
    dt = time.perf_counter() - t0
    m, _ = summarize_sim(res)
    return {
        **m.to_json_dict(),
        "estimator": est,
        "sim_s": dt,
        "jobs_per_s": len(jobs) / dt,
        "infra_failures": res.infra_failures,
        "app_failures": res.app_failures,
    }


def run_set(fmt: str, path: Path, cluster: dict[str, int] | None, limit: int | None = None) -> dict:
    jobs = load_trace(path, fmt, limit=limit)
    cl = cluster or default_cluster(fmt, path, jobs)
    out = {
        "trace": f"{path.name} ({sum(cl.values()):,} GPUs)",
        "jobs": len(jobs),
        "gpus": sum(cl.values()),
        "policies": {},
    }
    for label, pol, est in RUNS:
        r, peak = _in_child(_simulate, jobs, cl, pol, est)
        out["policies"][label] = {**r, "peak_rss_mib": peak}
    out["node"] = {}  # node placement: 8-GPU nodes (Alibaba at 64/32 GPUs: 8/4 nodes), same policies
    for label, pol, est in RUNS:
        r, peak = _in_child(_simulate, jobs, cl, pol, est, None, "node")
        out["node"][label] = {
            **r,
            "peak_rss_mib": peak,
            "jct_over_pool": r["avg_jct_s"] / out["policies"][label]["avg_jct_s"] - 1,
        }
    out["failures"] = {}
    for label, pol, est, fm in FAIL_RUNS:
        r, peak = _in_child(_simulate, jobs, cl, pol, est, fm)
        out["failures"][label] = {**r, "peak_rss_mib": peak}
    if fmt == "philly":  # sensitivity of packing to the unknown share classes of Philly's jobs
        rng = random.Random(0)
        mixed = [replace(j, share=rng.choice(CLASS_MIX)) for j in jobs]
        out["class_mix"] = {
            label: _in_child(_simulate, mixed, cl, pol, est)[0]
            for label, pol, est in RUNS
            if label in ("lucid", "semantic-pack")
        }
    p = out["policies"]
    best_base = min(BASELINES, key=lambda k: p[k]["avg_jct_s"])
    out["best_baseline"] = best_base
    for sem in ("semantic", "semantic-pack"):
        out[sem] = {
            "vs_fifo": p["fifo"]["avg_jct_s"] / p[sem]["avg_jct_s"],
            "vs_best_baseline": p[best_base]["avg_jct_s"] / p[sem]["avg_jct_s"],
            "over_oracle_srtf": p[sem]["avg_jct_s"] / p["srtf"]["avg_jct_s"] - 1,
            "over_oracle_pack": p[sem]["avg_jct_s"] / p["oracle-pack"]["avg_jct_s"] - 1,
        }
    if fmt == "philly":  # queue-wait prediction vs what the full simulation later did
        span = jobs[-1].submit_s
        times = [span * f for f in (0.1, 0.3, 0.5, 0.7, 0.9)]
        waits = {}
        for pol, truth_est, pred_est in (
            ("fifo", "oracle", "history"),
            ("fifo", "oracle", "noisy"),
            ("sjf", "history", "history"),
        ):
            truth = Simulator(jobs, cl, make_policy(pol), make_estimator(truth_est)).run()
            t0 = time.perf_counter()
            r = evaluate_wait_prediction(
                jobs, truth, cl, make_policy(pol), make_estimator(pred_est, seed=1), times
            )
            waits[f"{pol}/{pred_est}"] = {**r, "seconds": time.perf_counter() - t0}
        out["wait_prediction"] = waits
    return out


# Lucid (ASPLOS'23) artifact, stable submit order, consolidating placement: average JCT (s)
LUCID_PUBLISHED = {
    ("helios", "fifo"): 16534.3,
    ("helios", "sjf"): 6272.8,
    ("helios", "tiresias"): 10981.1,
    ("philly", "fifo"): 153820.5,
    ("philly", "sjf"): 38823.8,
    ("philly", "tiresias"): 33867.1,
}


def fidelity(traces: Path) -> list[dict[str, object]]:
    """`--semantics lucid` (node placement, 8-GPU nodes, the traces' default clusters: Philly's
    vc_config.csv, Helios vcvGl 20 / vcvlY 2 nodes) against Lucid's published numbers."""
    sem = SEMANTICS["lucid"]
    out = []
    for name, fmt, rel in (
        ("helios", "helios", "helios-venus/helios_venus_2vc_sept.csv"),
        ("philly", "philly", "philly/philly.csv"),
    ):
        path = traces / rel
        jobs = load_trace(path, fmt)
        cl = default_cluster(fmt, path, jobs)
        for pol in ("fifo", "sjf", "tiresias"):
            t0 = time.perf_counter()
            res = Simulator(
                jobs, cl, make_policy(pol, sem), make_estimator("oracle"), semantics=sem, placement="node"
            ).run()
            m, _ = summarize_sim(res)
            pub = LUCID_PUBLISHED[(name, pol)]
            out.append(
                {
                    "trace": name,
                    "policy": pol,
                    "ours_avg_jct_s": m.avg_jct_s,
                    "lucid_avg_jct_s": pub,
                    "diff": m.avg_jct_s / pub - 1,
                    "preemptions": m.preemptions,
                    "sim_s": time.perf_counter() - t0,
                }
            )
    return out


def speed(
    traces: Path,
    policies: tuple[str, ...] = (
        "fifo",
        "sjf",
        "srtf",
        "tiresias",
        "qssf",
        "semantic",
        "lucid",
        "semantic-pack",
    ),
) -> dict[str, float]:
    """Whole-process wall time of `schedmate simulate --json` on Philly per policy, and of
    `schedmate simulate --help` (start-up)."""
    import subprocess

    exe = [
        sys.executable,
        "-c",
        "import sys; from schedmate.cli import main; sys.argv[0] = 'schedmate'; main()",
    ]
    trace = str(traces / "philly" / "philly.csv")
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    subprocess.run([*exe, "simulate", "--help"], check=True, capture_output=True)
    out["start-up (--help)"] = time.perf_counter() - t0
    for pol in policies:
        t0 = time.perf_counter()
        subprocess.run(
            [*exe, "simulate", "--trace", trace, "--format", "philly", "--policy", pol, "--json"],
            check=True,
            capture_output=True,
        )
        out[pol] = time.perf_counter() - t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=Path, default=TRACES)
    ap.add_argument("--json-out", type=Path, default=ROOT / "bench" / "results" / "sim.json")
    ap.add_argument(
        "--limit", type=int, default=None, help="only the first N jobs of each trace (a smoke run)"
    )
    ap.add_argument("--only", choices=("all", "fidelity", "speed"), default="all")
    args = ap.parse_args()
    if args.only in ("all", "fidelity"):
        fid = fidelity(args.traces)
        print("fidelity: --semantics lucid vs the Lucid artifact's published avg JCT (goal: within 0.5%)")
        for r in fid:
            ok = "ok" if abs(float(r["diff"])) <= 0.005 else "MISS"  # type: ignore[arg-type]
            print(
                f"  {r['trace']:7} {r['policy']:9} ours {r['ours_avg_jct_s']:12,.1f} s  Lucid {r['lucid_avg_jct_s']:12,.1f} s  "
                f"{r['diff']:+.2%} {ok}  ({r['preemptions']:,} preemptions, {r['sim_s']:.1f} s)"
            )
        if args.only == "fidelity":
            return 0 if all(abs(float(r["diff"])) <= 0.005 for r in fid) else 1  # type: ignore[arg-type]
    if args.only in ("all", "speed"):
        load = os.getloadavg()[0]
        sp = speed(args.traces)
        print(
            f"speed: whole process, Philly, goal <= 5 s each (load average {load:.1f} on {os.cpu_count()} cores)"
        )
        for k, v in sp.items():
            print(f"  {k:18} {v:6.2f} s")
        if args.only == "speed":
            return 0
    shipped = InterferenceModel.shipped()
    if (INTERFERENCE / "colocate_info.csv").is_file():
        refit = InterferenceModel.fit(INTERFERENCE)
        print(
            f"interference table: refit from {INTERFERENCE} {'matches' if refit == shipped else 'DIFFERS FROM'} "
            f"the shipped one; fit error {refit.fit_error}"
        )
    else:
        print(
            f"interference data missing ({INTERFERENCE}): using the shipped table, fit error {shipped.fit_error}"
        )
    results = []
    for fmt, rel, cl in SETS:
        path = args.traces / rel
        if not path.is_file():
            print(f"missing trace: {path}", file=sys.stderr)
            return 2
        results.append(run_set(fmt, path, cl, args.limit))
    report = {
        "interference_fit": shipped.fit_error,
        "machine": f"{platform.node()} {os.cpu_count()} cpu",
        "date": str(date.today()),
        "sets": results,
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(report, indent=2))
    print(
        f"\nSimulator benchmark ({report['date']}, {report['machine']}); semantic = noisy estimator sigma 0.7"
    )
    for r in results:
        print(f"\n{r['trace']}: {r['jobs']:,} jobs")
        print(
            f"  {'policy':14} {'estimator':18} {'avg JCT s':>12} {'p99 JCT s':>12} {'avg queue s':>12} {'util':>6} "
            f"{'packs':>7} {'unpack':>6} {'sim s':>7} {'jobs/s':>9} {'peak MiB':>9}"
        )
        for pol, m in r["policies"].items():
            print(
                f"  {pol:14} {m['estimator']:18} {m['avg_jct_s']:12,.0f} {m['p99_jct_s']:12,.0f} "
                f"{m['avg_queue_s']:12,.0f} {m['gpu_util']:6.1%} {m['packs']:7,} {m['unpacks']:6,} {m['sim_s']:7.2f} "
                f"{m['jobs_per_s']:9,.0f} {m['peak_rss_mib']:9,.0f}"
            )
        for sem in ("semantic", "semantic-pack"):
            c = r[sem]
            print(
                f"  {sem} vs FIFO: {c['vs_fifo']:.2f}x (goal >= 1.9x)   vs best baseline ({r['best_baseline']}): "
                f"{c['vs_best_baseline']:.2f}x (goal >= 1.3x)   vs oracle SRTF: {c['over_oracle_srtf']:+.1%} (goal within 10%)"
                + (
                    f"   vs oracle with packing: {c['over_oracle_pack']:+.1%}"
                    if sem == "semantic-pack"
                    else ""
                )
            )
        print("  with failures (FailureModel defaults; fifo-noretry: no blind retry of failed jobs):")
        for pol, m in r["failures"].items():
            print(
                f"    {pol:12} avg JCT {m['avg_jct_s']:12,.0f} s  infra failures {m['infra_failures']:6,}  app failures "
                f"{m['app_failures']:6,}  lost {m['lost_gpu_h']:10,.1f} GPU-h  sim {m['sim_s']:.2f} s"
            )
        print(
            "  placement on 8-GPU nodes vs a pool of GPUs (stranded: GPU-h free while the best pending job had "
            "enough GPUs, but on no node):"
        )
        print(
            f"    {'policy':14} {'pool JCT s':>12} {'node JCT s':>12} {'node/pool':>9} {'stranded GPU-h':>15} "
            f"{'of GPU-time':>11} {'pool s':>7} {'node s':>7}"
        )
        for pol, m in r["node"].items():
            q = r["policies"][pol]
            print(
                f"    {pol:14} {q['avg_jct_s']:12,.0f} {m['avg_jct_s']:12,.0f} {m['jct_over_pool']:+9.2%} "
                f"{m['stranded_gpu_h']:15,.1f} {m['stranded_frac']:11.3%} {q['sim_s']:7.2f} {m['sim_s']:7.2f}"
            )
        for pol, m in r.get("class_mix", {}).items():
            print(
                f"  share classes from Lucid's workload mix: {pol:14} avg JCT {m['avg_jct_s']:12,.0f} s  "
                f"packs {m['packs']:,}  un-packed {m['unpacks']:,}"
            )
    for k, w in results[0].get("wait_prediction", {}).items():
        print(
            f"queue-wait prediction on Philly ({k}, 5 snapshots, {w['n']:,} pending jobs): median abs error "
            f"{w['median_abs_error_s'] / 3600:,.1f} h (median actual remaining wait {w['median_remaining_wait_s'] / 3600:,.1f} h)"
        )
    ph = results[0]["policies"]
    pn = results[0]["node"]
    print(
        f"\nspeed on Philly: FIFO {ph['fifo']['sim_s']:.2f} s (goal <= 1 s); slowest policy "
        f"{max(m['sim_s'] for m in ph.values()):.2f} s (goal <= 5 s); node placement: FIFO {pn['fifo']['sim_s']:.2f} s, "
        f"slowest {max(m['sim_s'] for m in pn.values()):.2f} s ({max(pn, key=lambda k: pn[k]['sim_s'])})"
    )
    print(f"JSON: {args.json_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

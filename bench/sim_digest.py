"""Digest of every simulation's per-job results, to prove an engine change left them identical.

For each trace (Philly, the Helios slice), semantics (`default`, `lucid`, `legacy`) and policy
(the 8 of `schedmate simulate`), run the simulation as the CLI does (default cluster,
default estimator, node placement under `lucid`) and hash (job id, first start, end,
preemptions) of every job, in trace order, with SHA-256 (floats by `repr`: bit-exact).

    python bench/sim_digest.py --out bench/results/sim_digest.json      # record
    python bench/sim_digest.py --check bench/results/sim_digest.json    # compare (exit 1 if any differs)
    [--traces ../shared/data/traces] [--jobs 2] [--only philly/semantic/default,...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

TRACES = ROOT.parent / "shared" / "data" / "traces"
SETS = {
    "philly": ("philly", "philly/philly.csv"),
    "helios": ("helios", "helios-venus/helios_venus_2vc_sept.csv"),
}
SEMANTICS = ("default", "lucid", "legacy")
POLICIES = ("fifo", "sjf", "srtf", "tiresias", "qssf", "semantic", "lucid", "semantic-pack")


def digest(run: tuple[str, str, str, str]) -> tuple[str, str, int, float]:
    """(run name, SHA-256 of its per-job results, jobs, simulation seconds)."""
    from schedmate.sdk.sim import simulate

    traces, trace, sem, pol = run
    fmt, rel = SETS[trace]
    name = f"{trace}/{pol}/{sem}"
    try:
        rep = simulate(
            Path(traces) / rel,
            fmt,
            [pol],
            semantics=sem,
            placement="node" if sem == "lucid" else "pool",  # as the CLI's default
            per_job=True,
        )
    except RuntimeError as e:  # an engine invariant: the error is the run's result
        return name, f"error: {e}", 0, 0.0
    (pr,) = rep.runs
    h = hashlib.sha256()
    for j in pr.jobs:
        h.update(f"{j.job_id}\t{j.first_start_s!r}\t{j.end_s!r}\t{j.preemptions}\n".encode())
    return name, h.hexdigest(), len(pr.jobs), pr.sim_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=Path, default=TRACES)
    ap.add_argument("--out", type=Path, help="write the digests here")
    ap.add_argument("--check", type=Path, help="compare with the digests in this file")
    ap.add_argument("--jobs", type=int, default=2, help="simulations in parallel")
    ap.add_argument("--only", default="", help="comma-separated trace/policy/semantics names")
    args = ap.parse_args()
    runs = [(str(args.traces), t, s, p) for t in SETS for s in SEMANTICS for p in POLICIES]
    if args.only:
        want = {w.strip() for w in args.only.split(",") if w.strip()}
        runs = [r for r in runs if f"{r[1]}/{r[3]}/{r[2]}" in want]
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(max(1, args.jobs)) as pool:
        out = pool.map(digest, runs, chunksize=1)
    ref = json.loads(args.check.read_text())["digests"] if args.check else {}
    bad = 0
    for name, h, n, sim_s in out:
        mark = ""
        if args.check:
            ok = ref.get(name) == h
            bad += not ok
            mark = "identical" if ok else ("DIFFERS" if name in ref else "no reference")
        print(f"{name:32} {n:7,} jobs  {sim_s:6.2f} s  {h[:16]}  {mark}")
    print(f"{len(out)} runs in {time.perf_counter() - t0:.1f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"digests": {n: h for n, h, _, _ in out}}, indent=1) + "\n")
    if args.check:
        print(f"{len(out) - bad} of {len(out)} identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

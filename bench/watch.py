"""One `watch` process following many concurrently growing training logs.

usage: python bench/watch.py [--jobs 1000] [--cycles 6] [--lines-per-cycle 30] [--interval 30]
                             [--json-out bench/results/watch.json]

Each cycle the writer appends `--lines-per-cycle` progress lines to every log (a job printing
one step per second, for a 30 s cycle), then one `Watcher.cycle()` runs over an in-memory
cluster of that many RUNNING jobs with the real tracker (rules only, as `--embedder none`).
At cycle 3 a tenth of the jobs slow down 3x; the event latency is the number of cycles until
watch reports their slowdown. Line formats are those of real logs in ../shared/data/logs/progress
(nanoGPT, a Megatron-style iteration line, an HF-style step line).

Then `--failures` of the jobs end FAILED (half with an NCCL/network error, half with a Python
exception) and one cycle recovers them through the Failure Handler's planner (the one recovery
policy) with execution on its audit-log ledger; a second cycle must execute nothing. Reported:
CPU of that cycle, per failed job, actions executed, repeats (must be 0).

Targets (issue 12): a 30 s cycle uses < 10 % of one core (CPU per cycle < 3 s), peak RSS < 500 MB,
events within one cycle.
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from schedmate.core.cluster import InMemoryClusterBackend, JobState, JobView, NodeState, NodeView  # noqa: E402
from schedmate.core.settings import load_settings  # noqa: E402
from schedmate.integrations.watch import Watcher, WatchStore  # noqa: E402
from schedmate.sdk.watch import SdkCapabilities  # noqa: E402

FORMATS = (
    "iter {i}: loss {loss:.4f}, time {ms:.2f}ms",
    " iteration {i}/ {total} | consumed samples: {s} | elapsed time per iteration (ms): {ms:.1f} | lm loss: {loss:.6E} |",
    "step {i}/{total} loss={loss:.4f} lr=3.0e-04 {sec:.2f}s/it",
)


def line(fmt: str, i: int, total: int, ms: float) -> str:
    return fmt.format(i=i, total=total, loss=4.0 - i * 1e-4, ms=ms, sec=ms / 1000, s=i * 512) + "\n"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--cycles", type=int, default=6)
    ap.add_argument("--lines-per-cycle", type=int, default=30)
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--failures", type=int, default=100, help="jobs that end FAILED after the last cycle")
    ap.add_argument("--json-out", type=Path, default=ROOT / "bench" / "results" / "watch.json")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="schedmate-bench-watch-"))
    settings = load_settings(
        overrides={"embedder": {"backend": "none"}, "llm": {"base_url": ""}, "cache_dir": str(tmp / "cache")},
        environ={},
    )
    backend = InMemoryClusterBackend()
    backend.nodes["n1"] = NodeView("n1", NodeState.IDLE, gpus=8, partitions=("gpu",))
    import os
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    total = 100_000
    for j in range(args.jobs):
        backend.add_job(
            JobView(
                str(1000 + j),
                user=me,
                state=JobState.RUNNING,
                partition="gpu",
                nodes=("n1",),
                stdout_path=str(tmp / f"{j}.out"),
                start_time=time.time(),
            )  # fmt: skip
        )
    log = io.StringIO()
    w = Watcher(
        backend,
        SdkCapabilities(settings, backend),
        WatchStore(tmp / "watch.db"),
        settings.watch.model_copy(update={"execute": True, "interval_s": args.interval}),
        log=log,
    )
    slow = {str(1000 + j) for j in range(0, args.jobs, 10)}
    slow_from = 3
    step = [0] * args.jobs
    cycles = []
    detected: dict[str, int] = {}
    rss_before = rss_mb()
    for c in range(args.cycles):
        t_write = time.perf_counter()
        for j in range(args.jobs):
            fmt = FORMATS[j % len(FORMATS)]
            ms = 1500.0 if (c >= slow_from and str(1000 + j) in slow) else 500.0
            with open(tmp / f"{j}.out", "a") as fh:
                for _ in range(args.lines_per_cycle):
                    step[j] += 1
                    fh.write(line(fmt, step[j], total, ms))
        write_s = time.perf_counter() - t_write
        cpu0, wall0 = time.process_time(), time.perf_counter()
        rep = w.cycle()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        for e in rep.events:
            if (
                e["kind"] == "slowdown"
                and e["job_id"] in slow
                and e["job_id"] not in detected
                and c >= slow_from
            ):
                detected[e["job_id"]] = c - slow_from + 1
        cycles.append({"cycle": c, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "write_s": round(write_s, 3),
                       "errors": len(rep.errors), "events": len(rep.events), "rss_mb": round(rss_mb(), 1)})  # fmt: skip
        print(f"cycle {c}: cpu {cpu:.2f} s, wall {wall:.2f} s, events {len(rep.events)}, errors {len(rep.errors)}, "
              f"peak rss {rss_mb():.0f} MB", file=sys.stderr)  # fmt: skip
    # -- the recovery path: jobs end FAILED; one cycle diagnoses and recovers them all ------------
    nccl = (
        "n1:3468:3905 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<54862> "
        "with status=12 opcode=0 len=0 vendor err 129 (Recv)\nRuntimeError: NCCL communicator was aborted on rank 0. "
        "Original reason for failure was: NCCL error: remote process exited or there was a network error\n"
    )
    keyerr = 'Traceback (most recent call last):\n  File "train.py", line 9, in main\n    lr = cfg["lr"]\nKeyError: \'lr\'\n'
    failing = [str(1000 + j) for j in range(min(args.failures, args.jobs))]
    for n, job_id in enumerate(failing):
        j = int(job_id) - 1000
        with open(tmp / f"{j}.out", "a") as fh:
            fh.write(nccl if n % 2 == 0 else keyerr)
        backend.jobs[job_id] = backend.jobs[job_id].with_(state=JobState.FAILED, end_time=time.time())
    ended = {job_id: backend.jobs[job_id] for job_id in failing}
    recovery: dict[str, object] = {"failed_jobs": len(failing)}
    if failing:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        rep = w.cycle()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        executed = [a for a in rep.actions if a["mode"] == "execute"]
        for job_id in failing:  # the scheduler's stale view of the same failures: no repeat
            backend.jobs[job_id] = ended[job_id].with_(end_time=(ended[job_id].end_time or 0) + 1)
        rep2 = w.cycle()
        repeats = [a for a in rep2.actions if a["mode"] == "execute"]
        recovery |= {
            "cycle_cpu_s": round(cpu, 3),
            "cycle_wall_s": round(wall, 3),
            "cpu_per_failed_job_ms": round(1000 * cpu / len(failing), 2),
            "actions_executed": len(executed),
            "requeues": sum(a["kind"] == "requeue" for a in executed),
            "drains": sum(a["kind"] == "drain" for a in executed),
            "repeats_on_stale_view": len(repeats),
            "errors": len(rep.errors) + len(rep2.errors),
        }
        print(f"recovery cycle: cpu {cpu:.2f} s for {len(failing)} failed jobs, "
              f"{len(executed)} actions, {len(repeats)} repeats", file=sys.stderr)  # fmt: skip
    steady = cycles[1:] or cycles
    cpu_mean = sum(c["cpu_s"] for c in steady) / len(steady)
    latencies = sorted(detected.values())
    result = {
        "jobs": args.jobs,
        "cycles": args.cycles,
        "lines_per_cycle": args.lines_per_cycle,
        "interval_s": args.interval,
        "cpu_per_cycle_s": round(cpu_mean, 3),
        "core_share_at_interval": round(cpu_mean / args.interval, 4),
        "peak_rss_mb": round(rss_mb(), 1),
        "rss_before_cycles_mb": round(rss_before, 1),
        "slowed_jobs": len(slow),
        "slowdowns_detected": len(detected),
        "latency_cycles_max": max(latencies) if latencies else None,
        "recovery": recovery,
        "per_cycle": cycles,
        "targets": {"core_share": 0.10, "peak_rss_mb": 500, "latency_cycles": 1},
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(result, indent=1))
    print(f"{'metric':<34}{'value':>12}{'target':>12}")
    print(f"{'CPU per cycle (s, steady)':<34}{cpu_mean:>12.2f}{args.interval * 0.1:>12.1f}")
    print(f"{'share of one core at interval':<34}{cpu_mean / args.interval:>12.1%}{'< 10%':>12}")
    print(f"{'peak RSS (MB)':<34}{rss_mb():>12.0f}{'< 500':>12}")
    print(f"{'slowdowns detected':<34}{len(detected):>8}/{len(slow):<3}{'all':>12}")
    lat = "-" if not latencies else f"{max(latencies)}"
    print(f"{'event latency (cycles, max)':<34}{lat:>12}{'1':>12}")
    if failing:
        print(f"{'recovery cycle CPU (s)':<34}{recovery['cycle_cpu_s']:>12}{'-':>12}")
        print(f"{'recovery CPU per failed job (ms)':<34}{recovery['cpu_per_failed_job_ms']:>12}{'-':>12}")
        print(f"{'recovery actions executed':<34}{recovery['actions_executed']:>12}{'-':>12}")
        print(f"{'repeats on a stale view':<34}{recovery['repeats_on_stale_view']:>12}{'0':>12}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write MEASURED.md from history.jsonl (+ history.jsonl.meta.json) and the machine description.

python bench/advisor_corpus/make_report.py
"""

import json
import math
import os
import platform
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"? ({e})"


def main():
    hist = [json.loads(line) for line in (HERE / "history.jsonl").read_text().splitlines() if line.strip()]
    meta_path = HERE / "history.jsonl.meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    jobs = {j["job_id"]: j for j in json.loads((HERE / "jobs.json").read_text())}
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    py = HERE / ".venv" / "bin" / "python"
    pyv = sh(f"{py} -V")
    torchv = sh(f"{py} -c 'import torch; print(torch.__version__)'")

    by_fam = defaultdict(list)
    for h in hist:
        by_fam[jobs[h["job_id"]]["family"]].append(h)
    total_job_time = sum(h["duration_s"] for h in hist)
    first, last = hist[0]["submit_time"], hist[-1]["submit_time"]
    failed = [h for h in hist if h["status"] != "completed"]

    lines = [
        "# Measured run of the advisor corpus",
        "",
        "All durations in `history.jsonl` come from one sequential run of `run_corpus.py` on this machine.",
        "",
        "## Machine",
        "",
        f"- CPU: {cpu}, {os.cpu_count()} cores (shared with other work during the run: timings are noisy)",
        f"- RAM: {mem_kb / 1024 / 1024:.1f} GiB",
        f"- Python: {pyv} (corpus venv), torch {torchv} (CPU build), no GPU",
        "- every worker process limited to 1 thread (`OMP_NUM_THREADS=1`); `n_gpus` = worker processes/cores a job uses, `gpu_model` = `cpu`",
        "",
        "## Run",
        "",
        f"- date (UTC): first job submitted {first}, last job submitted {last}",
        f"- jobs: {len(hist)} in {len(by_fam)} families, {len(hist) - len(failed)} completed, {len(failed)} failed",
        f"- total wall time of the run: {meta.get('total_s', total_job_time):.1f} s ({meta.get('total_s', total_job_time) / 60:.1f} min); "
        f"sum of job durations {total_job_time:.1f} s",
        "",
        "## Per family",
        "",
        "| family | style | jobs | min s | median s | max s | max/min |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    styles = json.loads((HERE / "families.json").read_text()) if (HERE / "families.json").exists() else {}
    for fam in sorted(by_fam):
        d = sorted(h["duration_s"] for h in by_fam[fam])
        lines.append(
            f"| {fam} | {styles.get(fam, '')} | {len(d)} | {d[0]:.1f} | {statistics.median(d):.1f} | {d[-1]:.1f} | {d[-1] / d[0]:.1f}x |"
        )
    d = sorted(h["duration_s"] for h in hist)
    lines.append(
        f"| **all** | | {len(d)} | {d[0]:.1f} | {statistics.median(d):.1f} | {d[-1]:.1f} | {d[-1] / d[0]:.1f}x |"
    )
    if failed:
        lines += ["", "## Failed jobs", ""] + [
            f"- {h['job_id']} {h['name']}: see logs/{h['job_id']}.log" for h in failed
        ]
    load = meta.get("load_1min")
    quiet = (
        f"1-minute load average {load['min']:.2f} to {load['max']:.2f} (median {load['median']:.2f}; "
        f"sampled {load['sampled']}), no builds, tests or benchmarks ran beside it"
        if load
        else "load not recorded"
    )
    lines += [
        "",
        "## Notes",
        "",
        f"- This run: {quiet}. {meta.get('note', '')}".rstrip(),
    ]
    prev = HERE / "history-run2-loaded.jsonl"
    if prev.exists():
        old = {
            r["job_id"]: r["duration_s"]
            for r in map(json.loads, prev.read_text().splitlines())
            if r.get("duration_s")
        }
        logs = [
            math.log(old[h["job_id"]] / h["duration_s"])
            for h in hist
            if h["job_id"] in old and h["duration_s"]
        ]
        if logs:
            lines.append(
                f"- The previous run of the same {len(logs)} jobs (`{prev.name}`, 2026-11-21, while other sessions' builds and "
                f"tests ran: load average about 1 to 9) took {math.exp(statistics.fmean(logs)):.2f}x as long on geometric "
                f"average, with a per-job log-ratio spread of {statistics.pstdev(logs):.2f} (identical commands, "
                f"{math.exp(min(logs)):.2f}x to {math.exp(max(logs)):.2f}x). That is the noise a shared machine adds; the "
                "benchmark reports both runs."
            )
    lines += [
        "- Durations include interpreter start-up, imports (transformers/lightning/keras take several seconds), synthetic data "
        "generation and, for multi-process jobs, torchrun/DDP start-up; so the smallest jobs are dominated by fixed overhead.",
        "- Families whose max/min is below 3x: the fixed start-up cost is a large share of every run there.",
    ]
    (HERE / "MEASURED.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Run every job of the advisor corpus once, sequentially, and record measured durations.

    python bench/advisor_corpus/run_corpus.py                 # all jobs in jobs.json -> history.jsonl
    python bench/advisor_corpus/run_corpus.py --only job-0003,job-0010 --out /tmp/h.jsonl

Stdlib only. Each job runs with cwd = its family directory and the corpus venv's bin/ first on PATH,
so `python ...`, `torchrun ...` and `bash scripts/...` use the venv. Every worker process is limited
to one CPU thread (OMP_NUM_THREADS=1 etc.), so a job's `n_gpus` (worker processes) is also the number
of cores it uses. Wall-clock duration is measured with time.monotonic() from launch to exit.
"""

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEYS = [
    "job_id",
    "duration_s",
    "submit_time",
    "status",
    "n_gpus",
    "n_nodes",
    "gpu_model",
    "user",
    "name",
    "code_dir",
    "command",
    "config_files",
]


def job_env(venv_bin: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_bin.parent)
    env.pop("PYTHONHOME", None)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    env.update(
        {
            "KERAS_BACKEND": "torch",
            "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "WANDB_MODE": "disabled",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    return env


def descendants(pid: int) -> list:
    """All live descendant pids of `pid` (torchrun puts its workers in their own process groups)."""
    children = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, stack = [], [pid]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


def kill_tree(proc: subprocess.Popen) -> None:
    for pid in descendants(proc.pid) + [proc.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def run_job(job: dict, env: dict, timeout: float, log_dir: Path) -> dict:
    code_dir = HERE / job["code_dir"]
    log_path = log_dir / f"{job['job_id']}.log"
    submit = dt.datetime.now(dt.UTC)
    start = time.monotonic()
    status = "completed"
    with open(log_path, "w") as log:
        log.write(f"$ cd {job['code_dir']} && {job['command']}\n")
        log.flush()
        proc = subprocess.Popen(
            ["bash", "-c", job["command"]],
            cwd=code_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout)
            if rc != 0:
                status = "failed"
        except subprocess.TimeoutExpired:
            kill_tree(proc)
            proc.wait()
            rc = "timeout"
            status = "failed"
        duration = time.monotonic() - start
        log.write(f"\n# exit={rc} duration_s={duration:.3f}\n")
    rec = {
        "job_id": job["job_id"],
        "duration_s": round(duration, 3),
        "submit_time": submit.strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z",
        "status": status,
        "n_gpus": int(job["n_gpus"]),
        "n_nodes": int(job.get("n_nodes", 1)),
        "gpu_model": "cpu",
        "user": job["user"],
        "name": job["name"],
        "code_dir": job["code_dir"],
        "command": job["command"],
        "config_files": list(job.get("config_files", [])),
    }
    return {k: rec[k] for k in KEYS}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default=str(HERE / "jobs.json"))
    ap.add_argument("--out", default=str(HERE / "history.jsonl"))
    ap.add_argument("--venv", default=str(HERE / ".venv"))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--only", default="", help="comma-separated job ids or family names")
    args = ap.parse_args()

    jobs = json.loads(Path(args.jobs).read_text())
    if args.only:
        sel = set(args.only.split(","))
        jobs = [j for j in jobs if j["job_id"] in sel or j["family"] in sel]
    venv_bin = Path(args.venv).resolve() / "bin"
    if not (venv_bin / "python").exists():
        sys.exit(f"no venv at {venv_bin.parent}; create it first (see README.md)")
    env = job_env(venv_bin)
    log_dir = HERE / "logs"
    log_dir.mkdir(exist_ok=True)
    out = Path(args.out)
    t_all = time.monotonic()
    n_failed = 0
    loads = []  # 1-minute load average before each job: how quiet the machine was
    with open(out, "w") as f:
        for i, job in enumerate(jobs, 1):
            loads.append(os.getloadavg()[0])
            rec = run_job(job, env, args.timeout, log_dir)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            n_failed += rec["status"] != "completed"
            print(
                f"[{i}/{len(jobs)}] {rec['job_id']} {job['family']:<24} {rec['status']:<9} {rec['duration_s']:8.2f}s  {job['name']}",
                flush=True,
            )
    total = time.monotonic() - t_all
    print(f"{len(jobs)} jobs, {n_failed} failed, total {total:.1f}s -> {out}")
    meta = {
        "total_s": round(total, 1),
        "n_jobs": len(jobs),
        "n_failed": n_failed,
        "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "load_1min": {
            "min": min(loads),
            "median": statistics.median(loads),
            "max": max(loads),
            "sampled": "before each job",
        },
    }
    Path(str(out) + ".meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Measure the demo's bundled history: run the example jobs in src/schedmate/data/advisor/jobs
and write history.jsonl (past runs) and example.json (the run the demo predicts, with its
measured duration). Real durations of real runs on this machine; numpy only.

    python bench/advisor_demo_history.py
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "schedmate" / "data" / "advisor"

# (family, user, command); the last one is the demo's "new" job
RUNS = [
    ("mlp", "ann", "python train.py --epochs 2"),
    ("softmax", "bob", "bash run.sh configs/base.yaml"),
    ("mlp", "ann", "python train.py --epochs 4"),
    ("mlp", "ann", "python train.py --epochs 8"),
    ("softmax", "bob", "bash run.sh configs/long.yaml"),
    ("mlp", "ann", "python train.py --epochs 3 --num-samples 40000"),
    ("mlp", "ann", "python train.py --epochs 4 --hidden-dim 1024"),
    ("mlp", "ann", "python train.py --epochs 6"),
]


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def main() -> None:
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )  # one core per job
    machine = f"{cpu_model()}, {os.cpu_count()} cores"
    rows = []
    for i, (fam, user, cmd) in enumerate(RUNS, start=1):
        start = time.time()
        t0 = time.monotonic()
        subprocess.run(
            cmd, shell=True, cwd=DATA / "jobs" / fam, env=env, check=True, stdout=subprocess.DEVNULL
        )
        dur = round(time.monotonic() - t0, 3)
        print(f"{fam:8} {cmd:50} {dur:8.2f} s")
        rows.append(
            {
                "job_id": f"demo-{i}",
                "duration_s": dur,
                "submit_time": datetime.fromtimestamp(start, UTC).isoformat(timespec="seconds"),
                "status": "completed",
                "n_gpus": 1,
                "user": user,
                "name": fam,
                "code_dir": f"jobs/{fam}",
                "command": cmd,
                "config_files": [],
            }
        )
    *history, new = rows
    (DATA / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
    example = {k: new[k] for k in ("job_id", "user", "name", "code_dir", "command", "n_gpus")}
    example |= {"measured_s": new["duration_s"], "measured_on": f"{machine}, {time.strftime('%Y-%m-%d')}"}
    (DATA / "example.json").write_text(json.dumps(example, indent=1) + "\n")
    print(f"wrote {DATA / 'history.jsonl'} and example.json ({machine})")


if __name__ == "__main__":
    main()

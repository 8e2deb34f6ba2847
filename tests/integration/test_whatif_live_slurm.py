"""`schedmate whatif --live` against a REAL Slurm (.ci/provision_slurm.sh): real sbatch jobs fill
the 4 GPUs, more wait, and the predictions are checked against what Slurm will do.
Must run, not skip, under CI=true.

The scenario's jobs go to a partition of its own (created here on the test cluster's node);
other tests' jobs may share the node's GPUs, so the exact start times are asserted only when
no other GPU job is queued or running beside ours (checked, never assumed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slurm_cluster import HOST, require_conf

from schedmate.core.cluster import JobState
from schedmate.core.settings import SlurmSettings
from schedmate.integrations.slurm import SlurmBackend

pytestmark = pytest.mark.integration

RUN_LIMIT_MIN = 2  # the running jobs' time limit: they sleep longer, Slurm ends them at it
PENDING = ((2, 3), (1, 1), (4, 2))  # (GPUs, time limit in minutes), in submit order


@pytest.fixture(scope="module")
def conf() -> str:
    return require_conf()


def _slurm(args: list[str], conf: str) -> str:
    out = subprocess.run(
        args, env={**os.environ, "SLURM_CONF": conf}, capture_output=True, text=True, timeout=30, check=False
    )
    assert out.returncode == 0, f"{args[0]} failed: {out.stderr.strip()}"
    return out.stdout


_submitted: list[str] = []


@pytest.fixture(scope="module")
def part(conf: str) -> Iterator[str]:
    """A partition of the scenario's own; its jobs are cancelled and it is deleted after."""
    name = "w" + uuid.uuid4().hex[:8]
    _slurm(
        ["scontrol", "create", f"PartitionName={name}", f"Nodes={HOST}", "MaxTime=INFINITE", "State=UP"], conf
    )
    yield name
    env = {**os.environ, "SLURM_CONF": conf}
    if _submitted:
        subprocess.run(["scancel", *_submitted], env=env, check=False, timeout=30)
    subprocess.run(["scontrol", "delete", f"PartitionName={name}"], env=env, check=False, timeout=30)


def sbatch(conf: str, workdir: Path, part: str, gpus: int, limit_min: int) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "job.sh"
    script.write_text("#!/bin/bash\nsleep 600\n")
    out = _slurm(
        [
            "sbatch",
            "--parsable",
            "-p",
            part,
            "-D",
            str(workdir),
            "-o",
            "/dev/null",
            f"--gres=gpu:{gpus}",
            f"--time={limit_min}",
            str(script),
        ],
        conf,
    )
    job_id = out.strip().split(";")[0]
    _submitted.append(job_id)
    return job_id


def whatif_live(conf: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "schedmate"),
            "--cache-dir",
            str(tmp / "cache"),
            "whatif",
            "--live",
            *args,
        ],
        env={**os.environ, "SLURM_CONF": conf},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_whatif_live_predicts_the_real_queue(conf: str, part: str, tmp_path: Path) -> None:
    slurm = SlurmBackend(SlurmSettings(conf=conf, timeout_s=10))
    running = [sbatch(conf, tmp_path / f"run{i}", part, 1, RUN_LIMIT_MIN) for i in range(4)]
    deadline = time.monotonic() + 30
    while True:
        views = {j.job_id: j for j in slurm.snapshot().jobs if j.job_id in running}
        if all(v.state is JobState.RUNNING for v in views.values()) and len(views) == 4:
            break
        assert time.monotonic() < deadline, (
            "the 4 GPU-filling jobs did not all start within 30 s: "
            + ", ".join(f"{k}={v.state.value} ({v.reason})" for k, v in views.items())
        )
        time.sleep(0.3)
    ends = sorted(
        v.start_time + v.time_limit_s  # type: ignore[operator]
        for v in views.values()
    )
    pending = [sbatch(conf, tmp_path / f"pend{i}", part, g, m) for i, (g, m) in enumerate(PENDING)]

    out = whatif_live(conf, tmp_path, "--json", "--partition", part, "--history-days", "0", "--samples", "4")
    assert out.returncode == 0, out.stderr
    recs: list[dict[str, Any]] = [json.loads(line) for line in out.stdout.splitlines()]
    by_id = {r["job_id"]: r for r in recs}
    assert set(by_id) == set(pending), f"expected predictions for {pending}, got {sorted(by_id)}"
    for r in recs:
        assert r["schema_version"] == 1
        assert r["partition"] == part
        assert r["note"] is None, r
        assert r["p50_start"] is not None and r["started_in"] == r["samples"] == 4, r
        assert r["p10_start"] <= r["p50_start"] <= r["p90_start"]
        # nothing frees a GPU before the first running job reaches its time limit
        assert r["p50_start"] >= ends[0] - 1.0, (r, ends)
        assert "slurm_start" in r  # Slurm's own estimate, a time or null (N/A)
    # the queue's order: positions follow submission, starts never go backwards (strict FIFO)
    starts = [by_id[j]["p50_start"] for j in pending]
    assert [by_id[j]["queue_position"] for j in pending] == sorted(
        by_id[j]["queue_position"] for j in pending
    )
    assert starts == sorted(starts), starts
    # no history: durations are the time limits, running jobs end at theirs
    assert [by_id[j]["duration_source"] for j in pending] == ["time_limit"] * 3
    assert [by_id[j]["duration_s"] for j in pending] == [m * 60.0 for _, m in PENDING]

    others = [
        j
        for j in slurm.snapshot().jobs
        if j.job_id not in running + pending
        and j.gpus > 0
        and j.state in (JobState.RUNNING, JobState.PENDING)
        and not (j.reason or "").startswith("JobHeld")
    ]
    if not others:  # the node's GPUs are ours alone: the answer is exact
        p1, p2, p3 = starts
        assert p1 == pytest.approx(ends[1], abs=1.0)  # 2 GPUs: the second running job's end
        assert p2 == pytest.approx(ends[2], abs=1.0)  # strict FIFO: after p1, the third GPU
        assert p3 == pytest.approx(max(ends[3], p1 + 180.0, p2 + 60.0), abs=1.0)  # all 4 GPUs

    table = whatif_live(conf, tmp_path, "--partition", part, "--history-days", "0", "--samples", "2")
    assert table.returncode == 0, table.stderr
    assert "squeue --start" in table.stdout
    assert all(j in table.stdout for j in pending)


def test_whatif_live_no_pending_jobs_is_one_line(conf: str, tmp_path: Path) -> None:
    empty = "e" + uuid.uuid4().hex[:8]
    _slurm(["scontrol", "create", f"PartitionName={empty}", f"Nodes={HOST}", "State=UP"], conf)
    try:
        out = whatif_live(conf, tmp_path, "--json", "--partition", empty)
    finally:
        _slurm(["scontrol", "delete", f"PartitionName={empty}"], conf)
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.strip() == f"no pending jobs in partition {empty}: nothing to predict"

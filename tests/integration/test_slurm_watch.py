"""`watch` against a REAL Slurm (slurmctld + slurmd from .ci/provision_slurm.sh): real sbatch jobs,
real requeues, real Comments. Must run, not skip, under CI=true.

Each scenario submits to a partition of its own (created here on the test cluster's node) and
its watch acts only on that partition (the allowlist), so scenarios cannot act on each
other's jobs. Cycles are driven in-process (`Watcher.cycle()`), except scenario (d), which
kills and restarts a real `schedmate watch` process.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from slurm_cluster import HOST, require_conf

from schedmate.core.cluster import JobState, JobView
from schedmate.core.settings import Settings, SlurmSettings, load_settings
from schedmate.integrations.slurm import SlurmBackend, parse_scontrol_record
from schedmate.integrations.watch import CycleReport, Watcher
from schedmate.sdk.watch import build_watcher, job_report

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def conf() -> str:
    return require_conf()


@pytest.fixture(scope="module")
def slurm(conf: str) -> SlurmBackend:
    return SlurmBackend(SlurmSettings(conf=conf, timeout_s=10))


def run(args: list[str], conf: str, **kw: Any) -> str:
    env = {**os.environ, "SLURM_CONF": conf}
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=30, check=False, **kw)
    assert out.returncode == 0, f"{args[0]} failed: {out.stderr.strip()}"
    return out.stdout


_submitted: list[str] = []
_partitions: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def _cleanup(conf: str) -> Iterator[None]:
    yield
    env = {**os.environ, "SLURM_CONF": conf}
    if _submitted:
        subprocess.run(["scancel", *_submitted], env=env, check=False, timeout=30)
    # the scenarios' partitions go too (a partition with active jobs is refused: retry briefly)
    for name in _partitions:
        for _ in range(10):
            done = subprocess.run(
                ["scontrol", "delete", f"PartitionName={name}"],
                env=env,
                check=False,
                timeout=30,
                capture_output=True,
            )
            if done.returncode == 0:
                break
            time.sleep(0.5)


def partition(conf: str) -> str:
    """A fresh partition on the test cluster's node: the scenario's own allowlist."""
    name = "t" + uuid.uuid4().hex[:8]
    run(
        ["scontrol", "create", f"PartitionName={name}", f"Nodes={HOST}", "MaxTime=INFINITE", "State=UP"], conf
    )
    _partitions.append(name)
    return name


def sbatch(conf: str, workdir: Path, part: str, script: str, *extra: str) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "job.sh"
    path.write_text("#!/bin/bash\n" + script)
    out = run(
        [
            "sbatch",
            "--parsable",
            "-p",
            part,
            "-D",
            str(workdir),
            "-o",
            "out.log",
            "--open-mode=append",
            *extra,
            str(path),
        ],
        conf,
    )
    job_id = out.strip().split(";")[0]
    _submitted.append(job_id)
    return job_id


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def wait_state(slurm: SlurmBackend, job_id: str, *states: JobState, timeout: float = 40) -> JobView:
    def check() -> JobView | None:
        j = slurm.job(job_id)
        return j if j is not None and j.state in states else None

    return wait_for(check, timeout, f"job {job_id} in {[s.value for s in states]}")  # type: ignore[no-any-return]


def scontrol_job(conf: str, job_id: str) -> dict[str, str]:
    return parse_scontrol_record(run(["scontrol", "show", "job", "-o", job_id], conf).strip())


def settings(
    conf: str, cache: Path, part: str, failure: dict[str, Any] | None = None, **watch: Any
) -> Settings:
    """Watch acting on `part` only; recovery policy in [failure] (retry budget 2 unless given)."""
    return load_settings(
        overrides={
            "embedder": {"backend": "none"},
            "llm": {"base_url": ""},
            "cache_dir": str(cache),
            "slurm": {"conf": conf, "timeout_s": 10},
            "watch": {"execute": True, "partitions": [part], "interval_s": 1, **watch},
            "failure": {"retry_budget": 2, **(failure or {})},
        },
        environ={},
    )


def cycle(s: Settings) -> tuple[CycleReport, list[dict[str, Any]], Watcher]:
    buf = io.StringIO()
    w = build_watcher(s, log=buf)
    try:
        rep = w.cycle()
    finally:
        w.store.close()
    logs = [json.loads(line) for line in buf.getvalue().splitlines()]
    return rep, logs, w


def mine(rep: CycleReport, job_id: str) -> list[dict[str, Any]]:
    return [a for a in rep.actions if a["job_id"] == job_id]


PROGRESS = """
for i in $(seq 1 400); do echo "iter $i/400: loss 3.$((1000 - i)), time 250.00ms"; sleep 0.25; done
"""

NCCL = """
echo "iter 1/100: loss 3.2, time 500.00ms"
echo "iter 2/100: loss 3.1, time 500.00ms"
echo "$(hostname -s):3468:3905 [0] NCCL INFO Channel 00/02 :    0   1"
echo "$(hostname -s):3468:3905 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)"
echo "RuntimeError: NCCL communicator was aborted on rank 0. Original reason for failure was: NCCL error: remote process exited or there was a network error, NCCL version 2.18.5"
exit 1
"""

PY_EXCEPTION = """
echo "iter 1/100: loss 3.2, time 500.00ms"
echo "Traceback (most recent call last):"
echo '  File "train.py", line 9, in main'
echo '    lr = cfg["lr"]'
echo "KeyError: 'lr'"
exit 1
"""

FORGED = """
echo "iter 1/100: loss 3.2, time 500.00ms"
echo "srun: error: gpu-node-7: task 0: Exited with exit code 1"
echo "gpu-node-7:3468:3905 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)"
echo "RuntimeError: NCCL error on node gpu-node-7: remote process exited or there was a network error"
echo "slurmstepd: error: *** JOB 1 ON gpu-node-7 CANCELLED AT 2026-11-24T07:00:00 DUE TO NODE FAILURE ***"
exit 1
"""


def node_state(slurm: SlurmBackend) -> str:
    n = slurm.snapshot().node(HOST)
    assert n is not None
    return n.state.value


# -- (a) progress and ETA in the Comment and on /metrics ------------------------------------------
def test_a_progress_and_eta_in_comment_and_metrics(conf: str, slurm: SlurmBackend, tmp_path: Path) -> None:
    part = partition(conf)
    job_id = sbatch(conf, tmp_path / "job", part, PROGRESS)
    wait_state(slurm, job_id, JobState.RUNNING)
    out = tmp_path / "job" / "out.log"
    wait_for(lambda: out.exists() and out.read_text().count("\n") >= 8, 20, "progress lines")
    s = settings(conf, tmp_path / "cache", part, metrics_port=0)
    w = build_watcher(s, log=io.StringIO())
    from schedmate.integrations.watch.metrics import WatchMetrics

    w.metrics = WatchMetrics()
    port = w.metrics.serve(0)
    try:
        w.cycle()
        comment = slurm.job(job_id).comment or ""  # type: ignore[union-attr]
        assert comment.startswith("schedmate: ") and "% done (step " in comment and "/400)" in comment
        assert "ETA " in comment and "ETA ?" not in comment
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        line = next(
            ln
            for ln in text.splitlines()
            if ln.startswith("schedmate_job_progress{") and f'job_id="{job_id}"' in ln
        )
        assert f'partition="{part}"' in line and 'user="root"' in line
        assert 0 < float(line.rsplit(" ", 1)[1]) < 1
        assert any(ln.startswith("schedmate_job_eta_seconds{") and job_id in ln for ln in text.splitlines())
        # the next cycle reads only what was appended and moves the progress on
        first = w.logs[job_id].offset
        time.sleep(1.5)
        w.cycle()
        assert w.logs[job_id].offset > first
        later = slurm.job(job_id).comment or ""  # type: ignore[union-attr]
        assert later != comment and "% done" in later
        # a finished job drops out of /metrics
        run(["scancel", job_id], conf)
        wait_state(slurm, job_id, JobState.CANCELLED)
        w.cycle()
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert f'job_id="{job_id}"' not in text
    finally:
        w.metrics.stop()
        w.store.close()
    rep = job_report(s, job_id, backend=slurm)
    assert rep["schema_version"] >= 1 and rep["total_steps"] == 400 and rep["progress"] > 0


# -- (c) a Python exception: not requeued, annotated -----------------------------------------------
def test_c_application_error_not_requeued(conf: str, slurm: SlurmBackend, tmp_path: Path) -> None:
    part = partition(conf)
    job_id = sbatch(conf, tmp_path / "job", part, PY_EXCEPTION)
    wait_state(slurm, job_id, JobState.FAILED)
    s = settings(conf, tmp_path / "cache", part)
    rep, logs, _ = cycle(s)
    assert mine(rep, job_id) == []
    rep2, _, _ = cycle(s)
    assert mine(rep2, job_id) == []
    j = slurm.job(job_id)
    assert j is not None and j.state is JobState.FAILED and j.restarts == 0
    report = job_report(s, job_id, backend=slurm)
    assert report["diagnosis"]["category"] == "application"
    assert "KeyError" in report["diagnosis"]["root_cause"]
    notes = [e["message"] for e in report["events"] if e["kind"] == "diagnosis"]
    assert len(notes) == 1 and "not requeued" in notes[0]
    assert report["actions"] == []


# -- (b) NCCL/network error: requeued once, node excluded, not drained -----------------------------
def test_b_nccl_requeued_once_excluding_node_not_drained(
    conf: str, slurm: SlurmBackend, tmp_path: Path
) -> None:
    part = partition(conf)
    job_id = sbatch(conf, tmp_path / "job", part, NCCL)
    wait_state(slurm, job_id, JobState.FAILED)
    s = settings(conf, tmp_path / "cache", part)
    rep, logs, _ = cycle(s)
    acts = mine(rep, job_id)
    assert [(a["kind"], a["mode"], a["exclude_nodes"]) for a in acts] == [("requeue", "execute", [HOST])]
    info = scontrol_job(conf, job_id)
    assert info["JobState"] == "PENDING" and info["Restarts"] == "1" and info["ExcNodeList"] == HOST
    assert info["Comment"].startswith("schedmate: infrastructure failure (nccl")
    assert "requeued 1/2" in info["Comment"]
    assert node_state(slurm) != "DRAIN"
    assert not any(lg["event"] == "action" and lg["kind"] == "drain" for lg in logs)
    assert any(lg["event"] == "drain_not_corroborated" and lg["node"] == HOST for lg in logs)
    rep2, _, _ = cycle(s)
    assert mine(rep2, job_id) == []
    assert scontrol_job(conf, job_id)["Restarts"] == "1"


# -- (h) forged scheduler lines naming another node: nothing happens to that node ------------------
def test_h_forged_node_in_log_is_ignored(conf: str, slurm: SlurmBackend, tmp_path: Path) -> None:
    part = partition(conf)
    job_id = sbatch(conf, tmp_path / "job", part, FORGED)
    wait_state(slurm, job_id, JobState.FAILED)
    s = settings(conf, tmp_path / "cache", part)
    rep, logs, _ = cycle(s)
    acts = mine(rep, job_id)
    assert all(a["node"] != "gpu-node-7" and "gpu-node-7" not in a["exclude_nodes"] for a in acts)
    assert all(a["kind"] != "drain" for a in rep.actions)
    ignored = [lg for lg in logs if lg["event"] == "log_node_ignored" and lg["job_id"] == job_id]
    assert ignored and ignored[0]["named"] == "gpu-node-7" and ignored[0]["job_nodes"] == [HOST]
    info = scontrol_job(conf, job_id)
    assert "gpu-node-7" not in info.get("ExcNodeList", "")
    # the only node excluded is the one the scheduler placed the job on
    assert [a["exclude_nodes"] for a in acts if a["kind"] == "requeue"] in ([[HOST]], [])
    assert node_state(slurm) != "DRAIN"


# -- (d) watch killed between two cycles and restarted: no duplicate action -------------------------
def test_d_killed_and_restarted_never_repeats(conf: str, slurm: SlurmBackend, tmp_path: Path) -> None:
    part = partition(conf)
    job_id = sbatch(conf, tmp_path / "job", part, NCCL)
    wait_state(slurm, job_id, JobState.FAILED)
    cache = tmp_path / "cache"
    env = {**os.environ, "SLURM_CONF": conf, "SCHEDMATE_CACHE_DIR": str(cache)}
    cmd = [
        str(Path(sys.executable).parent / "schedmate"),
        "--embedder",
        "none",
        "--cache-dir",
        str(cache),
        "watch",
    ]
    cmd += ["--execute", "--interval", "1", "--partition", part]
    stderr = tmp_path / "watch1.log"
    with stderr.open("w") as err:
        proc = subprocess.Popen([*cmd], env=env, stderr=err, stdout=subprocess.DEVNULL, cwd=REPO)
    try:
        wait_for(lambda: scontrol_job(conf, job_id).get("Restarts") == "1", 40, "the first watch's requeue")
        # let it run at least one more cycle, then kill it hard between cycles
        wait_for(lambda: stderr.read_text().count('"event": "cycle"') >= 2, 20, "a second cycle")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    first = [json.loads(ln) for ln in stderr.read_text().splitlines() if ln.startswith("{")]
    assert sum(1 for e in first if e["event"] == "action" and e["job_id"] == job_id) == 1
    for n in (2, 3):
        out = subprocess.run(
            [*cmd, "--once"], env=env, capture_output=True, text=True, timeout=60, cwd=REPO, check=False
        )
        assert out.returncode == 0, out.stderr[-500:]
        events = [json.loads(ln) for ln in out.stderr.splitlines() if ln.startswith("{")]
        assert any(e["event"] == "cycle" for e in events), f"restart {n} ran no cycle"
        assert not [e for e in events if e["event"] == "action" and e.get("job_id") == job_id]
    assert scontrol_job(conf, job_id)["Restarts"] == "1"
    s = settings(conf, cache, part)
    report = job_report(s, job_id, backend=slurm)
    assert [(a["kind"], a["status"]) for a in report["actions"]] == [("requeue", "done")]


# -- (e) a pending job with history: TimeLimit and Comment from the prediction ----------------------
def test_e_pending_job_gets_limit_and_comment_from_history(
    conf: str, slurm: SlurmBackend, tmp_path: Path
) -> None:
    from schedmate.advisor import JobRecord
    from schedmate.sdk import build_advisor

    part = partition(conf)
    code = tmp_path / "job"
    code.mkdir()
    (code / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=3)\n"
        "p.add_argument('--lr', type=float, default=1e-3)\nargs = p.parse_args()\n"
        "for epoch in range(args.epochs):\n    print(f'epoch {epoch}')\n"
    )
    script = "python train.py --epochs 3\n"
    s = settings(conf, tmp_path / "cache", part)
    history = [
        JobRecord(
            job_id=f"h{i}",
            duration_s=d,
            user="root",
            name="job.sh",
            n_gpus=1,
            n_nodes=1,
            code_dir=str(code),
            command="#!/bin/bash\n" + script,
            status="COMPLETED",
        )  # fmt: skip
        for i, d in enumerate([1100.0, 1200.0, 1250.0, 1300.0, 1150.0, 1220.0])
    ]
    build_advisor(s).import_jobs(history)
    job_id = sbatch(conf, code, part, script, "--hold", "-t", "180", "--gres=gpu:1")
    j = wait_state(slurm, job_id, JobState.PENDING)
    assert j.time_limit_s == 180 * 60
    rep, logs, _ = cycle(s)
    advised = next(lg for lg in logs if lg["event"] == "advised" and lg["job_id"] == job_id)
    p90 = advised["p90_s"]
    assert advised["neighbors"] > 0 and p90 is not None
    after = slurm.job(job_id)
    assert after is not None and after.time_limit_s is not None
    floor = max(p90 * 1.25, p90 + 300)
    assert floor <= after.time_limit_s <= floor + 60  # p90 + margin, rounded up to a minute
    assert after.time_limit_s < 180 * 60  # never above the user's request
    assert (after.comment or "").startswith("schedmate: predicted ")
    assert [a["kind"] for a in mine(rep, job_id)] == ["update"]
    rep2, _, _ = cycle(s)
    assert mine(rep2, job_id) == []  # no second update


# -- (f) repeated identical failures: requeues stop at the budget ----------------------------------
def test_f_requeues_stop_at_budget(conf: str, slurm: SlurmBackend, tmp_path: Path) -> None:
    part = partition(conf)
    job_id = sbatch(conf, tmp_path / "job", part, NCCL)
    s = settings(conf, tmp_path / "cache", part, failure={"retry_budget": 2})
    for attempt in range(3):
        wait_for(
            lambda a=attempt: (
                (j := slurm.job(job_id)) is not None and j.state is JobState.FAILED and j.restarts == a
            ),
            40,
            f"failure {attempt + 1}",
        )
        rep, _, _ = cycle(s)
        acts = mine(rep, job_id)
        if attempt < 2:
            assert [a["kind"] for a in acts] == ["requeue"]
            # on a one-node cluster the excluded node is the only one: an operator (here the test)
            # lets the job run again there at once
            run(["scontrol", "update", f"JobId={job_id}", "ExcNodeList=", "StartTime=now"], conf)
        else:
            assert acts == []
    report = job_report(s, job_id, backend=slurm)
    assert [a["kind"] for a in report["actions"]] == ["requeue", "requeue"]
    assert any("budget (2) exhausted" in e["message"] for e in report["events"])
    assert slurm.job(job_id).restarts == 2  # type: ignore[union-attr]


# -- (g) a job killed at its time limit: requeued with a larger limit, within the cap ---------------
@pytest.fixture(scope="module", autouse=True)
def timeout_job(conf: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Path]:
    """Submitted early: Slurm kills it at its 1-minute limit while the other scenarios run."""
    part = partition(conf)
    d = tmp_path_factory.mktemp("timeout") / "job"
    script = 'for i in $(seq 1 600); do echo "iter $i/600: loss 2.0, time 1000.00ms"; '
    script += 'if [ $((i % 10)) = 0 ]; then echo "Saving checkpoint to ckpt/step-$i.pt"; fi; sleep 1; done\n'
    return sbatch(conf, d, part, script, "-t", "1"), part, d


def test_g_timeout_requeued_with_larger_limit(
    conf: str, slurm: SlurmBackend, tmp_path: Path, timeout_job: tuple[str, str, Path]
) -> None:
    job_id, part, _ = timeout_job
    wait_state(slurm, job_id, JobState.TIMEOUT, timeout=150)
    s = settings(conf, tmp_path / "cache", part, failure={"max_time_limit_s": 150})
    rep, _, _ = cycle(s)
    acts = mine(rep, job_id)
    assert [(a["kind"], a["time_limit_s"]) for a in acts] == [
        ("requeue", 120.0)
    ]  # 2 x 60 s, under the 150 s cap
    info = scontrol_job(conf, job_id)
    assert info["JobState"] == "PENDING" and info["TimeLimit"] == "00:02:00"
    assert "resume from ckpt/step-" in info["Comment"]
    run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], conf)
    # the second kill: 2 x 120 s is over the 150 s cap -> 150 s; a third would gain nothing
    s2 = settings(conf, tmp_path / "cache", part, failure={"max_time_limit_s": 150, "time_limit_factor": 1.1})
    rep2, _, _ = cycle(s2)
    assert mine(rep2, job_id) == []  # still pending/running: nothing to do yet


# -- schedmate slurm import-history: completed jobs from sacct into the Advisor's history ------------
def test_import_history_from_sacct(conf: str, slurm: SlurmBackend, tmp_path: Path) -> None:
    from schedmate.sdk import build_advisor
    from schedmate.sdk.slurm import import_history

    part = partition(conf)
    job_id = sbatch(conf, tmp_path / "job", part, "sleep 2\necho done\n")
    wait_state(slurm, job_id, JobState.COMPLETED)
    s = settings(conf, tmp_path / "cache", part)
    rows = {r.job.job_id: r for r in slurm.history(since=time.time() - 3600)}
    assert job_id in rows and rows[job_id].elapsed_s is not None and rows[job_id].elapsed_s >= 2
    rep = import_history(s, days=1)
    assert rep["schema_version"] >= 1 and rep["imported"] >= 1 and rep["seen"] >= rep["imported"]
    stored = build_advisor(s).store.get(job_id)
    assert stored is not None and stored.duration_s == rows[job_id].elapsed_s


# -- diagnose --backend slurm: dry run by default, --execute requeues once, a second run does nothing --
def diagnose_cli(conf: str, cache: Path, log: Path, job_id: str, *flags: str) -> list[dict[str, Any]]:
    cmd = [str(Path(sys.executable).parent / "schedmate"), "--embedder", "none", "--cache-dir", str(cache)]
    cmd += ["diagnose", str(log), "--job-id", job_id, "--backend", "slurm", "--json", *flags]
    env = {**os.environ, "SLURM_CONF": conf}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
    assert "Traceback" not in out.stderr, out.stderr[-800:]
    assert out.returncode in (0, 1), out.stderr[-500:]
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_diagnose_execute_requeues_once_through_slurm(conf: str, slurm: SlurmBackend, tmp_path: Path) -> None:
    part = partition(conf)
    job_id = sbatch(conf, tmp_path / "job", part, NCCL)
    wait_state(slurm, job_id, JobState.FAILED)
    log, cache = tmp_path / "job" / "out.log", tmp_path / "cache"
    (dry,) = diagnose_cli(conf, cache, log, job_id)
    assert [(a["action"], a["status"], a["exclude_nodes"]) for a in dry["recovery"]] == [
        ("exclude_node", "dry_run", [HOST])
    ]
    assert scontrol_job(conf, job_id)["Restarts"] == "0"  # the default is a dry run
    (done,) = diagnose_cli(conf, cache, log, job_id, "--execute")
    assert [(a["action"], a["status"]) for a in done["recovery"]] == [("exclude_node", "executed")]
    assert done["recovery"][0]["action_id"] == dry["recovery"][0]["action_id"]
    info = scontrol_job(conf, job_id)
    assert info["JobState"] == "PENDING" and info["Restarts"] == "1" and info["ExcNodeList"] == HOST
    (again,) = diagnose_cli(conf, cache, log, job_id, "--execute")
    assert all(a["status"] != "executed" for a in again["recovery"])
    assert [a["action"] for a in again["recovery"]] == ["notify"]  # the scheduler: pending again
    assert scontrol_job(conf, job_id)["Restarts"] == "1"
    # watch on the same ledger sees the execution as this job's recovery action
    s = settings(conf, cache, part)
    rep, _, _ = cycle(s)
    assert mine(rep, job_id) == []
    report = job_report(s, job_id, backend=slurm)
    assert [(a["kind"], a["status"]) for a in report["actions"]] == [("requeue", "done")]


def test_diagnose_unknown_job_is_one_line(conf: str, tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("RuntimeError: NCCL error\n")
    cmd = [str(Path(sys.executable).parent / "schedmate"), "--embedder", "none", "--cache-dir", str(tmp_path)]
    cmd += ["diagnose", str(log), "--job-id", "99999999", "--backend", "slurm", "--execute"]
    out = subprocess.run(
        cmd, env={**os.environ, "SLURM_CONF": conf}, capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == ["error: job 99999999: unknown to the scheduler (slurm)"]


# -- a memory-limit kill: resubmitted with more memory (MinMemoryNode on the real job) ------------------
def test_memory_limit_kill_resubmitted_with_more_memory(
    conf: str, slurm: SlurmBackend, tmp_path: Path
) -> None:
    """The test cluster enforces no memory (task/none, jobacct_gather/none, CR_Core), so Slurm
    cannot end a job OUT_OF_MEMORY here: the job really fails, its real view (memory request
    read from Slurm) is given the OUT_OF_MEMORY state, and the resubmission runs on real Slurm."""
    from schedmate.sdk.failures import build_failure_handler, recover_job

    part = partition(conf)
    script = 'echo "iter 3/10: loss 1.0"\necho "Saving checkpoint to ckpt/step-3.pt"\nexit 1\n'
    job_id = sbatch(conf, tmp_path / "job", part, script, "--mem=300M")
    view = wait_state(slurm, job_id, JobState.FAILED)
    assert view.mem == "300M"  # from scontrol (22.05's squeue --json leaves it out)
    s = settings(conf, tmp_path / "cache", part, failure={"max_mem_mb": 1000})
    handler = build_failure_handler(s, slurm)
    oom = view.with_(state=JobState.OUT_OF_MEMORY)
    rep = recover_job(handler, oom, dry_run=False)
    assert [(a.action.value, a.new_mem, a.status.value) for a in rep.recovery] == [
        ("resubmit_with_limit", "600M", "executed")
    ]
    assert rep.recovery[0].checkpoint == "ckpt/step-3.pt" and rep.recovery[0].exclude_nodes == ()
    info = scontrol_job(conf, job_id)
    assert info["JobState"] == "PENDING" and info["Restarts"] == "1" and info["MinMemoryNode"] == "600M"
    again = recover_job(handler, oom, dry_run=False)  # the same (stale) view: never twice
    assert [a.status.value for a in again.recovery] == ["already_done"]
    assert scontrol_job(conf, job_id)["Restarts"] == "1"
    # killed again at 600M: 2 x 600M is over the 1000 MB cap -> 1000M; then a human
    second = recover_job(handler, oom.with_(restarts=1, mem="1000M"), dry_run=False)
    assert [a.action.value for a in second.recovery] == ["notify"] and "at the cap" in second.recovery[
        0
    ].reason

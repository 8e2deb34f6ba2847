"""SlurmBackend against fake Slurm commands (scripts in a bin dir): argument lists, timeouts,
one-line errors, refused ids. The real slurmctld is in tests/integration/test_slurm_watch.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from schedmate.core.errors import BackendError, BackendUnavailable
from schedmate.core.settings import SlurmSettings
from schedmate.integrations.slurm import SlurmBackend


def fake(bin_dir: Path, name: str, body: str) -> None:
    p = bin_dir / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    return d


def backend(bin_dir: Path, timeout_s: float = 5.0) -> SlurmBackend:
    return SlurmBackend(SlurmSettings(bin_dir=str(bin_dir), timeout_s=timeout_s))


def recorder(bin_dir: Path, name: str) -> Path:
    """A fake command that writes each argument on its own NUL-terminated record."""
    log = bin_dir.parent / f"{name}.args"
    fake(bin_dir, name, f'for a in "$@"; do printf "%s\\0" "$a" >> {log}; done; printf "\\n" >> {log}\n')
    return log


def calls(log: Path) -> list[list[str]]:
    return [[a for a in rec.split("\0") if a] for rec in log.read_text().split("\n") if rec]


def test_snapshot_from_json(bin_dir: Path) -> None:
    jobs = {
        "errors": [],
        "jobs": [{"job_id": 5, "job_state": "PENDING", "user_name": "u", "partition": "gpu"}],
    }
    nodes = {"errors": [], "nodes": [{"name": "n1", "state": "idle", "partitions": ["gpu"]}]}
    fake(bin_dir, "squeue", f"cat <<'EOF'\n{json.dumps(jobs)}\nEOF\n")
    fake(bin_dir, "sinfo", f"cat <<'EOF'\n{json.dumps(nodes)}\nEOF\n")
    snap = backend(bin_dir).snapshot()
    assert [j.job_id for j in snap.jobs] == ["5"] and snap.node("n1") is not None


def test_timeout_is_one_line_unavailable(bin_dir: Path) -> None:
    fake(bin_dir, "squeue", "exec sleep 30\n")
    with pytest.raises(BackendUnavailable, match=r"slurm: squeue timed out after 0.5 s"):
        backend(bin_dir, timeout_s=0.5).snapshot()


def test_controller_down_and_errors(bin_dir: Path) -> None:
    fake(
        bin_dir,
        "squeue",
        "echo 'squeue: error: Unable to contact slurm controller (connect failure)' >&2\nexit 1\n",
    )
    with pytest.raises(BackendUnavailable) as err:
        backend(bin_dir).snapshot()
    assert (
        str(err.value) == "slurm: squeue: squeue: error: Unable to contact slurm controller (connect failure)"
    )
    fake(bin_dir, "squeue", "echo '{\"jobs\": [' \n")
    with pytest.raises(BackendError, match="not JSON"):
        backend(bin_dir).snapshot()


def test_missing_command(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="squeue not found"):
        SlurmBackend(SlurmSettings(bin_dir=str(tmp_path))).snapshot()


def test_unknown_job_is_none(bin_dir: Path) -> None:
    fake(bin_dir, "squeue", "echo 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n")
    assert backend(bin_dir).job("123") is None


def test_actions_are_argument_lists_with_clean_text(bin_dir: Path) -> None:
    log = recorder(bin_dir, "scontrol")
    b = backend(bin_dir)
    b.update("77", comment="schedmate: 50% done\n$(reboot); `x`", time_limit_s=3601)
    b.requeue("77", exclude_nodes=["gpu-01", "gpu-02"], time_limit_s=7200)
    b.drain("gpu-01", "nccl errors\nfrom 2 users")
    got = calls(log)
    assert got[0] == ["update", "JobId=77", "TimeLimit=61", "Comment=schedmate: 50% done $(reboot); `x`"]
    assert got[1] == ["requeue", "77"]
    assert got[2] == ["update", "JobId=77", "ExcNodeList=gpu-[01-02]", "TimeLimit=120"]
    assert got[3] == ["update", "NodeName=gpu-01", "State=DRAIN", "Reason=nccl errors from 2 users"]


@pytest.mark.parametrize("bad", ["1;reboot", "", "12 13", "-1", "../5"])
def test_bad_job_ids_never_reach_a_command(bin_dir: Path, bad: str) -> None:
    log = recorder(bin_dir, "scontrol")
    with pytest.raises(BackendError, match="refusing job id"):
        backend(bin_dir).hold(bad)
    assert not log.exists()


def test_bad_node_names_never_reach_a_command(bin_dir: Path) -> None:
    log = recorder(bin_dir, "scontrol")
    b = backend(bin_dir)
    with pytest.raises(BackendError, match="refusing node name"):
        b.drain("n1 State=DOWN", "x")
    with pytest.raises(BackendError, match="refusing node name"):
        b.requeue("5", exclude_nodes=["ok", "--all"])
    assert not log.exists()


def test_job_script_is_bounded(bin_dir: Path) -> None:
    fake(bin_dir, "scontrol", "head -c 6000000 /dev/zero | tr '\\0' 'x'\n")
    script = backend(bin_dir).job_script("5")
    assert script is not None and len(script) == 4 * 1024 * 1024


def test_sacct_falls_back_to_jobcomp(bin_dir: Path) -> None:
    row = "11|t|u|gpu|COMPLETED|0:0|2026-11-24T06:38:07|2026-11-24T06:38:08|2026-11-24T06:39:08|60|5|1|n1||4G|/w"
    fake(
        bin_dir,
        "sacct",
        f'if [ "$1" = "-c" ]; then echo "{row}"; else echo "sacct: fatal: slurm not configured with slurmdbd" >&2; exit 1; fi\n',
    )
    b = backend(bin_dir)
    assert [r.job.job_id for r in b.history()] == ["11"]
    assert [r.elapsed_s for r in b.history()] == [60.0]


def test_conf_is_passed(bin_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "env"
    fake(bin_dir, "scontrol", f'echo "$SLURM_CONF" > {out}\n')
    SlurmBackend(SlurmSettings(bin_dir=str(bin_dir), conf="/etc/x/slurm.conf")).hold("1")
    assert out.read_text().strip() == "/etc/x/slurm.conf"
    assert os.environ.get("SLURM_CONF") != "/etc/x/slurm.conf"


def test_requeue_with_more_memory_passes_megabytes(bin_dir: Path) -> None:
    """22.05's `scontrol update MinMemoryNode=` takes MB only ('600M' is refused, seen on the real
    cluster); a bad amount never reaches a command, and nothing is requeued before it is checked."""
    log = recorder(bin_dir, "scontrol")
    b = backend(bin_dir)
    b.requeue("77", mem="96G")
    b.requeue("78", mem="600M")
    assert calls(log)[1] == ["update", "JobId=77", "MinMemoryNode=98304"]
    assert calls(log)[3] == ["update", "JobId=78", "MinMemoryNode=600"]
    n = len(calls(log))
    with pytest.raises(BackendError, match="refusing memory"):
        b.requeue("79", mem="1G; scancel")
    assert len(calls(log)) == n

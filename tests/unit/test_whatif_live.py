"""`whatif --live` without a cluster: `sdk.live` on the in-memory backend (exact answers where
the future is known), `squeue --start` parsing, and the command against fake Slurm commands
(one-line errors, JSON lines). The real slurmctld is in tests/integration/test_whatif_live.py."""

from __future__ import annotations

import json
import stat
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.core.cluster import InMemoryClusterBackend, JobState, JobView, NodeState, NodeView
from schedmate.core.errors import InputError
from schedmate.core.settings import Settings, load_settings
from schedmate.core.types import SCHEMA_VERSION
from schedmate.integrations.slurm.start import SlurmStart, parse_squeue_start, squeue_start_args
from schedmate.integrations.watch import WatchStore
from schedmate.sdk.live import DurationSource, live_report, predict_live, prediction_from_comment

T = 1_000_000.0
runner = CliRunner()


def settings(tmp_path: Path) -> Settings:
    return load_settings(overrides={"cache_dir": str(tmp_path / "cache")}, environ={})


def cluster(*nodes: NodeView) -> InMemoryClusterBackend:
    return InMemoryClusterBackend(nodes={n.name: n for n in nodes}, time=T)


def gpu_node(name: str = "n1", gpus: int = 4, parts: tuple[str, ...] = ("gpu",)) -> NodeView:
    return NodeView(name, NodeState.MIXED, gpus=gpus, partitions=parts)


def running(job_id: str, gpus: int, eta: float | None, part: str = "gpu", **kw: Any) -> JobView:
    return JobView(
        job_id,
        user="u",
        state=JobState.RUNNING,
        partition=part,
        gpus=gpus,
        submit_time=T - 500,
        eta_s=eta,
        **kw,
    )


def pending(job_id: str, gpus: int, submit: float, part: str = "gpu", **kw: Any) -> JobView:
    return JobView(job_id, user="u", partition=part, gpus=gpus, submit_time=submit, **kw)


# -- the exact case: strict FIFO, known durations, no arrivals ------------------------------------


def test_strict_fifo_with_known_durations_is_exact(tmp_path: Path) -> None:
    be = cluster(gpu_node())
    be.add_job(running("1", 2, 100.0))
    be.add_job(running("2", 2, 300.0))
    be.add_job(pending("3", 2, T - 30, estimate_s=50.0))  # 2 GPUs free at +100
    be.add_job(pending("4", 4, T - 20, estimate_s=100.0))  # all 4: after 2 (+300) and 3 (+150)
    be.add_job(pending("5", 1, T - 10, estimate_s=10.0))  # strict FIFO: behind 4, until +400
    preds = predict_live(settings(tmp_path), backend=be, arrivals=False, samples=5, policy="fifo")
    got = {p.job_id: (p.p10_s, p.p50_s, p.p90_s) for p in preds}
    assert got == {"3": (T + 100,) * 3, "4": (T + 300,) * 3, "5": (T + 400,) * 3}
    assert [p.queue_position for p in preds] == [1, 2, 3]
    assert all(p.duration_source == DurationSource.ESTIMATE and p.started_in == 5 for p in preds)
    assert [p.wait(p.p50_s) for p in preds] == [100.0, 300.0, 400.0]


def test_no_history_running_jobs_end_at_their_limit_and_pending_take_theirs(tmp_path: Path) -> None:
    """What Slurm's planner assumes, and what the test cluster then does."""
    be = cluster(gpu_node(gpus=2))
    be.add_job(running("1", 2, None, start_time=T - 60, time_limit_s=600.0))
    be.add_job(pending("2", 1, T - 5, time_limit_s=120.0))
    be.add_job(pending("3", 2, T - 4, time_limit_s=300.0))
    rep = live_report(settings(tmp_path), backend=be, samples=3)
    by = {p.job_id: p for p in rep.predictions}
    assert by["2"].p50_s == T + 540 and by["2"].duration_s == 120.0
    assert by["2"].duration_source == DurationSource.TIME_LIMIT
    assert by["3"].p50_s == T + 660  # after 2 ends
    assert rep.running == 1 and rep.history_jobs == 0


def test_history_draws_durations_and_is_capped_by_nothing_we_made_up(tmp_path: Path) -> None:
    be = cluster(gpu_node(gpus=1))
    be.add_job(running("1", 1, 200.0))
    be.add_job(pending("2", 1, T - 5, time_limit_s=7200.0))
    be.add_job(pending("3", 1, T - 4, time_limit_s=7200.0))
    hist = [
        JobView(
            f"h{i}",
            user="u",
            state=JobState.COMPLETED,
            partition="gpu",
            gpus=1,
            submit_time=T - 3600 * (i + 2),
            start_time=T - 3600 * (i + 2),
            end_time=T - 3600 * (i + 2) + d,
        )
        for i, d in enumerate((100.0, 200.0, 400.0, 800.0))
    ]
    rep = live_report(settings(tmp_path), backend=be, history=hist, samples=20, arrivals=False)
    p2, p3 = rep.predictions
    assert rep.history_jobs == 4
    assert p2.duration_source == DurationSource.HISTORY and p2.duration_s is None
    assert p2.p50_s == T + 200  # the head starts when the running job ends, whatever it draws
    assert p3.p10_s is not None and p3.p90_s is not None
    assert T + 300 <= p3.p10_s <= p3.p90_s <= T + 1000  # 200 + one of the 4 durations
    assert p3.p10_s < p3.p90_s  # the draws differ between futures


# -- which jobs are simulated, and together with which -------------------------------------------


def test_partitions_sharing_a_node_share_its_gpus(tmp_path: Path) -> None:
    be = cluster(gpu_node("n1", 2, ("a", "b")), gpu_node("n2", 2, ("c",)))
    be.add_job(running("1", 2, 500.0, part="a"))
    be.add_job(pending("2", 2, T - 5, part="b", estimate_s=60.0))  # b's GPUs are a's: busy
    be.add_job(pending("3", 2, T - 4, part="c", estimate_s=60.0))  # c has its own node
    by = {p.job_id: p for p in predict_live(settings(tmp_path), backend=be, arrivals=False, samples=1)}
    assert by["2"].p50_s == T + 500 and by["3"].p50_s == T
    assert by["2"].partition == "b"  # reported with its own partition, simulated in a's pool


def test_drained_node_keeps_only_what_its_jobs_hold(tmp_path: Path) -> None:
    be = cluster(
        NodeView("n1", NodeState.DRAIN, gpus=4, gpus_alloc=1, partitions=("gpu",)), gpu_node("n2", 1)
    )
    be.add_job(running("1", 1, 100.0))
    be.add_job(pending("2", 2, T - 5, estimate_s=60.0))
    (p,) = predict_live(settings(tmp_path), backend=be, arrivals=False, samples=1)
    assert p.p50_s == T + 100  # 2 usable GPUs (n1's held one + n2), not 5


def test_jobs_that_cannot_start_are_reported_without_a_prediction(tmp_path: Path) -> None:
    be = cluster(gpu_node())
    be.add_job(pending("1", 1, T - 9, reason="JobHeldUser", estimate_s=60.0))
    be.add_job(pending("2", 0, T - 8, estimate_s=60.0))
    be.add_job(pending("3", 8, T - 7, estimate_s=60.0))
    be.add_job(pending("4", 1, T - 6, part="nowhere", estimate_s=60.0))
    be.add_job(pending("5", 4, T - 5, estimate_s=60.0))
    by = {p.job_id: p for p in predict_live(settings(tmp_path), backend=be, arrivals=False, samples=1)}
    assert by["1"].note == "cannot start until JobHeldUser clears"
    assert by["2"].note == "asks for no GPU: not predicted"
    assert by["3"].note == "asks for 8 GPUs, its partitions have 4"
    assert by["4"].note == "its partition has no usable GPUs"
    for j in "1234":
        assert by[j].p50_s is None and by[j].queue_position == 0
        assert by[j].duration_source == DurationSource.NONE
    assert by["5"].p50_s == T and by["5"].queue_position == 1  # the held job holds nothing


def test_begin_time_job_waits_for_its_begin(tmp_path: Path) -> None:
    be = cluster(gpu_node())
    be.add_job(pending("1", 1, T - 9, reason="BeginTime", estimate_s=60.0))
    starts = {"1": SlurmStart("1", T + 120, "gpu", "BeginTime")}
    (p,) = predict_live(settings(tmp_path), backend=be, arrivals=False, samples=1, slurm_starts=starts)
    assert p.p50_s == T + 120 and p.slurm_start_s == T + 120


def test_partition_filter_and_unknown_partition(tmp_path: Path) -> None:
    be = cluster(gpu_node("n1", 4, ("a",)), gpu_node("n2", 4, ("b",)))
    be.add_job(pending("1", 1, T - 9, part="a", estimate_s=60.0))
    be.add_job(pending("2", 1, T - 8, part="b", estimate_s=60.0))
    preds = predict_live(settings(tmp_path), backend=be, partition="b", arrivals=False, samples=1)
    assert [p.job_id for p in preds] == ["2"]
    with pytest.raises(InputError, match=r"--partition: no partition 'zz' on the cluster \(known: a, b\)"):
        predict_live(settings(tmp_path), backend=be, partition="zz")
    with pytest.raises(InputError, match="is not a Slurm partition name"):
        predict_live(settings(tmp_path), backend=be, partition="a;rm -rf /")
    with pytest.raises(InputError, match="--samples must be 1..1000"):
        predict_live(settings(tmp_path), backend=be, samples=0)
    with pytest.raises(InputError, match="--history-days must be"):
        predict_live(settings(tmp_path), backend=be, history_days=float("nan"))


def test_no_pending_jobs_is_an_empty_report(tmp_path: Path) -> None:
    be = cluster(gpu_node())
    be.add_job(running("1", 1, 100.0))
    rep = live_report(settings(tmp_path), backend=be)
    assert rep.predictions == () and rep.running == 1


# -- pending durations: the Advisor first ----------------------------------------------------------


@pytest.mark.parametrize(
    ("comment", "seconds"),
    [
        ("schedmate: predicted 1h02m (p90 1h30m, 3 similar jobs); limit 2h00m", 3720.0),
        ("schedmate: predicted 45m (p90 1h00m, 0 similar jobs)", 2700.0),
        ("schedmate: predicted 40s (p90 1m, 2 similar jobs)", 40.0),
        ("schedmate: predicted 2d03h (p90 3d00h, 9 similar jobs)", 183600.0),
        ("schedmate: progress 40% (step 400/1000), ETA 10m", None),
        ("predicted 1h02m by the user", None),  # not watch's Comment
        ("schedmate: predicted ? (p90 ?)", None),
        ("", None),
        (None, None),
    ],
)
def test_prediction_from_comment(comment: str | None, seconds: float | None) -> None:
    assert prediction_from_comment(comment) == seconds


def test_advisor_store_then_comment_then_time_limit(tmp_path: Path) -> None:
    s = settings(tmp_path)
    store = WatchStore(Path(s.cache_dir) / "watch.db")
    store.put_job("1", p50_s=100.0, p90_s=150.0)
    store.put_job("4", p50_s=9999.0, p90_s=9999.0)  # above its time limit: capped
    store.put_job("9", eta_s=50.0)  # a running job's ETA from the tracker
    store.close()
    be = cluster(gpu_node(gpus=1))
    be.add_job(running("9", 1, None, start_time=T - 10, time_limit_s=3600.0))
    be.add_job(pending("1", 1, T - 9, time_limit_s=3600.0))
    be.add_job(
        pending(
            "2", 1, T - 8, time_limit_s=3600.0, comment="schedmate: predicted 5m (p90 9m, 4 similar jobs)"
        )
    )
    be.add_job(pending("3", 1, T - 7, time_limit_s=600.0))
    be.add_job(pending("4", 1, T - 6, time_limit_s=60.0))
    by = {p.job_id: p for p in predict_live(s, backend=be, arrivals=False, samples=1)}
    assert (by["1"].duration_s, by["1"].duration_source) == (100.0, DurationSource.ADVISOR)
    assert (by["2"].duration_s, by["2"].duration_source) == (300.0, DurationSource.COMMENT)
    assert (by["3"].duration_s, by["3"].duration_source) == (600.0, DurationSource.TIME_LIMIT)
    assert (by["4"].duration_s, by["4"].duration_source) == (60.0, DurationSource.ADVISOR)
    # the running job's ETA is the tracker's (written just now), not its time limit
    assert by["1"].p50_s == pytest.approx(T + 50.0, abs=5.0)
    assert by["2"].p50_s == pytest.approx(T + 150.0, abs=5.0)
    assert by["4"].p50_s == pytest.approx(T + 1050.0, abs=5.0)


def test_json_record_has_schema_version_and_no_nan(tmp_path: Path) -> None:
    be = cluster(gpu_node())
    be.add_job(pending("1", 1, T - 9, estimate_s=60.0))
    be.add_job(pending("2", 1, T - 8, reason="JobHeldAdmin"))
    for p in predict_live(settings(tmp_path), backend=be, arrivals=False, samples=1):
        rec = p.to_json_dict()
        assert rec["schema_version"] == SCHEMA_VERSION
        json.dumps(rec, allow_nan=False)
        assert {"p10_start", "p50_start", "p90_start", "slurm_start", "queue_position", "note"} <= set(rec)


# -- squeue --start ------------------------------------------------------------------------------


def _local(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()


def test_squeue_start_our_format() -> None:
    text = (
        "55|2026-11-24T07:52:55|gpu|Resources\n"
        "56|N/A|gpu|Priority\n"
        "57|Unknown|long|None\n"
        "58_3|1795500000|gpu|BeginTime\n"
        "59_[1-4%2]||gpu|JobArrayTaskLimit\n"
        "\n"
    )
    got = parse_squeue_start(text)
    assert got["55"] == SlurmStart("55", _local("2026-11-24T07:52:55"), "gpu", "Resources")
    assert got["56"].start_time is None and got["56"].reason == "Priority"
    assert got["57"] == SlurmStart("57", None, "long", None)
    assert got["58_3"].start_time == 1795500000.0
    assert got["59_[1-4%2]"].start_time is None
    assert parse_squeue_start("JOBID|START_TIME|PARTITION|REASON\n60|N/A|gpu|Resources\n").keys() == {"60"}
    assert parse_squeue_start("") == {}


def test_squeue_start_default_table() -> None:
    text = """\
             JOBID PARTITION     NAME     USER ST          START_TIME  NODES SCHEDNODES           NODELIST(REASON)
                55 t494fb140   job.sh     root PD 2026-11-24T07:52:55      1 (null)               (BeginTime)
                29      demo   my job     root PD                 N/A      1 (null)               (BadConstraints)
                31      demo   job.sh     root PD                 N/A      1 (null)               (launch failed requeued held)
"""
    got = parse_squeue_start(text)
    assert got["55"] == SlurmStart("55", _local("2026-11-24T07:52:55"), "t494fb140", "BeginTime")
    assert got["29"] == SlurmStart("29", None, "demo", "BadConstraints")  # a name with a space
    assert got["31"].reason == "launch failed requeued held"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("55|N/A|gpu\n", r"squeue --start line 1: 3 fields, expected 4"),
        ("x1|N/A|gpu|Priority\n", r"line 1: 'x1' is not a job id"),
        ("55|2026-13-45T99:00:00|gpu|Priority\n", r"line 1: start time '2026-13-45T99:00:00' not understood"),
        ("55 gpu job.sh root PD N/A 1\n", r"line 1: neither .* fields nor a table row after a header"),
        ("JOBID PARTITION NAME\n55 gpu job\n", r"line 1: a header without START_TIME"),
        ("JOBID ST START_TIME NODELIST(REASON)\n55 PD N/A\n", r"line 2: no \(reason\) at the end of the row"),
        ("<html>Service unavailable</html>\n", r"line 1: neither"),
    ],
)
def test_squeue_start_malformed_is_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        parse_squeue_start(text)
    assert "\n" not in str(err.value)


def test_squeue_start_args_are_a_list() -> None:
    assert squeue_start_args("gpu") == [
        "squeue",
        "--start",
        "--noheader",
        "--states=PENDING",
        "--format=%i|%S|%P|%r",
        "--partition=gpu",
    ]
    with pytest.raises(InputError):
        squeue_start_args("gpu --all")


# -- the command against fake Slurm commands ------------------------------------------------------


def fake(bin_dir: Path, name: str, body: str) -> None:
    p = bin_dir / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)


def fake_slurm(tmp_path: Path, *, start: str, jobs: list[dict[str, object]] | None = None) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    now = int(time.time())
    jobs = jobs or [
        {"job_id": 7, "job_state": "RUNNING", "user_name": "u", "partition": "gpu", "tres_per_node": "gres:gpu:4",
         "node_count": 1, "start_time": now - 60, "time_limit": 10, "submit_time": now - 100},
        {"job_id": 8, "job_state": "PENDING", "user_name": "u", "partition": "gpu", "tres_per_node": "gres:gpu:2",
         "node_count": 1, "time_limit": 5, "submit_time": now - 50, "state_reason": "Resources"},
    ]  # fmt: skip
    nodes = {
        "errors": [],
        "nodes": [{"name": "n1", "state": "mixed", "partitions": ["gpu"], "gres": "gpu:4"}],
    }
    squeue = json.dumps({"errors": [], "jobs": jobs})
    fake(bin_dir, "squeue", f"case \"$*\" in *--start*) {start};; *) cat <<'EOF'\n{squeue}\nEOF\n;; esac\n")
    fake(bin_dir, "sinfo", f"cat <<'EOF'\n{json.dumps(nodes)}\nEOF\n")
    fake(bin_dir, "sacct", "exit 0\n")
    return {
        "SCHEDMATE_SLURM__BIN_DIR": str(bin_dir),
        "SCHEDMATE_SLURM__TIMEOUT_S": "1",
        "SCHEDMATE_CACHE_DIR": str(tmp_path / "cache"),
    }


def test_cli_json_lines_beside_squeue_start(tmp_path: Path) -> None:
    env = fake_slurm(tmp_path, start="echo '8|2030-01-01T00:00:00|gpu|Resources'")
    r = runner.invoke(app, ["whatif", "--live", "--json", "--samples", "2"], env=env)
    assert r.exit_code == 0, r.output
    (rec,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert rec["schema_version"] == SCHEMA_VERSION and rec["job_id"] == "8"
    assert rec["slurm_start"] == _local("2030-01-01T00:00:00")
    # no history: the running job ends at its 10-minute limit (540 s from now, +/- the clock)
    assert rec["p50_wait_s"] == pytest.approx(540.0, abs=5.0)
    assert rec["duration_source"] == "time_limit" and rec["duration_s"] == 300.0
    r = runner.invoke(app, ["whatif", "--live", "--samples", "2"], env=env)
    assert r.exit_code == 0 and "squeue --start" in r.stdout and "2030" in r.stdout


@pytest.mark.parametrize(
    ("start", "exit_code", "message"),
    [
        (
            "echo 'squeue: error: Unable to contact slurm controller (connect failure)' >&2; exit 1",
            2,
            "error: slurm: squeue: squeue: error: Unable to contact slurm controller (connect failure)",
        ),
        ("exec sleep 30", 2, "error: slurm: squeue timed out after 1 s"),
        (
            "echo '8|soon|gpu|Resources'",
            2,
            "error: slurm: squeue --start line 1: start time 'soon' not understood",
        ),
    ],
)
def test_cli_slurm_down_slow_or_malformed_is_one_line(
    tmp_path: Path, start: str, exit_code: int, message: str
) -> None:
    r = runner.invoke(app, ["whatif", "--live", "--json"], env=fake_slurm(tmp_path, start=start))
    assert r.exit_code == exit_code
    assert r.stdout == ""
    assert r.stderr.strip() == message
    assert "Traceback" not in r.output


def test_cli_malformed_queue_and_missing_slurm(tmp_path: Path) -> None:
    env = fake_slurm(tmp_path, start="exit 0")
    fake(tmp_path / "bin", "squeue", "echo '{\"jobs\": ['\n")
    r = runner.invoke(app, ["whatif", "--live"], env=env)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "squeue --json" in r.stderr
    for cmd in ("squeue", "sinfo", "sacct"):
        (tmp_path / "bin" / cmd).unlink()
    r = runner.invoke(app, ["whatif", "--live"], env=env)
    assert r.exit_code == 2
    assert r.stderr.strip().startswith("error: slurm: ") and "squeue not found" in r.stderr


def test_cli_no_pending_jobs_exit_1(tmp_path: Path) -> None:
    env = fake_slurm(
        tmp_path, start="exit 0", jobs=[{"job_id": 7, "job_state": "RUNNING", "partition": "gpu"}]
    )
    r = runner.invoke(app, ["whatif", "--live", "--json"], env=env)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip() == "no pending jobs: nothing to predict"


def test_cli_live_and_trace_exclusive(tmp_path: Path) -> None:
    r = runner.invoke(app, ["whatif", "--live", "--trace", str(tmp_path / "t.csv")])
    assert r.exit_code == 2 and r.stderr.strip() == "error: --live and --trace: give one of them"
    r = runner.invoke(app, ["whatif"])
    assert r.exit_code == 2 and "give --trace FILE" in r.stderr
    r = runner.invoke(app, ["whatif", "--trace", str(tmp_path / "t.csv"), "--partition", "gpu"])
    assert r.exit_code == 2 and r.stderr.strip() == "error: --partition needs --live"

"""Watcher logic on the in-memory cluster with scripted capabilities: guard rails, the action
ledger, dry run, budgets, untrusted logs. Recovery runs through the SDK's real path (the Failure
Handler's planner and audit log) with a scripted locator/classifier. The real Slurm runs in
tests/integration/test_slurm_watch.py."""

from __future__ import annotations

import io
import json
import os
import pwd
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from schedmate.core.cluster import (
    Action,
    ActionKind,
    ClusterSnapshot,
    InMemoryClusterBackend,
    JobState,
    JobView,
    NodeState,
    NodeView,
)
from schedmate.core.errors import BackendError
from schedmate.core.settings import Settings, WatchSettings, load_settings
from schedmate.core.types import TrackResult
from schedmate.failure import AuditLog, FailureHandler, Located, RecoveryPlanner, Verdict
from schedmate.integrations.watch import Prediction, Watcher, WatchStore
from schedmate.integrations.watch.follow import JobLog
from schedmate.integrations.watch.policy import drain_allowed, fmt_duration, limit_from_prediction
from schedmate.sdk.watch import SdkCapabilities
from schedmate.tracker import MetricTracker

ME = pwd.getpwuid(os.getuid()).pw_name


class ScriptedLocator:
    """The log's last line is the root cause (when `failed`); the lines before it are read."""

    def __init__(self, failed: bool) -> None:
        self.failed = failed

    def locate(self, path: str | Path) -> Located:
        lines = Path(path).read_text().splitlines()
        if not self.failed or not lines:
            return Located(None, None, None, (), 1, False)
        return Located(len(lines), lines[-1], None, (lines[-1],), 1, True, 0, tuple(lines[:-1]))


class ScriptedClassifier:
    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict

    def classify(self, text: str, after: Sequence[str], signature: Any, **kw: Any) -> Verdict:
        return self.verdict


NO_FAILURE = Verdict("unknown", None, 0.0, "none")


class Caps(SdkCapabilities):
    """Scripted advice and diagnosis; the real (rules-only) tracker; recovery through the
    SDK's real path: the Failure Handler's planner, its audit log and watch's guard rails."""

    def __init__(
        self, pred: Prediction | None = None, verdict: Verdict | None = None, **failure: Any
    ) -> None:
        self.pred = pred or Prediction(None, None)
        self.verdict = verdict
        self.failure = failure
        self.tracker_ = MetricTracker()
        self.advised: list[str] = []
        self.diagnosed: list[str] = []
        self.remembered: list[str] = []

    def bind(self, backend: InMemoryClusterBackend, tmp_path: Path) -> Caps:
        """Settings with the audit log in tmp_path; a handler over `backend`."""
        s: Settings = load_settings(
            overrides={"cache_dir": str(tmp_path), "embedder": {"backend": "none"}, "failure": self.failure},
            environ={},
        )
        super().__init__(s, backend)
        v = self.verdict or NO_FAILURE
        planner = RecoveryPlanner(backend, self._audit(), s.failure)  # the ledger watch reads too
        self._handler = FailureHandler(
            ScriptedLocator(self.verdict is not None),  # type: ignore[arg-type]
            ScriptedClassifier(v),  # type: ignore[arg-type]
            planner,
            s.failure,
        )
        return self

    def advise(self, job: JobView, script: str | None) -> Prediction:
        self.advised.append(job.job_id)
        return self.pred

    def recover(self, job: JobView, log: str | None, guard: Any, dry_run: bool) -> Any:
        self.diagnosed.append(job.job_id)
        return super().recover(job, log, guard, dry_run)

    def track(self, lines: Sequence[str], file: str) -> TrackResult:
        return self.tracker_.track_lines(lines, file=file)

    def remember(self, jobs: Sequence[tuple[JobView, str | None]]) -> None:
        self.remembered.extend(j.job_id for j, _ in jobs)


def cluster(*nodes: str, partition: str = "gpu") -> InMemoryClusterBackend:
    b = InMemoryClusterBackend()
    for n in nodes:
        b.nodes[n] = NodeView(n, NodeState.IDLE, gpus=8, partitions=(partition,))
    return b


def watcher(
    tmp_path: Path, backend: InMemoryClusterBackend, caps: Caps, **settings: Any
) -> tuple[Watcher, io.StringIO]:
    log = io.StringIO()
    s = WatchSettings(**{"execute": True, **settings})
    caps.bind(backend, tmp_path)
    return Watcher(backend, caps, WatchStore(tmp_path / "watch.db"), s, log=log), log


def failed_job(
    tmp_path: Path,
    job_id: str = "10",
    user: str = ME,
    nodes: tuple[str, ...] = ("n1",),
    text: str = "iter 1/10: loss 1.0, time 100.00ms\nboom\n",
    **kw: Any,
) -> JobView:
    log = tmp_path / f"{job_id}.out"
    log.write_text(text)
    if user != ME:  # the job's output belongs to its user (watch reads nothing else)
        if os.getuid() != 0:
            pytest.skip("needs root to give a log to another user")
        os.chown(log, pwd.getpwnam(user).pw_uid, -1)
    return JobView(
        job_id, user=user, state=JobState.FAILED, partition="gpu", nodes=nodes, stdout_path=str(log),
        **{"start_time": 100.0, "end_time": 200.0, **kw},
    )  # fmt: skip


NCCL = Verdict("infrastructure", "nccl_error", 0.9, "signature")


def events(log: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.getvalue().splitlines()]


# -- policy -------------------------------------------------------------------------------------------
def test_limit_from_prediction_bounds() -> None:
    s = WatchSettings(time_limit_margin=0.25, time_limit_min_margin_s=300)
    assert limit_from_prediction(3600, 4 * 3600, s) == 4500  # p90 x 1.25, below the request
    assert limit_from_prediction(600, 4 * 3600, s) == 900  # p90 + 300 s when that is more
    assert limit_from_prediction(3600, 4000, s) is None  # would exceed the request
    assert limit_from_prediction(3600, None, s) == 4500  # unlimited request: any finite limit is lower
    allowed = WatchSettings(allow_above_request=True)
    assert limit_from_prediction(3600, 4000, allowed) == 4500
    capped = WatchSettings(max_time_limit_s=4000)
    assert limit_from_prediction(3600, None, capped) is None  # never below p90 + margin to meet a cap


def test_old_watch_recovery_keys_name_their_new_place() -> None:
    with pytest.raises(ValueError, match=r"watch.requeue_budget moved to failure.retry_budget"):
        WatchSettings.model_validate({"requeue_budget": 2})


def test_fmt_duration() -> None:
    assert [fmt_duration(x) for x in (40, 2700, 3725, 2 * 86400, None)] == [
        "40s",
        "45m",
        "1h02m",
        "2d00h",
        "?",
    ]


def test_drain_guard_rails() -> None:
    nodes = tuple(NodeView(f"n{i}", NodeState.IDLE, partitions=("gpu",)) for i in range(10))
    snap = ClusterSnapshot(0, (), nodes)
    s = WatchSettings(max_drained_share=0.1, drains_per_hour=1)
    assert drain_allowed("n1", snap, drains_last_hour=0, s=s)[0]
    assert not drain_allowed("n1", snap, drains_last_hour=1, s=s)[0]
    one_down = ClusterSnapshot(0, (), (NodeView("n0", NodeState.DRAIN, partitions=("gpu",)), *nodes[1:]))
    ok, why = drain_allowed("n1", one_down, drains_last_hour=0, s=s)
    assert not ok and "over 10% drained" in why
    assert not drain_allowed("zz", snap, drains_last_hour=0, s=s)[0]
    assert not drain_allowed("n1", snap, drains_last_hour=0, s=WatchSettings(partitions=["cpu"]))[0]


# -- pending ----------------------------------------------------------------------------------------
def test_pending_limit_and_comment_then_dry_run_vs_execute(tmp_path: Path) -> None:
    b = cluster("n1")
    b.add_job(JobView("5", user=ME, state=JobState.PENDING, partition="gpu", time_limit_s=4 * 3600))
    caps = Caps(Prediction(3000, 3600, "neighbors", 5))
    w, log = watcher(tmp_path, b, caps, execute=False)
    w.cycle()
    w.cycle()
    assert b.log == []  # dry run: nothing touched
    planned = [e for e in events(log) if e["event"] == "action"]
    assert len(planned) == 1 and planned[0]["mode"] == "dry-run" and planned[0]["time_limit_s"] == 4500
    assert sum(e["event"] == "comment" for e in events(log)) == 1
    assert caps.advised == ["5"]  # advised once, remembered
    w.s = WatchSettings(execute=True)
    w.cycle()
    assert ("update", "5", {"time_limit_s": 4500.0, "nice": None}) in b.log
    assert b.jobs["5"].comment == "schedmate: predicted 50m (p90 1h00m, 5 similar jobs); limit 1h15m"
    n = len(b.log)
    w.cycle()
    assert len(b.log) == n  # nothing new: limit and comment already as wanted


def test_pending_without_similar_jobs_changes_no_limit(tmp_path: Path) -> None:
    b = cluster("n1")
    b.add_job(JobView("5", user=ME, state=JobState.PENDING, partition="gpu", time_limit_s=4 * 3600))
    w, _ = watcher(tmp_path, b, Caps(Prediction(3000, 3600, "prior", 0)))
    w.cycle()
    assert b.jobs["5"].time_limit_s == 4 * 3600
    assert (b.jobs["5"].comment or "").startswith("schedmate: predicted 50m")


def test_users_own_comment_is_never_overwritten(tmp_path: Path) -> None:
    b = cluster("n1")
    b.add_job(JobView("5", user=ME, state=JobState.PENDING, partition="gpu", comment="my experiment 7"))
    w, _ = watcher(tmp_path, b, Caps(Prediction(3000, 3600, "neighbors", 5)))
    w.cycle()
    assert b.jobs["5"].comment == "my experiment 7"


def test_partition_allowlist(tmp_path: Path) -> None:
    b = cluster("n1")
    b.add_job(failed_job(tmp_path).with_(partition="other"))
    w, log = watcher(tmp_path, b, Caps(verdict=NCCL), partitions=["gpu"])
    w.cycle()
    assert b.log == []
    # the planner decided (its facts count for corroboration); the guard refused, recorded once
    refused = [r for r in AuditLog(tmp_path / "audit.jsonl").records if r.get("type") == "refused"]
    assert [r["why"] for r in refused] == ["partition other is not in watch.partitions"]
    assert not [e for e in events(log) if e["event"] == "action"]
    assert "not acted on (partition other" in w.store.events("10")[0]["message"]


# -- running -----------------------------------------------------------------------------------------
def test_running_reads_only_new_bytes_and_annotates(tmp_path: Path) -> None:
    out = tmp_path / "7.out"
    out.write_text("".join(f"iter {i}/100: loss 2.0, time 500.00ms\n" for i in range(1, 11)))
    b = cluster("n1")
    b.add_job(
        JobView("7", user=ME, state=JobState.RUNNING, partition="gpu", nodes=("n1",), stdout_path=str(out))
    )
    w, _ = watcher(tmp_path, b, Caps(), window_lines=20)
    w.cycle()
    assert b.jobs["7"].comment == "schedmate: 10% done (step 10/100); ETA 45s"
    first = w.logs["7"].offset
    with out.open("a") as fh:
        fh.write("".join(f"iter {i}/100: loss 2.0, time 500.00ms\n" for i in range(11, 51)))
    w.cycle()
    assert w.logs["7"].offset > first and len(w.logs["7"].lines) == 20  # bounded window
    assert w.logs["7"].total_lines == 50
    assert b.jobs["7"].comment == "schedmate: 50% done (step 50/100); ETA 25s"
    b.jobs["7"] = b.jobs["7"].with_(state=JobState.COMPLETED)
    w.cycle()
    assert "7" not in w.logs  # state of ended jobs is dropped


def test_joblog_skips_to_the_newest_bytes(tmp_path: Path) -> None:
    p = tmp_path / "big.out"
    p.write_text("x" * 50_000 + "\n" + "".join(f"line {i}\n" for i in range(100)))
    jl = JobLog(str(p), window=30)
    jl.read_new(max_bytes=4096, now=0.0, uid=os.getuid())
    assert list(jl.lines)[-1] == "line 99" and len(jl.lines) == 30
    p.write_text("fresh\n")  # truncated and rewritten: start over
    assert jl.read_new(max_bytes=4096, now=1.0, uid=os.getuid()) == 1 and list(jl.lines) == ["fresh"]


@pytest.mark.parametrize("kind", ["fifo", "symlink", "other_owner"])
def test_untrusted_log_files_are_not_read(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "o.out"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        secret = tmp_path / "secret"
        secret.write_text("iter 1/10: loss 1.0\n")
        path.symlink_to(secret)
    else:
        path.write_text("iter 1/10: loss 1.0\n")
    b = cluster("n1")
    user = "nobody" if kind == "other_owner" else ME
    if kind == "other_owner" and os.getuid() != 0:
        pytest.skip("needs a second user's uid")  # root in CI: the file is root's, the job is nobody's
    b.add_job(
        JobView("7", user=user, state=JobState.RUNNING, partition="gpu", nodes=("n1",), stdout_path=str(path))
    )
    w, log = watcher(tmp_path, b, Caps())
    w.cycle()
    assert b.jobs["7"].comment is None
    warn = [e for e in events(log) if e["event"] == "log_unreadable"]
    assert len(warn) == 1 and str(path) in warn[0]["error"]


# -- ended -------------------------------------------------------------------------------------------
def test_application_failure_is_not_requeued(tmp_path: Path) -> None:
    b = cluster("n1")
    b.add_job(failed_job(tmp_path))
    caps = Caps(verdict=Verdict("application", "key_error", 0.9, "signature"))
    w, _ = watcher(tmp_path, b, caps)
    w.cycle()
    w.cycle()
    assert b.log == [] and caps.diagnosed == ["10"]  # diagnosed once
    assert "not requeued" in w.store.events("10")[0]["message"]


def test_infra_failure_requeued_excluding_scheduler_node_not_forged_one(tmp_path: Path) -> None:
    b = cluster("n1", "n2")
    forged = "srun: error: n2: task 0: Exited with exit code 1\n"  # a node the job never ran on
    b.add_job(failed_job(tmp_path, nodes=("n1",), text=forged + "RuntimeError: NCCL error on n2\n"))
    w, log = watcher(tmp_path, b, Caps(verdict=NCCL))
    w.cycle()
    assert b.log[0] == ("requeue", "10", {"exclude_nodes": ("n1",), "time_limit_s": None, "mem": None})
    assert [x[0] for x in b.log[1:]] == ["update"]  # the why, in the requeued job's Comment
    assert b.nodes["n2"].state is NodeState.IDLE and b.nodes["n1"].state is NodeState.IDLE
    assert any(e["event"] == "log_node_ignored" and e["named"] == "n2" for e in events(log))


def test_drain_needs_two_users_and_stays_in_guard_rails(tmp_path: Path) -> None:
    b = cluster(*[f"n{i}" for i in range(1, 21)])
    b.add_job(failed_job(tmp_path, "10", user="daemon"))
    b.add_job(failed_job(tmp_path, "11", user="daemon"))  # the same user again: not corroboration
    w, _ = watcher(tmp_path, b, Caps(verdict=NCCL))
    w.cycle()
    assert not [x for x in b.log if x[0] == "drain"]
    b.add_job(failed_job(tmp_path, "12", user="nobody"))
    w.cycle()
    assert [x[:2] for x in b.log if x[0] == "drain"] == [("drain", "n1")]
    # a second node the same hour: refused by drains_per_hour, recorded once with why
    b.add_job(failed_job(tmp_path, "13", user="bin", nodes=("n2",)))
    b.add_job(failed_job(tmp_path, "14", user="sys", nodes=("n2",)))
    w.cycle()
    w.cycle()
    assert [x[1] for x in b.log if x[0] == "drain"] == ["n1"]
    refused = [r for r in AuditLog(tmp_path / "audit.jsonl").records if r.get("type") == "refused"]
    assert len(refused) == 1 and refused[0]["node"] == "n2" and "drains in the last hour" in refused[0]["why"]


def test_requeue_budget(tmp_path: Path) -> None:
    b = cluster("n1")
    w, _ = watcher(tmp_path, b, Caps(verdict=NCCL, retry_budget=2))
    for restarts in range(4):
        b.add_job(failed_job(tmp_path, restarts=restarts, end_time=300.0 + restarts))
        w.cycle()
    assert [x[0] for x in b.log if x[0] == "requeue"] == ["requeue", "requeue"]
    assert any("budget (2) exhausted" in e["message"] for e in w.store.events("10"))


def test_timeout_requeue_with_larger_limit_within_cap(tmp_path: Path) -> None:
    b = cluster("n1")
    j = JobView("20", user=ME, state=JobState.TIMEOUT, partition="gpu", nodes=("n1",), time_limit_s=3600.0,
                stdout_path=str(tmp_path / "none.out"), end_time=5.0)  # fmt: skip
    b.add_job(j)
    w, _ = watcher(tmp_path, b, Caps(max_time_limit_s=5400))
    w.cycle()
    assert b.log[0] == ("requeue", "20", {"exclude_nodes": (), "time_limit_s": 5400.0, "mem": None})
    assert b.log[1][:2] == ("update", "20") and "new limit 1h30m" in str(b.log[1][2]["comment"])
    b.add_job(j.with_(time_limit_s=5400.0, restarts=1, end_time=9.0))
    w.cycle()
    assert len(b.log) == 2  # killed again at the cap: nothing more to give
    assert "time limit reached at the cap (5400 s)" in w.store.events("20")[-1]["message"]


class CrashAfterApply(InMemoryClusterBackend):
    """A backend whose requeue succeeds, then the process dies before watch can mark it done."""

    def requeue(self, job_id: str, **kw: Any) -> None:
        super().requeue(job_id, **kw)
        raise SystemExit("killed")


def test_crash_between_start_and_done_never_repeats(tmp_path: Path) -> None:
    b = CrashAfterApply()
    b.nodes["n1"] = NodeView("n1", NodeState.IDLE, partitions=("gpu",))
    job = failed_job(tmp_path)
    b.add_job(job)
    w, _ = watcher(tmp_path, b, Caps(verdict=NCCL))
    with pytest.raises(SystemExit):
        w.cycle()
    w.store.close()
    b.jobs["10"] = job  # the scheduler still shows the failure (the requeue not yet visible)
    w2, log2 = watcher(tmp_path, b, Caps(verdict=NCCL))
    w2.cycle()
    assert [x[0] for x in b.log if x[0] == "requeue"] == ["requeue"]
    assert any(e["event"] == "action_unfinished" for e in events(log2))


def test_store_down_is_survived_with_backoff(tmp_path: Path) -> None:
    b = cluster("n1")
    b.add_job(failed_job(tmp_path))
    w, log = watcher(tmp_path, b, Caps(verdict=NCCL), interval_s=5, max_backoff_s=30)
    w.store._db.close()  # the store goes away under watch
    assert w.run(once=True) == 1
    err = [e for e in events(log) if e["event"] == "cycle_failed"]
    assert len(err) == 1 and err[0]["error"].startswith("watch store ") and err[0]["retry_in_s"] == 5
    assert w._backoff(3) == 20 and w._backoff(10) == 30


def test_read_only_store_is_one_line(tmp_path: Path) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    (d / "watch.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(BackendError) as err:
        WatchStore(d / "watch.db")
    assert str(err.value).startswith(f"watch store {d / 'watch.db'}: ") and "\n" not in str(err.value)


def test_scheduler_down_is_survived(tmp_path: Path) -> None:
    class Down(InMemoryClusterBackend):
        def snapshot(self) -> ClusterSnapshot:
            raise BackendError("slurm: squeue: Unable to contact slurm controller")

    w, log = watcher(tmp_path, Down(), Caps())
    assert w.run(once=True) == 1
    assert [e["error"] for e in events(log) if e["event"] == "cycle_failed"] == [
        "slurm: squeue: Unable to contact slurm controller"
    ]


def test_completed_jobs_go_to_history_once(tmp_path: Path) -> None:
    b = cluster("n1")
    b.add_job(
        JobView("30", user=ME, state=JobState.COMPLETED, partition="gpu", start_time=10.0, end_time=70.0),
        "echo hi",
    )
    caps = Caps()
    w, _ = watcher(tmp_path, b, caps)
    w.cycle()
    w.cycle()
    assert caps.remembered == ["30"]


def test_action_ids_are_stable_for_the_same_decision() -> None:
    a = Action(ActionKind.REQUEUE, job_id="1", exclude_nodes=("n1",), attempt=0)
    assert (
        a.action_id
        == Action(ActionKind.REQUEUE, job_id="1", exclude_nodes=("n1",), attempt=0, reason="x").action_id
    )
    assert a.action_id != Action(ActionKind.REQUEUE, job_id="1", exclude_nodes=("n1",), attempt=1).action_id


def test_memory_kill_resubmitted_with_more_memory_within_cap(tmp_path: Path) -> None:
    """Slurm says OUT_OF_MEMORY (the log shows nothing): the planner's resubmission with 2x the
    memory, from the checkpoint the log names, up to failure.max_mem_mb; then a human."""
    b = cluster("n1")
    text = "iter 5/10: loss 1.0, time 100.00ms\nSaving checkpoint to ckpt/step-5.pt\n"
    j = failed_job(tmp_path, "40", text=text, mem="32G").with_(state=JobState.OUT_OF_MEMORY)
    b.add_job(j)
    w, log = watcher(tmp_path, b, Caps(max_mem_mb=64 * 1024))
    w.cycle()
    assert b.log[0] == ("requeue", "40", {"exclude_nodes": (), "time_limit_s": None, "mem": "64G"})
    acts = [e for e in events(log) if e["event"] == "action"]
    assert [(a["kind"], a["recovery"], a["mem"], a["mode"]) for a in acts] == [
        ("requeue", "resubmit_with_limit", "64G", "execute")
    ]
    assert "memory 64G, resume from ckpt/step-5.pt" in str(b.log[1][2]["comment"])
    b.add_job(j.with_(mem="64G", restarts=1, end_time=300.0))
    w.cycle()
    assert [x[0] for x in b.log] == ["requeue", "update"]  # at the cap: nothing more to give
    assert "memory limit reached at the cap (65536 MB)" in w.store.events("40")[-1]["message"]


def test_dry_run_then_execute_through_the_one_ledger(tmp_path: Path) -> None:
    b = cluster("n1")
    b.add_job(failed_job(tmp_path))
    w, log = watcher(tmp_path, b, Caps(verdict=NCCL, retry_budget=1), execute=False)
    w.cycle()
    w.cycle()
    assert b.log == []  # dry run: nothing touched, planned once
    planned = [e for e in events(log) if e["event"] == "action"]
    assert [(e["mode"], e["exclude_nodes"]) for e in planned] == [("dry-run", ["n1"])]
    audit = AuditLog(tmp_path / "audit.jsonl")
    assert audit.executed_count("10") == 0  # dry runs are free
    w.s = WatchSettings(execute=True)
    w.cycle()
    w.cycle()
    assert [x[0] for x in b.log] == ["requeue", "update"]
    audit.refresh()
    assert audit.executed_count("10") == 1
    executed = [e for e in events(log) if e["event"] == "action" and e["mode"] == "execute"]
    assert len(executed) == 1 and executed[0]["action_id"] == planned[0]["action_id"]


def test_watch_starts_without_building_the_failure_handler(tmp_path: Path) -> None:
    """The recovery ledger is read at start (unfinished actions); the Failure Handler, and any
    model it loads, is built only when a job has failed."""
    b = cluster("n1")
    b.add_job(JobView("5", user=ME, state=JobState.PENDING, partition="gpu"))
    caps = SdkCapabilities(
        load_settings(overrides={"cache_dir": str(tmp_path), "embedder": {"backend": "none"}}, environ={}), b
    )
    caps.advise = lambda job, script: Prediction(None, None)  # type: ignore[method-assign]
    w = Watcher(b, caps, WatchStore(tmp_path / "watch.db"), WatchSettings(execute=True), log=io.StringIO())
    w.cycle()
    assert caps._handler is None
    b.add_job(failed_job(tmp_path, "6"))
    w.cycle()
    assert caps._handler is not None and caps._handler.planner is not None
    assert caps._handler.planner.audit is caps._audit()  # one ledger object for watch and planner

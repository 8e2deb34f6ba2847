"""Recovery planner: limits, node choice, corroboration guard rails, idempotent execution."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from schedmate.core.cluster import (
    ClusterSnapshot,
    InMemoryClusterBackend,
    JobState,
    JobView,
    NodeState,
    NodeView,
)
from schedmate.core.diagnosis import ActionStatus, RecoveryKind
from schedmate.core.errors import BackendError
from schedmate.core.settings import FailureSettings
from schedmate.failure import AuditLog, Finding, JobContext, RecoveryPlanner, parse_mem_mb
from schedmate.failure.adversarial import run_adversarial_suite

ECC = Finding("infrastructure", "ecc_error", 0.95, "requeue_exclude_node", 12, "/ck/step-100")


def planner(
    backend: InMemoryClusterBackend | None, tmp_path: Path | None = None, **fs: Any
) -> RecoveryPlanner:
    audit = AuditLog(tmp_path / "audit.jsonl" if tmp_path else None, clock=lambda: 1_800_000_000.0)
    return RecoveryPlanner(backend, audit, FailureSettings(**fs))


def cluster(*jobs: JobView, nodes: Sequence[str] = ("n1", "n2", "n3", "n4", "n5")) -> InMemoryClusterBackend:
    b = InMemoryClusterBackend.with_nodes(nodes)
    for j in jobs:
        b.add_job(j)
    return b


def ctx(b: InMemoryClusterBackend, job_id: str) -> JobContext:
    view = b.job(job_id)
    assert view is not None
    return JobContext.from_view(view)


def kinds(actions: Sequence[Any]) -> list[RecoveryKind]:
    return [a.action for a in actions]


# -- resource limits ------------------------------------------------------------------------
def test_time_limit_kill_resubmits_with_more_time_never_excludes() -> None:
    b = cluster(JobView("t1", user="ann", state=JobState.TIMEOUT, nodes=("n1",), time_limit_s=3600))
    f = Finding("infrastructure", "time_limit", 0.9, "resubmit_with_limit", 40, "/ck/t1/step-9")
    (a,) = planner(b).plan(ctx(b, "t1"), f)
    assert a.action is RecoveryKind.RESUBMIT_WITH_LIMIT and a.new_time_limit_s == 7200
    assert a.exclude_nodes == () and a.checkpoint == "/ck/t1/step-9"
    assert "scheduler:state:TIMEOUT" in a.evidence_ids


def test_scheduler_timeout_state_wins_over_log_text() -> None:
    """Slurm says TIMEOUT; the log's last line blames the GPU: still a resubmission."""
    b = cluster(JobView("t2", state=JobState.TIMEOUT, nodes=("n2",), time_limit_s=7200))
    (a,) = planner(b).plan(ctx(b, "t2"), ECC)
    assert a.action is RecoveryKind.RESUBMIT_WITH_LIMIT and a.exclude_nodes == ()


def test_time_limit_is_capped_and_unknown_limits_notify() -> None:
    b = cluster(
        JobView("cap", state=JobState.TIMEOUT, time_limit_s=6 * 86400),
        JobView("atcap", state=JobState.TIMEOUT, time_limit_s=7 * 86400),
        JobView("unk", state=JobState.TIMEOUT),
    )
    p = planner(b)
    f = Finding("infrastructure", "time_limit", 0.9, "resubmit_with_limit")
    assert p.plan(ctx(b, "cap"), f)[0].new_time_limit_s == 7 * 86400
    assert kinds(p.plan(ctx(b, "atcap"), f)) == [RecoveryKind.NOTIFY]
    assert kinds(p.plan(ctx(b, "unk"), f)) == [RecoveryKind.NOTIFY]


def test_memory_limit_kill_resubmits_with_more_memory() -> None:
    job = JobContext("m1", nodes=("n1",), mem="48G")
    f = Finding("infrastructure", "memory_limit", 0.85, "resubmit_with_limit")
    (a,) = planner(cluster()).plan(job, f)
    assert a.action is RecoveryKind.RESUBMIT_WITH_LIMIT and a.new_mem == "96G" and a.exclude_nodes == ()
    capped = planner(cluster(), max_mem_mb=64 * 1024).plan(job, f)[0]
    assert capped.new_mem == "64G"
    assert kinds(planner(cluster()).plan(JobContext("m2"), f)) == [RecoveryKind.NOTIFY]


@pytest.mark.parametrize(
    "text,mb",
    [("64G", 65536), ("65536M", 65536), ("1.5T", 1572864), ("4096", 4096), ("2 GiB", 2048), ("x", None)],
)
def test_parse_mem(text: str, mb: int | None) -> None:
    assert parse_mem_mb(text) == mb


# -- which nodes ----------------------------------------------------------------------------
def test_exclusion_only_of_nodes_the_scheduler_placed_the_job_on() -> None:
    b = cluster(JobView("mn", state=JobState.FAILED, nodes=("n1", "n2")))
    p = planner(b)
    named = Finding("infrastructure", "ecc_error", 0.95, "requeue_exclude_node", log_nodes=("n2", "n5"))
    assert p.plan(ctx(b, "mn"), named)[0].exclude_nodes == ("n2",)
    foreign = Finding("infrastructure", "ecc_error", 0.95, "requeue_exclude_node", log_nodes=("n5",))
    (a,) = p.plan(ctx(b, "mn"), foreign)
    assert a.action is RecoveryKind.REQUEUE and a.exclude_nodes == ()
    # no placement known (a caller without --nodes): a log-named node is never excluded
    (c,) = p.plan(JobContext("free"), named)
    assert c.action is RecoveryKind.REQUEUE and c.exclude_nodes == ()


def test_placement_is_validated_against_the_cluster_node_list() -> None:
    b = cluster(nodes=("n1", "n2"))
    (a,) = planner(b).plan(JobContext("x", nodes=("n9",)), ECC)
    assert a.action is RecoveryKind.REQUEUE and a.exclude_nodes == ()


def test_node_agnostic_infra_faults_requeue_without_exclusion() -> None:
    b = cluster(JobView("p", state=JobState.PREEMPTED, nodes=("n1",)))
    (a,) = planner(b).plan(ctx(b, "p"), Finding("infrastructure", "preemption", 0.95, "requeue"))
    assert a.action is RecoveryKind.REQUEUE and a.exclude_nodes == ()


def test_a_job_the_scheduler_reports_running_is_left_alone() -> None:
    b = cluster(JobView("r", state=JobState.RUNNING, nodes=("n1",)))
    assert kinds(planner(b).plan(ctx(b, "r"), ECC)) == [RecoveryKind.NOTIFY]


# -- corroboration --------------------------------------------------------------------------
def fail_on(
    p: RecoveryPlanner, b: InMemoryClusterBackend, job_id: str, user: str | None, node: str
) -> list[Any]:
    b.add_job(JobView(job_id, user=user, state=JobState.FAILED, nodes=(node,)))
    actions, _ = p.recover(ctx(b, job_id), ECC)
    return list(actions)


def test_repeat_offender_needs_two_users_as_the_scheduler_records_them() -> None:
    b = cluster()
    p = planner(b)
    assert RecoveryKind.DRAIN_NODE not in kinds(fail_on(p, b, "a1", "ann", "n1"))
    assert RecoveryKind.DRAIN_NODE not in kinds(fail_on(p, b, "a2", "ann", "n1"))  # same user
    got = fail_on(p, b, "b1", "bob", "n1")
    assert RecoveryKind.DRAIN_NODE in kinds(got)


def test_caller_claims_do_not_corroborate() -> None:
    """Records made from a caller's flags (not a scheduler's JobView) never count as users."""
    p = planner(cluster())
    for j, u in (("c1", "ann"), ("c2", "bob"), ("c3", "cy")):
        actions, _ = p.recover(JobContext(j, user=u, nodes=("n1",)), ECC)
        assert RecoveryKind.DRAIN_NODE not in kinds(actions)


def test_drains_per_cycle_are_capped() -> None:
    b = cluster()
    for n in ("n1", "n2"):
        b.nodes[n] = NodeView(n, NodeState.FAIL)
    p = planner(b, max_drains_per_cycle=1)
    first = fail_on(p, b, "j1", "ann", "n1")
    second = fail_on(p, b, "j2", "bob", "n2")
    assert RecoveryKind.DRAIN_NODE in kinds(first) and RecoveryKind.DRAIN_NODE not in kinds(second)
    assert any("quota" in a.reason for a in second)
    p.new_cycle()
    assert RecoveryKind.DRAIN_NODE in kinds(fail_on(p, b, "j3", "cy", "n2"))


def test_many_suspect_nodes_at_once_is_systemic_no_drain() -> None:
    b = cluster(nodes=[f"n{i}" for i in range(1, 9)])
    p = planner(b, max_suspect_nodes=3)
    for i in range(1, 5):
        b.nodes[f"n{i}"] = NodeView(f"n{i}", NodeState.DOWN)
    got = [fail_on(p, b, f"j{i}", f"u{i}", f"n{i}") for i in range(1, 5)]
    assert RecoveryKind.DRAIN_NODE in kinds(got[0])  # one suspect: the scheduler says DOWN
    assert RecoveryKind.DRAIN_NODE not in kinds(got[3])
    assert any("systemic" in a.reason for a in got[3])


class BrokenSnapshot(InMemoryClusterBackend):
    def snapshot(self) -> ClusterSnapshot:
        raise BackendError("slurm: squeue timed out")


def test_unreachable_scheduler_fails_open() -> None:
    b = BrokenSnapshot()
    b.add_job(JobView("j", user="ann", state=JobState.FAILED, nodes=("n1",)))
    p = planner(b, dry_run=False)
    actions, warnings = p.recover(ctx(b, "j"), ECC)
    assert kinds(actions) == [RecoveryKind.EXCLUDE_NODE] and actions[0].status is ActionStatus.EXECUTED
    assert any("squeue timed out" in w for w in warnings)


# -- execution ------------------------------------------------------------------------------
def test_execute_through_the_backend_once(tmp_path: Path) -> None:
    b = cluster(JobView("e", user="ann", state=JobState.FAILED, nodes=("n3",), time_limit_s=60))
    p = planner(b, tmp_path, dry_run=False)
    stale = ctx(b, "e")
    (a,), _ = p.recover(stale, ECC)
    assert a.status is ActionStatus.EXECUTED and a.action_id
    assert b.log == [("requeue", "e", {"exclude_nodes": ("n3",), "time_limit_s": None, "mem": None})]
    phases = [r["phase"] for r in p.audit.records if r.get("type") == "execution"]
    assert phases == ["started", "done"]
    # replayed with the same (stale) view: same action id, not repeated
    (again,), _ = p.recover(stale, ECC)
    assert again.status is ActionStatus.ALREADY_DONE and again.action_id == a.action_id
    # a fresh view says the job is pending again: nothing to do
    (fresh,), _ = p.recover(ctx(b, "e"), ECC)
    assert fresh.action is RecoveryKind.NOTIFY
    assert len(b.log) == 1


def test_crash_between_started_and_done_is_never_repeated(tmp_path: Path) -> None:
    b = cluster(JobView("c", state=JobState.FAILED, nodes=("n1",)))
    p = planner(b, tmp_path, dry_run=False)
    (planned,) = p.plan(ctx(b, "c"), ECC)
    ca = p.cluster_action(planned, attempt=0)
    assert ca is not None
    p.audit.append({"type": "execution", "phase": "started", "action_id": ca.action_id, "job_id": "c"})
    restarted = planner(b, tmp_path, dry_run=False)  # a new process reads the audit log
    (a,), _ = restarted.recover(ctx(b, "c"), ECC)
    assert a.status is ActionStatus.UNCONFIRMED and b.log == []


def test_backend_refusal_is_recorded_and_retryable(tmp_path: Path) -> None:
    b = cluster(nodes=("n1",))  # the backend does not know the job: requeue refused
    p = planner(b, tmp_path, dry_run=False)
    job = JobContext("ghost", nodes=("n1",))
    (a,), _ = p.recover(job, ECC)
    assert a.status is ActionStatus.FAILED and "no job ghost" in (a.error or "")
    b.add_job(JobView("ghost", state=JobState.FAILED, nodes=("n1",)))
    (b2,), _ = p.recover(job, ECC)
    assert b2.status is ActionStatus.EXECUTED


def test_unwritable_audit_log_executes_nothing(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "audit.jsonl").mkdir()  # a directory where the file should be
    b = cluster(JobView("w", state=JobState.FAILED, nodes=("n1",)))
    p = RecoveryPlanner(b, AuditLog(ro / "audit.jsonl"), FailureSettings(dry_run=False))
    (a,), warnings = p.recover(ctx(b, "w"), ECC)
    assert a.status is ActionStatus.FAILED and b.log == []
    assert warnings and all("\n" not in w and "audit" in w for w in warnings)


def test_dry_run_plans_carry_the_action_id_and_are_free(tmp_path: Path) -> None:
    b = cluster(JobView("d", state=JobState.FAILED, nodes=("n1",)))
    p = planner(b, tmp_path, retry_budget=1)
    for _ in range(3):
        (a,), _ = p.recover(ctx(b, "d"), ECC)
        assert a.status is ActionStatus.DRY_RUN and a.action_id
    assert b.log == [] and p.audit.executed_count("d") == 0


# -- the adversarial suite ------------------------------------------------------------------
def test_adversarial_logs_drain_nothing_and_exclude_only_placed_nodes() -> None:
    res = run_adversarial_suite()
    assert res.jobs >= 20 and res.actions_planned > 0  # the suite exercised execution
    assert res.drains == 0 and res.drained_nodes == []
    assert res.wrong_exclusions == 0


def test_json_record_never_carries_nan() -> None:
    import json

    from schedmate.core.diagnosis import FailureReport, RecoveryAction

    rec = FailureReport(
        "x.log",
        failed=True,
        confidence=float("nan"),
        recovery=(RecoveryAction(RecoveryKind.RESUBMIT_WITH_LIMIT, "j", new_time_limit_s=float("inf")),),
    ).to_json_dict()
    assert rec["confidence"] is None and rec["recovery"][0]["new_time_limit_s"] is None
    json.dumps(rec, allow_nan=False)


def test_a_locked_audit_log_is_a_one_line_error_in_bounded_time(tmp_path: Path) -> None:
    import fcntl
    import time

    from schedmate.core.errors import InputError

    p = tmp_path / "audit.jsonl"
    p.write_text("")
    with p.open("a") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        log = AuditLog(p, lock_timeout_s=0.2)
        t0 = time.monotonic()
        with pytest.raises(InputError, match="locked"):
            log.append({"type": "decision"})
        assert time.monotonic() - t0 < 2


def test_only_the_tail_of_a_huge_audit_log_is_read(tmp_path: Path) -> None:
    import json

    p = tmp_path / "audit.jsonl"
    rows = [
        {"type": "execution", "phase": "started", "job_id": "j", "action_id": str(i)} for i in range(2000)
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    log = AuditLog(p, max_read_bytes=10_000)
    assert 0 < len(log.records) < 2000 and log.records[-1]["action_id"] == "1999"
    assert all("action_id" in r for r in log.records)  # the cut first line was skipped, not parsed


def test_a_fifo_audit_log_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    p = tmp_path / "audit.jsonl"
    os.mkfifo(p)
    log = AuditLog(p)
    assert log.read_error is not None and "audit" in log.read_error


# -- one ledger for every process -------------------------------------------------------------
def test_two_processes_with_the_same_stale_view_execute_once(tmp_path: Path) -> None:
    """watch and `diagnose --execute` (two planners, two AuditLogs on one file, both read before
    either acted): the claim re-reads the file under its lock, so only one of them requeues."""
    b = cluster(JobView("x", user="ann", state=JobState.FAILED, nodes=("n2",)))
    first = planner(b, tmp_path, dry_run=False)
    second = planner(b, tmp_path, dry_run=False)
    stale = ctx(b, "x")
    (a,), _ = first.recover(stale, ECC)
    second.audit.refresh = lambda: None  # type: ignore[method-assign]  # worst case: no re-read before planning
    (a2,), _ = second.recover(stale, ECC)
    assert a.status is ActionStatus.EXECUTED
    assert a2.status is ActionStatus.ALREADY_DONE and a2.action_id == a.action_id
    assert [x[0] for x in b.log] == ["requeue"]


def test_a_claim_is_checked_against_the_file_under_the_lock(tmp_path: Path) -> None:
    one, two = AuditLog(tmp_path / "audit.jsonl"), AuditLog(tmp_path / "audit.jsonl")
    rec = {"action_id": "abc", "job_id": "j", "action": "requeue"}
    assert one.claim(rec) is True
    assert two.executions("abc") == set()  # read before the claim: it does not know yet
    assert two.claim(rec) is False and one.claim(rec) is False
    one.append({"type": "execution", "phase": "failed", "action_id": "abc", "job_id": "j"})
    assert two.claim(rec) is True  # a refused action may be tried again, once


def test_the_scheduler_memory_kill_outranks_the_log() -> None:
    """Slurm says OUT_OF_MEMORY; the log blames the user's code: still more memory, never a node."""
    b = cluster(JobView("m3", user="ann", state=JobState.OUT_OF_MEMORY, nodes=("n1",), mem="32G"))
    view = b.job("m3")
    assert view is not None
    job = JobContext.from_view(view, mem=view.mem)
    app = Finding("application", "value_error", 0.95, None, 7, "/ck/m3/step-4")
    (a,) = planner(b).plan(job, app)
    assert a.action is RecoveryKind.RESUBMIT_WITH_LIMIT and a.new_mem == "64G" and a.exclude_nodes == ()
    assert a.checkpoint == "/ck/m3/step-4" and "scheduler:state:OUT_OF_MEMORY" in a.evidence_ids
    (capped,) = planner(b, max_mem_mb=32 * 1024).plan(job, app)
    assert capped.action is RecoveryKind.NOTIFY and "at the cap" in capped.reason


def test_a_guard_refuses_a_drain_but_not_the_requeue(tmp_path: Path) -> None:
    b = cluster(JobView("g", user="ann", state=JobState.FAILED, nodes=("n4",)))
    b.nodes["n4"] = NodeView("n4", NodeState.DOWN)  # the scheduler's fact: a drain is planned
    p = planner(b, tmp_path, dry_run=False)
    actions, _ = p.recover(
        ctx(b, "g"), ECC, guard=lambda a: "no drains today" if a.action is RecoveryKind.DRAIN_NODE else None
    )
    assert kinds(actions) == [RecoveryKind.EXCLUDE_NODE, RecoveryKind.DRAIN_NODE]
    assert actions[0].status is ActionStatus.EXECUTED
    assert actions[1].status is ActionStatus.NOT_EXECUTABLE and "no drains today" in (actions[1].error or "")
    assert [x[0] for x in b.log] == ["requeue"]
    assert [r["why"] for r in p.audit.records if r.get("type") == "refused"] == ["no drains today"]


def test_a_cycle_snapshot_serves_every_decision_of_the_cycle() -> None:
    """watch hands its cycle's snapshot to the planner: no scheduler query per failed job."""

    class Counting(InMemoryClusterBackend):
        calls = 0

        def snapshot(self) -> ClusterSnapshot:
            Counting.calls += 1
            return super().snapshot()

    b = Counting.with_nodes(["n1", "n2"])
    for i in range(3):
        b.add_job(JobView(f"s{i}", user="ann", state=JobState.FAILED, nodes=("n1",)))
    p = planner(b)
    p.new_cycle(b.snapshot())
    calls = Counting.calls
    for i in range(3):
        (a,) = p.plan(ctx(b, f"s{i}"), ECC)
        assert a.exclude_nodes == ("n1",)
    assert Counting.calls == calls
    p2 = planner(b)  # no cycle (one `diagnose` run): the backend is asked
    p2.plan(ctx(b, "s0"), ECC)
    assert Counting.calls == calls + 1


def test_a_callers_flags_cannot_make_an_event_systemic() -> None:
    """Diagnoses run with caller-given nodes (dry runs of `diagnose --nodes`) are not the
    scheduler's facts: many of them must not block the drain of a node the scheduler reports down."""
    b = cluster(nodes=[f"n{i}" for i in range(1, 9)])
    p = planner(b, max_suspect_nodes=3)
    for i in range(2, 8):
        p.recover(JobContext(f"c{i}", user="mallory", nodes=(f"n{i}",)), ECC)
    p.new_cycle()
    b.nodes["n1"] = NodeView("n1", NodeState.DOWN)
    got = fail_on(p, b, "j1", "ann", "n1")
    assert RecoveryKind.DRAIN_NODE in kinds(got)
    assert not any("systemic" in a.reason for a in got)

"""Failure Handler logic: locator rules, classifier order, recovery safety (fakes only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from schedmate.core.cluster import JobState, JobView, NodeState, NodeView
from schedmate.core.diagnosis import ActionStatus, RecoveryKind
from schedmate.core.settings import FailureSettings
from schedmate.failure import (
    AuditLog,
    FailureClassifier,
    FailureHandler,
    FailureLocator,
    InMemoryClusterBackend,
    JobContext,
    KnowledgeBase,
    RecoveryPlanner,
    count_line_breaks,
    find_checkpoint,
    find_node,
    find_nodes,
)
from schedmate.tracker import LineClassifier

KB_YAML = r"""
version: 1
signatures:
  - kind: ecc_error
    category: infrastructure
    confidence: 0.95
    recovery: requeue_exclude_node
    patterns: ['uncorrectable ECC']
    examples: ['CUDA error: uncorrectable ECC error encountered']
  - kind: nccl_timeout
    category: infrastructure
    confidence: 0.8
    recovery: requeue
    patterns: ['Watchdog caught collective operation timeout']
    examples: ['Watchdog caught collective operation timeout: WorkNCCL ran for 1800000 ms']
  - kind: oom_cuda
    category: application
    confidence: 0.9
    recovery: none
    patterns: ['CUDA out of memory']
    examples: ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB']
  - kind: python_exception
    category: application
    confidence: 0.5
    recovery: none
    patterns: ['^\s*[\w.]*(Error|Exception)\b']
    examples: ['ValueError: bad value']
"""


@pytest.fixture()
def kb() -> KnowledgeBase:
    return KnowledgeBase.from_yaml(KB_YAML)


def handler(
    kb: KnowledgeBase, tmp_path: Path | None = None, backend: InMemoryClusterBackend | None = None, **fs: Any
) -> FailureHandler:
    settings = FailureSettings(**fs)
    planner = RecoveryPlanner(backend, AuditLog(tmp_path / "a.jsonl" if tmp_path else None), settings)
    return FailureHandler(
        FailureLocator(LineClassifier(), kb, settings), FailureClassifier(kb), planner, settings
    )


def cluster(nodes: list[str], *jobs: JobView) -> InMemoryClusterBackend:
    backend = InMemoryClusterBackend.with_nodes(nodes)
    for j in jobs:
        backend.add_job(j)
    return backend


def job(backend: InMemoryClusterBackend, job_id: str) -> JobContext:
    view = backend.job(job_id)
    assert view is not None
    return JobContext.from_view(view)


def test_traceback_reports_exception_line_not_header(kb: KnowledgeBase) -> None:
    lines = [
        "step 1 loss 2.0",
        "Traceback (most recent call last):",
        '  File "t.py", line 3, in <module>',
        "    main()",
        "ValueError: shapes (3,4) and (5,6) not aligned",
        "Traceback (most recent call last):",
        "RuntimeError: second",
    ]
    r = handler(kb).diagnose_lines(lines)
    assert r.failed and r.root_cause_line == "ValueError: shapes (3,4) and (5,6) not aligned"
    assert r.root_cause_line_no == 5 and r.category == "application"


def test_earliest_rank_error_beats_cascade_and_summary(kb: KnowledgeBase) -> None:
    lines = [
        "iter 10 loss 1.0",
        "UserWarning: this is fine",
        "[rank3]: RuntimeError: CUDA error: uncorrectable ECC error",
        "[rank0]:[E ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout: WorkNCCL(...)",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ]
    r = handler(kb).diagnose_lines(lines)
    assert r.root_cause_line == lines[2]
    assert (r.category, r.kind) == ("infrastructure", "ecc_error")


def test_warning_before_crash_does_not_win(kb: KnowledgeBase) -> None:
    lines = [
        "step 5 loss 1.0",
        "WARNING: gradient overflow, skipping step",
        "torch.OutOfMemoryError: CUDA out of memory.",
    ]
    r = handler(kb).diagnose_lines(lines)
    assert r.root_cause_line == lines[2] and r.category == "application"


def test_error_appended_to_progress_bar(kb: KnowledgeBase) -> None:
    lines = [
        " 5%|#  | 5/100 [00:05<01:30, 1.0it/s]",
        " 6%|#  | 6/100 [00:06<01:29, 1.0it/s][E ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout",
    ]
    r = handler(kb).diagnose_lines(lines)
    assert r.root_cause_line == lines[1] and r.kind == "nccl_timeout"


def test_clean_log_is_not_failed(kb: KnowledgeBase) -> None:
    r = handler(kb).diagnose_lines(["step 1 loss 1.0", "step 2 loss 0.9", "done"])
    assert not r.failed and r.category == "unknown" and r.recovery == ()


def test_application_fault_is_never_restarted(kb: KnowledgeBase, tmp_path: Path) -> None:
    backend = cluster(["n1"], JobView("j1", user="ann", state=JobState.FAILED, nodes=("n1",)))
    h = handler(kb, tmp_path, backend, dry_run=False)
    r = h.diagnose_lines(["torch.OutOfMemoryError: CUDA out of memory."], job(backend, "j1"))
    assert [a.action for a in r.recovery] == [RecoveryKind.NOTIFY]
    assert backend.log == []


def test_user_printed_infra_text_does_not_drain(kb: KnowledgeBase, tmp_path: Path) -> None:
    """A job printing fake ECC errors naming another node: requeued, no node touched."""
    backend = cluster(
        ["gpu-node-3", "gpu-node-7"],
        JobView("evil", user="eve", state=JobState.FAILED, nodes=("gpu-node-3",)),
    )
    h = handler(kb, tmp_path, backend, dry_run=False)
    fake = [
        "print('boom')",
        "gpu-node-7:123:456 [0] NCCL RuntimeError: uncorrectable ECC error on node=gpu-node-7",
    ]
    r = h.diagnose_lines(fake, job(backend, "evil"))
    assert [a.action for a in r.recovery] == [RecoveryKind.EXCLUDE_NODE]
    assert r.recovery[0].exclude_nodes == ("gpu-node-3",)  # where the scheduler ran it, not the named node
    assert r.recovery[0].status is ActionStatus.EXECUTED
    assert [k for k, _, _ in backend.log] == ["requeue"]
    assert backend.nodes["gpu-node-7"].state is NodeState.IDLE


def test_drain_needs_facts_not_text(kb: KnowledgeBase, tmp_path: Path) -> None:
    line = ["RuntimeError: CUDA error: uncorrectable ECC error encountered"]
    backend = cluster(["n7", "n8", "n9"])
    h = handler(kb, tmp_path, backend)
    # jobs with no user recorded by the scheduler never corroborate each other
    for j in ("a", "b", "c"):
        backend.add_job(JobView(j, state=JobState.FAILED, nodes=("n7",)))
        r = h.diagnose_lines(line, job(backend, j))
        assert RecoveryKind.DRAIN_NODE not in [a.action for a in r.recovery]
    # one user's many jobs are one source
    for j in ("m1", "m2", "m3"):
        backend.add_job(JobView(j, user="mallory", state=JobState.FAILED, nodes=("n8",)))
        r = h.diagnose_lines(line, job(backend, j))
        assert RecoveryKind.DRAIN_NODE not in [a.action for a in r.recovery]
    # a second user's job on n8: two users, several events -> drain (dry run: planned only)
    backend.add_job(JobView("u2", user="bob", state=JobState.FAILED, nodes=("n8",)))
    r = h.diagnose_lines(line, job(backend, "u2"))
    drains = [a for a in r.recovery if a.action is RecoveryKind.DRAIN_NODE]
    assert [a.node for a in drains] == ["n8"] and drains[0].status is ActionStatus.DRY_RUN
    assert any(e.startswith("audit:") for e in drains[0].evidence_ids)
    # the scheduler's own word is enough
    backend.nodes["n9"] = NodeView("n9", NodeState.DOWN)
    backend.add_job(JobView("d", state=JobState.FAILED, nodes=("n9",)))
    h.planner.new_cycle()  # type: ignore[union-attr]
    r3 = h.diagnose_lines(line, job(backend, "d"))
    drain = next(a for a in r3.recovery if a.action is RecoveryKind.DRAIN_NODE)
    assert drain.node == "n9" and "scheduler:node:n9:DOWN" in drain.evidence_ids


def test_retry_budget_counts_executed_actions_only(kb: KnowledgeBase, tmp_path: Path) -> None:
    line = ["RuntimeError: CUDA error: uncorrectable ECC error encountered"]
    dry = handler(kb, tmp_path, None, retry_budget=2)
    for _ in range(4):  # dry runs are free
        r = dry.diagnose_lines(line, JobContext("loop"))
        assert [a.action for a in r.recovery] == [RecoveryKind.REQUEUE]
    backend = cluster(["n1"], JobView("loop", state=JobState.FAILED))
    live = handler(kb, tmp_path, backend, retry_budget=2, dry_run=False)
    got = []
    for _ in range(4):
        backend.jobs["loop"] = backend.jobs["loop"].with_(state=JobState.FAILED)  # it failed again
        got.append([a.action for a in live.diagnose_lines(line, JobContext("loop")).recovery])
    assert got[:2] == [[RecoveryKind.REQUEUE]] * 2 and got[2:] == [[RecoveryKind.NOTIFY]] * 2
    audit = AuditLog(tmp_path / "a.jsonl")  # the budget survives a restart: it lives in the audit log
    assert audit.executed_count("loop") == 2
    assert len([x for x in audit.records if x.get("type") == "decision"]) == 8


def test_audit_log_survives_a_torn_line(tmp_path: Path) -> None:
    p = tmp_path / "audit.jsonl"
    p.write_text(
        '{"type": "execution", "phase": "started", "job_id": "x", "action_id": "1", "action": "requeue"}\n'
        '{"job_id": "y", "deci'
    )
    log = AuditLog(p)
    assert log.executed_count("x") == 1
    log.append({"type": "decision", "job_id": "z"})
    again = AuditLog(p)  # the torn tail was closed off: the new record is whole
    assert [r.get("job_id") for r in again.records] == ["x", "z"]
    assert again.records[-1]["time"].endswith("Z") and "T" in again.records[-1]["time"]


def test_low_confidence_infra_is_not_restarted(kb: KnowledgeBase, tmp_path: Path) -> None:
    h = handler(kb, tmp_path, min_recover_confidence=0.9)
    r = h.diagnose_lines(
        ["[E ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout"], JobContext("j")
    )
    assert r.category == "infrastructure" and [a.action for a in r.recovery] == [RecoveryKind.NOTIFY]


class FakeLLM:
    name = "fake"
    available = True

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.seen: list[str] = []

    def complete_json(self, messages: list[dict[str, str]], schema_model: type[BaseModel]) -> BaseModel:
        self.seen.append(messages[-1]["content"])
        return schema_model.model_validate(self.reply)


def test_llm_only_for_uncertain_cases(kb: KnowledgeBase) -> None:
    llm = FakeLLM({"category": "infrastructure", "kind": "fs_hang", "confidence": 0.7})
    clf = FailureClassifier(kb, None, llm, llm_below=0.6)
    assert clf.classify("torch.OutOfMemoryError: CUDA out of memory").method == "signature"
    assert llm.seen == []
    v = clf.classify("the parallel filesystem stopped answering")
    assert (v.category, v.kind, v.method) == ("infrastructure", "fs_hang", "llm")
    # the model sees the root line and its context, framed as data
    assert llm.seen[0].startswith("Root-cause line:\nthe parallel filesystem stopped answering")


def test_find_node_and_checkpoint(tmp_path: Path) -> None:
    assert find_node(["n124-137-109:312247:326969 [0] NCCL INFO misc/socket.cc:829 -> 3"]) == "n124-137-109"
    assert find_node(["srun: error: gpu-a12: task 3: Killed"]) == "gpu-a12"
    assert find_node(["srun: error: Node failure on gpu-06"]) == "gpu-06"  # not "failure"
    assert find_nodes(["Nodes gpu-[01-03,07] not responding"]) == ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]
    assert find_nodes(["Nodes gpu-[01-03] not responding"], known={"gpu-02"}) == ["gpu-02"]
    assert find_node(["error on node=failure"]) is None  # free text needs a digit or the node list
    assert (
        find_checkpoint(["Saving checkpoint to /ckpt/run1/checkpoint-500", "step 501"])
        == "/ckpt/run1/checkpoint-500"
    )
    (tmp_path / "checkpoint-100").mkdir()
    (tmp_path / "checkpoint-900").mkdir()
    assert find_checkpoint([], str(tmp_path)).endswith("checkpoint-900")


def test_count_line_breaks(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_bytes(b"a\r\nb\rc\nd\r")
    assert count_line_breaks(p, p.stat().st_size) == 4
    assert count_line_breaks(p, 2, chunk=1) == 1  # a \r at a chunk end followed by \n counts once


def test_bad_signature_file_is_one_line(tmp_path: Path) -> None:
    from schedmate.core.errors import ConfigError

    with pytest.raises(ConfigError, match="category must be"):
        KnowledgeBase.from_yaml("signatures:\n  - {kind: x, category: nope, patterns: [a]}\n")
    with pytest.raises(ConfigError, match="bad pattern"):
        KnowledgeBase.from_yaml("signatures:\n  - {kind: x, category: application, patterns: ['(']}\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        KnowledgeBase.from_yaml("signatures: [\n")


def test_binary_search_on_a_large_log(kb: KnowledgeBase, tmp_path: Path) -> None:
    """Above full_scan_bytes the locator probes windows: O(log n) classifier calls."""
    p = tmp_path / "big.log"
    healthy = b"".join(b"2026-01-01 10:00:00 INFO step %d loss 1.25 time 0.4s\n" % i for i in range(200_000))
    with p.open("wb") as fh:
        fh.write(healthy)
        fh.write(b"OSError: [Errno 28] No space left on device\n")
        fh.write(
            b"".join(
                b"[rank%d]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d)\n" % (i % 8, i)
                for i in range(100_000)
            )
        )
    settings = FailureSettings(full_scan_bytes=1024 * 1024, window_bytes=16 * 1024)
    loc = FailureLocator(LineClassifier(), KnowledgeBase.load(), settings)  # the bundled signatures
    got = loc.locate(p)
    assert got.failed and got.text == "OSError: [Errno 28] No space left on device"
    assert got.line_no == 200_001
    assert got.probes <= 64
    assert got.signature is not None and got.signature.kind == "disk_full"


def test_large_log_without_failure(kb: KnowledgeBase, tmp_path: Path) -> None:
    p = tmp_path / "fine.log"
    p.write_bytes(b"".join(b"step %d loss 1.0\n" % i for i in range(300_000)))
    loc = FailureLocator(
        LineClassifier(), kb, FailureSettings(full_scan_bytes=1024, window_bytes=8 * 1024, max_probes=16)
    )
    got = loc.locate(p)
    assert not got.failed and got.probes <= 16


def test_checkpoint_found_far_before_the_failure(kb: KnowledgeBase) -> None:
    lines = ["Saving checkpoint to /ckpt/run9/checkpoint-3000"] + [
        f"step {i} loss 1.0" for i in range(3000, 3200)
    ]
    lines += ["RuntimeError: CUDA error: uncorrectable ECC error encountered"]
    r = handler(kb).diagnose_lines(lines)
    assert r.checkpoint == "/ckpt/run9/checkpoint-3000"
    assert r.root_cause_line_no == len(lines)

"""The shared observation/action model: state parsing, views, actions and the in-memory cluster."""

from __future__ import annotations

import pytest

from schedmate.core.cluster import (
    Action,
    ActionKind,
    ClusterBackend,
    InMemoryClusterBackend,
    JobState,
    JobView,
    NodeState,
    apply_action,
)
from schedmate.core.errors import BackendError


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("RUNNING", JobState.RUNNING),
        ("CANCELLED by 1000", JobState.CANCELLED),
        ("CD", JobState.COMPLETED),
        ("to", JobState.TIMEOUT),
        ("OUT_OF_MEMORY", JobState.OUT_OF_MEMORY),
        ("weird", JobState.UNKNOWN),
        (None, JobState.UNKNOWN),
    ],
)
def test_job_state_parse(text: str | None, state: JobState) -> None:
    assert JobState.parse(text) is state


def test_job_state_groups() -> None:
    assert JobState.TIMEOUT.ended and JobState.TIMEOUT.unsuccessful
    assert JobState.COMPLETED.ended and not JobState.COMPLETED.unsuccessful
    assert not JobState.RUNNING.ended


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("idle", NodeState.IDLE),
        ("MIXED+DRAIN", NodeState.DRAIN),
        ("drained*", NodeState.DRAIN),
        ("down*", NodeState.DOWN),
        ("alloc", NodeState.ALLOCATED),
        ("IDLE+FAIL", NodeState.FAIL),
        ("", NodeState.UNKNOWN),
    ],
)
def test_node_state_parse(text: str, state: NodeState) -> None:
    assert NodeState.parse(text) is state


def test_only_scheduler_states_count_as_failed() -> None:
    assert NodeState.DOWN.failed and NodeState.FAIL.failed
    assert not NodeState.DRAIN.failed and not NodeState.UNKNOWN.failed


def test_action_needs_its_target() -> None:
    with pytest.raises(ValueError):
        Action(ActionKind.DRAIN, job_id="1")
    with pytest.raises(ValueError):
        Action(ActionKind.REQUEUE, node="n1")


def test_action_id_is_stable_and_distinguishes_attempts() -> None:
    a = Action(ActionKind.REQUEUE, job_id="7", exclude_nodes=("n2", "n1"), reason="x")
    b = Action(ActionKind.REQUEUE, job_id="7", exclude_nodes=("n1", "n2"), reason="other words")
    c = Action(ActionKind.REQUEUE, job_id="7", exclude_nodes=("n1", "n2"), attempt=1)
    assert a.action_id == b.action_id != c.action_id


def test_in_memory_backend_applies_every_kind() -> None:
    cl = InMemoryClusterBackend.with_nodes(["n1", "n2"], gpus=4)
    assert isinstance(cl, ClusterBackend)
    cl.add_job(
        JobView("9", user="ann", state=JobState.TIMEOUT, nodes=("n1",), time_limit_s=3600), "#!/bin/sh\n"
    )
    for action in (
        Action(ActionKind.UPDATE, job_id="9", comment="eta 5m"),
        Action(ActionKind.HOLD, job_id="9"),
        Action(ActionKind.RELEASE, job_id="9"),
        Action(ActionKind.REQUEUE, job_id="9", exclude_nodes=("n1",), time_limit_s=7200),
        Action(ActionKind.DRAIN, node="n2", reason="ecc"),
        Action(ActionKind.RESUME, node="n2"),
    ):
        apply_action(cl, action)
    assert [k for k, _, _ in cl.log] == ["update", "hold", "release", "requeue", "drain", "resume"]
    job = cl.job("9")
    assert (
        job is not None and job.state is JobState.PENDING and job.time_limit_s == 7200 and job.restarts == 1
    )
    assert job.comment == "eta 5m" and cl.job_script("9") == "#!/bin/sh\n"
    snap = cl.snapshot()
    assert snap.pending == (job,) and snap.node("n2") is not None and snap.node_names == {"n1", "n2"}


def test_unknown_targets_are_backend_errors() -> None:
    cl = InMemoryClusterBackend.with_nodes(["n1"])
    with pytest.raises(BackendError):
        cl.drain("n9", "x")
    with pytest.raises(BackendError):
        cl.requeue("404")

"""Simulator failure injection: infrastructure vs application failures, classic vs
failure-aware requeue (golden tiny traces), seeded rates, invariants."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from schedmate.core.errors import ConfigError
from schedmate.sim import (
    FailureModel,
    Simulator,
    TraceJob,
    make_estimator,
    make_policy,
    summarize_sim,
    synthetic_trace,
)


def J(i: int, submit: float, dur: float, failed: bool = False) -> TraceJob:
    return TraceJob(f"j{i}", submit, dur, 1, "a", failed=failed)


def run(jobs: list[TraceJob], policy: str, failures: FailureModel):  # type: ignore[no-untyped-def]
    return Simulator(
        jobs, {"a": 1}, make_policy(policy), make_estimator("oracle"), failures=failures, check=True
    ).run()


def ends(res) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {j.job_id: j.end for j in res.jobs}


# j0 (100 s) fails at t=50 from an infrastructure fault; checkpoints every 30 s of progress
INFRA = FailureModel(infra_per_gpu_h=0.0, app_prob=0.0, checkpoint_s=30.0, scripted=(("j0", 50.0),))


def test_fifo_resubmits_an_infra_failure_from_scratch_at_the_tail() -> None:
    r = run([J(0, 0, 100), J(1, 5, 200)], "fifo", INFRA)
    # j1 (queued at 5) now precedes j0 (requeued at 50): j1 50-250, j0 from scratch 250-350
    assert ends(r) == {"j0": 350, "j1": 250}
    m, _ = summarize_sim(r)
    assert m.failures == 1 and m.lost_gpu_h == pytest.approx(50 / 3600)


def test_semantic_requeues_an_infra_failure_at_the_head_from_its_checkpoint() -> None:
    r = run([J(0, 0, 100), J(1, 5, 200)], "semantic", INFRA)
    # 50 s done, checkpoint at 30 s: 70 s left, restarts at once (head): 50-120; j1 120-320
    assert ends(r) == {"j0": 120, "j1": 320}
    m, _ = summarize_sim(r)
    assert m.failures == 1 and m.lost_gpu_h == pytest.approx(20 / 3600)
    assert not r.jobs[0].failed


def test_application_failures_classic_retries_semantic_does_not() -> None:
    fm = FailureModel(infra_per_gpu_h=0.0, blind_retries=1)  # the trace's status says j0 fails
    jobs = [J(0, 0, 100, failed=True), J(1, 5, 10)]
    r = run(jobs, "fifo", fm)
    # j0 fails at 100, retried at the tail: j1 100-110, j0 fails again at 210 (same bug)
    assert ends(r) == {"j0": 210, "j1": 110}
    assert r.jobs[0].failed and r.app_failures == 2 and r.lost_gpu_s == 100
    s = run(jobs, "semantic", fm)
    # semantic: j1 preempts j0 at 5 (shorter), j0 fails at 110 and is not retried
    assert ends(s) == {"j0": 110, "j1": 15}
    assert s.jobs[0].failed and s.app_failures == 1 and s.lost_gpu_s == 0


def test_failures_are_off_by_default_and_seeded() -> None:
    jobs = synthetic_trace(300, seed=4, mean_gap_s=30)
    base = summarize_sim(Simulator(jobs, {"*": 32}, make_policy("fifo"), make_estimator("oracle")).run())[0]
    assert base.failures == 0 and base.lost_gpu_h == 0
    fm = FailureModel.parse("infra=0.01,app=0.2,seed=3")
    a = summarize_sim(
        Simulator(jobs, {"*": 32}, make_policy("fifo"), make_estimator("oracle"), failures=fm).run()
    )[0]
    b = summarize_sim(
        Simulator(jobs, {"*": 32}, make_policy("fifo"), make_estimator("oracle"), failures=fm).run()
    )[0]
    assert a == b and a.failures > 0 and a.lost_gpu_h > 0
    sem = summarize_sim(
        Simulator(jobs, {"*": 32}, make_policy("semantic"), make_estimator("oracle"), failures=fm).run()
    )[0]
    assert sem.lost_gpu_h < a.lost_gpu_h  # checkpoints, and no doomed retries


def test_failure_spec_parsing() -> None:
    assert FailureModel.parse("on") == FailureModel()
    fm = FailureModel.parse("infra=1e-4, app=0.1,checkpoint=600,retries=0")
    assert (fm.infra_per_gpu_h, fm.app_prob, fm.checkpoint_s, fm.blind_retries) == (1e-4, 0.1, 600.0, 0)
    for bad in ("bogus=1", "infra=lots", "checkpoint=0", "app=-1"):
        with pytest.raises(ConfigError):
            FailureModel.parse(bad)


def test_a_job_that_keeps_losing_its_work_ends_after_max_requeues() -> None:
    # j0 needs 100 s; a failure every 90 s of its runs: restarted from scratch it never ends
    every_90s = tuple(("j0", 50.0 + 90.0 * k) for k in range(8))
    fm = FailureModel(
        infra_per_gpu_h=0.0, app_prob=0.0, checkpoint_s=30.0, max_requeues=5, scripted=every_90s
    )
    j0 = run([J(0, 0, 100)], "fifo", fm).jobs[0]
    assert (j0.failures, j0.failed, j0.end) == (6, True, 50.0 + 90.0 * 5)  # 5 requeues, then it ends
    j0 = run([J(0, 0, 100)], "semantic", fm).jobs[0]
    assert (j0.failures, j0.failed, j0.end) == (1, False, 120.0)  # checkpointed: it keeps 30 s and ends
    assert FailureModel.parse("requeues=2").max_requeues == 2


@pytest.mark.timeout(120)  # a spinning engine loop fails here, not after CI's limit
@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=0, max_value=10_000),
    st.sampled_from(["fifo", "sjf", "tiresias", "semantic", "lucid", "semantic-pack"]),
    st.integers(min_value=8, max_value=48),
)
@example(
    1274, "fifo", 8
)  # a 0.16/h failure rate on long jobs restarted from scratch: requeued forever before the cap
def test_failure_properties(seed: int, policy: str, gpus: int) -> None:
    jobs = [j for j in synthetic_trace(100, seed=seed, mean_gap_s=30) if j.gpus <= gpus]
    fm = FailureModel(infra_per_gpu_h=0.02, app_prob=0.2, checkpoint_s=600, seed=seed)
    res = Simulator(
        jobs,
        {"*": gpus},
        make_policy(policy),
        make_estimator("noisy", seed),
        seed=seed,
        failures=fm,
        check=True,
    ).run()
    done = res.finished()
    assert len(done) == len(jobs)  # every job ends exactly once (the engine raises on a second end)
    for j in done:
        assert j.end >= j.first_start >= j.submit
        if j.lost_in_a_row > fm.max_requeues:  # gave up after losing its work too often
            assert j.failed
        else:
            assert j.end - j.first_start >= j.duration - 1e-6
    m, _ = summarize_sim(res)
    assert m.failures == res.infra_failures + res.app_failures and m.lost_gpu_h >= 0

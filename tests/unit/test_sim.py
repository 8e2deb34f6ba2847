"""Simulator: golden tiny traces per policy, loaders' errors, properties (hypothesis)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedmate.core.errors import ConfigError, InputError
from schedmate.sim import (
    SEMANTICS,
    Simulator,
    TraceJob,
    load_trace,
    make_estimator,
    make_policy,
    parse_cluster,
    summarize_sim,
    synthetic_trace,
)
from schedmate.sim.state import JobState


def J(i: int, submit: float, dur: float, gpus: int = 1, vc: str = "a") -> TraceJob:
    return TraceJob(f"j{i}", submit, dur, gpus, vc)


def run(jobs: list[TraceJob], policy: str, gpus: int = 1, est: str = "oracle"):  # type: ignore[no-untyped-def]
    return Simulator(jobs, {"a": gpus}, make_policy(policy), make_estimator(est)).run()


def ends(res) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {j.job_id: j.end for j in res.jobs}


# one GPU; j0 long arrives first, then two short ones
GOLDEN = [J(0, 0, 100), J(1, 1, 10), J(2, 2, 20)]


def test_fifo_golden() -> None:
    assert ends(run(GOLDEN, "fifo")) == {"j0": 100, "j1": 110, "j2": 130}


def test_sjf_golden() -> None:
    # non-preemptive: j0 keeps the GPU; then shortest first
    assert ends(run(GOLDEN, "sjf")) == {"j0": 100, "j1": 110, "j2": 130}
    jobs = [J(0, 0, 50), J(1, 1, 30), J(2, 1, 10)]
    assert ends(run(jobs, "sjf")) == {"j0": 50, "j1": 90, "j2": 60}


def test_srtf_golden_preempts() -> None:
    r = run(GOLDEN, "srtf")
    # t=1: j1 (10) preempts j0 (99 left); t=11: j2 (20) beats j0 (99); j0 resumes at 31
    assert ends(r) == {"j1": 11, "j2": 31, "j0": 130}
    assert r.jobs[0].preemptions == 1
    m, _ = summarize_sim(r)
    assert m.avg_jct_s == pytest.approx(((130 - 0) + (11 - 1) + (31 - 2)) / 3)


def test_tiresias_demotes_long_jobs() -> None:
    from schedmate.sim.policies import TiresiasPolicy

    pol = TiresiasPolicy(threshold_gpu_s=5)
    # legacy semantics (no key events): j1's own demotion at t=15 is never seen
    legacy = SEMANTICS["legacy"]
    r = Simulator(
        [J(0, 0, 100), J(1, 10, 10)], {"a": 1}, pol, make_estimator("oracle"), semantics=legacy
    ).run()
    # j0 attained 10 > 5 GPU-s: low queue; j1 (0 attained) preempts it at t=10
    assert ends(r) == {"j1": 20, "j0": 110}


def test_tiresias_demotion_is_an_event() -> None:
    from schedmate.sim.policies import TiresiasPolicy

    pol = TiresiasPolicy(threshold_gpu_s=5)
    r = Simulator([J(0, 0, 100), J(1, 10, 10)], {"a": 1}, pol, make_estimator("oracle")).run()
    # t=10: j1 preempts the demoted j0; t=15: j1 reaches 5 GPU-s and is demoted too, so the
    # older j0 (same queue, earlier submit) takes the GPU back at once, not when j1 ends
    e = ends(r)
    assert e["j0"] == pytest.approx(105, abs=1e-3)
    assert e["j1"] == pytest.approx(110, abs=1e-3)
    assert [j.preemptions for j in r.jobs] == [1, 1]


def test_strict_fifo_blocks_but_sjf_backfills() -> None:
    jobs = [J(0, 0, 100, 2), J(1, 1, 100, 4), J(2, 2, 10, 1)]  # 4 GPUs
    f = ends(run(jobs, "fifo", gpus=4))
    assert f["j2"] == 210  # j1 (4 GPUs) blocks the head; j2 waits behind it
    s = ends(run(jobs, "sjf", gpus=4))
    assert s["j2"] == 12  # backfilled next to j0


def test_semantic_uses_gpu_time() -> None:
    jobs = [J(0, 0, 100, 4), J(1, 0, 30, 1), J(2, 0, 50, 1)]
    r = run(jobs, "semantic", gpus=4, est="oracle")
    assert r.jobs[1].end == 30 and r.jobs[2].end == 50  # small GPU-time first


def test_unschedulable_jobs_are_counted() -> None:
    r = run([J(0, 0, 10, 8), J(1, 0, 10, 1)], "fifo", gpus=4)
    m, _ = summarize_sim(r)
    assert m.unschedulable == 1 and m.n_jobs == 1


def test_errors() -> None:
    with pytest.raises(ConfigError, match="valid: fifo"):
        make_policy("random")
    with pytest.raises(ConfigError):
        make_estimator("magic")
    with pytest.raises(InputError):
        parse_cluster("a=lots")


def test_native_loader_errors_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("job_id,submit_s,duration_s,gpus\na,0,10,1\nb,5,ten,1\n")
    with pytest.raises(InputError, match=r"t.csv:3: column 'duration_s' is not a number"):
        load_trace(p, "native")
    p.write_text("job_id,submit_s,duration_s,gpus\na,0,10\n")
    with pytest.raises(InputError, match=r"t.csv:2: expected 4 columns"):
        load_trace(p, "native")
    q = tmp_path / "t.jsonl"
    q.write_text(
        '{"job_id": "a", "submit_s": 5, "duration_s": 3, "gpus": 2}\n{"job_id": "b", "submit_s": 1, "duration_s": 3, "gpus": 1}\n'
    )
    jobs = load_trace(q, "native")
    assert [j.job_id for j in jobs] == ["b", "a"] and jobs[0].submit_s == 0
    q.write_text('{"job_id": "a"\n')
    with pytest.raises(InputError, match="t.jsonl:1: not valid JSON"):
        load_trace(q, "native")


def test_philly_format(tmp_path: Path) -> None:
    p = tmp_path / "philly.csv"
    p.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,v1\n"
        "2017-10-09 07:00:55,10.0,2,20.0,v2\n"
    )
    jobs = load_trace(p, "philly")
    assert [(j.submit_s, j.gpus, j.vc) for j in jobs] == [(0.0, 2, "v2"), (60.0, 1, "v1")]
    p.write_text("timestamp,duration,num_gpus,gpu_time,cluster\nyesterday,1,1,1,v\n")
    with pytest.raises(InputError, match="philly.csv:2: bad timestamp"):
        load_trace(p, "philly")


def test_deterministic_with_seed() -> None:
    jobs = synthetic_trace(300, seed=3)
    a = summarize_sim(
        Simulator(jobs, {"*": 32}, make_policy("semantic"), make_estimator("noisy", 1), seed=1).run()
    )[0]
    b = summarize_sim(
        Simulator(jobs, {"*": 32}, make_policy("semantic"), make_estimator("noisy", 1), seed=1).run()
    )[0]
    assert a == b


@pytest.mark.timeout(120)  # a spinning engine loop fails here, not after CI's limit
@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=10_000),
    st.sampled_from(["fifo", "sjf", "srtf", "tiresias", "qssf", "semantic"]),
    st.integers(min_value=8, max_value=48),
)
def test_properties(seed: int, policy: str, gpus: int) -> None:
    jobs = [j for j in synthetic_trace(120, seed=seed, mean_gap_s=30) if j.gpus <= gpus]
    res = Simulator(jobs, {"*": gpus}, make_policy(policy), make_estimator("noisy", seed), seed=seed).run()
    done = res.finished()
    assert len(done) == len(jobs)  # every job finishes exactly once
    for j in done:
        assert j.end >= j.first_start >= j.submit
        assert j.end - j.first_start >= j.duration - 1e-6  # no job runs faster than its duration
    # no over-allocation: sweep the run intervals (only non-preemptive runs are single intervals)
    if not make_policy(policy).preemptive:
        edges = sorted(
            [(j.first_start, j.gpus) for j in done] + [(j.end, -j.gpus) for j in done],
            key=lambda e: (e[0], e[1]),
        )
        load = 0
        for _, d in edges:
            load += d
            assert load <= gpus
    if policy == "fifo":  # strict FIFO: start order follows submit order
        starts = [j.first_start for j in sorted(done, key=lambda j: (j.submit, j.idx))]
        assert starts == sorted(starts)
    m, _ = summarize_sim(res)
    assert 0.0 <= m.gpu_util <= 1.0 + 1e-9


def test_wait_prediction_is_exact_for_fifo_with_oracle() -> None:
    """Strict FIFO ignores later arrivals, so exact durations predict exact start times."""
    from schedmate.sim.whatif import evaluate_wait_prediction, predict_starts, snapshot_at

    jobs = synthetic_trace(400, seed=5, mean_gap_s=20)
    cl = {"*": 32}
    truth = Simulator(jobs, cl, make_policy("fifo"), make_estimator("oracle")).run()
    span = jobs[-1].submit_s
    r = evaluate_wait_prediction(
        jobs, truth, cl, make_policy("fifo"), make_estimator("oracle"), [span * 0.3, span * 0.6]
    )
    assert (
        r["n"] > 0
        and r["median_abs_error_s"] == 0.0
        and r["mean_abs_error_s"] == pytest.approx(0.0, abs=1e-6)
    )
    snap = snapshot_at(jobs, truth, span * 0.5)
    pred = predict_starts(snap, cl, make_policy("fifo"), make_estimator("noisy:1.0", seed=2))
    assert set(pred) == {j.job_id for j in snap.pending}
    assert all(t >= span * 0.5 for t in pred.values())


def test_snapshot_start_keeps_running_jobs_on_their_gpus() -> None:
    running = [(J(0, 0, 1000, 4), 50.0)]
    r = Simulator(
        [J(1, 10, 5, 1)],
        {"a": 4},
        make_policy("fifo"),
        make_estimator("oracle"),
        start_at=10.0,
        running=running,
    ).run()
    by = {j.job_id: j for j in r.jobs}
    assert by["j0"].end == 60.0 and by["j1"].first_start == 60.0


@dataclass
class _RequeuedFirst:
    """A preemptive policy whose evicted jobs come back first: keys may change when a job
    stops, and the engine must not lean on victims ranking below the head they made room for."""

    name: str = "requeued-first"
    preemptive: bool = True
    backfill: bool = True

    def key(self, job: JobState, now: float) -> tuple[float, ...]:
        return (job.duration if not job.preemptions else 0.0, job.submit)


@pytest.mark.parametrize("placement", ["pool", "node"])
def test_round_starts_the_head_it_evicted_for(placement: str) -> None:
    """Regression (issue 14, 'finished twice'): the round took the head off the queue only after
    its victims had rejoined it, so a victim that now ranks first was taken instead, and the
    head, started, stayed in the queue to start again (and finish twice)."""
    jobs = [J(0, 0, 10_000, 8), J(1, 130, 1000, 8)]
    r = Simulator(
        jobs, {"a": 8}, _RequeuedFirst(), make_estimator("oracle"), placement=placement, check=True
    ).run()
    j0, j1 = r.jobs
    # j1 evicts j0 and runs once; j0, first in the queue again, resumes when j1 ends (a round
    # evicts only from the jobs worse than its first head, which j1 is not)
    assert (j1.first_start, j1.end, j1.preemptions) == (130.0, 1130.0, 0)
    assert (j0.first_start, j0.end, j0.preemptions) == (0.0, 11_000.0, 1)

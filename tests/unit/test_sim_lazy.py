"""The lazy eviction search (key bounds, worst first) gives exactly the eager search's results."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedmate.sim import FailureModel, Simulator, make_estimator, make_policy
from schedmate.sim.policies import BoundedKey, SemanticPolicy
from schedmate.sim.state import JobState
from schedmate.sim.trace import TraceJob


def _trace(seed: int, n: int) -> list[TraceJob]:
    rng = random.Random(seed)
    t = 0.0
    jobs = []
    for k in range(n):
        t += rng.expovariate(1 / 60)
        jobs.append(
            TraceJob(
                f"j{k}",
                round(t) if rng.random() < 0.5 else t,  # ties as on integer traces
                rng.choice([5.0, 30.0, 119.0, 120.0, 600.0, 3600.0, 7200.0 * rng.random() + 1]),
                rng.choice([1, 1, 2, 4, 8, 8, 16]),
                rng.choice(["a", "b"]),
                share=rng.choice([0, 1, 2]),
            )
        )
    return jobs


def _run(
    jobs: list[TraceJob], policy: str, lazy: bool, placement: str, failures: FailureModel | None
) -> list[tuple[str, float, float, int]]:
    sim = Simulator(
        jobs,
        {"a": 16, "b": 24},
        make_policy(policy),
        make_estimator("noisy", seed=0),
        check=True,
        placement=placement,
        failures=failures,
    )
    assert sim.bounded
    sim.bounded = lazy  # False: every running job's key, sorted (the search before the bounds)
    res = sim.run()
    return [(j.job_id, j.first_start, j.end, j.preemptions) for j in res.jobs]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    policy=st.sampled_from(["semantic", "semantic-pack"]),
    placement=st.sampled_from(["pool", "node"]),
    fail=st.booleans(),
)
def test_lazy_search_is_exact(seed: int, policy: str, placement: str, fail: bool) -> None:
    jobs = _trace(seed, 120)
    fm = FailureModel(infra_per_gpu_h=0.05, seed=seed) if fail else None
    assert _run(jobs, policy, True, placement, fm) == _run(jobs, policy, False, placement, fm)


@pytest.mark.parametrize("rate", [1.0, 0.6])
def test_semantic_key_bound_holds_while_running(rate: float) -> None:
    """key_bound(now) >= key(t) for t >= now, across the warm-up's end (a jump up or down)."""
    pol = SemanticPolicy()
    assert isinstance(pol, BoundedKey)
    rng = random.Random(1)
    for n in range(2000):
        dur = rng.choice([30.0, 119.0, 120.0, 121.0, 500.0, 10_000.0 * rng.random()])
        job = JobState(n, f"j{n}", 0.0, dur, rng.choice([1, 2, 8]), "a", "u")
        job.estimate = dur * rng.lognormvariate(0, 0.7)
        job.noise = rng.gauss(0, 1) if n % 50 else -30.0  # an ETA factor below 0 too
        job.remaining = dur * rng.random()
        job.run_start = 10.0 * rng.random()
        job.rate = rate
        now = job.run_start + 5.0 * rng.random()
        bound = pol.key_bound(job, now, pol.key(job, now))
        for dt in (0.0, 1e-6, 1.0, 60.0, 119.9, 120.0, 300.0, 1e5):
            assert pol.key(job, now + dt) <= bound, (n, dt)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["semantic", "semantic-pack", "tiresias"]))
def test_skipped_key_event_rounds_are_exact(seed: int, policy: str) -> None:
    """A key event whose round would change nothing skips it (with packing too): the same
    results as running every such round."""
    jobs = _trace(seed, 120)

    def run(skip: bool) -> list[tuple[str, float, float, int]]:
        sim = Simulator(
            jobs, {"a": 16, "b": 24}, make_policy(policy), make_estimator("noisy", seed=0), check=True
        )
        if not skip:
            sim._round_would_act = lambda vc, now, policy: True  # type: ignore[method-assign]
        return [(j.job_id, j.first_start, j.end, j.preemptions) for j in sim.run().jobs]

    assert run(True) == run(False)

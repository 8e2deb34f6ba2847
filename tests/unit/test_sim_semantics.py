"""Policy semantics (sim/semantics.py): each Lucid rule on a hand-checked case, the parser,
and the key-event property (a demotion is re-ranked at once, whatever else happens)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedmate.core.errors import ConfigError
from schedmate.sim import (
    SEMANTICS,
    Semantics,
    Simulator,
    TraceJob,
    make_estimator,
    make_policy,
    parse_semantics,
    synthetic_trace,
)
from schedmate.sim.placement import LucidNodePlacement
from schedmate.sim.policies import SemanticPolicy
from schedmate.sim.state import JobState

LUCID = SEMANTICS["lucid"]


def J(i: int, submit: float, dur: float, gpus: int = 1, vc: str = "a") -> TraceJob:
    return TraceJob(f"j{i}", submit, dur, gpus, vc)


def ends(res) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {j.job_id: j.end for j in res.jobs}


def starts(res) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {j.job_id: j.first_start for j in res.jobs}


def sim(jobs, gpus, policy, sem=None, **kw):  # type: ignore[no-untyped-def]
    sem = sem or Semantics()
    return Simulator(
        jobs, {"a": gpus}, make_policy(policy, sem), make_estimator("oracle"), semantics=sem, check=True, **kw
    ).run()


def test_parse_semantics() -> None:
    assert parse_semantics("default") == Semantics()
    assert parse_semantics(None) == Semantics()
    s = parse_semantics("lucid,interval_s=30,round=heads,preempt_overhead_s=10:20,key_events=off")
    assert (s.interval_s, s.round, s.preempt_overhead_s, s.key_events) == (30.0, "heads", (10.0, 20.0), False)
    assert s.tiresias_threshold_gpu_s == 18000.0  # the rest of the preset stays
    assert parse_semantics("interval_s=60").interval_s == 60.0  # overrides of the default
    for bad in (
        "nope",
        "lucid,interval_s=-1",
        "lucid,interval_s=nan",
        "lucid,round=all",
        "lucid,speed=2",
        "x=1",
    ):
        with pytest.raises(ConfigError):
            parse_semantics(bad)


def test_lucid_sjf_blocks_and_keys_on_true_duration() -> None:
    # 2 GPUs; j0 holds 1; heads: j2 (2 GPUs, 10 s) then j1 (1 GPU, 50 s)
    jobs = [J(0, 0, 100), J(1, 1, 50), J(2, 1, 10, 2)]
    d = ends(sim(jobs, 2, "sjf"))
    assert d["j1"] == 51  # default: j1 backfills next to j0
    lu = ends(sim(jobs, 2, "sjf", LUCID))
    assert lu["j2"] == 110 and lu["j1"] == 160  # Lucid: j2 blocks the queue until j0 ends


def test_batched_rounds_see_all_arrivals_of_a_second() -> None:
    # j0 ends at 10 and j2 (shorter) arrives at 10: a round per event starts j1 first (it is
    # the only pending job when the finish is handled); Lucid's 1-s loop sorts both first
    jobs = [J(0, 0, 10), J(1, 5, 100), J(2, 10, 5)]
    assert ends(sim(jobs, 1, "sjf"))["j2"] == 115
    assert ends(sim(jobs, 1, "sjf", LUCID))["j2"] == 15


def test_lucid_tiresias_rules() -> None:
    # 1 GPU, threshold 18,000 GPU-s, 60-s rounds, +40 s per preemption, end seen 1 s late
    jobs = [J(0, 0, 20000), J(1, 100, 50)]
    r = sim(jobs, 1, "tiresias", LUCID)
    s, e = starts(r), ends(r)
    assert s["j0"] == 0
    # j0 is demoted when its attained 18,000 GPU-s is passed (t > 18,000), seen at the round
    # of t = 18,060; j1 waits in the high queue until then (never preempted j0 before)
    assert s["j1"] == 18060 and e["j1"] == 18060 + 50 + 1
    # j1's end (18,111) is seen at the round of 18,120; j0 then has 2,000 - 60 + 40 s left
    assert e["j0"] == pytest.approx(18120 + (20000 - 18060) + 40 + 1)
    assert [j.preemptions for j in r.jobs] == [1, 0]


def test_quota_round_skips_a_job_that_does_not_fit() -> None:
    # 4 GPUs, Lucid rules: the 4-GPU job (older, high queue) does not fit next to a running
    # 1-GPU job of the high queue; the quota walk keeps the running job and gives the rest
    # to the younger 1-GPU job instead of preempting (the 'heads' round waits)
    jobs = [J(0, 0, 1000, 1), J(1, 30, 100, 4), J(2, 40, 100, 1)]
    r = sim(jobs, 4, "tiresias", LUCID)
    s = starts(r)
    assert s["j0"] == 0 and s["j2"] == 60 and s["j1"] == pytest.approx(1020)


def test_lucid_node_placement() -> None:
    n = LucidNodePlacement([8, 8, 8])
    a = n.allocate(3)
    assert a == ((0, 3),)  # lowest-numbered node among equals
    assert n.allocate(4) == ((0, 4),)  # best fit: the fullest node that fits
    assert n.allocate(12) == ((1, 8), (2, 4))  # a whole node, then the remainder on the next
    assert n.limit() == 4 and n.allocate(6) is None  # no whole node; node 2 has 4 free, node 0 has 1
    n.release(((1, 8),))
    assert n.limit() == 8 + 4  # one whole node + the partial node with the most free GPUs
    assert n.allocate(12) == ((1, 8), (2, 4))


def test_lucid_placement_limit_matches_allocate() -> None:
    # fitting is monotone and `limit` is exact: every size up to it fits, the next does not
    import random

    rng = random.Random(3)
    for _ in range(300):
        n = LucidNodePlacement([8] * rng.randint(1, 5))
        for _ in range(rng.randint(0, 6)):
            n.allocate(rng.randint(1, 16))
        lim = n.limit()
        for g in range(1, lim + 1):
            trial = LucidNodePlacement(n.sizes)
            trial.free, trial.buckets = list(n.free), [dict(b) for b in n.buckets]
            assert trial.allocate(g) is not None, (n.free, g)
        trial = LucidNodePlacement(n.sizes)
        trial.free, trial.buckets = list(n.free), [dict(b) for b in n.buckets]
        assert trial.allocate(lim + 1) is None


def test_default_semantics_unchanged_by_the_parameters() -> None:
    # the default preset is the engine before issue 14 except that key changes are events
    jobs = synthetic_trace(300, seed=5)
    for pol in ("fifo", "sjf", "srtf", "semantic"):
        a = Simulator(jobs, {"a": 16, "b": 16}, make_policy(pol), make_estimator("oracle")).run()
        b = Simulator(
            jobs,
            {"a": 16, "b": 16},
            make_policy(pol, Semantics()),
            make_estimator("oracle"),
            semantics=Semantics(),
        ).run()
        assert ends(a) == ends(b)


@pytest.mark.timeout(120)
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    at=st.floats(0, 5000),
    dur=st.floats(1, 5000),
    policy=st.sampled_from(["tiresias", "semantic"]),
)
def test_unrelated_job_in_another_vc_changes_nothing(seed: int, at: float, dur: float, policy: str) -> None:
    """Property (issue 14): adding a job to another virtual cluster changes no result in this
    one: rounds, key events and demotions of a VC depend on its own jobs only."""
    jobs = synthetic_trace(60, seed=seed, vcs=("a",))
    cl = {"a": 8, "b": 8}
    base = Simulator(jobs, cl, make_policy(policy), make_estimator("oracle"), check=True).run()
    more = Simulator(
        [*jobs, TraceJob("other", at, dur, 4, "b")],
        cl,
        make_policy(policy),
        make_estimator("oracle"),
        check=True,
    ).run()
    assert {j.job_id: (j.first_start, j.end, j.preemptions) for j in more.jobs if j.vc == "a"} == {
        j.job_id: (j.first_start, j.end, j.preemptions) for j in base.jobs
    }


def test_whole_run_with_lucid_semantics_keeps_invariants() -> None:
    jobs = synthetic_trace(400, seed=9)
    for pol in ("fifo", "sjf", "tiresias", "srtf", "semantic"):
        r = Simulator(
            jobs,
            {"a": 32, "b": 32},
            make_policy(pol, LUCID),
            make_estimator("oracle"),
            semantics=LUCID,
            placement="node",
            check=True,
        ).run()
        assert all(j.end >= j.first_start >= j.submit for j in r.jobs)
        assert sum(1 for j in r.jobs if j.end >= 0) + r.unschedulable == len(jobs)


class _Estimates:
    """Advisor predictions by job id (a scripted estimator)."""

    name = "scripted"

    def __init__(self, values: dict[str, float]) -> None:
        self.values = values

    def estimate(self, job: JobState) -> float:
        return self.values[job.job_id]

    def observe(self, job: JobState) -> None:
        return None


@pytest.mark.parametrize("placement", ["pool", "node"])
@pytest.mark.parametrize("policy", ["semantic", "semantic-pack"])
def test_preemption_overhead_does_not_undo_the_warm_up(policy: str, placement: str) -> None:
    """Regression (issue 14: semantic-pack under --semantics lucid, 'finished twice'): j0, 10 s
    past its 120-s warm-up, is evicted for j1 and charged 40 s of restart. Its key counted that
    overhead as progress lost, fell back to the (low) prediction and outranked j1 in the queue;
    the round then popped j0 instead of j1 and started j1, which stayed queued and ran twice."""
    sem = parse_semantics("default,preempt_overhead_s=40")
    jobs = [
        TraceJob("j0", 0.0, 10_000.0, 8, "a", share=2),  # predicted 200 s: a 50x underestimate
        TraceJob("j1", 130.0, 1000.0, 8, "a", share=2),  # class 2 shares with nobody
    ]
    r = Simulator(
        jobs,
        {"a": 8},
        make_policy(policy, sem),
        _Estimates({"j0": 200.0, "j1": 1000.0}),
        semantics=sem,
        placement=placement,
        check=True,
    ).run()
    j0, j1 = r.jobs
    assert (j1.first_start, j1.end, j1.preemptions) == (130.0, 1130.0, 0)
    assert (j0.first_start, j0.preemptions, j0.overhead) == (0.0, 1, 40.0)
    assert j0.end == pytest.approx(1130.0 + 10_000.0 - 130.0 + 40.0)


def test_semantic_key_never_falls_on_a_preemption() -> None:
    """A preempted job ranks no better than before (its victim check said it was worse than the
    head): the overhead adds work, it does not take back progress or the warm-up."""
    pol = SemanticPolicy()
    rng = random.Random(3)
    for n in range(2000):
        dur = rng.choice([60.0, 121.0, 150.0, 500.0, 10_000.0 * rng.random() + 1])
        job = JobState(n, f"j{n}", 0.0, dur, rng.choice([1, 8]), "a", "u", noise=rng.gauss(0, 1))
        job.estimate = dur * rng.lognormvariate(0, 1.0)
        job.remaining = dur
        job.run_start = 0.0
        now = rng.uniform(0.0, 2 * dur)
        job.remaining = max(job.remaining - now, 0.0)  # settle, then preempt with an overhead
        job.run_start = -1.0
        before = pol.key(job, now)
        job.remaining += 40.0
        job.overhead += 40.0
        assert pol.key(job, now) >= before, n

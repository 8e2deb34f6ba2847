"""Start-time prediction from a ClusterSnapshot (sdk.sim.predict_starts): the same code for a
trace cut and a live queue."""

from __future__ import annotations

import random

import pytest

from schedmate.core.cluster import ClusterSnapshot, JobState, JobView, NodeView
from schedmate.core.errors import InputError
from schedmate.sdk.sim import predict_starts
from schedmate.sim import Simulator, make_estimator, make_policy, synthetic_trace
from schedmate.sim.startmodel import Correlation, FutureDraw, HistoryRow, _current_weight
from schedmate.sim.whatif import ArrivalModel, DurationModel, _censored_quantile, snapshot_from_trace

T0 = 1_700_000_000.0  # a live snapshot's POSIX time


def live_snapshot() -> ClusterSnapshot:
    """2 nodes x 4 GPUs in partition 'gpu'; 2 running jobs with ETAs, 3 pending with estimates."""
    nodes = tuple(NodeView(f"n{i}", gpus=4, partitions=("gpu",)) for i in range(2))
    run = [
        JobView(
            "r1", user="u", state=JobState.RUNNING, partition="gpu", gpus=4, start_time=T0 - 50, eta_s=100
        ),
        JobView(
            "r2", user="u", state=JobState.RUNNING, partition="gpu", gpus=4, start_time=T0 - 10, eta_s=300
        ),
    ]
    pend = [
        JobView("p1", user="v", partition="gpu", gpus=4, submit_time=T0 - 40, estimate_s=1000),
        JobView("p2", user="v", partition="gpu", gpus=8, submit_time=T0 - 30, estimate_s=50),
        JobView("p3", user="v", partition="gpu", gpus=2, submit_time=T0 - 20, estimate_s=10),
    ]
    return ClusterSnapshot(T0, (*run, *pend), nodes)


def test_live_snapshot_strict_fifo_is_exact() -> None:
    # known durations and ETAs, no arrivals: every sampled future is the same
    preds = {p.job_id: p for p in predict_starts(live_snapshot(), policy="fifo", arrivals=False, samples=3)}
    # p1 takes r1's GPUs at +100; p2 (8 GPUs) waits for both: +1100; p3 after p2: +1150
    for jid, at in (("p1", 100), ("p2", 1100), ("p3", 1150)):
        p = preds[jid]
        assert p.p10_s is not None and p.p50_s is not None and p.p90_s is not None
        assert p.p10_s == p.p50_s == p.p90_s and p.p50_s - T0 == pytest.approx(at, abs=1e-6), jid
        assert p.started_in == 3 and p.partition == "gpu"


def test_backfill_policy_uses_the_same_snapshot() -> None:
    preds = {p.job_id: p for p in predict_starts(live_snapshot(), policy="sjf", arrivals=False, samples=1)}
    p3 = preds["p3"].p50_s
    assert p3 is not None and p3 - T0 == pytest.approx(100, abs=1e-6)  # the shortest first when r1 ends


def test_snapshot_needs_a_cluster() -> None:
    snap = ClusterSnapshot(T0, live_snapshot().jobs)  # no nodes
    with pytest.raises(InputError, match="no nodes"):
        predict_starts(snap)
    assert predict_starts(snap, cluster={"gpu": 8}, arrivals=False, samples=1)
    for bad in ({"samples": 0}, {"horizon_s": float("nan")}):
        with pytest.raises(InputError):
            predict_starts(live_snapshot(), **bad)  # type: ignore[arg-type]


def test_duration_model_conditions_on_elapsed() -> None:
    m = DurationModel([HistoryRow(0.0, "u", "a", 1, d) for d in (10.0, 20.0, 100.0, 1000.0)])
    ind = FutureDraw(random.Random(0), Correlation.INDEPENDENT)
    assert {m.sample("u", "a", 1, ind) for _ in range(200)} == {10.0, 20.0, 100.0, 1000.0}
    left = {m.remaining("u", "a", 1, ind, elapsed=50.0) for _ in range(200)}
    assert left == {50.0, 950.0}  # only the jobs that ran longer than 50 s
    assert m.remaining("u", "a", 1, ind, elapsed=5000.0) == 5000.0  # longer than all: as long again
    assert m.remaining("u", "a", 1, ind, elapsed=50.0, eta=7.0) == 7.0  # the tracker's ETA first
    assert m.remaining("u", "a", 1, ind, elapsed=50.0, eta=700.0, limit=100.0) == 50.0  # killed at the limit
    q = FutureDraw(random.Random(1), Correlation.QUANTILE)
    a = m.sample("u", "a", 1, q)
    assert all(m.sample("u", "a", 1, q) == a for _ in range(20))  # one quantile per key and future


def test_a_key_seen_once_does_not_fix_its_jobs_duration() -> None:
    """One 21-h job of its kind (24 GPUs) and fifty 1-min jobs of the user's others: a pending
    24-GPU job is 21 h in about half the futures (n / (n + 1) = 1/2), not in all; the jobs of
    one key make the same choice within a future."""
    hist = [HistoryRow(0.0, "u", "a", 24, 75_600.0)] + [HistoryRow(0.0, "u", "a", 8, 60.0)] * 50
    m = DurationModel(hist)
    long = 0
    for s in range(400):
        d = FutureDraw(random.Random(s), Correlation.QUANTILE)
        first = m.sample("u", "a", 24, d)
        assert all(m.sample("u", "a", 24, d) == first for _ in range(5))
        long += first == 75_600.0
    assert 0.4 < long / 400 < 0.62
    # a running job's remaining time keeps its own key (Lindy on few jobs is what it is for)
    assert m.remaining("u", "a", 24, FutureDraw(random.Random(0)), elapsed=3600.0) == 72_000.0


def test_pending_jobs_are_drawn_from_the_keys_current_jobs() -> None:
    """History: the key's jobs ran 10 s; the 6 that started in the last day ran 500 s (a new,
    heavier batch). With the current batch trusted, pending jobs come from it, and from the
    running jobs' totals drawn in the same future; with too few current jobs, from history."""
    now = 10 * 86400.0
    old = [HistoryRow(s, "u", "a", 1, 10.0, s + 10.0) for s in range(0, 86400, 900)]
    new = [HistoryRow(now - 3600 - i, "u", "a", 1, 500.0, now - 3000 - i) for i in range(6)]
    m = DurationModel(old + new, now=now)
    m.current_weight = 1.0
    draw = FutureDraw(random.Random(0))
    assert draw.correlation is Correlation.CURRENT
    assert {m.sample("u", "a", 1, draw) for _ in range(50)} == {500.0}
    m2 = DurationModel(old + new[:4], now=now)  # 4 < MIN_CURRENT
    m2.current_weight = 1.0
    assert m2.sample("u", "a", 1, FutureDraw(random.Random(0))) in (10.0, 500.0)
    assert {m2.sample("u", "a", 1, FutureDraw(random.Random(s))) for s in range(30)} <= {10.0, 500.0}
    # the running jobs of the key count as current jobs, with their totals of this future
    m3 = DurationModel(old + new[:4], now=now)
    m3.current_weight = 1.0
    d3 = FutureDraw(random.Random(0))
    for _ in range(3):
        m3.remaining("u", "a", 1, d3, elapsed=100.0, eta=7000.0)  # total 7,100 s
    assert {m3.sample("u", "a", 1, d3) for _ in range(200)} == {500.0, 7100.0}
    m3.current_weight = 0.0  # the history's way
    assert {m3.sample("u", "a", 1, FutureDraw(random.Random(2))) for _ in range(50)} <= {10.0, 500.0}


def test_shared_choices_are_stratified_over_the_futures() -> None:
    """With current_weight 0.3, exactly 3 of 10 futures draw a key's pending jobs from its
    current jobs (here: 5 running jobs of 7,100 s), not a random count; one quantile per key
    is spread evenly over the futures."""
    now = 10 * 86400.0
    m = DurationModel(
        [HistoryRow(s, "u", "a", 1, 10.0 + s / 900, s + 10.0) for s in range(0, 86400, 900)], now=now
    )
    m.current_weight = 0.3
    from_current = 0
    for i in range(10):
        d = FutureDraw(random.Random(i), Correlation.CURRENT, i, 10, seed=7)
        for _ in range(5):
            m.remaining("u", "a", 1, d, elapsed=100.0, eta=7000.0)
        from_current += m.sample("u", "a", 1, d) == 7100.0
    assert from_current == 3
    us = sorted(FutureDraw(random.Random(0), index=i, count=20).stratified(("k",)) for i in range(20))
    assert all(j / 20 <= u < (j + 1) / 20 for j, u in enumerate(us))  # one per twentieth


def test_current_weight_is_learned_from_the_history() -> None:
    day = 86400.0

    def rows(means: list[float]) -> list[HistoryRow]:
        out = []
        for d, mean in enumerate(means):
            for i in range(6):
                start = d * day + i * 600
                out.append(HistoryRow(start, "u", "a", 1, mean, start + mean))
        return out

    # a key whose level shifts and stays: the last day tells the next best
    assert _current_weight(rows([10, 10, 1000, 1000, 1000, 50, 50, 50, 50, 50]), day, 5) > 0.6
    # a key that alternates around its usual level: the history tells the next day better
    assert _current_weight(rows([10, 1000] * 6), day, 5) < 0.3
    assert _current_weight([], day, 5) == 0.5  # nothing to learn from


def test_censored_quantiles() -> None:
    # 10 futures, 4 started within the horizon: p10 among them, p50 and p90 after the horizon
    assert _censored_quantile([1.0, 2.0, 3.0, 4.0], 10, 0.1) == pytest.approx(1.9)
    assert _censored_quantile([1.0, 2.0, 3.0, 4.0], 10, 0.5) is None
    assert _censored_quantile([], 10, 0.1) is None
    assert _censored_quantile([1.0, 2.0, 3.0], 3, 0.5) == 2.0


def test_sjf_orders_by_the_estimate_at_submission() -> None:
    """A scheduler keys a job when it is submitted: job A was keyed on its user's 10-s history
    before a 100,000-s job of that user ended; B on its user's 1,000 s. A goes first, although
    by the snapshot's history it would be the longer one."""
    nodes = (NodeView("n0", gpus=1, partitions=("gpu",)),)
    history = [
        ("a", 10.0, T0 - 5000.0),
        ("a", 100_000.0, T0 - 45.0),
        ("b", 1000.0, T0 - 3000.0),
    ]
    rows = [HistoryRow(end - dur, u, "gpu", 1, dur, end) for u, dur, end in history]
    jobs = (
        JobView(
            "r", user="c", state=JobState.RUNNING, partition="gpu", gpus=1, start_time=T0 - 10, eta_s=100
        ),
        JobView("A", user="a", partition="gpu", gpus=1, submit_time=T0 - 50),
        JobView("B", user="b", partition="gpu", gpus=1, submit_time=T0 - 40),
    )
    preds = {
        p.job_id: p
        for p in predict_starts(
            ClusterSnapshot(T0, jobs, nodes), policy="sjf", history=rows, arrivals=False, samples=4
        )
    }
    assert preds["A"].p90_s == pytest.approx(T0 + 100)
    assert preds["B"].p10_s is not None and preds["B"].p10_s > T0 + 100


def test_a_start_after_the_horizon_is_not_predicted_earlier() -> None:
    """One GPU busy for 10 days: the pending job cannot start within a 7-day horizon, and the
    prediction says so (None) instead of the drained cluster's start."""
    nodes = (NodeView("n0", gpus=1, partitions=("gpu",)),)
    jobs = (
        JobView("r", user="c", state=JobState.RUNNING, partition="gpu", gpus=1, start_time=T0, eta_s=864_000),
        JobView("p", user="a", partition="gpu", gpus=1, submit_time=T0, estimate_s=10),
    )
    (p,) = predict_starts(ClusterSnapshot(T0, jobs, nodes), arrivals=False, samples=3)
    assert p.p10_s is None and p.p50_s is None and p.p90_s is None and p.started_in == 0
    (p,) = predict_starts(ClusterSnapshot(T0, jobs, nodes), arrivals=False, samples=3, horizon_s=11 * 86400)
    assert p.p50_s == pytest.approx(T0 + 864_000)
    with pytest.raises(InputError, match="correlation"):
        predict_starts(ClusterSnapshot(T0, jobs, nodes), correlation="nope")


def test_arrival_model_rate() -> None:
    rng = random.Random(1)
    week = 7 * 86400.0
    # 2 weeks of history, one job every 10 min in 'a' only
    hist = [HistoryRow(t, "u", "a", 1, 60.0) for t in range(0, int(2 * week), 600)]
    m = ArrivalModel(hist, 0.0, 2 * week)
    jobs = m.sample(2 * week, 86400.0, rng)
    assert {j.vc for j in jobs} == {"a"}
    assert 144 * 0.8 < len(jobs) < 144 * 1.2  # 144 a day expected
    assert all(2 * week < j.submit_s <= 2 * week + 86400 for j in jobs)


def test_trace_snapshot_hides_durations() -> None:
    jobs = synthetic_trace(300, seed=4)
    cl = {"a": 16, "b": 16}
    truth = Simulator(jobs, cl, make_policy("fifo"), make_estimator("oracle")).run()
    t = jobs[150].submit_s
    snap, finished, history = snapshot_from_trace(jobs, truth, t)
    assert snap.time == t and snap.pending and snap.running
    assert all(j.estimate_s is None and j.eta_s is None for j in snap.jobs)  # what a live queue shows
    done = {st.job_id: st for st in truth.jobs if 0 <= st.end <= t}
    assert len(finished) == len(done) == sum(1 for h in history if h.finished)
    assert sorted(r.end for r in finished) == sorted(st.end for st in done.values())
    assert all(r.end == -1.0 for r in history if not r.finished)
    preds = predict_starts(snap, policy="fifo", cluster=cl, history=history, samples=5, seed=2)
    assert {p.job_id for p in preds} == {j.job_id for j in snap.pending}
    for p in preds:
        assert p.p10_s is not None and p.p50_s is not None and p.p90_s is not None
        assert t <= p.p10_s <= p.p50_s <= p.p90_s


def test_drawn_durations_never_exceed_the_time_limit() -> None:
    """History says such jobs run ~5,000 s, but the scheduler ends them at their limit: the
    running job frees its GPUs by its limit, and the pending job before the probe ends by its own."""
    nodes = (NodeView("n0", gpus=1, partitions=("gpu",)),)
    history = [
        JobView(
            f"h{i}",
            user="u",
            state=JobState.COMPLETED,
            partition="gpu",
            gpus=1,
            submit_time=T0 - 9000 - i,
            start_time=T0 - 9000 + i,
            end_time=T0 - 4000 + i,
        )
        for i in range(20)
    ]
    jobs = (
        JobView(
            "run",
            user="u",
            state=JobState.RUNNING,
            partition="gpu",
            gpus=1,
            start_time=T0 - 10,
            time_limit_s=100,
        ),
        JobView("first", user="u", partition="gpu", gpus=1, submit_time=T0 - 5, time_limit_s=200),
        JobView("probe", user="w", partition="gpu", gpus=1, submit_time=T0 - 1, estimate_s=10),
    )
    preds = {
        p.job_id: p
        for p in predict_starts(
            ClusterSnapshot(T0, jobs, nodes), policy="fifo", history=history, arrivals=False, samples=8
        )
    }
    assert preds["first"].p90_s is not None and preds["first"].p90_s <= T0 + 90 + 1
    assert preds["probe"].p90_s is not None and preds["probe"].p90_s <= T0 + 90 + 200 + 1


def test_each_future_starts_from_the_same_estimator(monkeypatch: pytest.MonkeyPatch) -> None:
    """SJF on a history estimator: the estimator learns from the jobs that finish inside a
    sampled future, and only there; the next future starts from the snapshot's history again
    (a shared estimator made later futures key arrivals on earlier futures' draws)."""
    import copy

    from schedmate.sim import whatif

    seen: list[object] = []
    real = whatif._ordering_estimator

    def spy(*args: object, **kwargs: object) -> object:
        est = real(*args, **kwargs)  # type: ignore[arg-type]
        seen.append((est, copy.deepcopy(est.base.stats)))  # type: ignore[attr-defined]
        return est

    monkeypatch.setattr(whatif, "_ordering_estimator", spy)
    nodes = (NodeView("n0", gpus=1, partitions=("gpu",)),)
    rows = [
        HistoryRow(T0 - 9000.0 + 100 * i, "a", "gpu", 1, 50.0 + i, T0 - 8000.0 + 100 * i) for i in range(20)
    ]
    jobs = (
        JobView(
            "r", user="c", state=JobState.RUNNING, partition="gpu", gpus=1, start_time=T0 - 10, eta_s=100
        ),
        *(JobView(f"p{i}", user="a", partition="gpu", gpus=1, submit_time=T0 - 50 + i) for i in range(5)),
    )
    preds = predict_starts(ClusterSnapshot(T0, jobs, nodes), policy="sjf", history=rows, samples=6)
    assert len(preds) == 5 and len(seen) == 1
    est, before = seen[0]
    assert est.base.stats == before  # type: ignore[attr-defined]


def test_a_snapshot_of_a_preemptive_replay_shows_a_preempted_job_waiting() -> None:
    # one GPU: `long` runs from 0, `short` arrives at 60 and preempts it under SRTF (its remaining
    # time is shorter); at t = 100 `long` has started before but waits, `short` runs
    from schedmate.sim import TraceJob
    from schedmate.sim.whatif import snapshot_at

    jobs = [
        TraceJob("long", 0.0, 1000.0, 1, "v"),
        TraceJob("short", 60.0, 100.0, 1, "v"),
        TraceJob("mid", 90.0, 500.0, 1, "v"),
    ]
    truth = Simulator(jobs, {"v": 1}, make_policy("srtf"), make_estimator("oracle"), observe_at=100.0).run()
    obs = truth.observed
    assert obs is not None and set(obs.running) == {1} and obs.waiting == {0, 2}
    assert obs.running[1] == pytest.approx(60.0)  # work left
    # each waiting job's next start, not the first start of the preempted one
    assert obs.next_start[0] > 100.0 and truth.jobs[0].first_start == 0.0
    snap, _, _ = snapshot_from_trace(jobs, truth, 100.0)
    running = {v.job_id for v in snap.jobs if v.state is JobState.RUNNING}
    assert running == {"short"}  # (the GPU is held once: no over-allocation downstream)
    s = snapshot_at(jobs, truth, 100.0)
    assert [j.job_id for j, _ in s.running] == ["short"] and {j.job_id for j in s.pending} == {"long", "mid"}
    # a run without the observation is unchanged
    plain = Simulator(jobs, {"v": 1}, make_policy("srtf"), make_estimator("oracle")).run()
    assert [(a.first_start, a.end) for a in plain.jobs] == [(a.first_start, a.end) for a in truth.jobs]


def test_whatif_at_a_moment_after_a_preemption_predicts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from schedmate.sdk.sim import predict_trace

    p = tmp_path / "t.csv"
    p.write_text("job_id,submit_s,duration_s,gpus\na,0,1000,1\nb,60,100,1\nc,90,500,1\n")
    for policy in ("srtf", "tiresias", "semantic", "lucid"):
        res = predict_trace(p, "native", 100.0, policy=policy, cluster="1", samples=2)
        # one GPU: one job holds it (lucid packs a second job onto it: both run)
        assert res.running == (2 if policy == "lucid" else 1)
        assert res.predictions and all(pr.p50_s >= 100.0 for pr in res.predictions)

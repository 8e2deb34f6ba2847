"""Duration estimation: scaling neighbours by work, choosing the scaling, fallbacks."""

from __future__ import annotations

import pytest

from schedmate.advisor.estimate import DurationEstimator, calibrate, startup_costs, work_units
from schedmate.advisor.history.base import JobRecord, Neighbor
from schedmate.advisor.metadata import WorkloadMetadata


def nb(i: int, steps: int, dur: float, sim: float = 0.95, gpus: int = 1, params: float = 1e6) -> Neighbor:
    meta = WorkloadMetadata(max_steps=steps, global_batch_size=32, param_count=params, n_gpus=gpus)
    return Neighbor(JobRecord(job_id=f"n{i}", duration_s=dur, n_gpus=gpus, metadata=meta), sim)


def test_affine_work_model_is_learned_from_neighbours() -> None:
    # d = 5 s start-up + 0.01 s per step: proportional scaling would be wrong
    neighbors = [nb(i, s, 5 + 0.01 * s) for i, s in enumerate((1000, 2000, 4000, 8000))]
    q = WorkloadMetadata(max_steps=3000, global_batch_size=32, param_count=1e6, n_gpus=1)
    p = DurationEstimator().predict(q, {}, neighbors)
    assert p.method == "knn-scaled"
    assert p.p50_s == pytest.approx(35.0, rel=0.02)
    assert p.p10_s is not None and p.p90_s is not None and p.p10_s < 35.0 < p.p90_s


def test_proportional_scaling_with_gpus() -> None:
    # work / gpus exactly: d = steps * 0.01 / gpus
    neighbors = [
        nb(i, s, s * 0.01 / g, gpus=g)
        for i, (s, g) in enumerate([(1000, 1), (2000, 2), (4000, 1), (4000, 4)])
    ]
    q = WorkloadMetadata(max_steps=8000, global_batch_size=32, param_count=1e6, n_gpus=2)
    p = DurationEstimator().predict(q, {}, neighbors)
    assert p.p50_s == pytest.approx(40.0, rel=0.05)


def test_identical_jobs_answer_knn_with_their_spread() -> None:
    neighbors = [nb(i, 1000, d) for i, d in enumerate((10.0, 11.0, 12.0))]
    p = DurationEstimator().predict(
        WorkloadMetadata(max_steps=1000, global_batch_size=32, param_count=1e6, n_gpus=1), {}, neighbors
    )
    assert p.method == "knn" and p.p50_s == pytest.approx(11.0, rel=0.1)


def test_dissimilar_neighbours_fall_back_in_order() -> None:
    far = [nb(0, 1000, 10.0, sim=0.3)]
    q = WorkloadMetadata(max_steps=1000, global_batch_size=32, param_count=1e6, n_gpus=1)
    est = DurationEstimator(calibration={"rate": 32e9 / 100.0, "overhead_s": 0.0, "sigma": 0.5})
    assert est.predict(q, {}, far).method == "metadata"
    est = DurationEstimator()
    user_jobs = [
        JobRecord(job_id=f"u{i}", duration_s=100.0 * (i + 1), user="ann", n_gpus=1, name="bert-ft")
        for i in range(3)
    ]
    p = est.predict(q, {}, far, user="ann", name="bert-ft", user_jobs=lambda: user_jobs)
    assert p.method == "user-history" and p.p50_s == pytest.approx(200.0)
    p = est.predict(q, {}, far, durations=lambda: [10.0, 20.0, 30.0])
    assert p.method == "prior" and p.p50_s == pytest.approx(20.0, rel=0.01)
    p = est.predict(q, {}, [])
    assert p.method == "prior" and p.p50_s == 3600.0


def test_work_units_and_calibration() -> None:
    m = WorkloadMetadata(epochs=2, dataset_size=1000, param_count=1e6, seq_len=128)
    assert work_units(m, {}) == pytest.approx(2000 * 1e6 * 128 / 1024)
    assert work_units(WorkloadMetadata(epochs=2), {}) is None
    records = [
        JobRecord(
            job_id=str(i),
            duration_s=2.0 + s / 1000,
            metadata=WorkloadMetadata(max_steps=s, global_batch_size=1, param_count=1024.0),
        )
        for i, s in enumerate((1000, 2000, 4000, 8000, 16000))
    ]
    cal = calibrate(records)
    assert cal["rate"] > 0 and cal["n"] == 5 and cal["sigma"] < 1.0


def test_one_neighbour_brackets_unscaled_and_proportional() -> None:
    q = WorkloadMetadata(max_steps=4000, global_batch_size=32, param_count=1e6, n_gpus=1)
    p = DurationEstimator().predict(q, {}, [nb(0, 1000, 10.0)])
    assert p.method == "knn-scaled" and p.p50_s == pytest.approx(20.0)  # sqrt(10 * 40)
    assert p.p10_s is not None and p.p90_s is not None and p.p10_s < 10.0 and p.p90_s > 40.0


def test_neighbour_with_work_in_other_terms_is_not_used() -> None:
    epochs_job = Neighbor(JobRecord(job_id="e", duration_s=10.0, metadata=WorkloadMetadata(epochs=3)), 0.95)
    q = WorkloadMetadata(max_steps=300000)
    p = DurationEstimator().predict(q, {}, [epochs_job], durations=lambda: [50.0])
    assert p.method == "prior"


def _program_runs(
    code_dir: str, framework: str, startup: float, per_step: float, steps: tuple[int, ...]
) -> list[JobRecord]:
    return [
        JobRecord(
            job_id=f"{code_dir}-{s}",
            duration_s=startup + per_step * s,
            code_dir=code_dir,
            n_gpus=1,
            metadata=WorkloadMetadata(
                framework=framework, entrypoint="train.py", max_steps=s, global_batch_size=32, n_gpus=1
            ),
        )
        for s in steps
    ]


def test_startup_cost_is_learned_per_framework_across_programs() -> None:
    runs = (
        _program_runs("a", "transformers", 20.0, 0.5, (100, 400, 1600))
        + _program_runs("b", "transformers", 20.0, 0.1, (1000, 3000))
        + _program_runs("c", "pytorch", 3.0, 0.02, (500, 5000))
    )
    cal = calibrate(runs)
    assert cal["startup_s:transformers"] == pytest.approx(20.0, rel=1e-6)
    assert cal["startup_s:pytorch"] == pytest.approx(3.0, rel=1e-6)
    assert cal["startup_programs"] == 3
    est = DurationEstimator(calibration=cal)
    assert est.startup_s(WorkloadMetadata(framework="pytorch")) == pytest.approx(3.0)
    assert est.startup_s(WorkloadMetadata(framework="jax")) == pytest.approx(
        cal["startup_s"]
    )  # overall median


def test_startup_cost_ignores_runs_it_cannot_compare() -> None:
    # different GPU counts, work within 1.5x, and more work finishing sooner say nothing about start-up
    m = {"framework": "pytorch", "entrypoint": "train.py", "global_batch_size": 32}
    runs = [
        JobRecord(
            job_id="1", duration_s=10.0, code_dir="a", metadata=WorkloadMetadata(max_steps=100, n_gpus=1, **m)
        ),
        JobRecord(
            job_id="2", duration_s=30.0, code_dir="a", metadata=WorkloadMetadata(max_steps=400, n_gpus=2, **m)
        ),
        JobRecord(
            job_id="3", duration_s=12.0, code_dir="a", metadata=WorkloadMetadata(max_steps=120, n_gpus=1, **m)
        ),
        JobRecord(
            job_id="4", duration_s=8.0, code_dir="a", metadata=WorkloadMetadata(max_steps=1000, n_gpus=1, **m)
        ),
    ]
    assert startup_costs(runs) == {}


def test_known_startup_cost_makes_scaling_exact() -> None:
    # d = 12 s start-up + 0.01 s/step; neighbours' own affine fit and the learned start-up agree
    neighbors = [nb(i, s, 12 + 0.01 * s) for i, s in enumerate((1000, 2000, 3000))]
    q = WorkloadMetadata(max_steps=9000, global_batch_size=32, param_count=1e6, n_gpus=1, framework="pytorch")
    p = DurationEstimator(calibration={"startup_s:pytorch": 12.0}).predict(q, {}, neighbors)
    assert p.p50_s == pytest.approx(102.0, rel=0.03)
    assert "scalings" in p.detail


def test_candidate_scalings_are_averaged_or_the_best_is_used() -> None:
    # noisy neighbours: averaging blends the candidates, "best" picks one; both stay near the truth
    durs = (5 + 0.01 * 1000 * 1.1, 5 + 0.01 * 2000 * 0.9, 5 + 0.01 * 4000 * 1.05, 5 + 0.01 * 8000)
    neighbors = [nb(i, s, d) for i, (s, d) in enumerate(zip((1000, 2000, 4000, 8000), durs, strict=True))]
    q = WorkloadMetadata(max_steps=3000, global_batch_size=32, param_count=1e6, n_gpus=1)
    avg = DurationEstimator(combine="average").predict(q, {}, neighbors)
    best = DurationEstimator(combine="best").predict(q, {}, neighbors)
    assert avg.p50_s is not None and best.p50_s is not None
    assert avg.p50_s == pytest.approx(35.0, rel=0.15) and best.p50_s == pytest.approx(35.0, rel=0.15)
    assert avg.p50_s != best.p50_s
    assert avg.p10_s is not None and avg.p90_s is not None and avg.p10_s < 35.0 < avg.p90_s

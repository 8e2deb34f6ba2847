"""Duration estimation: scaling neighbours by work, choosing the scaling, fallbacks."""

from __future__ import annotations

import pytest

from schedmate.advisor.estimate import DurationEstimator, calibrate, work_units
from schedmate.advisor.metadata import WorkloadMetadata
from schedmate.advisor.store import JobRecord, Neighbor


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
    neighbors = [nb(i, s, s * 0.01 / g, gpus=g) for i, (s, g) in enumerate([(1000, 1), (2000, 2), (4000, 1), (4000, 4)])]
    q = WorkloadMetadata(max_steps=8000, global_batch_size=32, param_count=1e6, n_gpus=2)
    p = DurationEstimator().predict(q, {}, neighbors)
    assert p.p50_s == pytest.approx(40.0, rel=0.05)


def test_identical_jobs_answer_knn_with_their_spread() -> None:
    neighbors = [nb(i, 1000, d) for i, d in enumerate((10.0, 11.0, 12.0))]
    p = DurationEstimator().predict(WorkloadMetadata(max_steps=1000, global_batch_size=32, param_count=1e6, n_gpus=1),
                                    {}, neighbors)
    assert p.method == "knn" and p.p50_s == pytest.approx(11.0, rel=0.1)


def test_dissimilar_neighbours_fall_back_in_order() -> None:
    far = [nb(0, 1000, 10.0, sim=0.3)]
    q = WorkloadMetadata(max_steps=1000, global_batch_size=32, param_count=1e6, n_gpus=1)
    est = DurationEstimator(calibration={"rate": 32e9 / 100.0, "overhead_s": 0.0, "sigma": 0.5})
    assert est.predict(q, {}, far).method == "metadata"
    est = DurationEstimator()
    user_jobs = [JobRecord(job_id=f"u{i}", duration_s=100.0 * (i + 1), user="ann", n_gpus=1, name="bert-ft")
                 for i in range(3)]
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
    records = [JobRecord(job_id=str(i), duration_s=2.0 + s / 1000, metadata=WorkloadMetadata(
        max_steps=s, global_batch_size=1, param_count=1024.0)) for i, s in enumerate((1000, 2000, 4000, 8000, 16000))]
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

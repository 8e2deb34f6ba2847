"""Baselines: Lucid's naive estimator and the gradient-boosted model."""

from __future__ import annotations

import pytest

from schedmate.advisor.estimate.baselines import GBMEstimator, LucidNaiveEstimator
from schedmate.advisor.history.base import JobRecord
from schedmate.advisor.metadata import WorkloadMetadata


def test_lucid_naive_prefers_user_gpus_and_similar_name() -> None:
    hist = [
        JobRecord(job_id="1", duration_s=100.0, user="a", n_gpus=8, name="bert-large-ft"),
        JobRecord(job_id="2", duration_s=300.0, user="a", n_gpus=8, name="bert-large-ft2"),
        JobRecord(job_id="3", duration_s=50.0, user="a", n_gpus=8, name="resnet"),
        JobRecord(job_id="4", duration_s=10.0, user="a", n_gpus=1, name="debug"),
        JobRecord(job_id="5", duration_s=1000.0, user="b", n_gpus=8, name="bert-large-ft"),
    ]
    est = LucidNaiveEstimator().fit(hist)
    assert est.predict(JobRecord(job_id="q", user="a", n_gpus=8, name="bert-large-ft")) == pytest.approx(
        200.0
    )
    assert est.predict(JobRecord(job_id="q", user="a", n_gpus=8, name="gpt")) == pytest.approx(150.0)
    assert est.predict(JobRecord(job_id="q", user="a", n_gpus=4, name="x")) == pytest.approx(115.0)
    assert est.predict(JobRecord(job_id="q", user="zed", n_gpus=4)) == pytest.approx(292.0)


def test_gbm_learns_steps_dependence() -> None:
    def rec(i: int, steps: int) -> JobRecord:
        return JobRecord(
            job_id=str(i),
            duration_s=float(steps),
            user="u",
            n_gpus=1,
            metadata=WorkloadMetadata(max_steps=steps, global_batch_size=8, framework="pytorch"),
        )

    train = [rec(i, s) for i, s in enumerate([100, 200, 400, 800, 1600, 3200] * 4)]
    gbm = GBMEstimator(min_samples_leaf=2).fit(train)
    small, big = gbm.predict(rec(99, 150)), gbm.predict(rec(98, 3000))
    assert small < big and 50 < small < 400 and 1000 < big < 5000

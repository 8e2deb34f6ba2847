"""Baselines the Advisor is measured against.

- `LucidNaiveEstimator`: Lucid's naive duration estimator (ASPLOS '23): the mean duration of
  the same user's past jobs with the same GPU count and a similar name, falling back to the
  same user and GPU count, the same user, then everyone.
- `GBMEstimator`: a gradient-boosted regressor on metadata features (log duration target),
  scikit-learn's HistGradientBoostingRegressor; an optional dependency (`baselines` extra).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from schedmate.advisor.estimate.estimator import _samples, similar_names
from schedmate.advisor.history.base import JobRecord
from schedmate.core.errors import ConfigError

__all__ = ["LucidNaiveEstimator", "GBMEstimator"]


class LucidNaiveEstimator:
    """Mean duration of similar past jobs by (user, GPUs, name similarity)."""

    def __init__(self, name_similarity: float = 0.8) -> None:
        self.name_similarity = name_similarity
        self._by_user: dict[str | None, list[JobRecord]] = defaultdict(list)
        self._all: list[float] = []

    def fit(self, records: Sequence[JobRecord]) -> LucidNaiveEstimator:
        for r in records:
            if r.duration_s and r.duration_s > 0:
                self._by_user[r.user].append(r)
                self._all.append(r.duration_s)
        return self

    def predict(self, rec: JobRecord) -> float:
        past = self._by_user.get(rec.user, [])
        same_gpus = [r for r in past if r.n_gpus == rec.n_gpus]
        if rec.name and same_gpus:
            named = similar_names(same_gpus, rec.name, self.name_similarity)
            if named:
                return statistics.fmean(r.duration_s for r in named)  # type: ignore[misc]
        for pool in (same_gpus, past):
            if pool:
                return statistics.fmean(r.duration_s for r in pool)  # type: ignore[misc]
        return statistics.fmean(self._all) if self._all else 3600.0


def _log(x: float | int | None) -> float:
    return math.log1p(float(x)) if x is not None and x > 0 else math.nan


class GBMEstimator:
    """Gradient-boosted trees on metadata features, trained on log duration."""

    NUMERIC = (
        "n_gpus",
        "param_count",
        "dataset_size",
        "global_batch_size",
        "epochs",
        "max_steps",
        "seq_len",
        "image_size",
    )
    CATEGORICAL = ("framework", "model_family", "task", "precision", "entrypoint", "user")

    def __init__(self, **params: Any) -> None:
        try:
            from sklearn.ensemble import HistGradientBoostingRegressor
        except ImportError:
            raise ConfigError(
                "the GBM baseline needs scikit-learn: pip install 'schedmate[baselines]'"
            ) from None
        defaults = {"max_iter": 200, "learning_rate": 0.1, "min_samples_leaf": 3, "random_state": 0}
        self._model = HistGradientBoostingRegressor(
            **{**defaults, **params}, categorical_features="from_dtype"
        )
        self._codes: dict[str, dict[str, int]] = {c: {} for c in self.CATEGORICAL}
        self._fitted = False
        self._keep: list[int] = []
        self._fallback = 3600.0

    def _row(self, r: JobRecord, grow: bool) -> list[float]:
        m = r.metadata
        row = [_log(getattr(m, f, None) if m is not None else None) for f in self.NUMERIC]
        if m is None or m.n_gpus is None:
            row[0] = _log(r.n_gpus)
        row.append(_log(_samples(m)) if m is not None else math.nan)
        for c in self.CATEGORICAL:
            v = getattr(r, c, None) if c == "user" else (getattr(m, c, None) if m is not None else None)
            codes = self._codes[c]
            if v is not None and v not in codes and grow:
                codes[v] = len(codes)
            row.append(float(codes[v]) if v in codes else math.nan)
        return row

    def fit(self, records: Sequence[JobRecord]) -> GBMEstimator:
        import numpy as np

        done = [r for r in records if r.duration_s and r.duration_s > 0]
        if not done:
            return self
        durations = [float(r.duration_s or 0.0) for r in done]
        self._fallback = statistics.median(durations)
        X = np.array([self._row(r, True) for r in done], dtype=float)
        y = np.log(durations)
        # columns never seen in training carry no information (and break the binning)
        self._keep = [i for i in range(X.shape[1]) if not np.all(np.isnan(X[:, i]))]
        first_cat = len(self.NUMERIC) + 1
        if len(done) >= 5 and self._keep:
            cats = [j for j, i in enumerate(self._keep) if i >= first_cat]
            self._model.set_params(categorical_features=cats or None)
            self._model.fit(X[:, self._keep], y)
            self._fitted = True
        return self

    def predict(self, rec: JobRecord) -> float:
        import numpy as np

        if not self._fitted:
            return self._fallback
        row = np.array([self._row(rec, False)], dtype=float)[:, self._keep]
        return float(np.exp(self._model.predict(row)[0]))

"""InMemoryHistoryStore: exact search over a numpy matrix, the fake for tests and small what-ifs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from schedmate.advisor.history.base import JobRecord, Neighbor, _unit_query, top_indices
from schedmate.backends.embedder import normalize_rows

__all__ = ["InMemoryHistoryStore"]


class InMemoryHistoryStore:
    """Exact search over a numpy matrix; for unit tests and small what-ifs."""

    read_only = False

    def __init__(self) -> None:
        self._records: list[JobRecord] = []
        self._ids: dict[str, int] = {}
        self._vecs: np.ndarray | None = None
        self._meta: dict[str, str] = {}

    @property
    def dim(self) -> int | None:
        return None if self._vecs is None else int(self._vecs.shape[1])

    def add(self, records: Sequence[JobRecord], vectors: np.ndarray) -> int:
        vecs = normalize_rows(vectors)
        if len(records) != len(vecs):
            raise ValueError("records and vectors differ in length")
        for rec, vec in zip(records, vecs, strict=True):
            if rec.job_id in self._ids:
                i = self._ids[rec.job_id]
                self._records[i] = rec
                assert self._vecs is not None
                self._vecs[i] = vec
                continue
            self._ids[rec.job_id] = len(self._records)
            self._records.append(rec)
            self._vecs = vec[None, :].copy() if self._vecs is None else np.vstack([self._vecs, vec[None, :]])
        return len(records)

    def get(self, job_id: str) -> JobRecord | None:
        i = self._ids.get(job_id)
        return None if i is None else self._records[i]

    def search(self, vector: np.ndarray, k: int) -> list[Neighbor]:
        if self._vecs is None or k <= 0:
            return []
        sims = self._vecs @ _unit_query(vector)
        ids = [r.job_id for r in self._records]
        return [Neighbor(self._records[i], float(sims[i])) for i in top_indices(sims, ids, k)]

    def by_user(self, user: str, limit: int = 1000) -> list[JobRecord]:
        return [r for r in self._records if r.user == user][-limit:]

    def durations(self, limit: int = 100_000) -> list[float]:
        return [r.duration_s for r in self._records[-limit:] if r.duration_s is not None]

    def count(self) -> int:
        return len(self._records)

    def records(self) -> Iterator[JobRecord]:
        return iter(list(self._records))

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self._meta[key] = value

    def close(self) -> None:
        pass

"""The history contract every store shares: `JobRecord`, `Neighbor`, the `HistoryStore` protocol,
and the row helpers (column order, row -> record, vector checks) the SQL stores have in common.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from schedmate.advisor.metadata import WorkloadMetadata
from schedmate.backends.embedder import normalize_rows
from schedmate.core.errors import ConfigError

__all__ = [
    "JobRecord",
    "Neighbor",
    "HistoryStore",
    "EXACT_BELOW",
    "ExtractionCache",
    "IndexedStore",
    "ended_normally",
    "ranked",
    "top_indices",
]

EXACT_BELOW = 20_000  # exact search under this many records: exact and fast enough


@dataclass(frozen=True)
class JobRecord:
    """One past (or new) job. `duration_s` is None for a job still to be predicted."""

    job_id: str
    duration_s: float | None = None
    submit_time: float | None = None
    status: str | None = None
    n_gpus: int | None = None
    n_nodes: int | None = None
    gpu_model: str | None = None
    user: str | None = None
    name: str | None = None
    code_dir: str | None = None
    command: str | None = None
    config_files: tuple[str, ...] = ()
    metadata: WorkloadMetadata | None = None
    size: dict[str, float] = field(default_factory=dict)
    text: str = ""

    def with_metadata(self, metadata: WorkloadMetadata, size: dict[str, float], text: str) -> JobRecord:
        return replace(self, metadata=metadata, size=dict(size), text=text)


@dataclass(frozen=True)
class Neighbor:
    record: JobRecord
    similarity: float


# A job whose duration says how long its work takes: completed (or of unknown status, as in a
# plain JSONL history). Failed, cancelled, timed-out, preempted or OOM-killed jobs stay in the
# history (their code and user still describe the workload) but never serve as a duration.
_DONE = frozenset(
    {"completed", "complete", "success", "succeeded", "successful", "finished", "done", "ok", "pass"}
)


def ended_normally(status: str | None) -> bool:
    """True when a job's duration is the time its work took (status completed or not recorded)."""
    if status is None or not status.strip():
        return True
    word = status.strip().lower().replace("-", "_").split()[0].rstrip(".,;:")
    return word in _DONE


SIM_DECIMALS = 6  # similarities equal to 1e-6 are a tie (float32 noise), broken by job_id


def ranked(neighbors: Iterable[Neighbor], k: int | None = None) -> list[Neighbor]:
    """Neighbours by decreasing similarity, ties broken by job_id: the order never depends on
    the order jobs were stored or indexed."""
    out = sorted(neighbors, key=lambda n: (-round(n.similarity, SIM_DECIMALS), n.record.job_id))
    return out if k is None else out[:k]


def top_indices(sims: np.ndarray, job_ids: Sequence[str], k: int) -> list[int]:
    """The indices of the k most similar rows, ties (to 1e-6) broken by job_id. Only the band at
    and above the k-th similarity is sorted, so this stays O(n) plus the ties."""
    r = np.round(np.asarray(sims, dtype=np.float64), SIM_DECIMALS)
    r = np.where(np.isfinite(r), r, -np.inf)
    n = len(r)
    if n > k:
        kth = np.partition(r, n - k)[n - k]
        cand = np.flatnonzero(r >= kth)
    else:
        cand = np.arange(n)
    return sorted((int(i) for i in cand), key=lambda i: (-float(r[i]), job_ids[i]))[:k]


@runtime_checkable
class HistoryStore(Protocol):
    """Past jobs plus a vector index over their embeddings."""

    @property
    def dim(self) -> int | None: ...

    def add(self, records: Sequence[JobRecord], vectors: np.ndarray) -> int: ...

    def get(self, job_id: str) -> JobRecord | None: ...

    def search(self, vector: np.ndarray, k: int) -> list[Neighbor]: ...

    def by_user(self, user: str, limit: int = 1000) -> list[JobRecord]: ...

    def durations(self, limit: int = 100_000) -> list[float]: ...

    def count(self) -> int: ...

    def records(self) -> Iterator[JobRecord]: ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class ExtractionCache(Protocol):
    """A store that also keeps extractions by content key (so an import reads each code dir once).
    A store opened read-only (`read_only`) answers lookups and ignores nothing silently: the
    Advisor does not call `put_extraction` on it."""

    read_only: bool

    def get_extraction(self, key: str) -> str | None: ...

    def put_extraction(self, key: str, value: str) -> None: ...


@runtime_checkable
class IndexedStore(Protocol):
    """A store with an approximate index built once it holds `exact_below` jobs."""

    exact_below: int

    def build_index(self) -> None: ...


def _unit_query(v: np.ndarray) -> np.ndarray:
    """One query vector, unit length (the embedders' own normalisation, for a single row)."""
    out: np.ndarray = normalize_rows(np.reshape(np.asarray(v), (1, -1)))[0]
    return out


def _checked_vectors(
    records: Sequence[JobRecord], vectors: np.ndarray, dim: int | None, where: str
) -> np.ndarray:
    """Unit-length rows, one per record, of the store's dimension (any store's `add`)."""
    vecs = normalize_rows(vectors)
    if vecs.ndim != 2 or len(vecs) != len(records):
        raise ValueError("records and vectors differ in length")
    if dim is not None and vecs.shape[1] != dim:
        raise ConfigError(f"{where}: store holds {dim}-dim embeddings, got {vecs.shape[1]}")
    return vecs


_COLS = (
    "job_id",
    "duration_s",
    "submit_time",
    "status",
    "n_gpus",
    "n_nodes",
    "gpu_model",
    "user",
    "name",
    "code_dir",
    "command",
    "config_files",
    "metadata",
    "size",
    "text",
)


def _record_to_row(r: JobRecord) -> tuple[Any, ...]:
    """A record as the values of `_COLS`, in order (the inverse of `_row_to_record`); each store
    appends its own encoding of the vector."""
    return (
        r.job_id,
        r.duration_s,
        r.submit_time,
        r.status,
        r.n_gpus,
        r.n_nodes,
        r.gpu_model,
        r.user,
        r.name,
        r.code_dir,
        r.command,
        json.dumps(list(r.config_files)),
        r.metadata.model_dump_json() if r.metadata else None,
        json.dumps(r.size),
        r.text,
    )


def _row_to_record(row: Sequence[Any]) -> JobRecord:
    (
        job_id,
        duration_s,
        submit_time,
        status,
        n_gpus,
        n_nodes,
        gpu_model,
        user,
        name,
        code_dir,
        command,
        config_files,
        metadata,
        size,
        text,
    ) = row
    meta = WorkloadMetadata.model_validate_json(metadata) if metadata else None
    return JobRecord(
        job_id=job_id,
        duration_s=duration_s,
        submit_time=submit_time,
        status=status,
        n_gpus=n_gpus,
        n_nodes=n_nodes,
        gpu_model=gpu_model,
        user=user,
        name=name,
        code_dir=code_dir,
        command=command,
        config_files=tuple(json.loads(config_files or "[]")),
        metadata=meta,
        size=json.loads(size or "{}"),
        text=text or "",
    )

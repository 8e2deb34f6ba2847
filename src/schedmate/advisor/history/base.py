"""The history contract every store shares: `JobRecord`, `Neighbor`, the `HistoryStore` protocol,
and the row helpers (column order, row -> record, vector checks) the SQL stores have in common.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from schedmate.advisor.metadata import WorkloadMetadata
from schedmate.backends.embedder import normalize_rows
from schedmate.core.errors import ConfigError

__all__ = ["JobRecord", "Neighbor", "HistoryStore", "EXACT_BELOW"]

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

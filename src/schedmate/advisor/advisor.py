"""The Scheduling Advisor facade: extract -> embed -> retrieve -> estimate.

Extraction is cached by content (directory digest + command + config files + resources),
in the store's own `extractions` table when it has one, so importing thousands of jobs that
share code directories reads each directory once.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedmate.advisor.estimate import DurationEstimator, Prediction, calibrate
from schedmate.advisor.extract import Extraction, StaticExtractor, directory_digest
from schedmate.advisor.history import HistoryStore, JobRecord, LineError
from schedmate.advisor.metadata import WorkloadMetadata, render_metadata
from schedmate.core.errors import BackendError, InputError
from schedmate.core.settings import AdvisorSettings

if TYPE_CHECKING:
    from schedmate.advisor.agent import MetadataAgent
    from schedmate.backends.embedder import Embedder

__all__ = ["Advisor", "Advice", "ImportReport"]

_EXTRACTOR_VERSION = "1"


@dataclass(frozen=True)
class Advice:
    """The `advise --json` contract (one object per job)."""

    job_id: str
    metadata: WorkloadMetadata | None
    p10_s: float | None = None
    p50_s: float | None = None
    p90_s: float | None = None
    method: str | None = None
    neighbors: tuple[tuple[str, float, float | None], ...] = ()
    error: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    detail: str = ""
    elapsed_s: float = 0.0

    def to_json_dict(self, *, verbose: bool = False) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else round(x, 3)

        out: dict[str, Any] = {
            "job_id": self.job_id,
            "metadata": self.metadata.known() if self.metadata else None,
            "p10_s": num(self.p10_s),
            "p50_s": num(self.p50_s),
            "p90_s": num(self.p90_s),
            "method": self.method,
            "neighbors": [
                {"job_id": j, "similarity": round(s, 4), "duration_s": d} for j, s, d in self.neighbors
            ],
            "error": self.error,
        }
        if verbose:
            out.update(
                sources=self.sources,
                notes=list(self.notes),
                detail=self.detail,
                elapsed_s=round(self.elapsed_s, 4),
            )
        return out


@dataclass
class ImportReport:
    imported: int = 0
    errors: list[LineError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    extracted: int = 0
    cached: int = 0
    elapsed_s: float = 0.0


class Advisor:
    """Predicts a job's duration from its code and the history of similar jobs."""

    def __init__(
        self,
        store: HistoryStore,
        embedder: Embedder,
        settings: AdvisorSettings | None = None,
        *,
        agent: MetadataAgent | None = None,
        extractor: StaticExtractor | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings or AdvisorSettings()
        self.agent = agent
        self.extractor = extractor or StaticExtractor()
        self._digests: dict[str, str] = {}
        self._memo: dict[str, Extraction] = {}
        self._calibration: dict[str, float] | None = None

    # -- extraction ------------------------------------------------------------------------
    def _digest(self, code_dir: Path) -> str:
        key = str(code_dir)
        if key not in self._digests:
            self._digests[key] = directory_digest(code_dir)
        return self._digests[key]

    def _cache_key(self, rec: JobRecord, root: Path) -> str:
        parts = [
            _EXTRACTOR_VERSION,
            self._digest(root),
            rec.command or "",
            json.dumps(list(rec.config_files)),
            str(rec.n_gpus),
            str(rec.n_nodes),
            str(rec.gpu_model),
            "agent" if self.agent else "static",
        ]
        return hashlib.blake2b("\0".join(parts).encode(), digest_size=20).hexdigest()

    def extract(self, rec: JobRecord) -> Extraction:
        """Metadata for a job record; a job without code gets what the scheduler said."""
        if not rec.code_dir:
            meta = WorkloadMetadata(n_gpus=rec.n_gpus, n_nodes=rec.n_nodes, gpu_model=rec.gpu_model)
            return Extraction(meta, {"n_gpus": "scheduler"} if rec.n_gpus is not None else {})
        root = Path(rec.code_dir)
        if not root.is_dir():
            raise InputError(f"code_dir {rec.code_dir!r}: not a directory")
        key = self._cache_key(rec, root.resolve())
        if key in self._memo:
            return self._memo[key]
        getter = getattr(self.store, "get_extraction", None)
        if getter is not None:
            cached = getter(key)
            if cached:
                try:
                    d = json.loads(cached)
                    ext = Extraction(
                        WorkloadMetadata.model_validate(d["metadata"]),
                        d["sources"],
                        d["size"],
                        tuple(d["notes"]),
                    )
                    self._memo[key] = ext
                    return ext
                except (ValueError, KeyError, TypeError):
                    pass  # an old or damaged entry: extract again
        ext = self.extractor.extract(
            root,
            command=rec.command,
            config_files=rec.config_files,
            n_gpus=rec.n_gpus,
            n_nodes=rec.n_nodes,
            gpu_model=rec.gpu_model,
        )
        ext = self._ask_agent(ext, root, rec.command)
        self._memo[key] = ext
        putter = getattr(self.store, "put_extraction", None)
        if putter is not None:
            putter(
                key,
                json.dumps(
                    {
                        "metadata": ext.metadata.model_dump(mode="json"),
                        "sources": dict(ext.sources),
                        "size": dict(ext.size),
                        "notes": list(ext.notes),
                    }
                ),
            )
        return ext

    def _ask_agent(self, ext: Extraction, root: Path, command: str | None) -> Extraction:
        if self.agent is None or not self.settings.use_agent:
            return ext
        wanted = [f for f in self.settings.agent_fields if getattr(ext.metadata, f) in (None, ())]
        # the amount of work is what matters; ask only when it is not determined yet
        m = ext.metadata
        work_known = bool(m.max_samples or m.max_steps or (m.epochs and m.dataset_size))
        if not wanted or (work_known and (m.model_name or m.param_count)):
            return ext
        result = self.agent.fill(root, ext.metadata, command=command, fields=wanted)
        sources = dict(ext.sources)
        for f in result.filled:
            sources[f] = "llm agent"
        notes = ext.notes + ((f"agent: {result.error}",) if result.error else ())
        return replace(ext, metadata=result.metadata, sources=sources, notes=notes)

    @staticmethod
    def text_of(meta: WorkloadMetadata, rec: JobRecord) -> str:
        """What is embedded: the workload; for a job without code, who ran what name on how many GPUs."""
        if set(meta.known()) <= {"n_gpus", "n_nodes", "gpu_model", "parallelism"}:
            return f"user {rec.user or '?'}; gpus {rec.n_gpus if rec.n_gpus is not None else '?'}; job {rec.name or '?'}"
        return render_metadata(meta, name=rec.name)

    # -- history ---------------------------------------------------------------------------
    def import_jobs(
        self,
        items: Iterable[JobRecord | LineError],
        *,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Extract, embed and store history jobs in batches; bad lines are reported, never fatal."""
        report = ImportReport()
        t0 = time.perf_counter()
        batch: list[JobRecord] = []

        def flush() -> None:
            if not batch:
                return
            vecs = self.embedder.embed([r.text for r in batch])
            report.imported += self.store.add(batch, vecs)
            if progress:
                progress(len(batch))
            batch.clear()

        for item in items:
            if isinstance(item, LineError):
                report.errors.append(item)
                if progress:
                    progress(1)
                continue
            try:
                before = len(self._memo)
                ext = self.extract(item)
                report.extracted += len(self._memo) > before
            except InputError as exc:
                report.warnings.append(f"job {item.job_id}: {exc}; imported without code metadata")
                ext = Extraction(
                    WorkloadMetadata(n_gpus=item.n_gpus, n_nodes=item.n_nodes, gpu_model=item.gpu_model)
                )
            batch.append(item.with_metadata(ext.metadata, dict(ext.size), self.text_of(ext.metadata, item)))
            if len(batch) >= batch_size:
                flush()
        flush()
        report.cached = max(0, report.imported - report.extracted)
        builder = getattr(self.store, "build_index", None)
        if builder is not None and self.store.count() >= getattr(self.store, "exact_below", 0):
            builder()  # large stores: build (or update and save) the HNSW index now, not at the first advice
        self._calibration = None
        self._save_calibration()
        report.elapsed_s = time.perf_counter() - t0
        return report

    def _save_calibration(self) -> None:
        recs: list[JobRecord] = []
        for r in self.store.records():
            if r.metadata is not None:
                recs.append(r)
            if len(recs) >= 200_000:
                break
        cal = calibrate(recs)
        self.store.set_meta("calibration", json.dumps(cal))
        self._calibration = cal

    def calibration(self) -> dict[str, float]:
        if self._calibration is None:
            raw = self.store.get_meta("calibration")
            try:
                self._calibration = {k: float(v) for k, v in json.loads(raw).items()} if raw else {}
            except (ValueError, TypeError, AttributeError):
                self._calibration = {}
        return self._calibration

    # -- prediction ------------------------------------------------------------------------
    def advise(self, rec: JobRecord) -> Advice:
        """p10/p50/p90 for one job; errors (bad code dir, embedder down) are in `error`, never raised."""
        t0 = time.perf_counter()
        error = None
        try:
            ext = self.extract(rec)
        except InputError as exc:
            # no readable code: still answer from what the scheduler knows and the user's history
            error = f"{exc}; predicted without code metadata"
            ext = Extraction(
                WorkloadMetadata(n_gpus=rec.n_gpus, n_nodes=rec.n_nodes, gpu_model=rec.gpu_model)
            )
        meta = ext.metadata
        est = DurationEstimator(
            min_similarity=self.settings.min_similarity,
            k=self.settings.k,
            calibration=self.calibration(),
            combine=self.settings.scaling,
        )
        neighbors: Sequence[Any] = ()
        try:
            vec = self.embedder.embed([self.text_of(meta, rec)])[0]
        except BackendError as exc:
            vec = None
            error = f"embedder: {exc}; predicted without similar jobs" if error is None else error
        if vec is not None:
            try:
                neighbors = [
                    n
                    for n in self.store.search(vec, self.settings.k * 3 + 1)
                    if n.record.job_id != rec.job_id
                ]
            except BackendError as exc:  # e.g. a PostgreSQL store that went away
                error = f"history store: {exc}; predicted without similar jobs" if error is None else error
        user = rec.user
        failures: list[str] = []

        def read(fetch: Callable[[], Sequence[Any]]) -> Sequence[Any]:
            try:
                return fetch()
            except BackendError as exc:  # the store failed: the fallbacks answer without it
                failures.append(str(exc))
                return []

        pred: Prediction = est.predict(
            meta,
            ext.size,
            neighbors,
            user=user,
            name=rec.name,
            user_jobs=lambda: read(lambda: self.store.by_user(user, 2000)) if user else [],
            durations=lambda: read(lambda: self.store.durations(20_000)),
        )
        if failures and error is None:
            error = f"history store: {failures[0]}; predicted without history"
        return Advice(
            job_id=rec.job_id,
            metadata=meta,
            p10_s=pred.p10_s,
            p50_s=pred.p50_s,
            p90_s=pred.p90_s,
            method=pred.method,
            neighbors=tuple((n.record.job_id, n.similarity, n.record.duration_s) for n in pred.neighbors[:5]),
            error=error,
            sources=dict(ext.sources),
            notes=ext.notes,
            detail=pred.detail,
            elapsed_s=time.perf_counter() - t0,
        )

"""The Scheduling Advisor facade: extract -> embed -> retrieve -> estimate.

Extraction is cached by content (directory digest + command + config files + resources),
in the store's own `extractions` table when it has one, so importing thousands of jobs that
share code directories reads each directory once. Directory digests are remembered by path
and a cheap fingerprint (names, sizes, mtimes), in a bounded LRU: a long-running process
never advises on stale code.

One error boundary per item: a job whose extraction fails (for any reason) is imported with
what the scheduler knows and reported once in the report's `errors`; the import goes on.
Failed, cancelled and timed-out jobs stay in the history but never serve as a duration.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedmate.advisor.estimate import DurationEstimator, Prediction, calibrate
from schedmate.advisor.extract import Extraction, StaticExtractor, directory_digest, tree_signature
from schedmate.advisor.extract.paths import plausible_path
from schedmate.advisor.history import HistoryStore, JobRecord, LineError
from schedmate.advisor.history.base import ExtractionCache, IndexedStore, ended_normally, ranked
from schedmate.advisor.metadata import WorkloadMetadata, render_metadata
from schedmate.core.errors import BackendError, BackendUnavailable, InputError
from schedmate.core.settings import AdvisorSettings
from schedmate.core.types import SCHEMA_VERSION

if TYPE_CHECKING:
    from schedmate.advisor.agent import MetadataAgent
    from schedmate.backends.embedder import Embedder

__all__ = ["Advisor", "Advice", "ImportReport", "JobError", "MAX_REPORTED_ERRORS"]

_EXTRACTOR_VERSION = "1"
_DIGEST_CACHE = 1024  # code directories remembered (path + fingerprint -> digest)
MAX_REPORTED_ERRORS = 1000  # errors kept in an ImportReport; `error_count` counts them all


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
            "schema_version": SCHEMA_VERSION,
            "job_id": self.job_id,
            "metadata": self.metadata.known() if self.metadata else None,
            "p10_s": num(self.p10_s),
            "p50_s": num(self.p50_s),
            "p90_s": num(self.p90_s),
            "method": self.method,
            "neighbors": [
                {"job_id": j, "similarity": num(s), "duration_s": num(d)} for j, s, d in self.neighbors
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


@dataclass(frozen=True)
class JobError:
    """A job of a batch that could not be processed fully (it names the job; the batch goes on)."""

    job_id: str
    message: str

    def __str__(self) -> str:
        return f"job {self.job_id}: {self.message}"


_SHOWN_REPEATS = 5  # repeated job ids named one by one in an import's warnings


@dataclass
class ImportReport:
    """The `history import --json` contract. `errors` keeps the first MAX_REPORTED_ERRORS
    (a line of the history file, or a job); `error_count` counts every one."""

    imported: int = 0
    errors: list[LineError | JobError] = field(default_factory=list)
    error_count: int = 0
    warnings: list[str] = field(default_factory=list)
    extracted: int = 0
    cached: int = 0
    elapsed_s: float = 0.0
    store: str = ""
    stored_total: int = 0

    def add_error(self, err: LineError | JobError) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(err)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "store": self.store,
            "imported": self.imported,
            "stored_total": self.stored_total,
            "errors": [
                {
                    "line": e.line if isinstance(e, LineError) else None,
                    "job_id": e.job_id if isinstance(e, JobError) else None,
                    "message": e.message,
                }
                for e in self.errors
            ],
            "error_count": self.error_count,
            "warnings": self.warnings,
            "extracted": self.extracted,
            "elapsed_s": round(self.elapsed_s, 3),
        }


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
        self._digests: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._scope: dict[str, str] | None = (
            None  # per-import digests by path (code does not change mid-import)
        )
        self._memo: OrderedDict[str, Extraction] = OrderedDict()
        self._calibration: dict[str, float] | None = None

    # -- extraction ------------------------------------------------------------------------
    def _digest(self, code_dir: Path) -> str:
        """The code's content digest, remembered by (path, fingerprint) in a bounded LRU."""
        key = str(code_dir)
        if self._scope is not None and key in self._scope:
            return self._scope[key]
        entry = (key, tree_signature(code_dir))
        digest = self._digests.get(entry)
        if digest is None:
            digest = self._digests[entry] = directory_digest(code_dir)
            while len(self._digests) > _DIGEST_CACHE:
                self._digests.popitem(last=False)
        else:
            self._digests.move_to_end(entry)
        if self._scope is not None:
            self._scope[key] = digest
        return digest

    def _remember(self, key: str, ext: Extraction) -> None:
        self._memo[key] = ext
        while len(self._memo) > 4 * _DIGEST_CACHE:
            self._memo.popitem(last=False)

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
        if not plausible_path(rec.code_dir) or not root.is_dir():
            raise InputError(f"code_dir {rec.code_dir[:200]!r}: not a directory")
        key = self._cache_key(rec, root.resolve())
        if key in self._memo:
            return self._memo[key]
        cache = self.store if isinstance(self.store, ExtractionCache) else None
        if cache is not None:
            cached = cache.get_extraction(key)
            if cached:
                try:
                    d = json.loads(cached)
                    ext = Extraction(
                        WorkloadMetadata.model_validate(d["metadata"]),
                        d["sources"],
                        d["size"],
                        tuple(d["notes"]),
                    )
                    self._remember(key, ext)
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
        ext, agent_failed = self._ask_agent(ext, root, rec.command)
        if agent_failed:
            return ext  # only successes are cached: the next call asks the LLM again
        self._remember(key, ext)
        if cache is not None and not cache.read_only:
            cache.put_extraction(
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

    def _ask_agent(self, ext: Extraction, root: Path, command: str | None) -> tuple[Extraction, bool]:
        """The extraction completed by the agent, and whether the agent failed (LLM down, bad
        replies): a failed answer is used once but never cached."""
        if self.agent is None or not self.settings.use_agent:
            return ext, False
        wanted = [f for f in self.settings.agent_fields if getattr(ext.metadata, f) in (None, ())]
        # the amount of work is what matters; ask only when it is not determined yet
        m = ext.metadata
        work_known = bool(m.max_samples or m.max_steps or (m.epochs and m.dataset_size))
        if not wanted or (work_known and (m.model_name or m.param_count)):
            return ext, False
        result = self.agent.fill(root, ext.metadata, command=command, fields=wanted)
        sources = dict(ext.sources)
        for f in result.filled:
            sources[f] = "llm agent"
        notes = ext.notes + ((f"agent: {result.error}",) if result.error else ())
        return replace(ext, metadata=result.metadata, sources=sources, notes=notes), result.error is not None

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
        """Extract, embed and store history jobs in batches.

        One error boundary per item: a bad line, or a job whose extraction fails for any reason,
        is reported once in `errors` (the job itself is stored with what the scheduler knows) and
        the import goes on. Only the store or the embedder failing stops it (with a one-line
        error; the batches before are stored)."""
        report = ImportReport()
        t0 = time.perf_counter()
        batch: list[JobRecord] = []

        def flush() -> None:
            if not batch:
                return
            try:
                vecs = self.embedder.embed([r.text for r in batch])
                keep = list(batch)
            except BackendUnavailable:
                raise  # the embedder is down: nothing more can be imported
            except BackendError:
                # one text the embedder refuses must not cost the batch: embed one by one
                keep, rows = [], []
                for r in batch:
                    try:
                        rows.append(self.embedder.embed([r.text])[0])
                        keep.append(r)
                    except BackendUnavailable:
                        raise
                    except BackendError as exc:
                        report.add_error(JobError(r.job_id, f"not imported: {exc}"))
                vecs = np.vstack(rows) if rows else np.empty((0, 0), dtype=np.float32)
            if keep:
                report.imported += self.store.add(keep, vecs)
            if progress:
                progress(len(batch))
            batch.clear()

        self._scope = {}
        seen: set[str] = set()
        repeated = 0
        try:
            for item in items:
                if isinstance(item, LineError):
                    report.add_error(item)
                    if progress:
                        progress(1)
                    continue
                if item.job_id in seen:
                    repeated += 1
                    if repeated <= _SHOWN_REPEATS:
                        report.warnings.append(
                            f"job {item.job_id[:80]} appears more than once in this import; the later record replaces the earlier"
                        )
                seen.add(item.job_id)
                before = len(self._memo)
                try:
                    ext = self.extract(item)
                    report.extracted += len(self._memo) > before
                except Exception as exc:  # noqa: BLE001 - the per-item error boundary
                    report.add_error(JobError(item.job_id, f"{_reason(exc)}; imported without code metadata"))
                    ext = Extraction(
                        WorkloadMetadata(n_gpus=item.n_gpus, n_nodes=item.n_nodes, gpu_model=item.gpu_model)
                    )
                batch.append(
                    item.with_metadata(ext.metadata, dict(ext.size), self.text_of(ext.metadata, item))
                )
                if len(batch) >= batch_size:
                    flush()
            flush()
        finally:
            self._scope = None
        if repeated > _SHOWN_REPEATS:
            report.warnings.append(
                f"{repeated} records in all repeat a job id of this import (later ones kept)"
            )
        report.cached = max(0, report.imported - report.extracted)
        if isinstance(self.store, IndexedStore) and self.store.count() >= self.store.exact_below:
            self.store.build_index()  # large stores: build (or update and save) the HNSW index now
        self._calibration = None
        self._save_calibration()
        report.elapsed_s = time.perf_counter() - t0
        return report

    def _save_calibration(self) -> None:
        recs: list[JobRecord] = []
        for r in self.store.records():
            if r.metadata is not None and ended_normally(r.status):
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
        except Exception as exc:  # noqa: BLE001 - one job's code never stops the advice
            # no readable code: still answer from what the scheduler knows and the user's history
            error = f"{_reason(exc)}; predicted without code metadata"
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
                # failed / cancelled / timed-out jobs are similar code, not a duration: skipped
                neighbors = ranked(
                    n
                    for n in self.store.search(vec, self.settings.k * 3 + 1)
                    if n.record.job_id != rec.job_id and ended_normally(n.record.status)
                )
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
            user_jobs=lambda: (
                [r for r in read(lambda: self.store.by_user(user, 2000)) if ended_normally(r.status)]
                if user
                else []
            ),
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


def _reason(exc: BaseException) -> str:
    """One line for a per-item failure: our own errors say it themselves; anything else is named
    by its type (a bug in our code, reported without a traceback and without stopping the batch)."""
    if isinstance(exc, InputError | BackendError):
        return str(exc)
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

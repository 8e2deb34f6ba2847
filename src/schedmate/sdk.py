"""The SDK layer between the CLI (or the REST service) and the capabilities.

Builds capability facades from validated settings, with backends chosen by name, and
keeps per-user caches (template decisions, LLM field mappings) under `cache_dir`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from schedmate.core.errors import SchedmateError
from schedmate.core.settings import Settings
from schedmate.core.types import TrackResult
from schedmate.tracker import FieldMapper, LineClassifier, MetricTracker

__all__ = ["build_tracker", "track_files", "save_tracker_state"]


def _templates_file(settings: Settings) -> Path:
    return Path(settings.cache_dir) / f"templates-{settings.embedder.backend}.json"


def build_tracker(settings: Settings, *, use_cache: bool = True) -> MetricTracker:
    """A MetricTracker wired to the configured embedder and (optional) LLM."""
    embedder = None
    if settings.embedder.backend != "none":
        from schedmate.backends.embedder import create_embedder

        embedder = create_embedder(settings.embedder)
    classifier = LineClassifier(embedder=embedder)
    if use_cache:
        try:
            classifier.load_state(json.loads(_templates_file(settings).read_text("utf-8")))
        except (OSError, ValueError, AttributeError):
            pass  # no cache yet, or a corrupt one: decisions are recomputed
    llm = None
    if settings.llm.enabled and settings.tracker.use_llm:
        from schedmate.backends.llm import create_llm

        llm = create_llm(settings.llm)
    mapper = FieldMapper(llm, cache_file=Path(settings.cache_dir) / "field-mappings.json" if use_cache else None)
    return MetricTracker(settings.tracker, classifier=classifier, mapper=mapper)


def save_tracker_state(tracker: MetricTracker, settings: Settings) -> None:
    """Persist template decisions so the next run does not re-embed known patterns."""
    path = _templates_file(settings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(tracker.classifier.save_state()), "utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a cache is best effort


def track_files(tracker: MetricTracker, paths: Iterable[str | Path]) -> Iterator[TrackResult]:
    """Track each file; a file that cannot be read yields a result with `error` set."""
    for p in paths:
        try:
            yield tracker.track_file(p)
        except SchedmateError as exc:
            yield TrackResult(file=str(p), error=str(exc))
        except OSError as exc:
            yield TrackResult(file=str(p), error=f"{p}: {exc.strerror or exc}")

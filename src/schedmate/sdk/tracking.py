"""SDK operations of the Metric Tracker: build it from settings, track files, keep its cache."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from schedmate.core.errors import SchedmateError
from schedmate.core.settings import Settings
from schedmate.core.types import LineKind, TrackResult
from schedmate.sdk._common import embedder_of, llm_of
from schedmate.tracker import FieldMapper, LineClassifier, MetricTracker

__all__ = ["build_tracker", "track_files", "save_tracker_state", "LineVerdict", "classify_lines"]


def _templates_file(settings: Settings) -> Path:
    return Path(settings.cache_dir) / f"templates-{settings.embedder.backend}.json"


def build_tracker(settings: Settings, *, use_cache: bool = True) -> MetricTracker:
    """A MetricTracker wired to the configured embedder and (optional) LLM."""
    classifier = LineClassifier(embedder=embedder_of(settings))
    if use_cache:
        # no cache yet, or a corrupt one: decisions are recomputed
        with contextlib.suppress(OSError, ValueError, AttributeError):
            classifier.load_state(json.loads(_templates_file(settings).read_text("utf-8")))
    llm = llm_of(settings) if settings.tracker.use_llm else None
    mapper = FieldMapper(
        llm, cache_file=Path(settings.cache_dir) / "field-mappings.json" if use_cache else None
    )
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


def track_files(
    tracker: MetricTracker, paths: Iterable[str | Path], *, live: bool = True
) -> Iterator[TrackResult]:
    """Track each file; a file that cannot be read yields a result with `error` set."""
    for p in paths:
        try:
            yield tracker.track_file(p, live=live)
        except SchedmateError as exc:
            yield TrackResult(file=str(p), error=str(exc))
        except OSError as exc:
            yield TrackResult(file=str(p), error=f"{p}: {exc.strerror or exc}")


@dataclass(frozen=True, slots=True)
class LineVerdict:
    """How the tracker's line classifier sees one line: the rules' verdict (None = no
    opinion), the final kind, and whether the embedding model was there to decide."""

    text: str
    rules: LineKind | None
    kind: LineKind
    by_model: bool


def classify_lines(tracker: MetricTracker, texts: Sequence[str]) -> list[LineVerdict]:
    """Classify free-form lines with the tracker's classifier (rules, then the embedder)."""
    from schedmate.tracker import rule_kind

    clf = tracker.classifier
    kinds = clf.classify_batch(list(texts))
    return [
        LineVerdict(t, rule_kind(t), k, clf.embedder is not None) for t, k in zip(texts, kinds, strict=True)
    ]

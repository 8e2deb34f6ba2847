"""Metric Tracker: live training metrics, progress, ETA and events from job logs."""

from schedmate.tracker.classify import LineClassifier, load_exemplars, rule_kind
from schedmate.tracker.mapper import FieldMapper, FieldMapping
from schedmate.tracker.parse import parse_line
from schedmate.tracker.state import EventDetector, summarize
from schedmate.tracker.tracker import MetricTracker, TrackUpdate

__all__ = [
    "EventDetector",
    "FieldMapper",
    "FieldMapping",
    "LineClassifier",
    "MetricTracker",
    "TrackUpdate",
    "load_exemplars",
    "parse_line",
    "rule_kind",
    "summarize",
]

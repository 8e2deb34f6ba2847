"""Scheduling Advisor: workload metadata from code, similar past jobs, duration with an interval.

Layout: `advisor` (the facade), `metadata` (the WorkloadMetadata model), `extract/` (static
extraction from code), `agent/` (the LLM agent and its file tools), `history/` (records,
stores, history file formats), `estimate/` (estimator, calibration, baselines).
"""

from schedmate.advisor.advisor import Advice, Advisor, ImportReport
from schedmate.advisor.estimate import DurationEstimator, Prediction
from schedmate.advisor.extract import Extraction, StaticExtractor
from schedmate.advisor.history import (
    HistoryStore,
    InMemoryHistoryStore,
    JobLine,
    JobRecord,
    LineError,
    Neighbor,
    SqliteHistoryStore,
    read_jobs,
)
from schedmate.advisor.metadata import WorkloadMetadata, render_metadata

__all__ = [
    "Advice",
    "Advisor",
    "ImportReport",
    "DurationEstimator",
    "Prediction",
    "Extraction",
    "StaticExtractor",
    "JobLine",
    "LineError",
    "read_jobs",
    "WorkloadMetadata",
    "render_metadata",
    "HistoryStore",
    "InMemoryHistoryStore",
    "JobRecord",
    "Neighbor",
    "SqliteHistoryStore",
]

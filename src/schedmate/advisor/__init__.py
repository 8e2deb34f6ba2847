"""Scheduling Advisor: workload metadata from code, similar past jobs, duration with an interval."""

from schedmate.advisor.advisor import Advice, Advisor, ImportReport
from schedmate.advisor.estimate import DurationEstimator, Prediction
from schedmate.advisor.extract import Extraction, StaticExtractor
from schedmate.advisor.jobs import JobLine, LineError, read_jobs
from schedmate.advisor.metadata import WorkloadMetadata, render_metadata
from schedmate.advisor.store import (
    HistoryStore,
    InMemoryHistoryStore,
    JobRecord,
    Neighbor,
    SqliteHistoryStore,
)

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

"""`schedmate watch`: the live agent that runs next to a scheduler (Slurm today)."""

from schedmate.integrations.watch.agent import Capabilities, CycleReport, Diagnosis, Prediction, Watcher
from schedmate.integrations.watch.follow import JobLog
from schedmate.integrations.watch.store import ActionStatus, WatchStore

__all__ = [
    "ActionStatus",
    "Capabilities",
    "CycleReport",
    "Diagnosis",
    "JobLog",
    "Prediction",
    "WatchStore",
    "Watcher",
]

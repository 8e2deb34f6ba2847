"""`schedmate watch`: the live agent that runs next to a scheduler (Slurm today)."""

from schedmate.integrations.watch.agent import Capabilities, CycleReport, Guard, Prediction, Watcher
from schedmate.integrations.watch.follow import JobLog
from schedmate.integrations.watch.store import LedgerStatus, WatchStore

__all__ = [
    "Capabilities",
    "CycleReport",
    "Guard",
    "JobLog",
    "LedgerStatus",
    "Prediction",
    "WatchStore",
    "Watcher",
]

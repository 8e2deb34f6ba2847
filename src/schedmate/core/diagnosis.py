"""The Failure Handler's contract types: a diagnosis and its recovery actions. No I/O."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["RecoveryKind", "ActionStatus", "RecoveryAction", "FailureReport"]


class RecoveryKind(StrEnum):
    """What recovery does about one failure."""

    REQUEUE = "requeue"  # run again as it was, from the last checkpoint
    RESUBMIT_WITH_LIMIT = "resubmit_with_limit"  # a time/memory limit ended it: more of it
    EXCLUDE_NODE = "exclude_node"  # requeue, avoiding the node(s) the fault points at
    DRAIN_NODE = "drain_node"  # take a node out of service (corroborated by facts only)
    NOTIFY = "notify"  # tell the user/operator; nothing is changed on the cluster
    NONE = "none"


class ActionStatus(StrEnum):
    PLANNED = "planned"  # decided, not (yet) executed
    DRY_RUN = "dry_run"  # dry run: recorded as such, consumes no budget
    EXECUTED = "executed"
    ALREADY_DONE = "already_done"  # the same action id was executed before: not repeated
    UNCONFIRMED = "unconfirmed"  # started before, never confirmed (a crash?): not repeated
    FAILED = "failed"  # the backend refused; `error` says why
    NOT_EXECUTABLE = "not_executable"  # notify/none, or no job id / backend to act through


@dataclass(frozen=True, slots=True)
class RecoveryAction:
    """One recovery step. Executed only through a ClusterBackend, never by log text alone.

    `exclude_nodes` are always nodes the scheduler placed the job on; `new_time_limit_s` /
    `new_mem` are set when a resource limit ended the job; `evidence_ids` name the facts it
    rests on (`line:<n>` of the log, `scheduler:node:<name>:<state>`, `audit:<job>@<node>`).
    """

    action: RecoveryKind
    job_id: str | None = None
    node: str | None = None  # the node a drain_node acts on
    exclude_nodes: tuple[str, ...] = ()
    new_time_limit_s: float | None = None
    new_mem: str | None = None
    checkpoint: str | None = None
    evidence_ids: tuple[str, ...] = ()
    reason: str = ""
    action_id: str | None = None  # derived from job, attempt and action (idempotency key)
    status: ActionStatus = ActionStatus.PLANNED
    error: str | None = None

    @property
    def target(self) -> str:
        """What the action is about: the node for a drain, else the job."""
        return self.node if self.action is RecoveryKind.DRAIN_NODE and self.node else (self.job_id or "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action.value,
            "target": self.target,
            "job_id": self.job_id,
            "node": self.node,
            "exclude_nodes": list(self.exclude_nodes),
            "new_time_limit_s": (
                self.new_time_limit_s
                if self.new_time_limit_s is None or math.isfinite(self.new_time_limit_s)
                else None
            ),
            "new_mem": self.new_mem,
            "checkpoint": self.checkpoint,
            "evidence_ids": list(self.evidence_ids),
            "reason": self.reason,
            "action_id": self.action_id,
            "status": self.status.value,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class FailureReport:
    """The Failure Handler's answer for one log (the `diagnose --json` contract)."""

    file: str
    failed: bool = False
    root_cause_line: str | None = None
    root_cause_line_no: int | None = None
    category: str = "unknown"  # infrastructure | application | unknown
    kind: str | None = None
    confidence: float = 0.0
    evidence: tuple[str, ...] = ()
    recovery: tuple[RecoveryAction, ...] = ()
    checkpoint: str | None = None
    node: str | None = None  # the node the log names near the failure (untrusted, shown only)
    method: str = "none"  # signature | cascade | embedding | llm | none (+evidence)
    error: str | None = None
    job_id: str | None = None
    warnings: tuple[str, ...] = ()  # e.g. the audit log could not be written

    def to_json_dict(self) -> dict[str, Any]:
        from schedmate.core.types import SCHEMA_VERSION  # types re-exports this module

        return {
            "schema_version": SCHEMA_VERSION,
            "file": self.file,
            "job_id": self.job_id,
            "failed": self.failed,
            "root_cause_line": self.root_cause_line,
            "root_cause_line_no": self.root_cause_line_no,
            "category": self.category,
            "kind": self.kind,
            "confidence": round(self.confidence, 3) if math.isfinite(self.confidence) else None,
            "method": self.method,
            "evidence": list(self.evidence),
            "recovery": [a.to_dict() for a in self.recovery],
            "checkpoint": self.checkpoint,
            "node": self.node,
            "warnings": list(self.warnings),
            "error": self.error,
        }

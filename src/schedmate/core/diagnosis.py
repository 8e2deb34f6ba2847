"""The Failure Handler's contract types: a diagnosis and its recovery actions. No I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RecoveryAction", "FailureReport"]


@dataclass(frozen=True, slots=True)
class RecoveryAction:
    """One planned action, executed only through a ClusterBackend (never by log text alone).

    `action`: requeue | drain_node | notify_user | none.
    """

    action: str
    target: str
    reason: str
    params: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "target": self.target, "reason": self.reason}


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
    node: str | None = None
    method: str = "none"  # signature | embedding | llm | none
    error: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "failed": self.failed,
            "root_cause_line": self.root_cause_line,
            "root_cause_line_no": self.root_cause_line_no,
            "category": self.category,
            "kind": self.kind,
            "confidence": round(self.confidence, 3),
            "evidence": list(self.evidence),
            "recovery": [a.to_dict() for a in self.recovery],
            "checkpoint": self.checkpoint,
            "error": self.error,
        }

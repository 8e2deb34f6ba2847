"""Failure Handler: root cause, infrastructure vs application, safe recovery."""

from schedmate.failure.classify import FailureClassifier, Verdict
from schedmate.failure.handler import FailureHandler
from schedmate.failure.kb import KnowledgeBase, Signature
from schedmate.failure.locate import FailureLocator, Located, count_line_breaks
from schedmate.failure.recovery import (
    AuditLog,
    ClusterBackend,
    InMemoryClusterBackend,
    JobContext,
    RecoveryPlanner,
    find_checkpoint,
    find_node,
)

__all__ = [
    "AuditLog",
    "ClusterBackend",
    "FailureClassifier",
    "FailureHandler",
    "FailureLocator",
    "InMemoryClusterBackend",
    "JobContext",
    "KnowledgeBase",
    "Located",
    "RecoveryPlanner",
    "Signature",
    "Verdict",
    "count_line_breaks",
    "find_checkpoint",
    "find_node",
]

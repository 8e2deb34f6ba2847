"""Failure Handler: root cause, infrastructure vs application, safe recovery."""

from schedmate.core.cluster import ClusterBackend, InMemoryClusterBackend
from schedmate.failure.audit import AuditLog
from schedmate.failure.classify import FailureClassifier, Verdict
from schedmate.failure.handler import FailureHandler
from schedmate.failure.kb import KnowledgeBase, Signature
from schedmate.failure.locate import FailureLocator, Located, count_line_breaks
from schedmate.failure.nodes import find_node, find_nodes
from schedmate.failure.recovery import (
    Finding,
    JobContext,
    RecoveryPlanner,
    find_checkpoint,
    parse_mem_mb,
)

__all__ = [
    "AuditLog",
    "ClusterBackend",
    "FailureClassifier",
    "FailureHandler",
    "FailureLocator",
    "Finding",
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
    "find_nodes",
    "parse_mem_mb",
]

"""SDK operations of the Failure Handler: build it from settings (diagnosis + recovery planner)."""

from __future__ import annotations

from pathlib import Path

from schedmate.core.settings import Settings
from schedmate.failure import (
    AuditLog,
    ClusterBackend,
    FailureClassifier,
    FailureHandler,
    FailureLocator,
    InMemoryClusterBackend,
    KnowledgeBase,
    RecoveryPlanner,
)
from schedmate.sdk._common import embedder_of, llm_of
from schedmate.tracker import LineClassifier

__all__ = ["build_failure_handler"]


def build_failure_handler(
    settings: Settings,
    backend: ClusterBackend | None = None,
    *,
    plan: bool = True,
) -> FailureHandler:
    """A FailureHandler: tracker's line classifier for the search, the signature KB, the
    embedder and LLM for uncertain cases, and a recovery planner over `backend`
    (in-memory by default: the plan is computed and audited, nothing is executed)."""
    fs = settings.failure
    kb = KnowledgeBase.load(fs.signatures_file or None)
    embedder = embedder_of(settings)
    locator = FailureLocator(LineClassifier(embedder=None), kb, fs)
    classifier = FailureClassifier(kb, embedder, llm_of(settings), llm_below=fs.llm_below)
    planner = None
    if plan:
        audit_path = Path(fs.audit_log) if fs.audit_log else Path(settings.cache_dir) / "audit.jsonl"
        planner = RecoveryPlanner(backend or InMemoryClusterBackend(), AuditLog(audit_path), fs)
    return FailureHandler(locator, classifier, planner, fs)

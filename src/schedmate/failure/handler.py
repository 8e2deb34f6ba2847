"""FailureHandler: locate the root cause, classify it, plan recovery (the facade).

`diagnose(path, job)` reads one log; `handle(view, backend-side facts)` is the live agent's
entry point: a `JobView` from the scheduler (its stdout path, nodes, user, limits) becomes
the `JobContext` recovery trusts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from schedmate.core.cluster import JobView
from schedmate.core.diagnosis import FailureReport, RecoveryAction
from schedmate.core.errors import SchedmateError
from schedmate.core.settings import FailureSettings
from schedmate.failure.classify import FailureClassifier
from schedmate.failure.locate import FailureLocator, Located
from schedmate.failure.nodes import find_nodes
from schedmate.failure.recovery import Finding, JobContext, RecoveryPlanner, find_checkpoint

__all__ = ["FailureHandler"]

_NODE_CONTEXT_BEFORE = 20


class FailureHandler:
    def __init__(
        self,
        locator: FailureLocator,
        classifier: FailureClassifier,
        planner: RecoveryPlanner | None = None,
        settings: FailureSettings | None = None,
    ) -> None:
        self.locator = locator
        self.classifier = classifier
        self.planner = planner
        self.settings = settings or FailureSettings()

    def diagnose(self, path: str | Path, job: JobContext | None = None) -> FailureReport:
        """Diagnose one log; unreadable input becomes a report with `error` set."""
        job_id = job.job_id if job else None
        try:
            loc = self.locator.locate(path)
        except SchedmateError as exc:
            return FailureReport(file=str(path), error=str(exc), job_id=job_id)
        except OSError as exc:
            return FailureReport(file=str(path), error=f"{path}: {exc.strerror or exc}", job_id=job_id)
        return self._report(str(path), loc, job)

    def handle(
        self, view: JobView, *, log: str | Path | None = None, mem: str | None = None
    ) -> FailureReport:
        """The live agent's entry point: diagnose a failed job the scheduler describes and
        recover through the planner's backend. `log` defaults to the job's stdout file."""
        path = log or view.stdout_path
        job = JobContext.from_view(view, mem=mem)
        if not path:
            return FailureReport(file="", error=f"job {view.job_id}: no log path known", job_id=view.job_id)
        return self.diagnose(path, job)

    def diagnose_lines(
        self, lines: Sequence[str], job: JobContext | None = None, file: str = "<lines>"
    ) -> FailureReport:
        return self._report(file, self.locator.locate_lines(lines), job)

    def _report(self, file: str, loc: Located, job: JobContext | None) -> FailureReport:
        job_id = job.job_id if job else None
        if not loc.failed or loc.text is None:
            return FailureReport(file=file, failed=False, job_id=job_id)
        after = list(loc.after)
        v = self.classifier.classify(loc.text, after, loc.signature, before=loc.before)
        log_nodes = find_nodes([*loc.before[-_NODE_CONTEXT_BEFORE:], *after])
        checkpoint = find_checkpoint([*loc.before, *after], job.job_dir if job else None)
        actions: tuple[RecoveryAction, ...] = ()
        warnings: tuple[str, ...] = ()
        if self.planner is not None:
            finding = Finding(
                category=v.category,
                kind=v.kind,
                confidence=v.confidence,
                recovery_hint=v.signature.recovery if v.signature is not None else None,
                root_line_no=loc.line_no,
                checkpoint=checkpoint,
                log_nodes=tuple(log_nodes),
            )
            actions, warnings = self.planner.recover(job or JobContext(), finding)
        return FailureReport(
            file=file,
            failed=True,
            root_cause_line=loc.text,
            root_cause_line_no=loc.line_no,
            category=v.category,
            kind=v.kind,
            confidence=v.confidence,
            evidence=v.evidence,
            recovery=actions,
            checkpoint=checkpoint,
            node=log_nodes[0] if log_nodes else None,
            method=v.method,
            job_id=job_id,
            warnings=warnings,
        )

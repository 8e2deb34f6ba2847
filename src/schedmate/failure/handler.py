"""FailureHandler: locate the root cause, classify it, plan recovery (the facade)."""

from __future__ import annotations

from pathlib import Path

from schedmate.core.errors import SchedmateError
from schedmate.core.settings import FailureSettings
from schedmate.core.types import FailureReport
from schedmate.failure.classify import FailureClassifier
from schedmate.failure.locate import FailureLocator, Located
from schedmate.failure.recovery import JobContext, RecoveryPlanner, find_checkpoint, find_node

__all__ = ["FailureHandler"]


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
        try:
            loc = self.locator.locate(path)
        except SchedmateError as exc:
            return FailureReport(file=str(path), error=str(exc))
        except OSError as exc:
            return FailureReport(file=str(path), error=f"{path}: {exc.strerror or exc}")
        return self._report(str(path), loc, job)

    def diagnose_lines(
        self, lines: list[str], job: JobContext | None = None, file: str = "<lines>"
    ) -> FailureReport:
        return self._report(file, self.locator.locate_lines(lines), job)

    def _report(self, file: str, loc: Located, job: JobContext | None) -> FailureReport:
        if not loc.failed or loc.text is None:
            return FailureReport(file=file, failed=False)
        after = list(loc.after)
        v = self.classifier.classify(loc.text, after, loc.signature, before=loc.before)
        log_node = find_node(after)
        checkpoint = find_checkpoint([*loc.before, *after], job.job_dir if job else None)
        actions: tuple = ()
        if self.planner is not None:
            ctx = job or JobContext(job_id=Path(file).stem)
            actions = tuple(
                self.planner.plan(
                    ctx,
                    category=v.category,
                    kind=v.kind,
                    confidence=v.confidence,
                    evidence=v.evidence,
                    log_node=log_node,
                    checkpoint=checkpoint,
                )
            )
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
            node=(job.node if job and job.node else log_node),
            method=v.method,
        )

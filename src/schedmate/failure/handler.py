"""FailureHandler: locate the root cause, classify it, plan recovery (the facade).

`diagnose(path, job)` reads one log; `handle(view)` is the entry point of `watch` and of
`diagnose --backend slurm`: a `JobView` from the scheduler (its stdout path, nodes, user,
limits, memory) becomes the `JobContext` recovery trusts. When the log is unreadable or
shows no failure, the scheduler's own verdict (TIMEOUT, OUT_OF_MEMORY, NODE_FAIL) is still
diagnosed and recovered from.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from schedmate.core.cluster import JobState, JobView
from schedmate.core.diagnosis import FailureReport, RecoveryAction
from schedmate.core.errors import SchedmateError
from schedmate.core.inputs import open_regular
from schedmate.core.settings import FailureSettings
from schedmate.failure.classify import FailureClassifier
from schedmate.failure.locate import FailureLocator, Located
from schedmate.failure.nodes import find_nodes
from schedmate.failure.recovery import Finding, Guard, JobContext, RecoveryPlanner, find_checkpoint

__all__ = ["FailureHandler"]

_NODE_CONTEXT_BEFORE = 20
# the scheduler's verdicts that need no log: (category, kind, recovery hint, what it means)
_SCHEDULER_VERDICTS = {
    JobState.TIMEOUT: ("infrastructure", "time_limit", "resubmit_with_limit", "killed at its time limit"),
    JobState.OUT_OF_MEMORY: (
        "infrastructure",
        "memory_limit",
        "resubmit_with_limit",
        "killed at its memory limit",
    ),
    JobState.NODE_FAIL: (
        "infrastructure",
        "node_fail",
        "requeue_exclude_node",
        "the scheduler reports NODE_FAIL",
    ),
}


_TAIL_BYTES = 256 * 1024


def _tail_lines(path: str) -> list[str]:
    """The last lines of a log (bounded; a non-regular file or an error gives none): where a
    limit-killed job printed its last checkpoint."""
    try:
        with open_regular(path, what="log") as fh:  # never blocks on a FIFO swapped in
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(0, size - _TAIL_BYTES))
            data = fh.read(_TAIL_BYTES)
    except (OSError, SchedmateError):
        return []
    return data.decode("utf-8", "replace").splitlines()[-2000:]


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

    def diagnose(
        self,
        path: str | Path,
        job: JobContext | None = None,
        *,
        guard: Guard | None = None,
        dry_run: bool | None = None,
    ) -> FailureReport:
        """Diagnose one log; unreadable input becomes a report with `error` set."""
        job_id = job.job_id if job else None
        try:
            loc = self.locator.locate(path)
        except SchedmateError as exc:
            return FailureReport(file=str(path), error=str(exc), job_id=job_id)
        except OSError as exc:
            return FailureReport(file=str(path), error=f"{path}: {exc.strerror or exc}", job_id=job_id)
        return self._report(str(path), loc, job, guard, dry_run)

    def handle(
        self,
        view: JobView,
        *,
        log: str | Path | None = None,
        mem: str | None = None,
        read_log: bool = True,
        guard: Guard | None = None,
        dry_run: bool | None = None,
    ) -> FailureReport:
        """Diagnose a failed job the scheduler describes and recover through the planner's
        backend. `log` defaults to the job's stdout file; `read_log=False` (the caller found
        the file untrustworthy) diagnoses from the scheduler's facts only."""
        path = str(log or view.stdout_path or "") if read_log else ""
        job = JobContext.from_view(view, mem=mem or view.mem)
        rep = self.diagnose(path, job, guard=guard, dry_run=dry_run) if path else None
        if rep is not None and rep.failed:
            return rep
        verdict = _SCHEDULER_VERDICTS.get(view.state)
        if verdict is None:
            if rep is not None:
                return rep
            why = "no log path known" if read_log else "its log is not readable as the job's user"
            return FailureReport(file="", error=f"job {view.job_id}: {why}", job_id=view.job_id)
        category, kind, hint, meaning = verdict
        checkpoint = find_checkpoint(_tail_lines(path) if path else [], job.job_dir)
        actions: tuple[RecoveryAction, ...] = ()
        warnings: tuple[str, ...] = rep.warnings if rep is not None else ()
        if self.planner is not None:
            finding = Finding(category, kind, 1.0, hint, checkpoint=checkpoint)
            actions, more = self.planner.recover(job, finding, guard=guard, dry_run=dry_run)
            warnings += more
        return FailureReport(
            file=path,
            failed=True,
            root_cause_line=f"scheduler: job {view.job_id} {view.state.value} ({meaning})",
            category=category,
            kind=kind,
            confidence=1.0,
            recovery=actions,
            checkpoint=checkpoint,
            method="scheduler",
            job_id=view.job_id,
            warnings=warnings,
        )

    def diagnose_lines(
        self, lines: Sequence[str], job: JobContext | None = None, file: str = "<lines>"
    ) -> FailureReport:
        return self._report(file, self.locator.locate_lines(lines), job)

    def _report(
        self,
        file: str,
        loc: Located,
        job: JobContext | None,
        guard: Guard | None = None,
        dry_run: bool | None = None,
    ) -> FailureReport:
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
            actions, warnings = self.planner.recover(
                job or JobContext(), finding, guard=guard, dry_run=dry_run
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
            node=log_nodes[0] if log_nodes else None,
            method=v.method,
            job_id=job_id,
            warnings=warnings,
        )

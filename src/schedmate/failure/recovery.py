"""Recovery planning with safety rails: data actions, a retry budget, an audit trail.

- Application faults: no restart; a report for the user.
- Infrastructure faults with enough confidence: requeue from the latest checkpoint,
  excluding the suspect node. A node is *drained* only with corroboration: the scheduler
  itself reports the node failed, or several independent jobs implicated the same node
  recently. A job's own log text is never enough to take a node out of service.
- A per-job retry budget stops requeue loops; every decision goes to the audit log with its
  evidence; dry run by default (actions are planned and recorded, not executed).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from schedmate.core.errors import BackendError
from schedmate.core.settings import FailureSettings
from schedmate.core.types import RecoveryAction

__all__ = [
    "ClusterBackend",
    "InMemoryClusterBackend",
    "AuditLog",
    "RecoveryPlanner",
    "JobContext",
    "find_checkpoint",
    "find_node",
]


@runtime_checkable
class ClusterBackend(Protocol):
    """What recovery needs from a scheduler (Slurm arrives in a later issue)."""

    name: str

    def node_state(self, node: str) -> str:
        """`ok`, `failed`, `drained` or `unknown`."""

    def requeue(self, job_id: str, *, exclude_nodes: Sequence[str], checkpoint: str | None) -> None: ...

    def drain(self, node: str, reason: str) -> None: ...


@dataclass
class InMemoryClusterBackend:
    """A cluster in a dict: for tests and dry runs."""

    nodes: dict[str, str] = field(default_factory=dict)
    requeued: list[tuple[str, tuple[str, ...], str | None]] = field(default_factory=list)
    drained: list[tuple[str, str]] = field(default_factory=list)
    name: str = "memory"

    def node_state(self, node: str) -> str:
        return self.nodes.get(node, "unknown")

    def requeue(self, job_id: str, *, exclude_nodes: Sequence[str], checkpoint: str | None) -> None:
        self.requeued.append((job_id, tuple(exclude_nodes), checkpoint))

    def drain(self, node: str, reason: str) -> None:
        self.nodes[node] = "drained"
        self.drained.append((node, reason))


class AuditLog:
    """Append-only JSONL of decisions; also the memory behind budgets and corroboration."""

    def __init__(self, path: Path | None = None, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self.records: list[dict[str, Any]] = []
        if path is not None and path.is_file():
            for line in path.read_text("utf-8", errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a torn last line must not lose the rest
                if isinstance(rec, dict):
                    self.records.append(rec)

    def append(self, record: dict[str, Any]) -> None:
        rec = {"time": self.clock(), **record}
        self.records.append(rec)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec) + "\n")

    def requeues(self, job_id: str) -> int:
        return sum(1 for r in self.records if r.get("job_id") == job_id and r.get("decision") == "requeue")

    def sources_implicating(self, node: str, since: float) -> set[str]:
        """Independent sources blaming `node`: distinct users where known, else distinct jobs
        (one user's many jobs count once, so a user cannot corroborate themselves)."""
        return {
            f"user:{r['user']}" if r.get("user") else f"job:{r.get('job_id')}"
            for r in self.records
            if r.get("node") == node and r.get("category") == "infrastructure" and r.get("time", 0) >= since
        }


@dataclass(frozen=True, slots=True)
class JobContext:
    """What we know about the failed job beyond its log."""

    job_id: str
    node: str | None = None  # from the scheduler (trusted), else found in the log (untrusted)
    job_dir: str | None = None
    user: str | None = None


_NODE_PATTERNS = [
    re.compile(r"^(?P<h>[A-Za-z][\w.-]{1,62}):\d+:\d+ \[\d+\] NCCL"),  # host:pid:tid [gpu] NCCL ...
    re.compile(r"srun: error: (?P<h>[A-Za-z][\w.-]{1,62}): task"),
    re.compile(r"\bon (?:host|node) (?P<h>[A-Za-z][\w.-]{1,62})"),
    re.compile(r"\bnode(?:name)?[=: ]+(?P<h>[A-Za-z][\w.-]{1,62})", re.I),
    re.compile(r"\b(?P<h>[a-z][\w-]{0,40}-worker-\d+)\b"),
]
_CKPT_LINE = re.compile(
    r"(?:sav(?:e|ing|ed)|writ(?:e|ing|ten)|stor(?:e|ing|ed)).{0,80}?(?:checkpoint|ckpt|weights|model)"
    r"|(?:checkpoint|ckpt).{0,40}?(?:sav|writ|stor)",
    re.I,
)
_PATH = re.compile(
    r"(?:[A-Za-z]:\\|\.{0,2}/|~/)[^\s'\",;()]+|[\w.-]*(?:checkpoint|ckpt|global_step)[\w./-]*", re.I
)
_CKPT_FILES = ("*.ckpt", "*.pt", "*.pth", "*.safetensors", "checkpoint-*", "global_step*", "*.distcp")


def find_node(lines: Sequence[str]) -> str | None:
    """A hostname named by the log near the failure (untrusted: used only to exclude)."""
    for line in lines:
        for pat in _NODE_PATTERNS:
            m = pat.search(line)
            if m:
                return m.group("h")
    return None


def _step_of(name: str) -> int:
    nums = re.findall(r"\d+", name)
    return int(nums[-1]) if nums else -1


def find_checkpoint(lines: Sequence[str], job_dir: str | None = None) -> str | None:
    """The latest checkpoint: in the job directory (newest step, then mtime), else the log."""
    if job_dir:
        root = Path(job_dir)
        found: list[Path] = []
        if root.is_dir():
            for pat in _CKPT_FILES:
                found.extend(p for p in root.rglob(pat) if not p.is_symlink())
                if len(found) > 10_000:
                    break
        if found:
            best = max(found, key=lambda p: (_step_of(p.name), p.stat().st_mtime))
            return str(best)
    for line in reversed(lines):
        if _CKPT_LINE.search(line):
            paths = [
                p
                for p in _PATH.findall(line)
                if len(p) > 3 and ("/" in p or "\\" in p or "." in p or "-" in p)
            ]
            if paths:
                return paths[-1].rstrip(".,;:)")
    return None


class RecoveryPlanner:
    """Plans (and, unless dry-run, executes) actions for one diagnosed failure."""

    def __init__(
        self, backend: ClusterBackend, audit: AuditLog, settings: FailureSettings | None = None
    ) -> None:
        self.backend = backend
        self.audit = audit
        self.settings = settings or FailureSettings()

    def plan(
        self,
        job: JobContext,
        *,
        category: str,
        kind: str | None,
        confidence: float,
        evidence: Sequence[str],
        log_node: str | None,
        checkpoint: str | None,
    ) -> list[RecoveryAction]:
        s = self.settings
        actions: list[RecoveryAction] = []
        node = job.node or log_node
        record: dict[str, Any] = {
            "job_id": job.job_id,
            "user": job.user,
            "category": category,
            "kind": kind,
            "confidence": confidence,
            "evidence": list(evidence)[:5],
            "node": node,
            "node_source": "scheduler" if job.node else ("log" if log_node else None),
        }
        if category == "application":
            actions.append(
                RecoveryAction(
                    "notify_user",
                    job.user or job.job_id,
                    f"application failure ({kind}); not restarted: fix the job and resubmit",
                )
            )
            return self._finish(actions, record, "no_restart")
        if category != "infrastructure" or confidence < s.min_recover_confidence:
            actions.append(
                RecoveryAction(
                    "notify_user",
                    job.user or job.job_id,
                    f"uncertain diagnosis ({category}, confidence {confidence:.2f}); "
                    "not restarted automatically",
                )
            )
            return self._finish(actions, record, "uncertain")
        if self.audit.requeues(job.job_id) >= s.retry_budget:
            actions.append(
                RecoveryAction(
                    "notify_user",
                    job.user or job.job_id,
                    f"retry budget exhausted ({s.retry_budget} requeues); needs a human",
                )
            )
            return self._finish(actions, record, "budget_exhausted")
        exclude: list[str] = []
        if node:
            exclude.append(node)
            if self._corroborated(node, job):
                actions.append(
                    RecoveryAction(
                        "drain_node", node, f"{kind}: corroborated by {self._corroboration_reason(node, job)}"
                    )
                )
        reason = f"infrastructure failure ({kind}, confidence {confidence:.2f})"
        params: tuple[tuple[str, str], ...] = (
            ("exclude", ",".join(exclude)),
            ("checkpoint", checkpoint or ""),
        )
        actions.append(
            RecoveryAction(
                "requeue",
                job.job_id,
                reason
                + (f"; resume from {checkpoint}" if checkpoint else "; no checkpoint found")
                + (f"; excluding {node}" if node else ""),
                params,
            )
        )
        return self._finish(actions, record, "requeue")

    def _corroborated(self, node: str, job: JobContext) -> bool:
        try:
            if self.backend.node_state(node) in ("failed", "down"):
                return True
        except BackendError:
            pass
        since = self.audit.clock() - self.settings.corroboration_window_s
        me = f"user:{job.user}" if job.user else f"job:{job.job_id}"
        others = self.audit.sources_implicating(node, since) - {me}
        return len(others) + 1 >= self.settings.corroborating_jobs

    def _corroboration_reason(self, node: str, job: JobContext) -> str:
        try:
            if self.backend.node_state(node) in ("failed", "down"):
                return "the scheduler reports the node failed"
        except BackendError:
            pass
        return "independent jobs implicating the same node"

    def _finish(
        self, actions: list[RecoveryAction], record: dict[str, Any], decision: str
    ) -> list[RecoveryAction]:
        record["decision"] = decision
        record["actions"] = [a.to_dict() for a in actions]
        record["dry_run"] = self.settings.dry_run
        self.audit.append(record)
        return actions

    def execute(self, actions: Sequence[RecoveryAction]) -> list[str]:
        """Carry out planned actions through the backend (no-op in dry run); returns a log."""
        done: list[str] = []
        for a in actions:
            if self.settings.dry_run:
                done.append(f"dry-run: {a.action} {a.target}")
                continue
            params = dict(a.params)
            if a.action == "drain_node":
                self.backend.drain(a.target, a.reason)
            elif a.action == "requeue":
                exclude = [n for n in params.get("exclude", "").split(",") if n]
                self.backend.requeue(
                    a.target, exclude_nodes=exclude, checkpoint=params.get("checkpoint") or None
                )
            else:
                continue
            done.append(f"{a.action} {a.target}")
        return done

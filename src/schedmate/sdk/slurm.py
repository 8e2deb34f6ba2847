"""SDK operations on a Slurm cluster: check it answers, import its finished jobs as history."""

from __future__ import annotations

import time
from typing import Any

from schedmate.core.settings import Settings
from schedmate.core.types import SCHEMA_VERSION

__all__ = ["slurm_status", "import_history"]


def slurm_status(settings: Settings) -> dict[str, Any]:
    """Jobs per state and nodes per state, or a BackendError naming what failed."""
    from schedmate.integrations.slurm import SlurmBackend

    snap = SlurmBackend(settings.slurm).snapshot()
    jobs: dict[str, int] = {}
    for j in snap.jobs:
        jobs[j.state.value] = jobs.get(j.state.value, 0) + 1
    nodes: dict[str, int] = {}
    for n in snap.nodes:
        nodes[n.state.value] = nodes.get(n.state.value, 0) + 1
    return {"schema_version": SCHEMA_VERSION, "jobs": jobs, "nodes": nodes}


def import_history(settings: Settings, *, days: float = 30.0) -> dict[str, Any]:
    """Completed jobs of the last `days` from sacct into the Advisor's history store."""
    from schedmate.advisor import JobRecord
    from schedmate.integrations.slurm import SlurmBackend
    from schedmate.sdk.advising import build_advisor

    backend = SlurmBackend(settings.slurm)
    recs = []
    seen = skipped = 0
    for row in backend.history(since=time.time() - days * 86400):
        seen += 1
        j = row.job
        if j.state.value != "COMPLETED" or not row.elapsed_s:
            skipped += 1
            continue
        recs.append(
            JobRecord(
                job_id=j.job_id,
                duration_s=row.elapsed_s,
                submit_time=j.submit_time,
                status=j.state.value,
                n_gpus=j.gpus or None,
                n_nodes=len(j.nodes) or None,
                user=j.user,
                name=j.name,
                code_dir=j.work_dir,
            )
        )
    report = build_advisor(settings).import_jobs(recs) if recs else None
    return {
        "schema_version": SCHEMA_VERSION,
        "seen": seen,
        "skipped": skipped,
        "imported": report.imported if report else 0,
        "warnings": report.warnings[:20] if report else [],
    }

"""`schedmate diagnose`: root cause, infrastructure vs application, recovery plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.panel import Panel
from rich.text import Text

from schedmate.cli import app
from schedmate.cli.common import console, friendly_errors, settings_of
from schedmate.core.types import FailureReport
from schedmate.failure import JobContext
from schedmate.sdk import build_failure_handler

__all__ = ["diagnose", "render_report"]


def render_report(r: FailureReport) -> Panel:
    name = Path(r.file).name
    if r.error:
        return Panel(Text(r.error, style="red"), title=name)
    if not r.failed:
        return Panel("no failure found in this log", title=name)
    color = {"infrastructure": "yellow", "application": "cyan"}.get(r.category, "white")
    t = Text()
    t.append(r.category, style=f"bold {color}")
    t.append(f" / {r.kind or '?'}  (confidence {r.confidence:.2f}, by {r.method})")
    t.append(f"\nroot cause (line {r.root_cause_line_no}):\n  {(r.root_cause_line or '')[:400]}")
    if len(r.evidence) > 1:
        t.append("\nevidence:" + "".join(f"\n  {e[:200]}" for e in r.evidence[1:4]))
    if r.node:
        t.append(f"\nnode: {r.node}")
    if r.checkpoint:
        t.append(f"\ncheckpoint: {r.checkpoint}")
    if r.recovery:
        t.append("\nrecovery plan:" + "".join(f"\n  - {a.action} {a.target}: {a.reason}" for a in r.recovery))
    return Panel(t, title=name)


@app.command()
@friendly_errors
def diagnose(
    ctx: typer.Context,
    files: Annotated[list[Path], typer.Argument(help="Logs of failed jobs.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per file, one per line.")] = False,
    job_id: Annotated[str | None, typer.Option(help="Job id (default: the file name).")] = None,
    node: Annotated[str | None, typer.Option(help="Node the scheduler ran the job on (trusted).")] = None,
    job_dir: Annotated[str | None, typer.Option(help="Job directory to search for checkpoints.")] = None,
    no_plan: Annotated[
        bool, typer.Option("--no-plan", help="Only diagnose; no recovery plan or audit record.")
    ] = False,
) -> None:
    """Find the first root-cause line, classify it and plan a safe recovery (dry run)."""
    settings = settings_of(ctx)
    handler = build_failure_handler(settings, plan=not no_plan)
    reports = []
    for f in files:
        job = JobContext(job_id=job_id or f.stem, node=node, job_dir=job_dir)
        r = handler.diagnose(f, job)
        reports.append(r)
        if as_json:
            sys.stdout.write(json.dumps(r.to_json_dict()) + "\n")
            sys.stdout.flush()
        else:
            console.print(render_report(r))
    if not as_json and not no_plan:
        console.print("[dim]dry run: recovery actions were planned and audited, not executed[/]")
    if any(r.error for r in reports):
        raise typer.Exit(1)

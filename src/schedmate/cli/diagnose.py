"""`schedmate diagnose`: root cause, infrastructure vs application, recovery plan; with
`--backend slurm --job-id N --execute` the plan is carried out through Slurm (the same
planner and audit-log ledger as `watch`, so an action is never executed twice)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from schedmate.cli import app
from schedmate.cli.common import console, err_console, friendly_errors, settings_of
from schedmate.core.types import FailureReport

__all__ = ["diagnose", "render_report"]


def render_report(r: FailureReport) -> Panel:
    name = escape(Path(r.file).name)  # a file name is text, not markup (`x[red]y.log`)
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
        t.append(f"\nnode named in the log: {r.node}")
    if r.checkpoint:
        t.append(f"\ncheckpoint: {r.checkpoint}")
    if r.recovery:
        t.append("\nrecovery plan:")
        for a in r.recovery:
            extra = []
            if a.exclude_nodes:
                extra.append("exclude " + ",".join(a.exclude_nodes))
            if a.new_time_limit_s is not None:
                extra.append(f"time limit {a.new_time_limit_s:.0f} s")
            if a.new_mem:
                extra.append(f"mem {a.new_mem}")
            detail = f" [{'; '.join(extra)}]" if extra else ""
            t.append(f"\n  - {a.action.value} {a.target}{detail} ({a.status.value}): {a.reason}")
    return Panel(t, title=name)


@app.command()
@friendly_errors
def diagnose(
    ctx: typer.Context,
    files: Annotated[list[Path], typer.Argument(help="Logs of failed jobs.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per file, one per line.")] = False,
    job_id: Annotated[
        str | None, typer.Option(help="The scheduler's job id (keys the retry budget; none: no budget).")
    ] = None,
    user: Annotated[str | None, typer.Option(help="The job's user as the scheduler records it.")] = None,
    nodes: Annotated[
        str | None,
        typer.Option("--nodes", "--node", help="Nodes the scheduler ran the job on (hostlist: gpu-[01-04])."),
    ] = None,
    job_dir: Annotated[str | None, typer.Option(help="Job directory to search for checkpoints.")] = None,
    time_limit_s: Annotated[
        float | None, typer.Option("--time-limit-s", help="The job's time limit in seconds.")
    ] = None,
    mem: Annotated[str | None, typer.Option(help="The job's memory request (64G, 65536M).")] = None,
    no_plan: Annotated[
        bool, typer.Option("--no-plan", help="Only diagnose; no recovery plan or audit record.")
    ] = False,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            help="Scheduler to read the job's facts from and act through: none | slurm (failure.backend).",
        ),
    ] = None,
    execute: Annotated[
        bool, typer.Option("--execute", help="Carry out the plan through --backend (default: dry run).")
    ] = False,
) -> None:
    """Find the first root-cause line, classify it and plan a safe recovery (dry run unless
    --execute with a scheduler backend)."""
    from schedmate.sdk.failures import diagnose_logs, job_context

    settings = settings_of(ctx)
    over: dict[str, object] = {}
    if backend is not None:
        if backend not in ("none", "slurm"):
            raise typer.BadParameter(
                f"unknown backend {backend!r} (valid: none, slurm)", param_hint="--backend"
            )
        over["backend"] = backend
    if execute:
        over["dry_run"] = False
    if over:
        settings = settings.model_copy(
            update={"failure": settings.failure.model_validate({**settings.failure.model_dump(), **over})}
        )
    fs = settings.failure
    if not fs.dry_run and fs.backend == "none" and not no_plan:
        err_console.print(
            "[yellow]warning:[/] no scheduler backend (--backend slurm): actions are planned and audited only",
            highlight=False,
            soft_wrap=True,
        )
    if fs.backend != "none" and not job_id and not no_plan:
        err_console.print(
            f"[yellow]warning:[/] --backend {fs.backend} without --job-id: the scheduler's facts are not "
            "used and nothing can be executed",
            highlight=False,
            soft_wrap=True,
        )
    job = job_context(
        job_id=job_id, user=user, nodes=nodes, job_dir=job_dir, time_limit_s=time_limit_s, mem=mem
    )
    bad = False
    for r in diagnose_logs(settings, files, job=job, plan=not no_plan):
        bad = bad or r.error is not None or bool(r.warnings)
        if as_json:
            sys.stdout.write(json.dumps(r.to_json_dict(), allow_nan=False) + "\n")
            sys.stdout.flush()
        else:
            console.print(render_report(r))
        for w in dict.fromkeys(r.warnings):
            err_console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)
    if not as_json and not no_plan:
        if fs.dry_run:
            console.print("[dim]dry run: recovery actions were planned and audited, not executed[/]")
        elif fs.backend == "none":
            console.print("[dim]no cluster backend for this command: actions planned and audited only[/]")
        else:
            console.print(f"[dim]executed through {fs.backend} (each action id once, see the audit log)[/]")
    if bad:
        raise typer.Exit(1)

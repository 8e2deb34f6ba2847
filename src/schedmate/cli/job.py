"""`schedmate job <id>`: a jobstats-style report (prediction vs actual, progress, events, actions)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from schedmate.cli import app
from schedmate.cli.common import console, friendly_errors, settings_of

__all__ = ["job"]


def _dur(x: Any) -> str:
    if x is None:
        return "-"
    s = int(float(x))
    h, rem = divmod(s, 3600)
    return f"{h}:{rem // 60:02d}:{rem % 60:02d}"


@app.command()
@friendly_errors
def job(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(help="Slurm job id.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """What schedmate knows about one job: prediction vs actual, progress, ETA, events,
    diagnosis and the actions watch took."""
    from schedmate.sdk.watch import job_report

    rep = job_report(settings_of(ctx), job_id)
    if as_json:
        typer.echo(json.dumps(rep, default=str))
        return
    t = Table(show_header=False, box=None, title=f"job {job_id}")
    pred = rep["prediction"]
    rows = [
        ("state", f"{rep['state']} on {','.join(rep['nodes']) or '-'} (partition {rep['partition'] or '-'})"),
        ("user / name", f"{rep['user'] or '-'} / {rep['name'] or '-'}"),
        ("time limit", f"{_dur(rep['time_limit_s'])} (requested {_dur(rep['requested_time_limit_s'])})"),
        (
            "predicted",
            f"p50 {_dur(pred.get('p50_s'))}, p90 {_dur(pred.get('p90_s'))} ({pred.get('neighbors') or 0} similar)",
        ),
        ("actual", _dur(rep["actual_s"])),
        (
            "progress",
            "-"
            if rep["progress"] is None
            else f"{rep['progress']:.0%} (step {rep['step']}/{rep['total_steps']})",
        ),
        ("ETA", _dur(rep["eta_s"])),
        ("flags", ", ".join(f for f in ("slowdown", "stalled") if rep[f]) or "-"),
        ("comment", rep["comment"] or "-"),
    ]
    if rep["diagnosis"]:
        d = rep["diagnosis"]
        rows.append(
            ("diagnosis", f"{d['category']} / {d['kind']} ({d['confidence']}): {d.get('root_cause') or ''}")
        )
    for k, v in rows:
        t.add_row(f"[bold]{k}[/]", escape(str(v)))
    console.print(t)
    for e in rep["events"]:
        console.print(escape(f"  event {e['kind']}: {e['message']}"), highlight=False)
    for a in rep["actions"]:
        console.print(escape(f"  action {a['kind']} [{a['status']}]: {a['reason']}"), highlight=False)
    if rep["scheduler_error"]:
        console.print(f"[yellow]scheduler:[/] {escape(rep['scheduler_error'])}", highlight=False)

"""`schedmate history import|stats` and `schedmate advise`: the Scheduling Advisor on the command line.

Commands parse options and print; the work is done by `schedmate.sdk.advising`, imported inside
each command so that `schedmate --help` never loads the Advisor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from schedmate.cli import app
from schedmate.cli.common import console, err_console, friendly_errors, settings_of, shown
from schedmate.core.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rich.table import Table

    from schedmate.sdk.advising import Advice, JobRecord, LineError

__all__ = ["history_app", "advise", "render_advice", "fmt_duration", "MAX_SHOWN_ERRORS"]

MAX_SHOWN_ERRORS = 5  # errors printed one a line; the rest are counted in one summary line

history_app = typer.Typer(help="The job history the Advisor learns from.", no_args_is_help=True)
app.add_typer(history_app, name="history")

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="History store: a file, or a postgresql:// URL for PostgreSQL + pgvector "
        "(default: cache_dir/history.db).",
    ),
]


def fmt_duration(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 120:
        return f"{s:.1f}s"
    if s < 7200:
        return f"{s / 60:.1f}m"
    return f"{s / 3600:.1f}h"


@history_app.command("import")
@friendly_errors
def history_import(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(help="JSONL, one past job per line (job_id, duration_s, code_dir, ...).")
    ],
    store: StoreOpt = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="jsonl, sacct (sacct --json output), or a trace format: "
            "philly, helios, alibaba, rfold, native.",
        ),
    ] = "jsonl",
    as_json: Annotated[bool, typer.Option("--json", help="Print the import report as JSON.")] = False,
) -> None:
    """Import past jobs: extract metadata from their code, embed it, store it."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from schedmate.sdk.advising import import_history

    settings = settings_of(ctx)
    show = not as_json and err_console.is_terminal
    with Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=not show,
        transient=True,
    ) as bar:
        task = bar.add_task("import", total=None)
        report = import_history(settings, file, fmt=fmt, store=store, progress=lambda n: bar.advance(task, n))
    if as_json:
        typer.echo(json.dumps(report.to_json_dict(), allow_nan=False))
    else:
        console.print(
            f"imported {report.imported} jobs into {shown(report.store)} ({report.stored_total} stored) "
            f"in {report.elapsed_s:.1f}s; {report.extracted} code extractions",
            highlight=False,
        )
        for w in report.warnings:
            err_console.print(f"[yellow]warning:[/] {shown(w)}", highlight=False)
    # errors go to stderr in both modes (with --json, the record lists them too)
    for e in report.errors[:MAX_SHOWN_ERRORS]:
        where = f"{file}:{e.line}" if hasattr(e, "line") else f"{file}: job {getattr(e, 'job_id', '?')}"
        err_console.print(f"[yellow]{shown(where)}:[/] {shown(e.message)}", highlight=False, soft_wrap=True)
    if report.error_count > MAX_SHOWN_ERRORS:
        err_console.print(
            f"[yellow]{shown(file)}:[/] {report.error_count - MAX_SHOWN_ERRORS} more errors not shown "
            f"({report.error_count} in all; --json lists the first {len(report.errors)})",
            highlight=False,
        )
    if report.error_count and report.imported == 0:
        raise typer.Exit(2)


@history_app.command("stats")
@friendly_errors
def history_stats(
    ctx: typer.Context, store: StoreOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """How many jobs the store holds and how the metadata fallback is calibrated."""
    from schedmate.sdk.advising import history_stats as stats_of

    out = stats_of(settings_of(ctx), store).to_json_dict()
    if as_json:
        typer.echo(json.dumps(out, allow_nan=False))
    else:
        console.print(f"store     {shown(out['store'])}", highlight=False)
        console.print(f"jobs      {out['jobs']:,}", highlight=False)
        console.print(f"embedder  {shown(out.get('embedder') or '-')}", highlight=False)
        cal = out.get("calibration") or {}
        if cal:
            console.print("calibration of the metadata fallback:", highlight=False)
            for k, v in cal.items():
                console.print(
                    f"  {k:<24} {v:.3g}" if isinstance(v, float) else f"  {k:<24} {v}", highlight=False
                )
        else:
            console.print("calibration  none yet (needs jobs that ended normally)", highlight=False)


def render_advice(a: Advice) -> Table:
    from rich.table import Table

    t = Table(title=f"job {shown(a.job_id)}", show_header=False, title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    if a.error and a.p50_s is None:
        t.add_row("error", shown(a.error))
        return t
    t.add_row(
        "duration", f"{fmt_duration(a.p50_s)}  (p10 {fmt_duration(a.p10_s)}, p90 {fmt_duration(a.p90_s)})"
    )
    t.add_row("method", f"{a.method}  {a.detail}")
    if a.metadata is not None:
        for k, v in a.metadata.known().items():
            src = a.sources.get(k)
            value = (
                ", ".join(map(str, v))
                if isinstance(v, (tuple, list))
                else f"{v:,.0f}"
                if k == "param_count"
                else v
            )
            t.add_row(k, f"{shown(value)}" + (f"  [dim]({shown(src)})[/]" if src else ""))
    for j, s, d in a.neighbors:
        t.add_row("similar", f"{shown(j)}  sim {s:.3f}  took {fmt_duration(d)}")
    for n in a.notes:
        t.add_row("note", shown(n))
    if a.error:
        t.add_row("error", shown(a.error))
    return t


@app.command()
@friendly_errors
def advise(
    ctx: typer.Context,
    code: Annotated[Path | None, typer.Option("--code", help="The job's code directory.")] = None,
    cmd: Annotated[
        str | None, typer.Option("--cmd", help="Launch command, run from the code directory.")
    ] = None,
    gpus: Annotated[
        int | None, typer.Option("--gpus", min=0, max=1_000_000, help="GPUs the scheduler will give the job.")
    ] = None,
    nodes: Annotated[int | None, typer.Option("--nodes", min=1, max=100_000)] = None,
    gpu_model: Annotated[str | None, typer.Option("--gpu-model")] = None,
    user: Annotated[str | None, typer.Option("--user")] = None,
    name: Annotated[str | None, typer.Option("--name")] = None,
    config_file: Annotated[
        list[str] | None, typer.Option("--config-file", help="Config file(s), relative to --code.")
    ] = None,
    batch: Annotated[
        Path | None, typer.Option("--batch", help="JSONL of jobs (history fields, no duration).")
    ] = None,
    store: StoreOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per job, one per line.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also sources, notes and timing in --json.")
    ] = False,
) -> None:
    """Predict a job's duration (p10/p50/p90) from its code and similar past jobs."""
    from schedmate.sdk.advising import advise as advise_jobs
    from schedmate.sdk.advising import job_from_code, read_batch

    if (code is None) == (batch is None):
        raise InputError("give either --code DIR (one job) or --batch FILE.jsonl (many)")
    settings = settings_of(ctx)
    jobs: Iterator[JobRecord | LineError]
    if code is not None:
        jobs = iter(
            [
                job_from_code(
                    code,
                    command=cmd,
                    n_gpus=gpus,
                    n_nodes=nodes,
                    gpu_model=gpu_model,
                    user=user,
                    name=name,
                    config_files=config_file or (),
                )
            ]
        )
    else:
        assert batch is not None
        jobs = read_batch(batch)

    def warn(msg: str) -> None:
        err_console.print(f"[yellow]warning:[/] {shown(msg)}", highlight=False)

    for a in advise_jobs(settings, jobs, store=store, source=str(batch or code), warn=warn):
        if as_json:
            sys.stdout.write(json.dumps(a.to_json_dict(verbose=verbose), allow_nan=False) + "\n")
            sys.stdout.flush()
        else:
            console.print(render_advice(a))

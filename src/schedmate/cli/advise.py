"""`schedmate history import` and `schedmate advise`: the Scheduling Advisor on the command line."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from schedmate.advisor import Advice, JobRecord, LineError, read_jobs
from schedmate.advisor.history import read_sacct_json, read_trace_jobs
from schedmate.advisor.history.pg import redact_url
from schedmate.cli import app
from schedmate.cli.common import console, err_console, friendly_errors, settings_of
from schedmate.core.errors import InputError
from schedmate.sdk import advisor_store_path, build_advisor

__all__ = ["history_app", "advise", "render_advice", "fmt_duration"]

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


def _shown(location: Path | str) -> str:
    """A store location fit to print: a URL loses its password."""
    return redact_url(location) if isinstance(location, str) else str(location)


def fmt_duration(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 120:
        return f"{s:.1f}s"
    if s < 7200:
        return f"{s / 60:.1f}m"
    return f"{s / 3600:.1f}h"


def _count_lines(path: Path) -> int | None:
    try:
        with path.open("rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return None


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
    settings = settings_of(ctx)
    items: Iterable[JobRecord | LineError]
    if fmt == "jsonl":
        total = _count_lines(file)
        items = read_jobs(file, need_duration=True)
    elif fmt == "sacct":
        items = list(read_sacct_json(file))
        total = len(items)
    else:
        from schedmate.sim.trace import TRACE_FORMATS

        if fmt not in TRACE_FORMATS:
            raise InputError(
                f"--format {fmt!r}: use jsonl, sacct or one of {', '.join(sorted(TRACE_FORMATS))}"
            )
        items = list(read_trace_jobs(file, fmt))
        total = len(items)
    advisor = build_advisor(settings, store)
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
        task = bar.add_task("import", total=total)
        report = advisor.import_jobs(items, progress=lambda n: bar.advance(task, n))
    path = advisor_store_path(settings, store)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "store": _shown(path),
                    "imported": report.imported,
                    "stored_total": advisor.store.count(),
                    "errors": [{"line": e.line, "message": e.message} for e in report.errors],
                    "warnings": report.warnings,
                    "extracted": report.extracted,
                    "elapsed_s": round(report.elapsed_s, 3),
                }
            )
        )
    else:
        console.print(
            f"imported {report.imported} jobs into {_shown(path)} ({advisor.store.count()} stored) "
            f"in {report.elapsed_s:.1f}s; {report.extracted} code extractions"
        )
        for e in report.errors:
            err_console.print(f"[yellow]{file}:{e.line}:[/] {e.message}", highlight=False)
        for w in report.warnings:
            err_console.print(f"[yellow]warning:[/] {w}", highlight=False)
    advisor.store.close()
    if report.errors and report.imported == 0:
        raise typer.Exit(2)


@history_app.command("stats")
@friendly_errors
def history_stats(
    ctx: typer.Context, store: StoreOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """How many jobs the store holds and how the metadata fallback is calibrated."""
    settings = settings_of(ctx)
    path = advisor_store_path(settings, store)
    if isinstance(path, Path) and not path.exists():
        raise InputError(f"{path}: no history store yet (run `schedmate history import FILE.jsonl`)")
    advisor = build_advisor(settings, store)
    out = {
        "store": _shown(path),
        "jobs": advisor.store.count(),
        "embedder": advisor.store.get_meta("embedder"),
        "calibration": advisor.calibration(),
    }
    advisor.store.close()
    if as_json:
        typer.echo(json.dumps(out))
    else:
        console.print(out)


def render_advice(a: Advice) -> Table:
    t = Table(title=f"job {a.job_id}", show_header=False, title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    if a.error and a.p50_s is None:
        t.add_row("error", a.error)
        return t
    t.add_row(
        "duration", f"{fmt_duration(a.p50_s)}  (p10 {fmt_duration(a.p10_s)}, p90 {fmt_duration(a.p90_s)})"
    )
    t.add_row("method", f"{a.method}  {a.detail}")
    if a.metadata is not None:
        for k, v in a.metadata.known().items():
            src = a.sources.get(k)
            shown = (
                ", ".join(map(str, v))
                if isinstance(v, (tuple, list))
                else f"{v:,.0f}"
                if k == "param_count"
                else v
            )
            t.add_row(k, f"{shown}" + (f"  [dim]({src})[/]" if src else ""))
    for j, s, d in a.neighbors:
        t.add_row("similar", f"{j}  sim {s:.3f}  took {fmt_duration(d)}")
    for n in a.notes:
        t.add_row("note", n)
    if a.error:
        t.add_row("error", a.error)
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
        int | None, typer.Option("--gpus", min=0, help="GPUs the scheduler will give the job.")
    ] = None,
    nodes: Annotated[int | None, typer.Option("--nodes", min=1)] = None,
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
    if (code is None) == (batch is None):
        raise InputError("give either --code DIR (one job) or --batch FILE.jsonl (many)")
    settings = settings_of(ctx)
    path = advisor_store_path(settings, store)
    if store and isinstance(path, Path) and not path.exists():
        raise InputError(f"{path}: no such history store (create it with `schedmate history import`)")
    advisor = build_advisor(settings, store)
    if advisor.store.count() == 0 and not as_json:
        err_console.print(
            "[yellow]warning:[/] the history store is empty: predictions fall back to metadata only"
        )
    jobs: list[JobRecord | LineError]
    if code is not None:
        if not code.is_dir():
            raise InputError(f"--code {code}: not a directory")
        jobs = [
            JobRecord(
                job_id=name or code.resolve().name,
                n_gpus=gpus,
                n_nodes=nodes,
                gpu_model=gpu_model,
                user=user,
                name=name,
                code_dir=str(code.resolve()),
                command=cmd,
                config_files=tuple(config_file or ()),
            )
        ]
    elif batch is not None:
        jobs = list(read_jobs(batch, need_duration=False))
    else:
        jobs = []
    try:
        for item in jobs:
            if isinstance(item, LineError):
                a = Advice(job_id=f"{batch}:{item.line}", metadata=None, error=str(item))
            else:
                a = advisor.advise(item)
            if as_json:
                sys.stdout.write(json.dumps(a.to_json_dict(verbose=verbose)) + "\n")
                sys.stdout.flush()
            else:
                console.print(render_advice(a))
    finally:
        advisor.store.close()

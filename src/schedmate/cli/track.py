"""`schedmate track`: progress, ETA and events from training logs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from schedmate.cli import app
from schedmate.cli.common import console, err_console, friendly_errors, settings_of
from schedmate.core.types import TrackEvent, TrackResult

__all__ = ["track", "render_results", "fmt_duration"]


def fmt_duration(s: float | None) -> str:
    if s is None:
        return "-"
    s = int(round(s))
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    return (f"{d}d " if d else "") + (f"{h}h{m:02d}m" if h or d else f"{m}m{sec:02d}s")


def _num(x: float | None, fmt: str = "{:.4g}") -> str:
    return "-" if x is None else fmt.format(x)


def render_results(results: list[TrackResult], title: str = "Training progress") -> Table:
    table = Table(title=title, show_lines=False)
    for col, just in (
        ("log", "left"),
        ("step", "right"),
        ("progress", "right"),
        ("loss", "right"),
        ("step time", "right"),
        ("throughput", "right"),
        ("ETA", "right"),
        ("events", "left"),
    ):
        table.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for r in results:
        name = escape(Path(r.file).name)  # a file name is text, not markup (`[red]a.log`)
        if r.error:
            table.add_row(name, "[red]unreadable[/]", "", "", "", "", "", escape(r.error))
            continue
        if not r.has_progress:
            table.add_row(name, "[dim]no progress[/]", "", "", "", "", "", "")
            continue
        step = "-" if r.step is None else (f"{r.step}/{r.total_steps}" if r.total_steps else str(r.step))
        thr = escape(f"{r.throughput.value:.4g} {r.throughput.unit}") if r.throughput else "-"
        loss = "[red]NaN[/]" if r.loss_is_nan else _num(r.loss)
        ev = ", ".join(e.kind for e in r.events) or ""
        table.add_row(
            name,
            step,
            _num(r.progress, "{:.1%}"),
            loss,
            _num(r.step_time_s, "{:.4g} s"),
            thr,
            fmt_duration(r.eta_s),
            ev,
        )
    return table


@app.command()
@friendly_errors
def track(
    ctx: typer.Context,
    files: Annotated[list[Path], typer.Argument(help="Log files (stdout/stderr of training jobs).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per file, one per line.")] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Follow a growing log (live progress bar).")
    ] = False,
    events: Annotated[bool, typer.Option("--events", help="List slowdown/stall events (text mode).")] = False,
    finished: Annotated[
        bool, typer.Option("--finished", help="Logs of ended jobs: no stall from file age.")
    ] = False,
) -> None:
    """Extract step, loss, step time, progress and ETA from training logs."""
    from schedmate.sdk.tracking import build_tracker, save_tracker_state, track_files

    settings = settings_of(ctx)
    tracker = build_tracker(settings)
    if follow:
        if len(files) != 1:
            raise typer.BadParameter("--follow takes exactly one file")
        _follow(tracker, files[0], as_json)
        return
    results: list[TrackResult] = []
    for res in track_files(tracker, files, live=not finished):
        results.append(res)
        if as_json:
            sys.stdout.write(json.dumps(res.to_json_dict(), allow_nan=False) + "\n")
            sys.stdout.flush()
    save_tracker_state(tracker, settings)
    if not as_json:
        console.print(render_results(results))
        for r in results:
            if r.last_progress_line:
                console.print(
                    f"{Path(r.file).name} last progress: {r.last_progress_line[:300]}",
                    highlight=False,
                    markup=False,
                    emoji=False,
                )
            if events:
                for e in r.events:
                    console.print(
                        f"  {e.kind} at line {e.line_no}: {e.message}",
                        highlight=False,
                        markup=False,
                        emoji=False,
                    )
    if any(r.error for r in results):
        raise typer.Exit(1)


def _follow(tracker, path: Path, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    # a stall is reported while the file is silent (the tracker's timer calls `idle`), not
    # only with the next line; the next update then does not repeat it
    said: set[int] = set()
    latest: dict[str, Any] = TrackResult(file=str(path)).to_json_dict()

    def emit(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj, allow_nan=False) + "\n")
        sys.stdout.flush()

    def idle(ev: TrackEvent) -> None:
        said.add(id(ev))
        if as_json:
            emit({**latest, "events": [ev.to_dict()]})
        else:
            err_console.print(
                f"[yellow]{ev.kind}[/] line {ev.line_no}: {escape(ev.message)}", highlight=False
            )

    updates = tracker.follow(path, on_idle_event=idle)
    if as_json:
        for up in updates:
            latest = up.result.to_json_dict()
            emit({**latest, "events": [e.to_dict() for e in up.new_events if id(e) not in said]})
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]}"),
        TextColumn("{task.fields[st]}"),
        TimeRemainingColumn(),
        TextColumn("ETA {task.fields[eta]}"),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task(path.name, total=None, loss="-", st="-", eta="-")
        for up in updates:
            r = up.result
            bar.update(
                task,
                completed=r.step or 0,
                total=r.total_steps,
                loss="NaN" if r.loss_is_nan else _num(r.loss),
                st=_num(r.step_time_s, "{:.3g} s/step"),
                eta=fmt_duration(r.eta_s),
            )
            for e in up.new_events:
                if id(e) in said:
                    continue
                err_console.print(
                    f"[yellow]{e.kind}[/] line {e.line_no}: {escape(e.message)}", highlight=False
                )

"""`schedmate watch`: the live agent next to slurmctld (dry run unless --execute)."""

from __future__ import annotations

from typing import Annotated

import typer

from schedmate.cli import app
from schedmate.cli.common import friendly_errors, settings_of

__all__ = ["watch"]


@app.command()
@friendly_errors
def watch(
    ctx: typer.Context,
    execute: Annotated[
        bool, typer.Option("--execute", help="Carry out actions (default: dry run, actions are only logged).")
    ] = False,
    once: Annotated[bool, typer.Option("--once", help="Run one cycle and exit.")] = False,
    interval: Annotated[float | None, typer.Option(help="Seconds between cycles (watch.interval_s).")] = None,
    partition: Annotated[
        list[str] | None, typer.Option("--partition", "-p", help="Act only on these partitions (repeatable).")
    ] = None,
    state_db: Annotated[
        str | None, typer.Option(help="SQLite state file (default: cache_dir/watch.db).")
    ] = None,
    metrics_port: Annotated[int | None, typer.Option(help="Serve Prometheus /metrics on this port.")] = None,
) -> None:
    """Follow the cluster: predictions and limits for pending jobs, progress and ETA for running
    ones, diagnosis and guarded recovery for failed ones. Structured JSON logs on stderr."""
    from schedmate.sdk.watch import run_watch

    watch_over: dict[str, object] = {}
    if execute:
        watch_over["execute"] = True
    if interval is not None:
        watch_over["interval_s"] = interval
    if partition:
        watch_over["partitions"] = list(partition)
    if state_db is not None:
        watch_over["state_db"] = state_db
    if metrics_port is not None:
        watch_over["metrics_port"] = metrics_port
    settings = settings_of(ctx)
    if watch_over:
        settings = settings.model_copy(
            update={"watch": settings.watch.model_validate({**settings.watch.model_dump(), **watch_over})}
        )
    raise typer.Exit(run_watch(settings, once=once))

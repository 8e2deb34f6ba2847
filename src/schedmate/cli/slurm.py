"""`schedmate slurm ...`: talk to a Slurm cluster (status, history import)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from schedmate.cli import app
from schedmate.cli.common import console, friendly_errors, settings_of

__all__ = ["slurm_app"]

slurm_app = typer.Typer(help="Slurm: cluster status and history import (sacct).", no_args_is_help=True)
app.add_typer(slurm_app, name="slurm")


@slurm_app.command("status")
@friendly_errors
def status(ctx: typer.Context) -> None:
    """Jobs and nodes per state, as squeue/sinfo report them (one JSON object)."""
    from schedmate.sdk.slurm import slurm_status

    typer.echo(json.dumps(slurm_status(settings_of(ctx))))


@slurm_app.command("import-history")
@friendly_errors
def import_history_cmd(
    ctx: typer.Context,
    days: Annotated[float, typer.Option(help="Jobs that ended in the last DAYS days.")] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Import completed jobs from sacct into the Advisor's history store (bulk)."""
    from schedmate.sdk.slurm import import_history

    rep = import_history(settings_of(ctx), days=days)
    if as_json:
        typer.echo(json.dumps(rep))
    else:
        console.print(f"imported {rep['imported']} of {rep['seen']} jobs ({rep['skipped']} not completed)")

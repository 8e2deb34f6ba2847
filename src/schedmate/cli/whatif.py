"""`schedmate whatif`: when will pending jobs start; what if the policy or cluster changed."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from schedmate.cli import app
from schedmate.cli.common import console, err_console, friendly_errors
from schedmate.core.errors import InputError
from schedmate.core.types import SCHEMA_VERSION

__all__ = ["whatif"]

_FORMATS = "native, philly, helios, alibaba, rfold"


def _finite(name: str, v: float | None) -> None:
    if v is not None and (not math.isfinite(v) or v < 0):
        raise InputError(f"{name} must be a finite number >= 0, got {v}")


def _null(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


@app.command()
@friendly_errors
def whatif(
    trace: Annotated[Path, typer.Option("--trace", help="Trace file.")],
    fmt: Annotated[str, typer.Option("--format", help=f"Trace format: {_FORMATS}.")] = "native",
    at_hours: Annotated[
        float | None,
        typer.Option(
            "--at", help="Snapshot time (hours from trace start): predict the start of every pending job."
        ),
    ] = None,
    policy: Annotated[
        str, typer.Option("--policy", help="Policies to compare (comma-separated).")
    ] = "fifo,semantic",
    scale: Annotated[str, typer.Option(help="Cluster size factors to compare, e.g. 0.5,1,2.")] = "1",
    cluster: Annotated[
        str | None, typer.Option(help="GPUs: '64', 'vcA=16,vcB=32' or a vc,nodes CSV.")
    ] = None,
    window_hours: Annotated[
        float | None, typer.Option(help="Only jobs submitted in the first H hours.")
    ] = None,
    estimator: Annotated[str | None, typer.Option(help="Estimator (default per policy).")] = None,
    samples: Annotated[int, typer.Option(help="Sampled futures per prediction (--at).")] = 8,
    no_arrivals: Annotated[
        bool, typer.Option("--no-arrivals", help="Predict without future arrivals (--at).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines.")] = False,
    placement: Annotated[str, typer.Option(help="Placement: pool | node.")] = "pool",
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node (node placement).")] = 8,
    semantics: Annotated[str, typer.Option(help="Policy semantics (see simulate --help).")] = "default",
) -> None:
    """Start-time prediction from a snapshot, or a policy x cluster-size comparison."""
    from schedmate.sdk.sim import predict_trace, simulate

    _finite("--at", at_hours)
    _finite("--window-hours", window_hours)
    names = [p.strip() for p in policy.split(",") if p.strip()]
    if not names:
        raise InputError("--policy: give at least one policy")
    if not 1 <= samples <= 1000:
        raise InputError(f"--samples must be 1..1000, got {samples}")
    window_s = window_hours * 3600 if window_hours is not None else None
    if at_hours is not None:
        tp = predict_trace(
            trace,
            fmt,
            at_hours * 3600,
            policy=names[0],
            cluster=cluster,
            window_s=window_s,
            samples=samples,
            arrivals=not no_arrivals,
            semantics=semantics,
            placement=placement,
            gpus_per_node=gpus_per_node,
        )
        _print_predictions(tp, as_json)
        return
    try:
        factors = [float(x) for x in scale.split(",")]
    except ValueError:
        raise InputError(f"--scale: expected numbers like 0.5,1,2, got {scale!r}") from None
    for f in factors:
        if not math.isfinite(f) or f <= 0:
            raise InputError(f"--scale: factors must be finite numbers > 0, got {f}")
    avg: dict[tuple[str, float], float] = {}
    gpus: dict[float, int] = {}
    for f in factors:
        rep = simulate(
            trace,
            fmt,
            names,
            cluster=cluster,
            estimator=estimator,
            placement=placement,
            gpus_per_node=gpus_per_node,
            semantics=semantics,
            scale=f,
        )
        for w in rep.warnings:
            err_console.print(f"[yellow]warning:[/] {w}", highlight=False)
        gpus[f] = rep.gpus
        for run in rep.runs:
            avg[(run.policy, f)] = run.metrics.avg_jct_s
            if as_json:
                m = run.metrics.to_json_dict()
                rec: dict[str, object] = {"schema_version": SCHEMA_VERSION, "scale": f, "gpus": rep.gpus}
                rec.update({k: (_null(v) if isinstance(v, float) else v) for k, v in m.items()})
                sys.stdout.write(json.dumps(rec, allow_nan=False) + "\n")
    if as_json:
        return
    table = Table(title=f"what-if on {trace.name}: average JCT (s)")
    table.add_column("policy")
    for f in factors:
        table.add_column(f"x{f:g} ({gpus[f]:,} GPUs)", justify="right")
    for name in names:
        table.add_row(name, *(f"{avg[(name, f)]:,.0f}" for f in factors))
    console.print(table)


def _print_predictions(tp: object, as_json: bool) -> None:
    from schedmate.sdk.sim import TracePrediction

    assert isinstance(tp, TracePrediction)
    t = tp.time
    rows = sorted(tp.predictions, key=lambda p: (p.p50_s is None, p.p50_s or 0.0))
    if as_json:
        for p in rows:
            rec = {
                "schema_version": SCHEMA_VERSION,
                "job_id": p.job_id,
                "gpus": p.gpus,
                "partition": p.partition,
                "p10_wait_s": None if p.p10_s is None else p.p10_s - t,
                "p50_wait_s": None if p.p50_s is None else p.p50_s - t,
                "p90_wait_s": None if p.p90_s is None else p.p90_s - t,
                "simulated_wait_s": _null(tp.actual_s[p.job_id] - t) if tp.actual_s[p.job_id] >= 0 else None,
            }
            sys.stdout.write(json.dumps(rec, allow_nan=False) + "\n")
        return
    table = Table(
        title=f"{tp.running} running, {len(rows)} pending at t={t / 3600:.1f} h ({tp.policy}); "
        "predicted waits p10 / p50 / p90"
    )
    for col in ("job", "GPUs", "p10", "p50", "p90", "wait in full simulation"):
        table.add_column(col, justify="left" if col == "job" else "right")

    def h(v: float | None) -> str:
        return "-" if v is None else f"{(v - t) / 3600:,.2f} h"

    for p in rows[:40]:
        a = tp.actual_s[p.job_id]
        table.add_row(p.job_id, str(p.gpus), h(p.p10_s), h(p.p50_s), h(p.p90_s), h(a if a >= 0 else None))
    console.print(table)
    if len(rows) > 40:
        console.print(f"[dim]... {len(rows) - 40} more (use --json)[/]")

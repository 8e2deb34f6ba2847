"""`schedmate whatif`: when will pending jobs start; what if the policy or cluster changed."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schedmate.cli import app
from schedmate.cli.common import console, err_console, friendly_errors, settings_of, sim_semantics
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
    ctx: typer.Context,
    trace: Annotated[Path | None, typer.Option("--trace", help="Trace file.")] = None,
    live: Annotated[
        bool,
        typer.Option(
            "--live", help="Predict the pending jobs of the live Slurm queue (beside squeue --start)."
        ),
    ] = False,
    partition: Annotated[
        str | None, typer.Option("--partition", help="Only this partition's pending jobs (--live).")
    ] = None,
    history_days: Annotated[
        float,
        typer.Option("--history-days", help="Finished jobs (sacct) of the last D days as history (--live)."),
    ] = 14.0,
    fmt: Annotated[str, typer.Option("--format", help=f"Trace format: {_FORMATS}.")] = "native",
    at_hours: Annotated[
        float | None,
        typer.Option(
            "--at", help="Snapshot time (hours from trace start): predict the start of every pending job."
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            help="Policies to compare (comma-separated; default fifo,semantic); with --at or --live, one (default fifo).",
        ),
    ] = None,
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
    placement: Annotated[
        str | None, typer.Option(help="Placement: pool | node. Default pool; node with --semantics lucid.")
    ] = None,
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node (node placement).")] = 8,
    semantics: Annotated[
        str | None,
        typer.Option(help="Policy semantics (see simulate --help). Else the config's sim.semantics."),
    ] = None,
) -> None:
    """Start-time prediction from a snapshot (a trace cut with --at, or the live queue with
    --live), or a policy x cluster-size comparison."""
    if live:
        if trace is not None:
            raise InputError("--live and --trace: give one of them")
        names = _one_policy(policy, "--live")
        _live(ctx, partition, samples, history_days, not no_arrivals, names[0], as_json)
        return
    if trace is None:
        raise InputError("give --trace FILE (a trace what-if) or --live (the Slurm queue)")
    if partition is not None:
        raise InputError("--partition needs --live")
    from schedmate.sdk.sim import predict_trace, simulate

    _finite("--at", at_hours)
    _finite("--window-hours", window_hours)
    names = [p.strip() for p in (policy or "fifo,semantic").split(",") if p.strip()]
    if not names:
        raise InputError("--policy: give at least one policy")
    if not 1 <= samples <= 1000:
        raise InputError(f"--samples must be 1..1000, got {samples}")
    window_s = window_hours * 3600 if window_hours is not None else None
    sem, place = sim_semantics(ctx, semantics, placement)
    if at_hours is not None:
        names = _one_policy(policy, "--at")
        if scale.strip() != "1":
            raise InputError(
                "--scale compares cluster sizes; with --at the prediction is for the cluster as given"
            )
        tp = predict_trace(
            trace,
            fmt,
            at_hours * 3600,
            policy=names[0],
            cluster=cluster,
            window_s=window_s,
            samples=samples,
            arrivals=not no_arrivals,
            semantics=sem,
            placement=place,
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
            placement=place,
            gpus_per_node=gpus_per_node,
            semantics=sem,
            scale=f,
            window_s=window_s,
        )
        for w in rep.warnings:
            err_console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
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
    table = Table(title=f"what-if on {escape(trace.name)}: average JCT (s)")
    table.add_column("policy")
    for f in factors:
        table.add_column(f"x{f:g} ({gpus[f]:,} GPUs)", justify="right")
    for name in names:
        table.add_row(name, *(f"{avg[(name, f)]:,.0f}" for f in factors))
    console.print(table)


def _clock(t: float | None, now: float) -> str:
    """'08:42 (+17m)' for a time today, '2026-11-25 08:42 (+1d00h)' on another day; '-' for none."""
    if t is None:
        return "-"
    lt, ln = time.localtime(t), time.localtime(now)
    day = "" if lt[:3] == ln[:3] else time.strftime("%Y-%m-%d ", lt)
    return f"{day}{time.strftime('%H:%M', lt)} (+{_dur(max(0.0, t - now))})"


def _dur(s: float | None) -> str:
    if s is None:
        return "-"
    m = int(round(s / 60.0))
    if m < 60:
        return f"{m}m"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h < 48 else f"{h // 24}d{h % 24:02d}h"


def _live(
    ctx: typer.Context,
    partition: str | None,
    samples: int,
    history_days: float,
    arrivals: bool,
    policy: str,
    as_json: bool,
) -> None:
    from schedmate.sdk.live import live_report

    rep = live_report(
        settings_of(ctx),
        partition=partition,
        samples=samples,
        history_days=history_days,
        arrivals=arrivals,
        policy=policy,
    )
    for w in rep.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
    if not rep.predictions:
        where = f" in partition {partition}" if partition else ""
        err_console.print(f"no pending jobs{where}: nothing to predict", highlight=False)
        raise typer.Exit(1)
    if as_json:
        for p in rep.predictions:
            sys.stdout.write(json.dumps(p.to_json_dict(), allow_nan=False) + "\n")
        return
    now = rep.time
    table = Table(
        title=f"{rep.running} running, {len(rep.predictions)} pending ({policy}, {samples} sampled futures, "
        f"{rep.history_jobs} finished jobs as history): predicted start p10 / p50 / p90 beside squeue --start"
    )
    for col in ("job", "user", "partition", "GPUs", "#", "duration", "p10", "p50", "p90", "squeue --start"):
        table.add_column(col, justify="left" if col in ("job", "user", "partition") else "right")
    rows = sorted(rep.predictions, key=lambda p: (p.p50_s is None, p.p50_s or 0.0, p.queue_position))
    for p in rows[:60]:
        src = p.duration_source.value
        dur = f"{_dur(p.duration_s)} ({src})" if p.duration_s is not None else src
        cells = [
            escape(p.job_id),
            escape(p.user or "-"),
            escape(p.partition or "-"),
            str(p.gpus),
            str(p.queue_position or "-"),
            escape(dur),
        ]
        if p.note:
            cells += ["", f"[dim]{escape(p.note)}[/]", ""]
        else:
            cells += [_clock(p.p10_s, now), _clock(p.p50_s, now), _clock(p.p90_s, now)]
        cells.append(_clock(p.slurm_start_s, now) if p.slurm_start_s is not None else "N/A")
        table.add_row(*cells)
    console.print(table)
    if len(rows) > 60:
        console.print(f"[dim]... {len(rows) - 60} more (use --json)[/]")


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


def _one_policy(policy: str | None, mode: str) -> list[str]:
    """The one policy a prediction runs under (fifo by default); several are refused, not
    silently cut to the first."""
    names = [p.strip() for p in (policy or "fifo").split(",") if p.strip()]
    if len(names) != 1:
        raise InputError(f"--policy: {mode} predicts under one policy, got {policy!r}")
    return names

"""`schedmate simulate`: replay a trace under several policies and compare."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from schedmate.cli import app
from schedmate.cli.common import console, err_console, friendly_errors
from schedmate.core.errors import InputError
from schedmate.sim import (
    TRACE_FORMATS,
    Simulator,
    default_cluster,
    load_trace,
    make_estimator,
    make_policy,
    parse_cluster,
    summarize_sim,
)

__all__ = ["simulate"]

# the estimator each policy uses unless --estimator says otherwise
DEFAULT_ESTIMATORS = {"fifo": "oracle", "sjf": "history", "srtf": "oracle", "tiresias": "oracle",
                      "qssf": "history", "semantic": "noisy"}


@app.command()
@friendly_errors
def simulate(
    trace: Annotated[Path, typer.Option("--trace", help="Trace file.")],
    fmt: Annotated[str, typer.Option("--format", help=f"Trace format: {', '.join(TRACE_FORMATS)}.")] = "native",
    policy: Annotated[str, typer.Option("--policy", help="Comma-separated policies.")] = "fifo,sjf,srtf,tiresias,qssf,semantic",
    cluster: Annotated[str | None, typer.Option(help="GPUs: '64', 'vcA=16,vcB=32' or a vc,nodes CSV.")] = None,
    estimator: Annotated[str | None, typer.Option(help="oracle | history | noisy[:sigma|:file] | file:PATH.")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N jobs.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed (noisy estimators).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per policy, one per line.")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write PNG plots (JCT CDF, queue, utilisation) here.")] = None,
) -> None:
    """Discrete-event simulation of a trace under classic and semantic policies."""
    jobs = load_trace(trace, fmt, limit=limit)
    cl = parse_cluster(cluster) if cluster else default_cluster(fmt, trace, jobs)
    names = [p.strip() for p in policy.split(",") if p.strip()]
    if not names:
        raise InputError("--policy: give at least one policy")
    policies = [make_policy(n) for n in names]
    table = Table(title=f"{trace.name}: {len(jobs):,} jobs, {sum(cl.values()):,} GPUs")
    for col in ("policy", "estimator", "avg JCT", "p50 JCT", "p99 JCT", "avg queue", "makespan", "GPU util",
                "preempt.", "sim s"):
        table.add_column(col, justify="left" if col in ("policy", "estimator") else "right")
    results = []
    with Progress(console=console, transient=True, disable=as_json) as bar:
        for pol in policies:
            est = make_estimator(estimator or DEFAULT_ESTIMATORS.get(pol.name, "oracle"), seed=seed)
            task = bar.add_task(f"{pol.name}", total=len(jobs))
            t0 = time.perf_counter()
            sim = Simulator(jobs, cl, pol, est, seed=seed, timeline_every=max(1, len(jobs) // 500) if plot else 0)
            res = sim.run(progress=lambda n, t=task: bar.advance(t, n))
            results.append(res)
            dt = time.perf_counter() - t0
            m, _ = summarize_sim(res)
            if as_json:
                obj = m.to_json_dict()
                obj = {k: obj[k] for k in ("policy", "n_jobs", "avg_jct_s", "p50_jct_s", "p99_jct_s", "avg_queue_s",
                                           "p99_queue_s", "makespan_s", "gpu_util")}
                sys.stdout.write(json.dumps(obj) + "\n")
            else:
                table.add_row(pol.name, est.name, f"{m.avg_jct_s:,.0f} s", f"{m.p50_jct_s:,.0f} s",
                              f"{m.p99_jct_s:,.0f} s", f"{m.avg_queue_s:,.0f} s", f"{m.makespan_s / 3600:,.1f} h",
                              f"{m.gpu_util:.1%}", f"{m.preemptions:,}", f"{dt:.2f}")
            if m.unschedulable:
                console.print(f"[yellow]{m.unschedulable} jobs ask for more GPUs than their virtual cluster has[/]")
    if not as_json:
        console.print(table)
    if plot is not None:
        from schedmate.sim.plots import plot_results

        for f in plot_results(results, plot, title=trace.name):
            (console if not as_json else err_console).print(f"wrote {f}")

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
    PLACEMENTS,
    TRACE_FORMATS,
    FailureModel,
    InterferenceModel,
    Metrics,
    Simulator,
    default_cluster,
    default_nodes,
    load_trace,
    make_estimator,
    make_policy,
    parse_cluster,
    summarize_sim,
)
from schedmate.sim.placement import check_placement

__all__ = ["simulate"]

# the estimator each policy uses unless --estimator says otherwise
DEFAULT_ESTIMATORS = {
    "fifo": "oracle",
    "sjf": "history",
    "srtf": "oracle",
    "tiresias": "oracle",
    "qssf": "history",
    "semantic": "noisy",
    "lucid": "history",
    "semantic-pack": "noisy",
}
_JSON_KEYS = (
    "policy",
    "n_jobs",
    "avg_jct_s",
    "p50_jct_s",
    "p99_jct_s",
    "avg_queue_s",
    "p99_queue_s",
    "makespan_s",
    "gpu_util",
)


def _per_vc_table(title: str, per_vc: dict[str, Metrics], capacity: dict[str, int]) -> Table:
    t = Table(title=title)
    for col in ("VC", "GPUs", "jobs", "avg JCT", "p99 JCT", "avg queue", "GPU util"):
        t.add_column(col, justify="left" if col == "VC" else "right")
    for vc, m in per_vc.items():
        t.add_row(
            vc,
            f"{capacity.get(vc, 0):,}",
            f"{m.n_jobs:,}",
            f"{m.avg_jct_s:,.0f} s",
            f"{m.p99_jct_s:,.0f} s",
            f"{m.avg_queue_s:,.0f} s",
            f"{m.gpu_util:.1%}",
        )
    return t


@app.command()
@friendly_errors
def simulate(
    trace: Annotated[Path, typer.Option("--trace", help="Trace file.")],
    fmt: Annotated[
        str, typer.Option("--format", help=f"Trace format: {', '.join(TRACE_FORMATS)}.")
    ] = "native",
    policy: Annotated[
        str, typer.Option("--policy", help="Comma-separated policies.")
    ] = "fifo,sjf,srtf,tiresias,qssf,semantic",
    cluster: Annotated[
        str | None, typer.Option(help="GPUs: '64', 'vcA=16,vcB=32' or a vc,nodes CSV.")
    ] = None,
    estimator: Annotated[
        str | None, typer.Option(help="oracle | history | noisy[:sigma|:file] | file:PATH.")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N jobs.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed (noisy estimators).")] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per policy, one per line.")
    ] = False,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write PNG plots (JCT CDF, queue, utilisation) here.")
    ] = None,
    per_vc: Annotated[
        bool, typer.Option("--per-vc", help="Per virtual cluster breakdown (a table; `per_vc` in --json).")
    ] = False,
    failures: Annotated[
        str | None,
        typer.Option(
            help="Inject failures: 'on' (documented defaults) or "
            "'infra=1e-4,app=0.1,checkpoint=1800,retries=1,seed=0'."
        ),
    ] = None,
    interference: Annotated[
        Path | None,
        typer.Option(
            help="Fit the packing interference table from this directory "
            "(single_data.csv, colocate_info.csv) instead of the "
            "shipped one."
        ),
    ] = None,
    placement: Annotated[
        str,
        typer.Option(
            help=f"Placement: {' | '.join(PLACEMENTS)} (pool: any free GPUs of the "
            "VC; node: one node, best fit, up to a node's GPUs, whole nodes "
            "beyond)."
        ),
    ] = "pool",
    gpus_per_node: Annotated[
        int, typer.Option(help="GPUs per node (node placement; the nodes of a vc,nodes CSV).")
    ] = 8,
) -> None:
    """Discrete-event simulation of a trace under classic and semantic policies."""
    placement = check_placement(placement)
    if gpus_per_node < 1:
        raise InputError(f"--gpus-per-node must be >= 1, got {gpus_per_node}")
    jobs = load_trace(trace, fmt, limit=limit)
    cl = (
        parse_cluster(cluster, gpus_per_node) if cluster else default_cluster(fmt, trace, jobs, gpus_per_node)
    )
    nodes = default_nodes(fmt, trace) if not cluster and placement == "node" else {}
    names = [p.strip() for p in policy.split(",") if p.strip()]
    if not names:
        raise InputError("--policy: give at least one policy")
    policies = [make_policy(n) for n in names]
    fm = FailureModel.parse(failures) if failures is not None else None
    im = InterferenceModel.fit(interference) if interference is not None else None
    where = (
        f", node placement ({gpus_per_node} GPUs/node)"
        if placement == "node" and not nodes
        else (", node placement (the trace's nodes)" if placement == "node" else "")
    )
    table = Table(title=f"{trace.name}: {len(jobs):,} jobs, {sum(cl.values()):,} GPUs{where}")
    for col in (
        "policy",
        "estimator",
        "avg JCT",
        "p50 JCT",
        "p99 JCT",
        "avg queue",
        "makespan",
        "GPU util",
        "preempt.",
        "sim s",
    ):
        table.add_column(col, justify="left" if col in ("policy", "estimator") else "right")
    results = []
    notes: list[str] = []
    vc_tables: list[Table] = []
    with Progress(console=console, transient=True, disable=as_json) as bar:
        for pol in policies:
            est = make_estimator(estimator or DEFAULT_ESTIMATORS.get(pol.name, "oracle"), seed=seed)
            task = bar.add_task(f"{pol.name}", total=len(jobs))
            t0 = time.perf_counter()
            sim = Simulator(
                jobs,
                cl,
                pol,
                est,
                seed=seed,
                timeline_every=max(1, len(jobs) // 500) if plot else 0,
                interference=im,
                failures=fm,
                placement=placement,
                gpus_per_node=gpus_per_node,
                node_sizes=nodes,
            )
            res = sim.run(progress=lambda n, t=task: bar.advance(t, n))
            results.append(res)
            dt = time.perf_counter() - t0
            m, vcs = summarize_sim(res)
            packing = bool(getattr(pol, "packing", False))
            if as_json:
                full = m.to_json_dict()
                obj = {k: full[k] for k in _JSON_KEYS}
                if packing:
                    obj.update(packs=m.packs, unpacks=m.unpacks)
                if fm is not None:
                    obj.update(failures=m.failures, lost_gpu_h=m.lost_gpu_h)
                if res.placement != "pool":
                    obj.update(
                        placement=res.placement,
                        stranded_gpu_h=m.stranded_gpu_h,
                        stranded_frac=m.stranded_frac,
                    )
                if per_vc:
                    obj["per_vc"] = {
                        vc: {k: v for k, v in x.to_json_dict().items() if k in _JSON_KEYS and k != "policy"}
                        for vc, x in vcs.items()
                    }
                sys.stdout.write(json.dumps(obj) + "\n")
            else:
                extra = f" packs {m.packs:,}, un-packed {m.unpacks:,}" if packing else ""
                if fm is not None:
                    extra += f" failures {m.failures:,}, lost {m.lost_gpu_h:,.1f} GPU-h"
                if res.placement != "pool":
                    extra += (
                        f"; stranded {m.stranded_gpu_h:,.1f} GPU-h ({m.stranded_frac:.2%} of GPU-time: free while "
                        f"the next job had enough GPUs, but on no node)"
                    )
                table.add_row(
                    pol.name,
                    est.name,
                    f"{m.avg_jct_s:,.0f} s",
                    f"{m.p50_jct_s:,.0f} s",
                    f"{m.p99_jct_s:,.0f} s",
                    f"{m.avg_queue_s:,.0f} s",
                    f"{m.makespan_s / 3600:,.1f} h",
                    f"{m.gpu_util:.1%}",
                    f"{m.preemptions:,}",
                    f"{dt:.2f}",
                )
                if extra:
                    notes.append(f"{pol.name}:{extra}")
                if per_vc:
                    vc_tables.append(_per_vc_table(f"{pol.name} per virtual cluster", vcs, res.vc_capacity))
            if m.unschedulable:
                console.print(
                    f"[yellow]{m.unschedulable} jobs ask for more GPUs than their virtual cluster "
                    f"{'has' if res.placement == 'pool' else 'has in whole nodes'}[/]"
                )
    if not as_json:
        console.print(table)
        for line in notes:
            console.print(line)
        for t in vc_tables:
            console.print(t)
    if plot is not None:
        from schedmate.sim.plots import plot_results

        for f in plot_results(results, plot, title=trace.name):
            (console if not as_json else err_console).print(f"wrote {f}")

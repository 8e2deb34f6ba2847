"""`schedmate whatif`: when will pending jobs start; what if the policy or cluster changed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from schedmate.cli import app
from schedmate.cli.common import console, friendly_errors
from schedmate.sdk.sim import DEFAULT_ESTIMATORS
from schedmate.core.errors import InputError
from schedmate.sim import (
    TRACE_FORMATS,
    Simulator,
    default_cluster,
    default_nodes,
    load_trace,
    make_estimator,
    make_policy,
    parse_cluster,
    summarize_sim,
)
from schedmate.sim.placement import PLACEMENTS, check_placement
from schedmate.sim.whatif import predict_starts, snapshot_at

__all__ = ["whatif"]


@app.command()
@friendly_errors
def whatif(
    trace: Annotated[Path, typer.Option("--trace", help="Trace file.")],
    fmt: Annotated[
        str, typer.Option("--format", help=f"Trace format: {', '.join(TRACE_FORMATS)}.")
    ] = "native",
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
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines.")] = False,
    placement: Annotated[str, typer.Option(help=f"Placement: {' | '.join(PLACEMENTS)}.")] = "pool",
    gpus_per_node: Annotated[int, typer.Option(help="GPUs per node (node placement).")] = 8,
) -> None:
    """Queue-wait prediction from a snapshot, or a policy x cluster-size comparison."""
    placement = check_placement(placement)
    if gpus_per_node < 1:
        raise InputError(f"--gpus-per-node must be >= 1, got {gpus_per_node}")
    jobs = load_trace(trace, fmt)
    if window_hours is not None:
        jobs = [j for j in jobs if j.submit_s <= window_hours * 3600]
    base = (
        parse_cluster(cluster, gpus_per_node) if cluster else default_cluster(fmt, trace, jobs, gpus_per_node)
    )
    nodes = default_nodes(fmt, trace) if not cluster and placement == "node" else {}
    where = {"placement": placement, "gpus_per_node": gpus_per_node, "node_sizes": nodes}
    names = [p.strip() for p in policy.split(",") if p.strip()]
    if at_hours is not None:
        _predict(jobs, base, names[0], estimator, at_hours * 3600, as_json, where)
        return
    try:
        factors = [float(x) for x in scale.split(",")]
    except ValueError:
        raise InputError(f"--scale: expected numbers like 0.5,1,2, got {scale!r}") from None
    table = Table(title=f"what-if on {trace.name}: average JCT (s)")
    table.add_column("policy")
    for f in factors:
        table.add_column(f"x{f:g} ({int(sum(base.values()) * f):,} GPUs)", justify="right")
    for name in names:
        row = [name]
        for f in factors:
            cl = {k: max(1, int(round(v * f))) for k, v in base.items()}
            est = make_estimator(estimator or DEFAULT_ESTIMATORS.get(name, "oracle"))
            # a scaled cluster keeps the node size (the trace's own node list only at x1)
            kw = where if f == 1 else {**where, "node_sizes": {}}
            m, _ = summarize_sim(Simulator(jobs, cl, make_policy(name), est, **kw).run())  # type: ignore[arg-type]
            if as_json:
                sys.stdout.write(json.dumps({"policy": name, "scale": f, **m.to_json_dict()}) + "\n")
            row.append(f"{m.avg_jct_s:,.0f}")
        table.add_row(*row)
    if not as_json:
        console.print(table)


def _predict(jobs, cluster, name, estimator, t, as_json, where) -> None:  # type: ignore[no-untyped-def]
    pol = make_policy(name)
    truth = Simulator(
        jobs, cluster, pol, make_estimator(DEFAULT_ESTIMATORS.get(name, "oracle")), **where
    ).run()
    est_name = estimator or "history"  # what a real cluster knows about pending jobs
    snap = snapshot_at(jobs, truth, t)
    pred = predict_starts(snap, cluster, make_policy(name), make_estimator(est_name, seed=1), **where)
    actual = {st.job_id: st.first_start for st in truth.jobs}
    gpus = {j.job_id: j.gpus for j in snap.pending}
    rows = sorted(pred.items(), key=lambda kv: kv[1])
    if as_json:
        for jid, p in rows:
            sys.stdout.write(
                json.dumps(
                    {
                        "job_id": jid,
                        "gpus": gpus[jid],
                        "predicted_wait_s": p - t,
                        "simulated_wait_s": actual[jid] - t,
                    }
                )
                + "\n"
            )
        return
    table = Table(
        title=f"{len(snap.running)} running, {len(snap.pending)} pending at t={t / 3600:.1f} h ({name}, {est_name})"
    )
    for col in ("job", "GPUs", "predicted wait", "wait in full simulation"):
        table.add_column(col, justify="left" if col == "job" else "right")
    for jid, p in rows[:40]:
        table.add_row(jid, str(gpus[jid]), f"{(p - t) / 3600:,.2f} h", f"{(actual[jid] - t) / 3600:,.2f} h")
    console.print(table)
    if len(rows) > 40:
        console.print(f"[dim]... {len(rows) - 40} more (use --json)[/]")

"""`schedmate simulate`: replay a trace under several policies and compare (via the SDK)."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from schedmate.cli import app
from schedmate.cli.common import console, err_console, friendly_errors, shown, sim_semantics
from schedmate.core.errors import InputError
from schedmate.core.types import SCHEMA_VERSION

if TYPE_CHECKING:
    from schedmate.sdk.sim import PolicyRun, SimulationReport
    from schedmate.sim.metrics import Metrics

__all__ = ["simulate", "json_safe"]

_FORMATS = "native, philly, helios, alibaba, rfold"
# every --json record has these keys, in every mode (null where not applicable)
_METRIC_KEYS = (
    "n_jobs",
    "avg_jct_s",
    "p50_jct_s",
    "p99_jct_s",
    "p999_jct_s",
    "avg_queue_s",
    "p50_queue_s",
    "p99_queue_s",
    "p999_queue_s",
    "makespan_s",
    "gpu_util",
    "preemptions",
    "unschedulable",
)


def json_safe(obj: Any) -> Any:
    """NaN and infinities become null: stdout stays valid JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def _metrics_dict(m: Metrics) -> dict[str, Any]:
    d = m.to_json_dict()
    return {k: d[k] for k in _METRIC_KEYS}


def _record(rep: SimulationReport, run: PolicyRun, per_vc: bool, failures: bool) -> dict[str, Any]:
    m = run.metrics
    node = run.placement != "pool"
    obj: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "policy": run.policy,
        "estimator": run.estimator,
        "semantics": rep.semantics,
        **_metrics_dict(m),
        "packs": m.packs if run.packing else None,
        "unpacks": m.unpacks if run.packing else None,
        "failures": m.failures if failures else None,
        "lost_gpu_h": m.lost_gpu_h if failures else None,
        "placement": run.placement,
        "stranded_gpu_h": m.stranded_gpu_h if node else None,
        "stranded_frac": m.stranded_frac if node else None,
        "sim_s": run.sim_s,
        "per_vc": {vc: _metrics_dict(x) for vc, x in run.per_vc.items()} if per_vc else None,
    }
    return json_safe(obj)  # type: ignore[no-any-return]


def _per_vc_table(title: str, run: PolicyRun) -> Table:
    t = Table(title=title)
    for col in ("VC", "GPUs", "jobs", "too large", "avg JCT", "p99 JCT", "avg queue", "GPU util"):
        t.add_column(col, justify="left" if col == "VC" else "right")
    for vc, m in run.per_vc.items():
        served = m.n_jobs > 0
        t.add_row(
            vc,
            f"{run.vc_capacity.get(vc, 0):,}",
            f"{m.n_jobs:,}",
            f"{m.unschedulable:,}",
            f"{m.avg_jct_s:,.0f} s" if served else "-",
            f"{m.p99_jct_s:,.0f} s" if served else "-",
            f"{m.avg_queue_s:,.0f} s" if served else "-",
            f"{m.gpu_util:.1%}" if served else "-",
        )
    return t


_PER_JOB_COLS = (
    "policy",
    "job_id",
    "vc",
    "gpus",
    "submit_s",
    "first_start_s",
    "end_s",
    "queue_s",
    "jct_s",
    "preemptions",
)


def _write_per_job(path: Path, rep: SimulationReport) -> None:
    rows = [
        (
            run.policy,
            j.job_id,
            j.vc,
            j.gpus,
            j.submit_s,
            j.first_start_s,
            j.end_s,
            j.queue_s,
            j.jct_s,
            j.preemptions,
        )
        for run in rep.runs
        for j in run.jobs
    ]
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow as pa  # type: ignore[import-not-found,unused-ignore]
            import pyarrow.parquet as pq  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise InputError(
                f"--per-job {path}: Parquet needs pyarrow (pip install pyarrow); use .csv"
            ) from None
        table = pa.table({name: [r[i] for r in rows] for i, name in enumerate(_PER_JOB_COLS)})
        try:
            pq.write_table(table, path)
        except OSError as exc:
            raise InputError(f"--per-job {path}: cannot write: {exc}") from None
        return
    try:
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(_PER_JOB_COLS)
            w.writerows(["" if v is None else v for v in r] for r in rows)
    except OSError as exc:
        raise InputError(f"--per-job {path}: cannot write: {exc.strerror or exc}") from None


@app.command()
@friendly_errors
def simulate(
    ctx: typer.Context,
    trace: Annotated[Path, typer.Option("--trace", help="Trace file.")],
    fmt: Annotated[str, typer.Option("--format", help=f"Trace format: {_FORMATS}.")] = "native",
    policy: Annotated[
        str, typer.Option("--policy", help="Comma-separated policies.")
    ] = "fifo,sjf,srtf,tiresias,qssf,semantic",
    cluster: Annotated[
        str | None, typer.Option(help="GPUs: '64', 'vcA=16,vcB=32' or a vc,nodes CSV.")
    ] = None,
    estimator: Annotated[
        str | None, typer.Option(help="oracle | history | noisy[:sigma|:file] | file:PATH.")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N jobs (N >= 1).")] = None,
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
    per_job: Annotated[
        Path | None,
        typer.Option(
            "--per-job",
            help="Write one row per job and policy (job, submit, first start, end, queue, JCT, "
            "preemptions): CSV, or Parquet for a .parquet name (needs pyarrow).",
        ),
    ] = None,
    failures: Annotated[
        str | None,
        typer.Option(
            help="Inject failures: 'on' (documented defaults) or "
            "'infra=1e-4,app=0.1,checkpoint=1800,retries=1,requeues=5,seed=0'."
        ),
    ] = None,
    interference: Annotated[
        Path | None,
        typer.Option(
            help="Fit the packing interference table from this directory "
            "(single_data.csv, colocate_info.csv) instead of the shipped one."
        ),
    ] = None,
    placement: Annotated[
        str | None,
        typer.Option(
            help="Placement: pool | node (pool: any free GPUs of the VC; node: one node, best "
            "fit, up to a node's GPUs, whole nodes beyond). Default pool; node with --semantics lucid."
        ),
    ] = None,
    gpus_per_node: Annotated[
        int, typer.Option(help="GPUs per node (node placement; the nodes of a vc,nodes CSV).")
    ] = 8,
    semantics: Annotated[
        str | None,
        typer.Option(
            help="Modelling choices: a preset (default | lucid | legacy) and name=value overrides, "
            "e.g. 'default,interval_s=60' (docs/sim.md). Else the config's sim.semantics."
        ),
    ] = None,
) -> None:
    """Discrete-event simulation of a trace under classic and semantic policies."""
    from schedmate.sdk.sim import simulate as sdk_simulate

    sem, place = sim_semantics(ctx, semantics, placement)
    names = [p.strip() for p in policy.split(",") if p.strip()]

    def on_start(name: str, n: int) -> None:
        if not as_json and sys.stderr.isatty():
            err_console.print(f"[dim]simulating {name} ({n:,} jobs)...[/]")

    rep = sdk_simulate(
        trace,
        fmt,
        names,
        cluster=cluster,
        estimator=estimator,
        limit=limit,
        seed=seed,
        failures=failures,
        interference=interference,
        placement=place,
        gpus_per_node=gpus_per_node,
        semantics=sem,
        per_job=per_job is not None,
        keep_result=plot is not None,
        timeline=plot is not None,
        on_start=on_start,
    )
    for w in rep.warnings:
        err_console.print(f"[yellow]warning:[/] {shown(w)}", highlight=False)
    if per_job is not None:
        _write_per_job(per_job, rep)
    if as_json:
        for run in rep.runs:
            sys.stdout.write(
                json.dumps(_record(rep, run, per_vc, failures is not None), allow_nan=False) + "\n"
            )
    else:
        _print_table(rep, per_vc, failures is not None)
    if plot is not None:
        from schedmate.sdk.sim import plot_runs

        for f in plot_runs([r.result for r in rep.runs], plot, title=rep.trace):
            err_console.print(f"wrote {shown(f)}", highlight=False)
    if per_job is not None:
        err_console.print(f"wrote {shown(per_job)}", highlight=False)


def _print_table(rep: SimulationReport, per_vc: bool, failures: bool) -> None:
    where = ""
    if rep.runs and rep.runs[0].placement == "node":
        where = (
            ", node placement (the trace's nodes)"
            if rep.nodes_from_trace
            else f", node placement ({rep.gpus_per_node} GPUs/node)"
        )
    sem = "" if rep.semantics == "default" else f", semantics {rep.semantics}"
    table = Table(title=f"{shown(rep.trace)}: {rep.n_jobs:,} jobs, {rep.gpus:,} GPUs{where}{sem}")
    for col in (
        "policy",
        "estimator",
        "avg JCT",
        "p50 JCT",
        "p99 JCT",
        "p99.9 JCT",
        "avg queue",
        "p99 queue",
        "makespan",
        "GPU util",
        "preempt.",
        "sim s",
    ):
        table.add_column(col, justify="left" if col in ("policy", "estimator") else "right")
    notes: list[str] = []
    vc_tables: list[Table] = []
    for run in rep.runs:
        m = run.metrics
        table.add_row(
            run.policy,
            run.estimator,
            f"{m.avg_jct_s:,.0f} s",
            f"{m.p50_jct_s:,.0f} s",
            f"{m.p99_jct_s:,.0f} s",
            f"{m.p999_jct_s:,.0f} s",
            f"{m.avg_queue_s:,.0f} s",
            f"{m.p99_queue_s:,.0f} s",
            f"{m.makespan_s / 3600:,.1f} h",
            f"{m.gpu_util:.1%}",
            f"{m.preemptions:,}",
            f"{run.sim_s:.2f}",
        )
        parts = []
        if run.packing:
            parts.append(f"packs {m.packs:,}, un-packed {m.unpacks:,}")
        if failures:
            parts.append(f"failures {m.failures:,}, lost {m.lost_gpu_h:,.1f} GPU-h")
        if run.placement != "pool":
            parts.append(
                f"stranded {m.stranded_gpu_h:,.1f} GPU-h ({m.stranded_frac:.2%} of GPU-time: free while "
                f"the next job had enough GPUs, but on no node)"
            )
        if parts:
            notes.append(f"{run.policy}: {'; '.join(parts)}")
        if per_vc:
            vc_tables.append(_per_vc_table(f"{run.policy} per virtual cluster", run))
    console.print(table)
    for line in notes:
        console.print(line, highlight=False)
    for t in vc_tables:
        console.print(t)

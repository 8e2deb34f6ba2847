"""`schedmate demo`: every capability on bundled examples, with the embedded defaults."""

from __future__ import annotations

import json
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.panel import Panel
from rich.table import Table

from schedmate.cli import app
from schedmate.cli.common import console, friendly_errors, settings_of
from schedmate.core.errors import SchedmateError
from schedmate.core.settings import Settings

if TYPE_CHECKING:
    from schedmate.tracker import MetricTracker

__all__ = ["demo", "example_logs"]


def example_logs() -> list[Path]:
    """The bundled example logs (written for the demo; not real jobs)."""
    root = resources.files("schedmate.data").joinpath("examples")
    return sorted(Path(str(p)) for p in root.iterdir() if str(p).endswith(".log"))


@app.command()
@friendly_errors
def demo(
    ctx: typer.Context,
    offline_rules: Annotated[bool, typer.Option("--rules-only", help="Skip the embedding model.")] = False,
) -> None:
    """Run every capability on bundled examples (Tracker, Failure Handler, Advisor, Simulator)."""
    from schedmate.cli.track import render_results
    from schedmate.sdk import build_tracker, track_files

    settings = settings_of(ctx)
    if offline_rules:
        settings = settings.model_copy(
            update={"embedder": settings.embedder.model_copy(update={"backend": "none"})}
        )
    console.print(
        Panel.fit(
            "schedmate demo - Metric Tracker on bundled example logs\n"
            f"embedder: {settings.embedder.backend}   LLM: {settings.llm.base_url or 'none (rules only)'}"
        )
    )
    tracker = build_tracker(settings, use_cache=False)
    t0 = time.perf_counter()
    results = list(track_files(tracker, example_logs(), live=False))
    dt = time.perf_counter() - t0
    console.print(render_results(results, title="Tracked logs"))
    for r in results:
        for e in r.events:
            console.print(
                f"  [yellow]{e.kind}[/] in {Path(r.file).name} at line {e.line_no}: {e.message}"
                + ("  -> scheduler: cancel GPU packing" if e.kind == "slowdown" else ""),
                highlight=False,
            )
    clf = tracker.classifier
    console.print(f"[dim]{len(results)} logs in {dt:.2f}s; {len(clf.decisions)} line templates[/]")
    _classifier_demo(tracker)
    _failure_demo(settings)
    _advisor_demo(settings)
    _sim_demo(settings)


def _advisor_demo(settings: Settings) -> None:
    """Scheduling Advisor: a bundled history of measured runs, advice for a new job."""
    from schedmate.cli.advise import render_advice
    from schedmate.sdk.advising import advise, import_history, job_from_code

    root = Path(str(resources.files("schedmate.data").joinpath("advisor")))
    example = json.loads((root / "example.json").read_text("utf-8"))
    settings = settings.model_copy(
        update={"advisor": settings.advisor.model_copy(update={"use_agent": False})}
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "history.db"
        report = import_history(settings, root / "history.jsonl", store=store)
        console.print(
            Panel.fit(
                f"Scheduling Advisor: {report.imported} past runs imported "
                f"({report.extracted} code extractions, {report.elapsed_s:.1f}s); advice for a new job:\n"
                f"  {example['command']}   (in {example['code_dir']})"
            )
        )
        job = job_from_code(
            root / example["code_dir"],
            command=example["command"],
            user=example.get("user"),
            name=example.get("name"),
            n_gpus=example.get("n_gpus"),
        )
        for advice in advise(settings, [job], store=store):
            console.print(render_advice(advice))
        if example.get("measured_s"):
            console.print(
                f"[dim]this run was measured at {example['measured_s']:.1f}s on {example.get('measured_on', '?')}[/]"
            )


def _sim_demo(settings: Settings) -> None:
    """A small synthetic cluster: classic policies against the semantic one, with plots."""
    from schedmate.sdk.sim import compare_synthetic, plot_runs

    table = Table(title="Simulator: 600 synthetic jobs on 64 GPUs (semantic = noisy predictions + live ETA)")
    for col in ("policy", "estimator", "avg JCT", "p99 JCT", "avg queue", "GPU util"):
        table.add_column(col, justify="left" if col in ("policy", "estimator") else "right")
    runs = compare_synthetic(
        [("fifo", "oracle"), ("qssf", "history"), ("tiresias", "oracle"), ("semantic", "noisy")],
        n_jobs=600,
        gpus=64,
        seed=7,
        mean_gap_s=45.0,
    )
    for run in runs:
        m = run.metrics
        table.add_row(
            run.policy,
            run.estimator,
            f"{m.avg_jct_s:,.0f} s",
            f"{m.p99_jct_s:,.0f} s",
            f"{m.avg_queue_s:,.0f} s",
            f"{m.gpu_util:.0%}",
        )
    console.print(table)
    try:
        files = plot_runs([r.result for r in runs], Path(settings.cache_dir) / "demo", title="(demo)")
        console.print("[dim]plots: " + ", ".join(str(f) for f in files) + "[/]")
    except SchedmateError as exc:
        console.print(f"[dim]no plots: {exc}[/]")


def _failure_demo(settings: Settings) -> None:
    """Failure Handler on the bundled failing logs: dry-run plans, audit in a temp dir."""
    from schedmate.cli.diagnose import render_report
    from schedmate.sdk import build_failure_handler

    with tempfile.TemporaryDirectory() as tmp:
        fs = settings.failure.model_copy(
            update={"audit_log": str(Path(tmp) / "audit.jsonl"), "dry_run": True}
        )
        handler = build_failure_handler(settings.model_copy(update={"failure": fs}))
        console.print(Panel.fit("Failure Handler: root cause, category, recovery plan (dry run)"))
        for log in example_logs():
            r = handler.diagnose(log)
            if r.failed:
                console.print(render_report(r))


_UNSEEN = [
    "GPU 3 has fallen off the bus and cannot be reached",
    "the node lost contact with the controller, job step aborted",
    "detected slow data loading; consider raising num_workers",
    "Loading pretrained weights from the local cache",
    "epoch 4 | batch 120/500 | objective 0.4410 | 0.21 s per batch",
]


def _classifier_demo(tracker: MetricTracker) -> None:
    """Lines no rule covers: the embedding model places each new template once."""
    from schedmate.sdk.tracking import classify_lines

    table = Table(title="Line classifier on phrasings no rule covers")
    table.add_column("line", overflow="fold")
    table.add_column("rules", justify="center")
    table.add_column("decided", justify="center")
    for v in classify_lines(tracker, _UNSEEN):
        table.add_row(
            v.text,
            v.rules.value if v.rules else "-",
            v.kind.value if v.by_model else f"{v.kind.value} (no model)",
        )
    console.print(table)
    clf = tracker.classifier
    console.print(f"[dim]{clf.n_embedded} templates decided by the embedding model[/]")

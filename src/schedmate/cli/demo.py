"""`schedmate demo`: every capability on bundled examples, with the embedded defaults."""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from rich.panel import Panel

from schedmate.cli import app
from schedmate.cli.common import console, friendly_errors, settings_of
from schedmate.cli.track import render_results
from schedmate.sdk import build_tracker, track_files

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
    """Run every capability on bundled examples (Metric Tracker for now)."""
    settings = settings_of(ctx)
    if offline_rules:
        settings = settings.model_copy(update={"embedder": settings.embedder.model_copy(update={"backend": "none"})})
    console.print(Panel.fit("schedmate demo - Metric Tracker on bundled example logs\n"
                            f"embedder: {settings.embedder.backend}   LLM: {settings.llm.base_url or 'none (rules only)'}"))
    tracker = build_tracker(settings, use_cache=False)
    t0 = time.perf_counter()
    results = list(track_files(tracker, example_logs(), live=False))
    dt = time.perf_counter() - t0
    console.print(render_results(results, title="Tracked logs"))
    for r in results:
        for e in r.events:
            console.print(f"  [yellow]{e.kind}[/] in {Path(r.file).name} at line {e.line_no}: {e.message}"
                          + ("  -> scheduler: cancel GPU packing" if e.kind == "slowdown" else ""), highlight=False)
    clf = tracker.classifier
    console.print(f"[dim]{len(results)} logs in {dt:.2f}s; {len(clf.decisions)} line templates, "
                  f"{clf.n_embedded} decided by the embedding model[/]")

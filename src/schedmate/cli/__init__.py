"""`schedmate` command line: thin layer over the SDK (schedmate.sdk)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from schedmate import __version__
from schedmate.cli.common import State

__all__ = ["app", "main"]

app = typer.Typer(
    name="schedmate",
    help="Semantic signals for GPU-cluster schedulers: job code, live logs, job history.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"schedmate {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    config: Annotated[
        str | None, typer.Option("--config", "-c", help="TOML settings file (else $SCHEDMATE_CONFIG).")
    ] = None,
    llm_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1.")
    ] = None,
    llm_model: Annotated[str | None, typer.Option(help="Model name on the LLM server.")] = None,
    embedder: Annotated[str | None, typer.Option(help="minilm (default), openai, hash or none.")] = None,
    cache_dir: Annotated[
        str | None, typer.Option(help="Where template decisions and LLM mappings are cached.")
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    overrides: dict[str, Any] = {}
    if llm_url is not None:
        overrides.setdefault("llm", {})["base_url"] = llm_url
    if llm_model is not None:
        overrides.setdefault("llm", {})["model"] = llm_model
    if embedder is not None:
        overrides.setdefault("embedder", {})["backend"] = embedder
    if cache_dir is not None:
        overrides["cache_dir"] = cache_dir
    ctx.obj = State(config, overrides)


def _register() -> None:
    from schedmate.cli import advise, demo, diagnose, job, simulate, slurm, track, watch, whatif  # noqa: F401  (commands register themselves)


_register()


def main() -> None:
    app()

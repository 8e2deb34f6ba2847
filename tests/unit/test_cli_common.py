"""The CLI's error boundary: our errors are one line (exit 2), a bug is one line (exit 1)."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from schedmate.cli.common import friendly_errors
from schedmate.core.errors import InputError

app = typer.Typer()


@app.command()
@friendly_errors
def boom(kind: str) -> None:
    if kind == "input":
        raise InputError("trace x.csv:3: missing column 'submit_time'")
    if kind == "bug":
        raise RuntimeError("engine invariant broken: j1 finished twice\nsecond line")
    if kind == "usage":
        raise typer.BadParameter("--limit must be >= 1")
    raise typer.Exit(3)


@pytest.mark.parametrize(
    ("kind", "code", "needle"),
    [
        ("input", 2, "error: trace x.csv:3"),
        ("bug", 1, "internal error: RuntimeError: engine invariant broken: j1 finished twice second line"),
        ("usage", 2, "--limit must be >= 1"),
        ("exit", 3, ""),
    ],
)
def test_errors_are_one_line_without_traceback(kind: str, code: int, needle: str) -> None:
    r = CliRunner().invoke(app, [kind])
    assert r.exit_code == code
    assert "Traceback" not in r.output and needle in " ".join(r.output.split())
    if kind in ("input", "bug"):
        assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1


def test_debug_shows_the_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDMATE_DEBUG", "1")
    r = CliRunner().invoke(app, ["bug"])
    assert isinstance(r.exception, RuntimeError)

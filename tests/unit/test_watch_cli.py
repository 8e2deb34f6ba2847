"""`schedmate watch` / `schedmate job` / `schedmate slurm` from the command line, without a cluster:
one-line errors, JSON on stdout only, JSON logs on stderr, no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.core.cluster import Action, ActionKind
from schedmate.core.types import SCHEMA_VERSION
from schedmate.integrations.watch import LedgerStatus, WatchStore

runner = CliRunner()


def env(tmp_path: Path) -> dict[str, str]:
    """Slurm commands looked up in an empty directory: the cluster is 'down'."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    return {"SCHEDMATE_SLURM__BIN_DIR": str(empty), "SCHEDMATE_CACHE_DIR": str(tmp_path / "cache")}


def test_watch_once_with_slurm_missing_is_a_logged_failed_cycle(tmp_path: Path) -> None:
    r = runner.invoke(app, ["--embedder", "none", "watch", "--once"], env=env(tmp_path))
    assert r.exit_code == 1
    assert "Traceback" not in r.output
    lines = [json.loads(x) for x in r.stderr.splitlines()]
    failed = [x for x in lines if x["event"] == "cycle_failed"]
    assert len(failed) == 1 and "squeue not found" in failed[0]["error"]
    assert lines[0]["event"] == "watch_started" and lines[0]["execute"] is False
    assert r.stdout == ""


def test_watch_bad_store_path_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-dir"
    bad.write_text("x")
    r = runner.invoke(
        app, ["--embedder", "none", "watch", "--once", "--state-db", str(bad / "w.db")], env=env(tmp_path)
    )
    assert r.exit_code == 2
    assert r.stderr.strip().startswith("error: watch store ") and len(r.stderr.strip().splitlines()) == 1


def test_job_report_json_from_the_store_when_slurm_is_down(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    store = WatchStore(cache / "watch.db")
    store.put_job("42", user="u", partition="gpu", state="FAILED", p50_s=60.0, p90_s=90.0, progress=0.5)
    store.add_event("42", "diagnosis", "application failure (key_error); not requeued")
    a = Action(ActionKind.UPDATE, job_id="42", time_limit_s=600, reason="p90 + margin")
    store.record_action(a, LedgerStatus.DONE)
    store.close()
    r = runner.invoke(app, ["job", "42", "--json"], env=env(tmp_path))
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["schema_version"] == SCHEMA_VERSION and rep["job_id"] == "42" and rep["state"] == "FAILED"
    assert rep["prediction"]["p90_s"] == 90.0 and rep["progress"] == 0.5
    assert [e["kind"] for e in rep["events"]] == ["diagnosis"]
    assert rep["actions"][0]["kind"] == "update" and rep["actions"][0]["status"] == "done"
    assert rep["actions"][0]["detail"]["time_limit_s"] == 600
    assert "squeue not found" in rep["scheduler_error"]


def test_unknown_job_is_one_line(tmp_path: Path) -> None:
    r = runner.invoke(app, ["job", "999"], env=env(tmp_path))
    assert r.exit_code == 2 and r.stderr.startswith("error: job 999: unknown") and "Traceback" not in r.output


def test_slurm_status_with_slurm_missing(tmp_path: Path) -> None:
    r = runner.invoke(app, ["slurm", "status"], env=env(tmp_path))
    assert r.exit_code == 2 and "squeue not found" in r.stderr and r.stdout == ""

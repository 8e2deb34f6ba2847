"""`schedmate track`: JSON contract, exit codes, one-line errors (rules only, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from contracts import TRACK_JSON_KEYS
from typer.testing import CliRunner

from schedmate.cli import app

KEYS = TRACK_JSON_KEYS


def write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def test_json_one_object_per_file(runner: CliRunner, tmp_path: Path) -> None:
    a = write(tmp_path / "a.log", b"iter 1: loss 2.0, time 100.0ms\niter 2: loss 1.5, time 110.0ms\n")
    b = write(
        tmp_path / "b.log",
        b"\x1b[32mEpoch 1:  50%|#####     | 5/10 [00:05<00:05,  1.00s/it, loss=0.9]\r"
        b"Epoch 1:  60%|######    | 6/10 [00:06<00:04,  1.00s/it, loss=0.8]\x1b[0m",
    )
    res = runner.invoke(app, ["track", "--json", str(a), str(b)])
    assert res.exit_code == 0, res.output
    objs = [json.loads(line) for line in res.stdout.splitlines()]
    assert [set(o) for o in objs] == [KEYS, KEYS]
    assert objs[0]["step"] == 2 and objs[0]["loss"] == 1.5 and objs[0]["step_time_s"] == pytest.approx(0.11)
    assert objs[1]["step"] == 6 and objs[1]["total_steps"] == 10 and objs[1]["progress"] == pytest.approx(0.6)
    assert objs[1]["eta_s"] == pytest.approx(4.0)
    assert objs[1]["last_progress_line"].startswith("Epoch 1:  60%")


def test_unreadable_file_sets_error_and_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    ok = write(tmp_path / "ok.log", b"step 1 loss 1.0\n")
    res = runner.invoke(app, ["track", "--json", str(ok), str(tmp_path / "missing.log")])
    assert res.exit_code == 1
    objs = [json.loads(line) for line in res.stdout.splitlines()]
    assert objs[0]["error"] is None and objs[0]["step"] == 1
    assert objs[1]["error"] and "missing.log" in objs[1]["error"] and "\n" not in objs[1]["error"]


def test_binary_file_is_rejected_in_one_line(runner: CliRunner, tmp_path: Path) -> None:
    binf = write(tmp_path / "model.bin", bytes(range(256)) * 400)
    res = runner.invoke(app, ["track", "--json", str(binf)])
    assert res.exit_code == 1
    err = json.loads(res.stdout)["error"]
    assert "model.bin" in err and "\n" not in err


def test_no_progress_log(runner: CliRunner, tmp_path: Path) -> None:
    f = write(tmp_path / "crash.log", b"Traceback (most recent call last):\nValueError: bad\n")
    obj = json.loads(runner.invoke(app, ["track", "--json", str(f)]).stdout)
    assert obj["has_progress"] is False
    assert all(obj[k] is None for k in KEYS - {"file", "has_progress", "schema_version", "events"})
    assert obj["events"] == [] and obj["schema_version"] >= 1


def test_text_summary(runner: CliRunner, tmp_path: Path) -> None:
    f = write(tmp_path / "t.log", b"step 3/10 loss 0.5 time 1.0s\n")
    res = runner.invoke(app, ["track", str(f)])
    assert res.exit_code == 0
    assert "3/10" in res.stdout and "t.log" in res.stdout


def test_bad_config_is_one_line(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write(tmp_path / "c.toml", b"[tracker]\nslowdown_factor = 0.5\n")
    f = write(tmp_path / "t.log", b"step 1 loss 1\n")
    res = runner.invoke(app, ["--config", str(cfg), "track", str(f)])
    assert res.exit_code == 2
    assert "tracker.slowdown_factor" in res.stderr and "Traceback" not in res.stderr
    monkeypatch.setenv("SCHEDMATE_TRACKER__STALL_MIN_S", "soon")
    res = runner.invoke(app, ["track", str(f)])
    assert res.exit_code == 2 and "stall_min_s" in res.stderr


def test_demo_runs_rules_only(runner: CliRunner) -> None:
    res = runner.invoke(app, ["demo", "--rules-only"])
    assert res.exit_code == 0, res.output
    assert "megatron.log" in res.stdout and "slowdown" in res.stdout


def test_names_and_messages_with_markup_characters_are_text(runner: CliRunner, tmp_path: Path) -> None:
    # a path with `[/...]` once made the error handler itself raise (rich markup) and print a traceback
    missing = tmp_path / "runs[/x]" / "b.log"
    res = runner.invoke(app, ["track", str(missing)])
    assert res.exit_code == 1 and "Traceback" not in res.output and "no such file" in res.output
    odd = write(tmp_path / "[red]c.log", b"step 3/9 loss 0.5\n")
    res = runner.invoke(app, ["track", str(odd)])
    assert res.exit_code == 0 and "[red]c.log" in res.output


def test_a_json_line_nested_thousands_deep_is_skipped(runner: CliRunner, tmp_path: Path) -> None:
    deep = write(tmp_path / "d.log", b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"\nstep 5/10 loss 0.1\n")
    res = runner.invoke(app, ["track", "--json", str(deep)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["step"] == 5


def test_follow_json_reports_a_stall_while_the_file_stays_silent(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    log = tmp_path / "run.log"
    log.write_text("".join(f"it {i}/500 | loss 1.{i} | 0.1 s/it\n" for i in range(1, 11)))
    env = {**os.environ, "SCHEDMATE_TRACKER__STALL_MIN_S": "1"}
    exe = str(Path(sys.executable).with_name("schedmate"))
    cmd = [exe, "--embedder", "none", "track", "--follow", "--json", str(log)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=6, env=env).stdout
    except subprocess.TimeoutExpired as exc:  # follow runs until stopped: what it printed so far
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    records = [json.loads(x) for x in out.splitlines() if x.strip()]
    stalls = [r for r in records if any(e["kind"] == "stall" for e in r["events"])]
    # the lines read at once give one update (step 10), then the stall comes with no new line
    assert len(stalls) == 1 and records[-1] is stalls[0] and len(records) >= 2
    assert records[-2]["step"] == 10 and records[-2]["events"] == [] and stalls[0]["step"] == 10


def test_history_and_diagnose_show_markup_characters_in_names_as_text(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(session-13 break test) `[/]` in a store path made `history import` end in an internal
    error after the import; `[red]` was swallowed from store and log names."""
    monkeypatch.setenv("SCHEDMATE_EMBEDDER", "none")
    jobs = write(tmp_path / "h.jsonl", b'{"job_id": "a1", "duration_s": 60, "command": "python t.py"}\n')
    (tmp_path / "st[").mkdir()
    for store in (tmp_path / "st[/]h.db", tmp_path / "runs[red].db"):
        res = runner.invoke(
            app, ["--embedder", "none", "history", "import", "--store", str(store), str(jobs)]
        )
        assert res.exit_code == 0 and "internal error" not in res.output, res.output
        assert store.name in res.output
        res = runner.invoke(app, ["--embedder", "none", "history", "stats", "--store", str(store)])
        assert res.exit_code == 0 and store.name in res.output, res.output
    log = write(tmp_path / "x[red]y.log", b"step 3/9 loss 0.5\n")
    res = runner.invoke(app, ["diagnose", "--no-plan", str(log)])
    assert res.exit_code == 0 and "x[red]y.log" in res.output, res.output

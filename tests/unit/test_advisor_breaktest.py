"""Findings of an outside break test of `advise` and `history import` (session 11): absurd
numbers, per-job errors in every importer, a code directory of thousands of files, terminal
escapes in job ids. Each case is written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedmate.advisor.extract import directory_digest
from schedmate.advisor.history import LineError
from schedmate.advisor.history.formats import JobLine, read_sacct_json, read_trace_jobs
from schedmate.advisor.metadata import WorkloadMetadata
from schedmate.cli import app
from schedmate.cli.common import shown


@pytest.mark.parametrize("field", ["epochs", "learning_rate", "param_count", "max_steps", "n_gpus"])
@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e300, -float("inf")])
def test_an_absurd_setting_is_unknown_not_a_crash_later(field: str, value: float) -> None:
    assert getattr(WorkloadMetadata(**{field: value}), field) is None
    assert WorkloadMetadata(epochs=3, learning_rate=3e-4).epochs == 3


def test_a_job_whose_epochs_overflow_does_not_break_the_store(tmp_path: Path) -> None:
    code = tmp_path / "job"
    code.mkdir()
    (code / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=float, default=2)\n"
        "p.add_argument('--lr', type=float, default=0.1)\nargs = p.parse_args()\n"
    )
    lines = [
        {
            "job_id": f"j{i}",
            "duration_s": 100.0 * i,
            "code_dir": str(code),
            "command": f"python train.py --epochs {i}",
        }
        for i in range(1, 5)
    ]
    lines.append(
        {
            "job_id": "big",
            "duration_s": 2000,
            "code_dir": str(code),
            "command": "python train.py --epochs 1e300",
        }
    )
    hist = tmp_path / "h.jsonl"
    hist.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    store = str(tmp_path / "h.db")
    runner = CliRunner()
    base = ["--embedder", "none", "--cache-dir", str(tmp_path / "cache")]
    for _ in range(2):  # and the store takes more jobs afterwards
        res = runner.invoke(app, [*base, "history", "import", "--store", store, str(hist)])
        assert res.exit_code == 0, res.output
    res = runner.invoke(
        app,
        [
            *base,
            "advise",
            "--store",
            store,
            "--code",
            str(code),
            "--cmd",
            "python train.py --lr inf",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["p50_s"] is not None and "learning_rate" not in out["metadata"]


def test_other_importers_report_a_bad_job_and_keep_the_rest(tmp_path: Path) -> None:
    good = {
        "job_id": 1,
        "time": {"elapsed": 600},
        "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 2}]},
    }
    bad = [
        {
            "job_id": 2,
            "time": {"elapsed": 600},
            "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": -3}]},
        },
        {
            "job_id": 3,
            "time": {"elapsed": 600},
            "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 1e30}]},
        },
        {"job_id": 4, "time": {"elapsed": 600}, "submit_line": ["a", "b"]},
        {"job_id": 5, "time": {"elapsed": 1e300}},
    ]
    f = tmp_path / "sacct.json"
    f.write_text(json.dumps({"jobs": [good, *bad]}))
    got = list(read_sacct_json(f))
    assert [type(x).__name__ for x in got] == ["JobRecord"] + ["LineError"] * 4
    assert all(isinstance(x, LineError) and f"job {x.line}" in x.message for x in got[1:])
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_s,duration_s,gpus\na,0,100,1\nb,5,1e300,1\nc,9,0,1\nd,9,50,2\n")
    kinds = [type(x).__name__ for x in read_trace_jobs(trace, "native")]
    assert kinds == ["JobRecord", "LineError", "LineError", "JobRecord"]


@pytest.mark.parametrize("duration", [True, 1e300, 10 * 366 * 86400.0 + 1])
def test_an_impossible_duration_is_a_line_error(duration: object) -> None:
    with pytest.raises(ValueError):
        JobLine(job_id="x", duration_s=duration)
    assert JobLine(job_id="x", duration_s=86400.0 * 30).duration_s == 86400.0 * 30


def test_the_code_digest_sees_the_script_beside_thousands_of_text_files(tmp_path: Path) -> None:
    for i in range(2100):
        (tmp_path / f"a{i:05d}.txt").write_text("x")
    script = tmp_path / "train.py"
    script.write_text("EPOCHS = 5\n")
    before = directory_digest(tmp_path)
    script.write_text("EPOCHS = 7\n")
    assert directory_digest(tmp_path) != before


def test_text_from_jobs_is_shown_without_its_terminal_escapes_or_markup() -> None:
    assert shown("evil\x1b]0;PWNED\x07\x1b[2J-id") == "evil-id"
    assert shown("[bold red]x[/]") == "\\[bold red]x\\[/]"
    assert shown("tab\there\x00") == "tab\there?"


def test_a_module_constant_assigned_again_holds_its_last_value(tmp_path: Path) -> None:
    from schedmate.advisor.extract import StaticExtractor

    x = StaticExtractor()
    (tmp_path / "train.py").write_text(
        "NUM_EPOCHS = 2\nNUM_EPOCHS = 8\nfor e in range(NUM_EPOCHS):\n    pass\n"
    )
    assert x.extract(tmp_path, command="python train.py").metadata.epochs == 8
    (tmp_path / "train.py").write_text(
        "k = 2\nk = k * 3\nNUM_EPOCHS = k\nfor e in range(NUM_EPOCHS):\n    pass\n"
    )
    assert x.extract(tmp_path, command="python train.py").metadata.epochs == 6
    (tmp_path / "train.py").write_text(
        "NUM_EPOCHS = 2\nNUM_EPOCHS = pick()\nfor e in range(NUM_EPOCHS):\n    pass\n"
    )
    assert x.extract(tmp_path, command="python train.py").metadata.epochs is None


# -- session 12: the history store's edges -------------------------------------------------------
def _import(tmp_path: Path, text: bytes, store: Path, *extra: str):  # type: ignore[no-untyped-def]
    hist = tmp_path / "h.jsonl"
    hist.write_bytes(text)
    base = ["--embedder", "none", "--cache-dir", str(tmp_path / "cache")]
    return CliRunner().invoke(app, [*base, "history", "import", "--store", str(store), *extra, str(hist)])


def test_a_byte_order_mark_and_a_repeated_id(tmp_path: Path) -> None:
    text = b'\xef\xbb\xbf{"job_id": "r1", "duration_s": 60}\n{"job_id": "r2", "duration_s": 70}\n'
    text += b'{"job_id": "r2", "duration_s": 80}\n'
    res = _import(tmp_path, text, tmp_path / "s.db", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["error_count"] == 0 and out["stored_total"] == 2
    assert any("r2 appears more than once" in w for w in out["warnings"])


def test_an_import_that_stores_nothing_leaves_no_store(tmp_path: Path) -> None:
    store = tmp_path / "new.db"
    res = _import(tmp_path, b"not json\n", store)
    assert res.exit_code == 2
    assert not store.exists() and not (tmp_path / "new.db-wal").exists()


def test_a_database_of_another_program_is_left_untouched(tmp_path: Path) -> None:
    import sqlite3

    store = tmp_path / "app.db"
    db = sqlite3.connect(store)
    db.execute("CREATE TABLE accounts (id INTEGER, owner TEXT)")
    db.commit()
    db.close()
    res = _import(tmp_path, b'{"job_id": "r1", "duration_s": 60}\n', store)
    assert res.exit_code != 0 and "another program (tables: accounts)" in res.output
    names = {r[0] for r in sqlite3.connect(store).execute("SELECT name FROM sqlite_master")}
    assert names == {"accounts"}


def test_history_stats_is_readable_text(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert _import(tmp_path, b'{"job_id": "r1", "duration_s": 60}\n', store).exit_code == 0
    base = ["--embedder", "none", "--cache-dir", str(tmp_path / "cache")]
    res = CliRunner().invoke(app, [*base, "history", "stats", "--store", str(store)])
    assert res.exit_code == 0 and "{" not in res.output
    assert "jobs      1" in res.output and "embedder" in res.output


@pytest.mark.parametrize("flag", [["--gpus", "99999999999"], ["--nodes", "10000000"]])
def test_advise_refuses_an_absurd_allocation_at_the_flag(tmp_path: Path, flag: list[str]) -> None:
    code = tmp_path / "job"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    res = CliRunner().invoke(app, ["--embedder", "none", "advise", "--code", str(code), *flag])
    assert res.exit_code == 2 and "less than or equal" in res.output

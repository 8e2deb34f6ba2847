"""`schedmate history import` and `schedmate advise` end to end (hash embedder, no LLM)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from schedmate.advisor.history import LineError, read_jobs
from schedmate.cli import app
from schedmate.core.types import SCHEMA_VERSION

TRAIN = (
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--max-steps', type=int, default=100)\n"
    "p.add_argument('--batch-size', type=int, default=32)\np.add_argument('--n-layer', type=int, default=4)\n"
    "p.add_argument('--n-embd', type=int, default=128)\n"
)


def make_history(tmp_path: Path) -> Path:
    job = tmp_path / "code" / "lm"
    job.mkdir(parents=True)
    (job / "train.py").write_text(TRAIN)
    lines = [
        {
            "job_id": f"h{i}",
            "duration_s": 5 + s / 100,
            "user": "ann",
            "name": "lm",
            "n_gpus": 1,
            "submit_time": f"2026-11-0{i + 1}T10:00:00Z",
            "code_dir": "code/lm",
            "command": f"python train.py --max-steps {s}",
        }
        for i, s in enumerate((100, 200, 400, 800))
    ]
    text = "\n".join(json.dumps(x) for x in lines)
    text += '\n{"job_id": "bad", "duration_s": "soon"}\nnot json at all\n{"duration_s": 3}\n'
    hist = tmp_path / "history.jsonl"
    hist.write_text(text)
    return hist


def test_import_reports_bad_lines_and_keeps_good_ones(runner: CliRunner, tmp_path: Path) -> None:
    hist = make_history(tmp_path)
    store = tmp_path / "h.db"
    r = runner.invoke(app, ["history", "import", "--store", str(store), "--json", str(hist)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["imported"] == 4 and out["stored_total"] == 4
    assert [e["line"] for e in out["errors"]] == [5, 6, 7]
    # a second import of the same file replaces, never duplicates; stored data survives bad lines
    r = runner.invoke(app, ["history", "import", "--store", str(store), "--json", str(hist)])
    assert json.loads(r.stdout.strip().splitlines()[-1])["stored_total"] == 4
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 4


def test_advise_one_job_json_contract(runner: CliRunner, tmp_path: Path) -> None:
    hist = make_history(tmp_path)
    store = tmp_path / "h.db"
    runner.invoke(app, ["history", "import", "--store", str(store), str(hist)])
    r = runner.invoke(
        app,
        [
            "advise",
            "--store",
            str(store),
            "--json",
            "--code",
            str(tmp_path / "code" / "lm"),
            "--cmd",
            "python train.py --max-steps 600",
            "--gpus",
            "1",
            "--user",
            "ann",
        ],
    )
    assert r.exit_code == 0, r.output
    a = json.loads(r.stdout)
    assert set(a) == {
        "schema_version",
        "job_id",
        "metadata",
        "p10_s",
        "p50_s",
        "p90_s",
        "method",
        "neighbors",
        "error",
    }
    assert a["schema_version"] == SCHEMA_VERSION
    assert a["metadata"]["max_steps"] == 600 and a["error"] is None
    assert a["method"] == "knn-scaled" and abs(a["p50_s"] - 11.0) < 1.0
    assert a["p10_s"] <= a["p50_s"] <= a["p90_s"]
    assert {"job_id", "similarity", "duration_s"} == set(a["neighbors"][0])


def test_advise_batch_one_line_per_job_with_errors(runner: CliRunner, tmp_path: Path) -> None:
    hist = make_history(tmp_path)
    store = tmp_path / "h.db"
    runner.invoke(app, ["history", "import", "--store", str(store), str(hist)])
    batch = tmp_path / "batch.jsonl"
    batch.write_text(
        json.dumps({"job_id": "q1", "code_dir": "code/lm", "command": "python train.py", "user": "ann"})
        + "\n{oops\n"
        + json.dumps({"job_id": "q2", "code_dir": "code/missing", "user": "ann"})
        + "\n"
    )
    r = runner.invoke(app, ["advise", "--store", str(store), "--json", "--batch", str(batch)])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.stdout.strip().splitlines()]
    assert [x["job_id"] for x in rows][0::2] == ["q1", "q2"]
    assert rows[0]["p50_s"] and rows[0]["metadata"]["max_steps"] == 100
    assert "line 2" in rows[1]["error"]
    assert "not a directory" in rows[2]["error"] and rows[2]["method"] == "user-history"


def test_advise_table_and_bad_usage(runner: CliRunner, tmp_path: Path) -> None:
    hist = make_history(tmp_path)
    store = tmp_path / "h.db"
    runner.invoke(app, ["history", "import", "--store", str(store), str(hist)])
    r = runner.invoke(app, ["advise", "--store", str(store), "--code", str(tmp_path / "code" / "lm")])
    assert r.exit_code == 0 and "duration" in r.stdout and "max_steps" in r.stdout
    r = runner.invoke(app, ["advise", "--store", str(store)])
    assert r.exit_code == 2 and "--code" in r.output
    r = runner.invoke(app, ["advise", "--store", str(tmp_path / "nope.db"), "--code", str(tmp_path)])
    assert r.exit_code == 2 and "no such history store" in r.output
    r = runner.invoke(app, ["history", "import", "--store", str(store), str(tmp_path / "missing.jsonl")])
    assert r.exit_code == 2 and "missing.jsonl" in r.output


def test_read_jobs_resolves_code_dir_and_times(tmp_path: Path) -> None:
    f = tmp_path / "sub" / "h.jsonl"
    f.parent.mkdir()
    f.write_text(
        '{"job_id": 7, "duration_s": 1, "code_dir": "x", "submit_time": "2026-01-01T00:00:00Z", '
        '"config_files": "a.yaml", "extra": 1}\n{"job_id": "b", "duration_s": 1, "submit_time": true}\n[1]\n'
    )
    items = list(read_jobs(f, need_duration=True))
    rec = items[0]
    assert not isinstance(rec, LineError)
    assert rec.job_id == "7" and rec.code_dir == str((tmp_path / "sub" / "x").resolve())
    assert rec.submit_time == 1767225600.0 and rec.config_files == ("a.yaml",)
    assert isinstance(items[1], LineError) and items[1].line == 2
    assert isinstance(items[2], LineError) and "object" in items[2].message


def test_sacct_json_import(runner: CliRunner, tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "run.sh").write_text(
        "#!/bin/bash\n#SBATCH --gres=gpu:4\ntorchrun --nproc_per_node=4 train.py --epochs 3\n"
    )
    (job / "train.py").write_text("import torch\n")
    sacct = {
        "jobs": [
            {
                "job_id": 11,
                "name": "ft",
                "user": "ann",
                "state": {"current": ["COMPLETED"]},
                "time": {"elapsed": 3600, "submission": 1700000000},
                "allocation_nodes": 1,
                "tres": {
                    "allocated": [{"type": "cpu", "count": 8}, {"type": "gres", "name": "gpu", "count": 4}]
                },
                "working_directory": str(job),
                "submit_line": "sbatch run.sh",
            },
            {"job_id": 12, "state": "RUNNING", "time": {"elapsed": 0}},
            {"name": "no id"},
        ]
    }
    f = tmp_path / "sacct.json"
    f.write_text(json.dumps(sacct))
    store = tmp_path / "h.db"
    r = runner.invoke(
        app, ["history", "import", "--store", str(store), "--format", "sacct", "--json", str(f)]
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["imported"] == 1 and [e["line"] for e in out["errors"]] == [2, 3]
    from schedmate.advisor import SqliteHistoryStore

    rec = SqliteHistoryStore(store).get("11")
    assert rec is not None and rec.metadata is not None
    assert (rec.duration_s, rec.n_gpus, rec.metadata.epochs, rec.metadata.n_gpus) == (3600.0, 4, 3, 4)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    r = runner.invoke(app, ["history", "import", "--store", str(store), "--format", "sacct", str(bad)])
    assert r.exit_code == 2 and "jobs" in r.output

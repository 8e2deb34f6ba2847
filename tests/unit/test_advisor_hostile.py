"""Hostile input to the Advisor's commands (`history import`, `history stats`, `advise`).

Every case must finish within a bound, print one clear line (no traceback), exit 1 or 2 when
it fails (0 when the bad part is a per-item error), keep stdout valid JSON under --json, and
leave the stored history intact. All inputs are made here; none comes from shared data.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from schedmate.cli import app
from schedmate.core.types import SCHEMA_VERSION

BOUND_S = 20.0

TRAIN = (
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=2)\n"
    "p.add_argument('--num-samples', type=int, default=1000)\n"
)


def run(runner: CliRunner, args: Sequence[str], bound: float = BOUND_S) -> Result:
    """The command in-process, in a thread that must finish within `bound` seconds."""
    box: list[Result] = []
    t = threading.Thread(target=lambda: box.append(runner.invoke(app, list(args))), daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(bound)
    assert not t.is_alive(), f"{' '.join(args)[:120]}: still running after {bound} s"
    assert time.monotonic() - t0 < bound
    r = box[0]
    assert "Traceback" not in r.output, r.output
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"uncaught {type(r.exception).__name__}: {r.exception}")
    return r


def one_clear_error(r: Result, *, names: str | None = None) -> str:
    assert r.exit_code in (1, 2), (r.exit_code, r.output)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error:"), lines[0]
    if names:
        assert names in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def store(runner: CliRunner, tmp_path: Path) -> Path:
    """A store of 4 jobs with code, imported through the CLI."""
    job = tmp_path / "code"
    job.mkdir()
    (job / "train.py").write_text(TRAIN)
    hist = tmp_path / "hist.jsonl"
    hist.write_text(
        "".join(
            json.dumps(
                {
                    "job_id": f"h{e}",
                    "duration_s": 10.0 * e,
                    "user": "ann",
                    "code_dir": "code",
                    "command": f"python train.py --epochs {e}",
                }
            )
            + "\n"
            for e in (1, 2, 4, 8)
        )
    )
    path = tmp_path / "h.db"
    r = run(runner, ["history", "import", "--store", str(path), str(hist)])
    assert r.exit_code == 0, r.output
    return path


def rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT job_id, duration_s, metadata FROM jobs ORDER BY job_id").fetchall()


def assert_json_lines(stdout: str) -> list[dict[str, Any]]:
    out = []
    for line in stdout.splitlines():
        rec = json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
        assert rec["schema_version"] == SCHEMA_VERSION
        out.append(rec)
    return out


# -- history import -----------------------------------------------------------------------------
def test_import_binary_file_stops_after_a_few_errors(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    before = rows(store)
    binary = tmp_path / "hist.bin"
    binary.write_bytes(os.urandom(400_000))
    r = run(runner, ["history", "import", "--store", str(store), str(binary)])
    assert r.exit_code == 2
    err_lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(err_lines) <= 12  # a few errors, then one summary line; not 40,000
    assert "more errors" in err_lines[-1] or "stopped" in r.stderr
    assert rows(store) == before


def test_import_binary_file_json_is_one_valid_record(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    binary = tmp_path / "hist.bin"
    binary.write_bytes(b"\x00\xff" * 100_000 + b"\n" + os.urandom(50_000))
    r = run(runner, ["history", "import", "--json", "--store", str(store), str(binary)])
    [rec] = assert_json_lines(r.stdout)
    assert rec["imported"] == 0 and rec["error_count"] >= 1 and r.exit_code == 2


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "fifo", "dir"])
def test_import_from_a_device_fifo_or_directory(
    runner: CliRunner, tmp_path: Path, store: Path, special: str
) -> None:
    before = rows(store)
    path = special
    if special == "fifo":
        path = str(tmp_path / "hist.fifo")
        os.mkfifo(path)
    elif special == "dir":
        path = str(tmp_path)
    r = run(runner, ["history", "import", "--store", str(store), path])
    one_clear_error(r, names=path)
    assert rows(store) == before


def test_import_a_line_without_newline_of_30_mb(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as fh:
        fh.write(b'{"job_id": "x", "duration_s": 1, "name": "' + b"a" * 30_000_000)
    r = run(runner, ["history", "import", "--json", "--store", str(store), str(big)])
    [rec] = assert_json_lines(r.stdout)
    assert rec["imported"] == 0 and "longer than" in rec["errors"][0]["message"]


def test_import_trace_with_a_csv_field_over_128_kib(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_s,duration_s,gpus,user\nj1,0,10,1," + "u" * 200_000 + "\n")
    r = run(runner, ["history", "import", "--format", "native", "--store", str(store), str(trace)])
    # the job is refused like a bad line of a JSONL history (session 11: every importer holds its
    # jobs to the same rules): one line naming the file and row, nothing imported, exit 2
    assert r.exit_code == 2
    assert f"{trace}:1: job j1: user: String should have at most 256 characters" in r.output
    assert "Traceback" not in r.output
    assert len(rows(store)) >= 4


def test_import_sacct_that_is_binary_or_a_fifo(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    binary = tmp_path / "sacct.json"
    binary.write_bytes(os.urandom(10_000))
    one_clear_error(
        run(runner, ["history", "import", "--format", "sacct", "--store", str(store), str(binary)])
    )
    fifo = tmp_path / "sacct.fifo"
    os.mkfifo(fifo)
    one_clear_error(run(runner, ["history", "import", "--format", "sacct", "--store", str(store), str(fifo)]))


def test_import_job_with_hostile_code_dir_and_command(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    bomb = tmp_path / "bomb"
    bomb.mkdir()
    lines = ["a0: &a0 {k: v, j: w}"] + [
        f"a{i}: &a{i} {{x: *a{i - 1}, y: *a{i - 1}, z: *a{i - 1}}}" for i in range(1, 30)
    ]
    (bomb / "cfg.yaml").write_text("\n".join(lines))
    (bomb / "train.py").write_text(
        "a0 = 3\n" + "".join(f"a{i} = a{i - 1} * a{i - 1}\n" for i in range(1, 60))
    )
    os.mkfifo(bomb / "extra.yaml")
    hist = tmp_path / "hostile.jsonl"
    jobs = [
        {
            "job_id": "bomb",
            "duration_s": 5,
            "code_dir": str(bomb),
            "command": "python train.py",
            "config_files": ["cfg.yaml", "extra.yaml"],
        },
        {
            "job_id": "long",
            "duration_s": 5,
            "code_dir": str(bomb),
            "command": "python " + "y" * 5000 + ".py --lr 1",
        },
        {"job_id": "nul", "duration_s": 5, "code_dir": str(bomb) + "/x" * 3000},
        {"job_id": "ok", "duration_s": 5},
    ]
    hist.write_text("".join(json.dumps(j) + "\n" for j in jobs))
    r = run(runner, ["history", "import", "--json", "--store", str(store), str(hist)])
    [rec] = assert_json_lines(r.stdout)
    assert r.exit_code == 0 and rec["imported"] == 3  # the 12 kB code_dir is refused as a line error
    assert [e["line"] for e in rec["errors"]] == [3] and "code_dir" in rec["errors"][0]["message"]
    assert len(rows(store)) == 7


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=3000))
def test_import_arbitrary_bytes(runner: CliRunner, tmp_path: Path, store: Path, data: bytes) -> None:
    f = tmp_path / "fuzz.jsonl"
    f.write_bytes(data)
    before = rows(store)
    r = run(runner, ["history", "import", "--json", "--store", str(store), str(f)])
    [rec] = assert_json_lines(r.stdout)
    assert r.exit_code in (0, 2) and rec["imported"] <= 50
    after = {k: v for k, *v in rows(store)}
    assert all(k in after for k, *_ in before)


# -- the store ----------------------------------------------------------------------------------
def test_advise_on_a_read_only_store_writes_nothing(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    before = store.read_bytes()
    os.chmod(store, 0o444)
    try:
        r = run(
            runner,
            [
                "advise",
                "--json",
                "--store",
                str(store),
                "--code",
                str(tmp_path / "code"),
                "--cmd",
                "python train.py --epochs 3",
            ],
        )
    finally:
        os.chmod(store, 0o644)
    [rec] = assert_json_lines(r.stdout)
    assert r.exit_code == 0 and rec["p50_s"] is not None and rec["error"] is None
    assert store.read_bytes() == before


def test_commands_on_a_locked_store(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    before = rows(store)
    other = sqlite3.connect(store, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another writer holding the store
    try:
        hist = tmp_path / "more.jsonl"
        hist.write_text(json.dumps({"job_id": "m1", "duration_s": 3}) + "\n")
        r = run(runner, ["history", "import", "--store", str(store), str(hist)], bound=30)
        one_clear_error(r, names=str(store))
        assert "locked" in r.stderr
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert rows(store) == before


def test_commands_on_a_damaged_store(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    data = bytearray(store.read_bytes())
    data[100:4096] = os.urandom(3996)  # header and first page
    store.write_bytes(bytes(data))
    for args in (
        ["history", "stats", "--store", str(store)],
        ["advise", "--store", str(store), "--code", str(tmp_path / "code")],
        ["history", "import", "--store", str(store), str(tmp_path / "hist.jsonl")],
    ):
        one_clear_error(run(runner, args), names=str(store))


def test_a_store_that_is_not_a_database(runner: CliRunner, tmp_path: Path) -> None:
    fake = tmp_path / "fake.db"
    fake.write_text("hello, not sqlite\n" * 100)
    one_clear_error(run(runner, ["history", "stats", "--store", str(fake)]), names=str(fake))
    assert fake.read_text() == "hello, not sqlite\n" * 100


# -- advise -------------------------------------------------------------------------------------
@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo"])
def test_advise_batch_from_a_device_or_fifo(
    runner: CliRunner, tmp_path: Path, store: Path, special: str
) -> None:
    path = special
    if special == "fifo":
        path = str(tmp_path / "batch.fifo")
        os.mkfifo(path)
    r = run(runner, ["advise", "--json", "--store", str(store), "--batch", path])
    one_clear_error(r, names=path)
    assert r.stdout == ""


def test_advise_binary_batch(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    batch = tmp_path / "batch.bin"
    batch.write_bytes(os.urandom(200_000))
    r = run(runner, ["advise", "--json", "--store", str(store), "--batch", str(batch)])
    recs = assert_json_lines(r.stdout)
    assert r.exit_code == 0 and 1 <= len(recs) <= 101 and all(x["error"] for x in recs)


def test_advise_code_dir_with_bombs_and_fifos(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    job = tmp_path / "hostile"
    job.mkdir()
    (job / "train.py").write_text(
        "a0 = 'ab'\n" + "".join(f"a{i} = a{i - 1} + a{i - 1}\n" for i in range(1, 60)) + "epochs = 3\n"
    )
    lines = ["a0: &a0 {k: v, j: w}"] + [
        f"a{i}: &a{i} {{x: *a{i - 1}, y: *a{i - 1}, z: *a{i - 1}}}" for i in range(1, 30)
    ]
    (job / "bomb.yaml").write_text("\n".join(lines))
    (job / "latin1.yaml").write_bytes(b"epochs: 4\nname: caf\xe9\n")
    os.mkfifo(job / "pipe.yaml")
    for cfg in ("bomb.yaml", "pipe.yaml", "latin1.yaml", "/dev/zero", "x" * 5000):
        r = run(
            runner,
            [
                "advise",
                "--json",
                "--store",
                str(store),
                "--code",
                str(job),
                "--cmd",
                "python train.py",
                "--config-file",
                cfg,
            ],
        )
        [rec] = assert_json_lines(r.stdout)
        assert r.exit_code == 0 and rec["p50_s"] is not None, (cfg[:20], rec)


def test_advise_negative_numbers_are_usage_errors(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    for opt in (["--gpus", "-1"], ["--nodes", "0"], ["--nodes", "-3"]):
        r = run(runner, ["advise", "--store", str(store), "--code", str(tmp_path / "code"), *opt])
        assert r.exit_code == 2 and "Traceback" not in r.output


def test_history_stats_json_contract(runner: CliRunner, store: Path) -> None:
    r = run(runner, ["history", "stats", "--json", "--store", str(store)])
    [rec] = assert_json_lines(r.stdout)
    assert set(rec) == {"schema_version", "store", "jobs", "embedder", "calibration"} and rec["jobs"] == 4


def _all_keys(fn: Callable[[], Result]) -> set[str]:
    return set(json.loads(fn().stdout.splitlines()[0]))


def test_advise_json_has_the_same_keys_for_success_and_error(
    runner: CliRunner, tmp_path: Path, store: Path
) -> None:
    batch = tmp_path / "b.jsonl"
    batch.write_text('{"job_id": "ok", "user": "ann"}\n{oops\n{"job_id": "gone", "code_dir": "/nope"}\n')
    recs = assert_json_lines(
        run(runner, ["advise", "--json", "--store", str(store), "--batch", str(batch)]).stdout
    )
    assert len(recs) == 3 and len({frozenset(r) for r in recs}) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["advise", "--store", "s" * 5000, "--code", "."],
        ["advise", "--code", "c" * 5000],
        ["history", "stats", "--store", "s" * 5000],
        ["history", "import", "--store", "/dev/null", "/dev/null"],
        ["advise", "--store", "/dev/null", "--code", "."],
        ["history", "stats", "--store", "/dev/null"],
    ],
)
def test_unusable_store_and_code_names(runner: CliRunner, args: list[str]) -> None:
    one_clear_error(run(runner, args))


def test_a_refused_batch_is_refused_before_anything_else_is_printed(runner: CliRunner, store: Path) -> None:
    r = run(runner, ["advise", "--json", "--store", str(store), "--batch", "/dev/zero"])
    one_clear_error(r, names="/dev/zero")
    assert r.stdout == ""

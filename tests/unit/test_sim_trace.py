"""The trace loader's fast paths (issue 14 speed): reading in blocks, Philly's direct
conversion and its timestamp look-ups, the paused collector. Each gives what a plain
line-by-line reader with the general checks gives, errors included."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from schedmate.core.errors import InputError
from schedmate.sim import load_trace
from schedmate.sim import trace as tr
from schedmate.sim._gc import gc_frozen, gc_paused

HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
ROWS = [
    "2017-10-09 07:01:55,66.0,1,66.0,11cb48",
    "2017-10-09 06:13:03,2951.0,1,2951.0,6214e9",
    "",  # blank lines and comments count as lines but hold no job
    "# a comment",
    "2017-10-10 23:59:59, 7 ,8,56, ",  # spaces around numbers; an empty cluster is 'default'
    '"2017-10-09 06:13:03",1e3,2,2000,"b"',  # quoted fields
    "2017-10-09 07:01:59,0,0,0,11cb48",
    "2017-10-09 06:13:03,5,4,20,6214e9",  # same submit as line 3: the trace's order is kept
]


def _fields(jobs: list[tr.TraceJob]) -> list[tuple[object, ...]]:
    return [(j.job_id, j.submit_s, j.duration_s, j.gpus, j.vc, j.share, j.failed) for j in jobs]


def _reference(path: Path) -> list[tuple[object, ...]]:
    """Philly by name, one line at a time (`_philly_row`, the general checks), sorted and
    re-based as load_trace does."""
    lines = path.read_text().splitlines()
    header = tr._header(path, 1, lines[0])
    days: dict[str, int] = {}
    minutes: dict[str, int] = {}
    rows = [
        tr._philly_row(path, no, dict(zip(header, tr._split(path, no, line), strict=True)), days, minutes)
        for no, line in enumerate(lines[1:], 2)
        if line.strip() and not line.startswith("#")
    ]
    rows.sort(key=lambda r: r[1])
    t0 = rows[0][1]
    return [(r[0], r[1] - t0, r[2], r[3], r[4], r[7], r[8]) for r in rows]


def test_philly_direct_conversion_equals_the_general_checks(tmp_path: Path) -> None:
    p = tmp_path / "philly.csv"
    p.write_text(HEADER + "\n".join(ROWS) + "\n")
    got = _fields(load_trace(p, "philly"))
    assert got == _reference(p)
    assert got[0][0] == "philly-3" and got[1][0] == "philly-7" and got[2][0] == "philly-9"  # stable
    assert ("philly-6", 150416.0, 7.0, 8, "default", -1, False) in got


def test_philly_columns_in_another_order_and_missing_cluster(tmp_path: Path) -> None:
    p = tmp_path / "philly.csv"
    p.write_text("num_gpus,duration,timestamp\n2,10,2017-10-09 07:01:55\n1,5,2017-10-09 07:00:00\n")
    assert _fields(load_trace(p, "philly")) == [
        ("philly-3", 0.0, 5.0, 1, "default", -1, False),
        ("philly-2", 115.0, 10.0, 2, "default", -1, False),
    ]


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 4096])
@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_blocks_of_any_size_give_the_same_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int, end: str
) -> None:
    p = tmp_path / "philly.csv"
    p.write_bytes((HEADER.rstrip("\n") + end + end.join(ROWS)).encode())  # no line end at the end
    want = _fields(load_trace(p, "philly"))
    monkeypatch.setattr(tr, "_BLOCK_CHARS", block)
    assert _fields(load_trace(p, "philly")) == want
    assert len(want) == 6


@pytest.mark.parametrize(
    ("stamp", "value"),
    [
        ("2017-10-09 07:01:55", "ok"),
        ("2017-10-09 07:01:5", "bad"),
        ("2017-10-09 07:01:555", "bad"),
        ("2017-10-09  07:01:55", "bad"),
        ("2017-10-09 24:00:00", "bad"),
        ("2017-10-09 23:60:00", "bad"),
        ("2017-10-09 23:59:60", "bad"),
        ("2017-02-30 07:01:55", "bad"),
        ("2017-10-09T07:01:55", "bad"),
        ("", "bad"),
        ("2017-10-09 \u0660\u0667:01:55", "ok"),  # Unicode digits: as the regex (\d) has always read them
    ],
)
def test_timestamps_seen_before_or_not(tmp_path: Path, stamp: str, value: str) -> None:
    # the parts of a bad stamp are all known from the rows before it: the look-ups must not accept it
    p = tmp_path / "philly.csv"
    p.write_text(HEADER + "2017-10-09 07:01:55,1,1,1,a\n2017-02-28 23:59:59,1,1,1,a\n" + f"{stamp},1,1,1,a\n")
    if value == "ok":
        jobs = load_trace(p, "philly")
        assert jobs[-1].submit_s - jobs[-2].submit_s == 0.0
        return
    with pytest.raises(InputError) as exc:
        load_trace(p, "philly")
    assert str(exc.value) == f"{p}:4: bad timestamp {stamp!r} (want YYYY-mm-dd HH:MM:SS)"


@pytest.mark.parametrize(
    ("header", "row", "message"),
    [
        (HEADER, "2017-10-09 07:01:55,x,1,1,a", "column 'duration' is not a number: 'x'"),
        (
            HEADER,
            "2017-10-09 07:01:55,nan,1,1,a",
            "column 'duration' must be a finite number >= 0, got 'nan'",
        ),
        (
            HEADER,
            "2017-10-09 07:01:55,1, -2 ,1,a",
            "column 'num_gpus' must be a finite number >= 0, got '-2'",
        ),
        (
            HEADER,
            "2017-10-09 07:01:55,inf,1,1,a",
            "column 'duration' must be a finite number >= 0, got 'inf'",
        ),
        (HEADER, "2017-10-09 07:01:55,1,1,a", "expected 5 columns, got 4"),
        ("duration,num_gpus\n", "1,1", "bad timestamp None (want YYYY-mm-dd HH:MM:SS)"),
        ("timestamp,num_gpus\n", "2017-10-09 07:01:55,1", "missing column 'duration'"),
    ],
)
def test_philly_errors_name_line_and_field(tmp_path: Path, header: str, row: str, message: str) -> None:
    p = tmp_path / "philly.csv"
    p.write_text(header + row + "\n")
    with pytest.raises(InputError) as exc:
        load_trace(p, "philly")
    assert str(exc.value) == f"{p}:2: {message}"


@pytest.mark.parametrize("block", [1, 5, 16, 40])
def test_limits_name_the_line_whatever_the_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(tr, "MAX_LINE_BYTES", 40)
    monkeypatch.setattr(tr, "_BLOCK_CHARS", block)
    head = "timestamp,duration,num_gpus,cluster\n"
    ok = "2017-10-09 07:01:55,1,1,a\n"
    p = tmp_path / "philly.csv"
    p.write_text(head + ok * 3 + "2017-10-09 07:01:55,1,1,a\x00\n" + ok)
    with pytest.raises(InputError, match=rf"{p.name}:5: binary data"):
        load_trace(p, "philly")
    p.write_text(head + ok * 2 + "2017-10-09 07:01:55,1,1," + "a" * 16 + "\n" + ok)  # 40 + line end
    with pytest.raises(InputError, match=rf"{p.name}:4: line longer than 40 characters"):
        load_trace(p, "philly")
    p.write_text(head + ok * 2 + "2017-10-09 07:01:55,1,1," + "a" * 15 + "\n")  # 39 + line end: fits
    assert len(load_trace(p, "philly")) == 3
    p.write_text(head + ok + "x" * 500)  # no line end, far over the limit
    with pytest.raises(InputError, match=rf"{p.name}:3: line longer than"):
        load_trace(p, "philly")
    p.write_text(head + ok + "2017-10-09 07:01:55,1,1,\x00")  # the last line, no line end
    with pytest.raises(InputError, match=rf"{p.name}:3: binary data"):
        load_trace(p, "philly")


def test_a_bad_row_before_a_binary_one_is_reported_first(tmp_path: Path) -> None:
    p = tmp_path / "philly.csv"
    p.write_text(HEADER + "2017-10-09 07:01:55,x,1,1,a\n" + "\x00\n")
    with pytest.raises(InputError, match=r":2: column 'duration'"):
        load_trace(p, "philly")


def test_load_trace_restores_the_collector(tmp_path: Path) -> None:
    p = tmp_path / "philly.csv"
    p.write_text(HEADER + "\n".join(ROWS) + "\n")
    assert gc.isenabled()
    load_trace(p, "philly")
    assert gc.isenabled()
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "x,1,1,1,a\n")
    with pytest.raises(InputError):
        load_trace(bad, "philly")
    assert gc.isenabled()
    gc.disable()
    try:
        load_trace(p, "philly")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_gc_helpers_restore_state() -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    with gc_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    gc.freeze()  # someone else's freeze is left alone
    try:
        n = gc.get_freeze_count()
        with gc_frozen():
            pass
        # still frozen (not unfrozen by the helper); the count may only shrink as frozen
        # objects are freed by reference counting meanwhile
        assert 0 < gc.get_freeze_count() <= n
    finally:
        gc.unfreeze()


def test_simulate_does_not_import_the_what_if_model() -> None:
    code = (
        "import sys; import schedmate.sdk.sim as s; assert 'schedmate.sim.whatif' not in sys.modules; "
        "from schedmate.sdk.sim import predict_starts, StartPrediction; "
        "assert predict_starts.__name__ == 'predict_from_snapshot' and StartPrediction.__name__ == 'StartPrediction'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

"""Hardening of the simulator's inputs and outputs (issue 13, 14): loaders, time zones, bad
files, JSON on stdout only, per-job output. Each bad input is one line, exit code 2."""

from __future__ import annotations

import csv
import json
import os
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.core.errors import InputError
from schedmate.core.types import SCHEMA_VERSION
from schedmate.sim import load_trace, parse_cluster

RFOLD = """#job id,arrival time (sec),topology,shape,size,duration (sec)
0,0.0,CLOS,1,1,3600.0
1,10.0,CLOS,0.46,0.46,120.0
2,20.0,CLOS,48,48,60.0
"""


def _strict_json(line: str) -> dict[str, object]:
    def no_constants(name: str) -> None:
        raise ValueError(f"non-JSON constant {name}")

    obj = json.loads(line, parse_constant=no_constants)
    assert isinstance(obj, dict)
    return obj


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


def native(p: Path, rows: list[str]) -> Path:
    p.write_text("job_id,submit_s,duration_s,gpus,vc\n" + "\n".join(rows) + "\n")
    return p


def test_rfold_header_with_hash(tmp_path: Path) -> None:
    p = tmp_path / "rfold.csv"
    p.write_text(RFOLD)
    jobs = load_trace(p, "rfold")
    assert [(j.job_id, j.submit_s, j.duration_s, j.gpus) for j in jobs] == [
        ("0", 0.0, 3600.0, 1),
        ("1", 10.0, 120.0, 1),  # a fractional size takes one GPU
        ("2", 20.0, 60.0, 48),
    ]


@pytest.mark.parametrize("name", ["philly_trace.csv", "crux.csv", "alibaba_v2023.csv"])
def test_shipped_rfold_traces_load(name: str) -> None:
    p = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces" / "rfold" / name
    if not p.is_file():
        pytest.skip("shared traces not present")
    jobs = load_trace(p, "rfold", limit=50)
    assert len(jobs) == 50 and all(j.gpus >= 1 and j.duration_s >= 0 for j in jobs)


def test_philly_timestamps_do_not_depend_on_the_time_zone(tmp_path: Path) -> None:
    p = tmp_path / "philly.csv"
    # across the US daylight-saving change of 2017-11-05 (01:00-02:00 happens twice in New York)
    p.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-11-04 12:00:00,60,1,60,a\n"
        "2017-11-05 01:30:00,60,1,60,a\n"
        "2017-11-06 12:00:00,60,1,60,a\n"
    )
    old = os.environ.get("TZ")
    try:
        out = []
        for tz in ("UTC", "America/New_York", "Asia/Kolkata"):
            os.environ["TZ"] = tz
            time.tzset()
            out.append([j.submit_s for j in load_trace(p, "philly")])
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()
    assert out[0] == out[1] == out[2] == [0.0, 48600.0, 172800.0]


def test_huge_csv_field_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text('job_id,submit_s,duration_s,gpus\n"' + "x" * (200 * 1024) + '",0,1,1\n')
    with pytest.raises(InputError, match=r"t\.csv:2"):
        load_trace(p, "native")
    r = invoke("simulate", "--trace", str(p), "--cluster", "8")
    assert r.exit_code == 2 and "t.csv:2" in r.stderr and "Traceback" not in r.output


def test_binary_and_overlong_traces(tmp_path: Path) -> None:
    b = tmp_path / "b.csv"
    b.write_bytes(b"job_id,submit_s,duration_s,gpus\n\x00\x01\x02,0,1,1\n")
    with pytest.raises(InputError, match="binary"):
        load_trace(b, "native")
    long = tmp_path / "l.csv"
    long.write_text("job_id,submit_s,duration_s,gpus\n" + "1" * (2 * 1024 * 1024) + "\n")
    with pytest.raises(InputError, match="longer than"):
        load_trace(long, "native")


@pytest.mark.timeout(20)
def test_fifo_trace_does_not_block(tmp_path: Path) -> None:
    f = tmp_path / "fifo.csv"
    os.mkfifo(f)
    box: list[BaseException | None] = []

    def go() -> None:
        try:
            load_trace(f, "native")
            box.append(None)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            box.append(exc)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(10)
    assert box and isinstance(box[0], InputError) and "FIFO" in str(box[0])


def test_cluster_files(tmp_path: Path) -> None:
    no_header = tmp_path / "vc.csv"
    no_header.write_text("a,2\nb,3\n")
    assert parse_cluster(str(no_header)) == {"a": 16, "b": 24}  # the first VC is not a header
    with_header = tmp_path / "vc2.csv"
    with_header.write_text(",num\na,2\n")
    assert parse_cluster(str(with_header)) == {"a": 16}
    binary = tmp_path / "bin"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError, match="cluster config"):
        parse_cluster(str(binary))
    bad = tmp_path / "bad.csv"
    bad.write_text("vc,nodes\na,two\n")
    with pytest.raises(InputError, match="bad.csv:2"):
        parse_cluster(str(bad))
    for spec in ("0", "a=0", "a=-1,b=2", "=4"):
        with pytest.raises(InputError):
            parse_cluster(spec)
    t = native(tmp_path / "t.csv", ["j0,0,10,1,a"])
    r = invoke("simulate", "--trace", str(t), "--cluster", str(binary))
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_cli_option_errors(tmp_path: Path) -> None:
    t = native(tmp_path / "t.csv", ["j0,0,10,1,a", "j1,1,10,1,a"])
    for args in (
        ["simulate", "--trace", str(t), "--cluster", "4", "--limit", "-1"],
        ["simulate", "--trace", str(t), "--cluster", "4", "--limit", "0"],
        ["simulate", "--trace", str(t), "--cluster", "4", "--semantics", "lucid,interval_s=nan"],
        ["whatif", "--trace", str(t), "--cluster", "4", "--scale", "nan"],
        ["whatif", "--trace", str(t), "--cluster", "4", "--scale", "inf"],
        ["whatif", "--trace", str(t), "--cluster", "4", "--scale", "0"],
        ["whatif", "--trace", str(t), "--cluster", "4", "--at", "nan"],
    ):
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr.startswith("error:") and "Traceback" not in r.output, args


def test_json_stdout_only_json_and_no_nan(tmp_path: Path) -> None:
    # every job needs 4 GPUs of a 2-GPU cluster: a warning, no finished job, metrics undefined
    t = native(tmp_path / "t.csv", ["j0,0,10,4,a", "j1,1,10,4,a"])
    r = invoke("simulate", "--trace", str(t), "--cluster", "2", "--policy", "fifo,tiresias", "--json")
    assert r.exit_code == 0, r.output
    objs = [_strict_json(x) for x in r.stdout.splitlines()]
    assert len(objs) == 2
    for o in objs:
        assert o["schema_version"] == SCHEMA_VERSION and o["n_jobs"] == 0 and o["unschedulable"] == 2
        assert o["avg_jct_s"] is None and o["p999_jct_s"] is None
    assert "warning" in r.stderr and "ask for more GPUs" in r.stderr


def test_per_job_csv(tmp_path: Path) -> None:
    t = native(tmp_path / "t.csv", ["j0,0,100,1,a", "j1,1,10,1,a", "j2,2,20,1,a"])
    out = tmp_path / "jobs.csv"
    r = invoke(
        "simulate", "--trace", str(t), "--cluster", "1", "--policy", "fifo,srtf", "--per-job", str(out)
    )
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(out.open()))
    assert [r["policy"] for r in rows] == ["fifo"] * 3 + ["srtf"] * 3
    fifo = {r["job_id"]: r for r in rows if r["policy"] == "fifo"}
    assert float(fifo["j2"]["first_start_s"]) == 110 and float(fifo["j2"]["end_s"]) == 130
    assert float(fifo["j2"]["queue_s"]) == 108 and float(fifo["j2"]["jct_s"]) == 128
    srtf = {r["job_id"]: r for r in rows if r["policy"] == "srtf"}
    assert int(srtf["j0"]["preemptions"]) == 1 and float(srtf["j0"]["end_s"]) == 130
    r = invoke("simulate", "--trace", str(t), "--cluster", "1", "--per-job", str(tmp_path / "no" / "x.csv"))
    assert r.exit_code == 2 and "--per-job" in r.stderr


def test_simulate_lucid_semantics_cli(tmp_path: Path) -> None:
    t = native(tmp_path / "t.csv", ["j0,0,100,1,a", "j1,1,50,1,a", "j2,1,10,2,a"])
    r = invoke(
        "simulate", "--trace", str(t), "--cluster", "a=2", "--policy", "sjf", "--semantics", "lucid", "--json"
    )
    assert r.exit_code == 0, r.output
    o = _strict_json(r.stdout.splitlines()[0])
    assert o["semantics"] == "lucid" and o["placement"] == "node" and o["estimator"] == "oracle"
    assert o["avg_jct_s"] == pytest.approx((100 + (110 - 1) + (160 - 1)) / 3)


@pytest.mark.timeout(20)
def test_estimator_and_interference_files(tmp_path: Path) -> None:
    from schedmate.core.errors import ConfigError
    from schedmate.sim import InterferenceModel, make_estimator

    for spec in ("noisy:nan", "noisy:inf", "noisy:-1"):
        with pytest.raises(ConfigError):
            make_estimator(spec)
    errs = tmp_path / "errs.txt"
    errs.write_text("0.1\n-2\n")
    with pytest.raises(InputError, match="relative errors"):
        make_estimator(f"noisy:{errs}")
    f = tmp_path / "preds.fifo"
    os.mkfifo(f)
    with pytest.raises(InputError, match="FIFO"):
        make_estimator(f"file:{f}")
    binary = tmp_path / "preds.bin"
    binary.write_bytes(b"\xff\xfe\x00" * 100)
    with pytest.raises(InputError, match="UTF-8"):
        make_estimator(f"file:{binary}")
    d = tmp_path / "interf"
    d.mkdir()
    (d / "single_data.csv").write_text("model,dataset,batchsize,amp,label\nm,d,1,0,0\n")
    (d / "colocate_info.csv").write_text(
        "model1,dataset1,batchsize1,amp1,model2,dataset2,batchsize2,amp2,speed1,speed2\nm,d,1,0,m,d,1,0,0,1\n"
    )
    with pytest.raises(InputError, match="colocate_info.csv:2"):
        InterferenceModel.fit(d)
    with pytest.raises(InputError):
        InterferenceModel.fit(tmp_path / "missing")


# --- an outside break test of simulate/whatif (session 10) ------------------------------------


@pytest.mark.parametrize("spec", ["-4", "4.5", "1e3", "a=2,a=4"])
def test_a_malformed_cluster_number_or_a_repeated_vc_is_named(spec: str) -> None:
    with pytest.raises(InputError) as e:
        parse_cluster(spec)
    assert spec in str(e.value) and "No such file" not in str(e.value)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("infra=nan", "finite"),
        ("checkpoint=inf", "finite"),
        ("app=2", "probability"),
        ("trace_status=maybe", "bad value"),
    ],
)
def test_failure_spec_values_out_of_range(spec: str, says: str) -> None:
    from schedmate.core.errors import ConfigError
    from schedmate.sim.failures import FailureModel

    with pytest.raises(ConfigError, match=says):
        FailureModel.parse(spec)
    assert FailureModel.parse("app=0.5,trace_status=no").app_prob == 0.5


def test_a_noise_too_large_for_a_float_is_refused() -> None:
    from schedmate.core.errors import ConfigError
    from schedmate.sim import make_estimator

    with pytest.raises(ConfigError, match="0 to 10"):
        make_estimator("noisy:1000")
    make_estimator("noisy:10")


def test_plots_into_an_existing_file_is_one_line(tmp_path: Path) -> None:
    from schedmate.sim.plots import plot_results

    pytest.importorskip("matplotlib")
    f = tmp_path / "taken.csv"
    f.write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        plot_results([], f)


def test_whatif_window_applies_to_the_comparison_and_at_refuses_several_policies(tmp_path: Path) -> None:
    t = tmp_path / "w.csv"
    t.write_text("job_id,submit_s,duration_s,gpus\na,0,1000,1\nb,60,100,1\nc,9000,500,1\n")
    base = ("whatif", "--trace", str(t), "--cluster", "4")
    r = invoke(*base, "--policy", "fifo", "--window-hours", "0.1", "--json")
    assert r.exit_code == 0, r.output
    assert [json.loads(x)["n_jobs"] for x in r.stdout.splitlines()] == [2]
    for extra in (["--policy", "fifo,srtf"], ["--scale", "0.5,1"]):
        r = invoke(*base, "--at", "0.01", *extra)
        assert r.exit_code == 2, r.output
        assert "predicts under one policy" in r.output or "--scale compares" in r.output


def test_a_job_id_given_twice_is_refused_naming_it(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_s,duration_s,gpus\nj1,0,10,1\nj2,5,10,1\nj1,9,10,1\nj2,9,1,1\n")
    with pytest.raises(
        InputError, match=r"t.csv: job id 'j1' appears more than once \(and 1 more repeated rows\)"
    ):
        load_trace(trace, "native")
    res = invoke("simulate", "--trace", str(trace), "--policy", "fifo", "--cluster", "4")
    assert res.exit_code == 2
    assert "job ids must be unique" in res.output and "Traceback" not in res.output
    trace.write_text("job_id,submit_s,duration_s,gpus\nj1,0,10,1\nj2,5,10,1\n")
    assert [j.job_id for j in load_trace(trace, "native")] == ["j1", "j2"]


def test_the_per_vc_breakdown_lists_every_vc_also_one_that_served_no_job(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_s,duration_s,gpus,vc\nj1,0,10,1,east\nj2,5,10,1,east\nj3,9,10,6,west\n")
    res = invoke(
        "simulate",
        "--trace",
        str(trace),
        "--policy",
        "fifo",
        "--cluster",
        "east=2,west=4,idle=8",
        "--per-vc",
        "--json",
    )
    assert res.exit_code == 0, res.output
    rec = _strict_json(res.stdout.strip().splitlines()[-1])
    per_vc = rec["per_vc"]
    assert isinstance(per_vc, dict)
    got = {vc: (m["n_jobs"], m["unschedulable"], m["avg_jct_s"]) for vc, m in per_vc.items()}
    assert got == {"east": (2, 0, 10.0), "west": (0, 1, None), "idle": (0, 0, None)}
    table = invoke(
        "simulate", "--trace", str(trace), "--policy", "fifo", "--cluster", "east=2,west=4,idle=8", "--per-vc"
    )
    assert table.exit_code == 0 and "idle" in table.output and "too large" in table.output


def test_whatif_compares_sizes_with_the_semantics_simulate_uses(tmp_path: Path) -> None:
    from schedmate.sim import synthetic_trace

    trace = tmp_path / "syn.csv"
    rows = [f"{j.job_id},{j.submit_s},{j.duration_s},{j.gpus},{j.vc}" for j in synthetic_trace(300, seed=3)]
    trace.write_text("job_id,submit_s,duration_s,gpus,vc\n" + "\n".join(rows) + "\n")
    args = ["--trace", str(trace), "--policy", "fifo,sjf", "--cluster", "a=16,b=16", "--json"]

    def avg_jct(*extra: str, env: dict[str, str] | None = None) -> list[float]:
        res = CliRunner().invoke(app, [*extra, *args], env=env or {})
        assert res.exit_code == 0, res.output
        return [
            float(_strict_json(x)["avg_jct_s"]) for x in res.stdout.strip().splitlines() if x.startswith("{")
        ]  # type: ignore[arg-type]

    lucid = avg_jct("simulate", "--semantics", "lucid")
    assert lucid != avg_jct("simulate")  # the presets differ on this trace
    # the config's semantics (and the lucid preset's node placement) reach the comparison too
    assert avg_jct("whatif", env={"SCHEDMATE_SIM__SEMANTICS": "lucid"}) == lucid
    assert avg_jct("whatif", "--semantics", "lucid") == lucid
    assert avg_jct("whatif") == avg_jct("simulate")

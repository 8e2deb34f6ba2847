"""`schedmate simulate` / `whatif`: JSON contract and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.core.types import SCHEMA_VERSION
from schedmate.sim import Simulator, make_estimator, make_policy, summarize_sim, synthetic_trace

# every --json record has these keys in every mode (null where a mode does not apply)
KEYS = {
    "schema_version",
    "policy",
    "estimator",
    "semantics",
    "n_jobs",
    "avg_jct_s",
    "p50_jct_s",
    "p99_jct_s",
    "p999_jct_s",
    "avg_queue_s",
    "p50_queue_s",
    "p99_queue_s",
    "p999_queue_s",
    "makespan_s",
    "gpu_util",
    "preemptions",
    "unschedulable",
    "packs",
    "unpacks",
    "failures",
    "lost_gpu_h",
    "placement",
    "stranded_gpu_h",
    "stranded_frac",
    "sim_s",
    "per_vc",
}
MODE_KEYS = {"packs", "unpacks", "failures", "lost_gpu_h", "stranded_gpu_h", "stranded_frac", "per_vc"}


def non_null(o: dict) -> set[str]:  # type: ignore[type-arg]
    """The mode-dependent keys a record fills in."""
    return {k for k in MODE_KEYS if o[k] is not None}


def write_trace(p: Path, n: int = 200) -> Path:
    lines = ["job_id,submit_s,duration_s,gpus,vc,user"]
    lines += [
        f"{j.job_id},{j.submit_s:.1f},{j.duration_s},{j.gpus},{j.vc},{j.user}"
        for j in synthetic_trace(n, seed=2)
    ]
    p.write_text("\n".join(lines) + "\n")
    return p


def test_simulate_json(tmp_path: Path) -> None:
    t = write_trace(tmp_path / "t.csv")
    res = CliRunner().invoke(
        app,
        [
            "simulate",
            "--trace",
            str(t),
            "--format",
            "native",
            "--cluster",
            "32",
            "--policy",
            "fifo,semantic",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    objs = [json.loads(x) for x in res.stdout.splitlines()]
    assert [o["policy"] for o in objs] == ["fifo", "semantic"] and all(set(o) == KEYS for o in objs)
    assert all(non_null(o) == set() and o["schema_version"] == SCHEMA_VERSION for o in objs)
    assert all(o["n_jobs"] == 200 for o in objs)
    assert objs[1]["avg_jct_s"] < objs[0]["avg_jct_s"]


def test_simulate_plots(tmp_path: Path) -> None:
    t = write_trace(tmp_path / "t.csv", 80)
    res = CliRunner().invoke(
        app,
        [
            "simulate",
            "--trace",
            str(t),
            "--cluster",
            "32",
            "--policy",
            "fifo",
            "--plot",
            str(tmp_path / "plots"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "plots" / "jct_cdf.png").stat().st_size > 1000


def test_simulate_bad_inputs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_s,duration_s,gpus\na,0,10,1\nb,1,-5,1\n")
    r = CliRunner().invoke(app, ["simulate", "--trace", str(bad), "--cluster", "8"])
    assert r.exit_code == 2 and "bad.csv:3" in r.stderr and "Traceback" not in r.stderr
    t = write_trace(tmp_path / "t.csv", 10)
    r = CliRunner().invoke(app, ["simulate", "--trace", str(t), "--policy", "lottery", "--cluster", "8"])
    assert r.exit_code == 2 and "valid: fifo" in r.stderr
    r = CliRunner().invoke(app, ["simulate", "--trace", str(t), "--format", "slurmish"])
    assert r.exit_code == 2 and "unknown trace format" in r.stderr


def test_whatif_grid_and_prediction(tmp_path: Path) -> None:
    t = write_trace(tmp_path / "t.csv", 150)
    r = CliRunner().invoke(
        app,
        [
            "whatif",
            "--trace",
            str(t),
            "--cluster",
            "32",
            "--policy",
            "fifo,sjf",
            "--scale",
            "0.5,1",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert {(o["policy"], o["scale"]) for o in rows} == {
        ("fifo", 0.5),
        ("fifo", 1.0),
        ("sjf", 0.5),
        ("sjf", 1.0),
    }
    r = CliRunner().invoke(
        app, ["whatif", "--trace", str(t), "--cluster", "16", "--policy", "fifo", "--at", "1", "--json"]
    )
    assert r.exit_code == 0, r.output
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert objs
    for obj in objs:
        assert (
            0 <= obj["p10_wait_s"] <= obj["p50_wait_s"] <= obj["p90_wait_s"] and obj["simulated_wait_s"] >= 0
        )


def test_per_vc_breakdown() -> None:
    jobs = synthetic_trace(100, seed=1, vcs=("a", "b"))
    res = Simulator(jobs, {"a": 16, "b": 16}, make_policy("fifo"), make_estimator("oracle")).run()
    overall, per_vc = summarize_sim(res)
    assert set(per_vc) == {"a", "b"}
    assert sum(m.n_jobs for m in per_vc.values()) == overall.n_jobs
    assert all(0 < m.gpu_util <= 1 for m in per_vc.values())


def test_simulate_per_vc_packing_and_failures(tmp_path: Path) -> None:
    t = write_trace(tmp_path / "t.csv", 150)
    res = CliRunner().invoke(
        app,
        [
            "simulate",
            "--trace",
            str(t),
            "--cluster",
            "a=16,b=16",
            "--policy",
            "fifo,lucid,semantic-pack",
            "--json",
            "--per-vc",
            "--failures",
            "infra=0.01,seed=2",
        ],
    )
    assert res.exit_code == 0, res.output
    objs = {o["policy"]: o for o in map(json.loads, res.stdout.splitlines())}
    assert all(set(o) == KEYS for o in objs.values())
    assert non_null(objs["fifo"]) == {"per_vc", "failures", "lost_gpu_h"}
    assert non_null(objs["lucid"]) == {"per_vc", "failures", "lost_gpu_h", "packs", "unpacks"}
    for o in objs.values():
        assert (
            set(o["per_vc"]) == {"a", "b"} and sum(v["n_jobs"] for v in o["per_vc"].values()) == o["n_jobs"]
        )
        assert o["failures"] > 0
    assert objs["lucid"]["packs"] > 0
    res = CliRunner().invoke(
        app, ["simulate", "--trace", str(t), "--cluster", "a=16,b=16", "--policy", "lucid", "--per-vc"]
    )
    assert res.exit_code == 0, res.output
    assert "lucid per virtual cluster" in res.stdout and "packs" in res.stdout
    r = CliRunner().invoke(app, ["simulate", "--trace", str(t), "--cluster", "32", "--failures", "infra=x"])
    assert r.exit_code == 2 and "failure spec" in r.stderr


def test_simulate_and_whatif_node_placement(tmp_path: Path) -> None:
    t = write_trace(tmp_path / "t.csv", 150)
    args = [
        "simulate",
        "--trace",
        str(t),
        "--cluster",
        "a=16,b=16",
        "--policy",
        "fifo,semantic-pack",
        "--json",
    ]
    pool = CliRunner().invoke(app, args)
    node = CliRunner().invoke(app, [*args, "--placement", "node", "--gpus-per-node", "4"])
    assert pool.exit_code == 0 and node.exit_code == 0, node.output
    p = {o["policy"]: o for o in map(json.loads, pool.stdout.splitlines())}
    n = {o["policy"]: o for o in map(json.loads, node.stdout.splitlines())}
    assert set(p["fifo"]) == KEYS == set(n["fifo"])  # the same keys in every mode
    assert non_null(p["fifo"]) == set() and p["fifo"]["placement"] == "pool"
    assert non_null(n["fifo"]) == {"stranded_gpu_h", "stranded_frac"} and n["fifo"]["placement"] == "node"
    assert n["fifo"]["avg_jct_s"] >= p["fifo"]["avg_jct_s"] and n["fifo"]["n_jobs"] == 150
    r = CliRunner().invoke(app, [*args[:-1], "--placement", "node"])
    assert r.exit_code == 0 and "node placement (8 GPUs/node)" in r.stdout and "stranded" in r.stdout
    r = CliRunner().invoke(app, [*args, "--placement", "rack"])
    assert r.exit_code == 2 and "valid: pool, node" in r.stderr
    r = CliRunner().invoke(
        app,
        [
            "whatif",
            "--trace",
            str(t),
            "--cluster",
            "32",
            "--policy",
            "fifo",
            "--scale",
            "0.5,1",
            "--placement",
            "node",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert {o["scale"] for o in map(json.loads, r.stdout.splitlines())} == {0.5, 1.0}
    r = CliRunner().invoke(
        app,
        [
            "whatif",
            "--trace",
            str(t),
            "--cluster",
            "16",
            "--policy",
            "fifo",
            "--at",
            "1",
            "--placement",
            "node",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert all(o["p50_wait_s"] >= 0 for o in map(json.loads, r.stdout.splitlines()))

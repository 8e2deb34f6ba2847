"""Slurm output parsing on recorded-style text (shapes of Slurm 22.05 and of later versions)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schedmate.core.cluster import JobState, JobView, NodeState
from schedmate.core.errors import InputError
from schedmate.integrations.slurm.parse import (
    SACCT_FIELDS,
    expand_output_path,
    format_limit,
    job_from_scontrol,
    job_from_squeue,
    jobs_from_squeue_json,
    mem_request,
    nodes_from_sinfo_json,
    parse_duration,
    parse_sacct,
    parse_scontrol_record,
)


def squeue_job(**over: Any) -> dict[str, Any]:
    """A job as `squeue --json` prints it in 22.05 (OpenAPI v0.0.38), trimmed to what we read."""
    job: dict[str, Any] = {
        "job_id": 42,
        "user_name": "alice",
        "job_state": "RUNNING",
        "name": "train-lm",
        "partition": "gpu",
        "nodes": "gpu-[01-02]",
        "node_count": 2,
        "submit_time": 1795502287,
        "start_time": 1795502288,
        "end_time": 1795588688,
        "time_limit": 120,
        "current_working_directory": "/home/alice/lm",
        "command": "/home/alice/lm/run.sh",
        "exit_code": 0,
        "state_reason": "None",
        "restart_cnt": 1,
        "comment": "",
        "standard_output": "logs/%x-%j.out",
        "standard_error": "",
        "tres_per_node": "gres:gpu:4",
        "tres_alloc_str": "cpu=16,mem=64G,node=2,billing=16,gres/gpu=8",
        "array_job_id": 0,
        "array_task_id": None,
    }
    job.update(over)
    return job


def doc(*jobs: dict[str, Any], errors: list[Any] | None = None) -> str:
    return json.dumps({"meta": {}, "errors": errors or [], "jobs": list(jobs)})


def test_squeue_job_fields_and_paths() -> None:
    (j,) = jobs_from_squeue_json(doc(squeue_job()))
    assert j.job_id == "42" and j.user == "alice" and j.state is JobState.RUNNING
    assert j.nodes == ("gpu-01", "gpu-02")
    assert j.gpus == 8  # allocated, not requested per node
    assert j.time_limit_s == 120 * 60
    assert j.restarts == 1
    assert j.comment is None  # empty comment
    assert j.stdout_path == "/home/alice/lm/logs/train-lm-42.out"
    assert j.stderr_path == j.stdout_path  # no separate stderr: Slurm writes both to stdout


def test_squeue_newer_number_objects_and_state_lists() -> None:
    job = squeue_job(
        job_state=["PENDING"],
        time_limit={"set": True, "infinite": False, "number": 30},
        start_time={"set": True, "infinite": False, "number": 0},
        exit_code={"status": ["SUCCESS"], "return_code": {"set": True, "number": 0}},
        nodes="",
        tres_alloc_str="",
        tres_per_node="gres/gpu:2",
        node_count={"set": True, "number": 1},
    )
    (j,) = jobs_from_squeue_json(doc(job))
    assert j.state is JobState.PENDING
    assert j.time_limit_s == 1800
    assert j.start_time is None
    assert j.exit_code == 0
    assert j.nodes == ()
    assert j.gpus == 2


def test_unlimited_time_limit_is_none() -> None:
    (j,) = jobs_from_squeue_json(doc(squeue_job(time_limit=None)))
    assert j.time_limit_s is None
    (j,) = jobs_from_squeue_json(doc(squeue_job(time_limit={"set": True, "infinite": True, "number": 0})))
    assert j.time_limit_s is None


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("", "/w/slurm-7.out"),
        ("out.log", "/w/out.log"),
        ("/abs/%j.%u.log", "/abs/7.bob.log"),
        ("%x_%N_%%.log", "/w/job_n1_%.log"),
        ("%5j.out", "/w/00007.out"),
        ("\\%j.out", "/w/%j.out"),
    ],
)
def test_output_path_patterns(pattern: str, expected: str) -> None:
    job = JobView("7", user="bob", name="job", nodes=("n1",), work_dir="/w")
    assert expand_output_path(pattern, job) == expected


def test_array_output_pattern() -> None:
    (j,) = jobs_from_squeue_json(
        doc(squeue_job(job_id=101, array_job_id=100, array_task_id=3, standard_output="r-%A_%a.out"))
    )
    assert j.stdout_path == "/home/alice/lm/r-100_3.out"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "squeue --json: not JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"jobs": "x"}), "no 'jobs' list"),
        (
            json.dumps({"errors": [{"error": "Invalid job id specified\nmore"}], "jobs": []}),
            "Invalid job id specified",
        ),
        (doc(squeue_job(job_id="42; rm -rf /")), "numeric job_id"),
        (doc(squeue_job(nodes="n[1-99999999]")), "more than"),
    ],
)
def test_malformed_squeue_is_one_line_input_error(text: str, needle: str) -> None:
    with pytest.raises(InputError) as err:
        jobs_from_squeue_json(text)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_sinfo_nodes_states_and_gpus() -> None:
    nodes = [
        {
            "name": "n1",
            "state": "idle",
            "state_flags": [],
            "gres": "gpu:4",
            "gres_used": "gpu:0",
            "partitions": ["gpu"],
        },
        {
            "name": "n2",
            "state": "mixed",
            "state_flags": ["DRAIN"],
            "gres": "gpu:a100:8(S:0-1)",
            "gres_used": "gpu:a100:3(IDX:0-2)",
            "partitions": ["gpu", "debug"],
            "reason": "bad ib",
        },
        {"name": "n3", "state": ["DOWN", "NOT_RESPONDING"], "gres": "", "partitions": []},
        {"name": "n1", "state": "idle", "partitions": ["debug"]},  # sinfo repeats a node per partition
    ]
    out = nodes_from_sinfo_json(json.dumps({"nodes": nodes, "errors": []}))
    assert [n.name for n in out] == ["n1", "n2", "n3"]
    assert out[0].state is NodeState.IDLE and out[0].gpus == 4
    assert out[1].state is NodeState.DRAIN and out[1].gpus == 8 and out[1].gpus_alloc == 3
    assert out[1].partitions == ("gpu", "debug") and out[1].reason == "bad ib"
    assert out[2].state is NodeState.DOWN


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800),
        ("05:10", 310),
        ("01:02:03", 3723),
        ("2-00:00:00", 172800),
        ("1-02", 93600),
        ("UNLIMITED", None),
    ],
)
def test_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def test_bad_duration_and_limit_format() -> None:
    with pytest.raises(InputError):
        parse_duration("soon")
    assert format_limit(61) == "2" and format_limit(3600) == "60" and format_limit(0) == "1"


def test_scontrol_record_keeps_free_text_with_spaces_and_equals() -> None:
    line = (
        "JobId=9 JobName=x y UserId=carol(1001) JobState=FAILED Reason=NonZeroExitCode Restarts=2 "
        "ExitCode=1:0 TimeLimit=01:00:00 Partition=gpu NodeList=gpu-[03-04] "
        "Comment=my run lr=3e-4 NodeList=evil WorkDir=/home/carol StdOut=/home/carol/o.log TresPerNode=gres:gpu:2"
    )
    rec = parse_scontrol_record(line)
    assert rec["JobName"] == "x y"
    # 'NodeList=evil' inside the comment repeats a key Slurm already printed: it is comment text
    assert rec["Comment"] == "my run lr=3e-4 NodeList=evil"
    assert rec["NodeList"] == "gpu-[03-04]"
    j = job_from_scontrol(rec)
    assert j.user == "carol" and j.state is JobState.FAILED and j.restarts == 2 and j.exit_code == 1
    assert j.time_limit_s == 3600 and j.gpus == 2 and j.stdout_path == "/home/carol/o.log"
    assert j.nodes == ("gpu-03", "gpu-04")


def test_scontrol_garbage() -> None:
    with pytest.raises(InputError):
        parse_scontrol_record("slurm_load_jobs error: Invalid job id specified")


def test_sacct_rows() -> None:
    rows = [
        "11|train|dave(1002)|gpu|COMPLETED|0:0|2026-11-24T06:38:07|2026-11-24T06:38:08|2026-11-24T07:38:08|3600|120|1|n1|cpu=4,gres/gpu=2,node=1|64Gn|/home/dave",
        "11.batch|batch||gpu|COMPLETED|0:0|2026-11-24T06:38:07|2026-11-24T06:38:08|2026-11-24T07:38:08|3600||1|n1|||",
        "12|bad|erin|gpu|FAILED|1:0|2026-11-24T06:38:07|Unknown|Unknown||UNLIMITED|1|None assigned||4000Mc|/w|with|pipes",
        "",
    ]
    out = list(parse_sacct(rows))
    assert [r.job.job_id for r in out] == ["11", "12"]
    a, b = out
    assert a.elapsed_s == 3600 and a.job.user == "dave" and a.job.gpus == 2 and a.job.time_limit_s == 7200
    assert b.job.state is JobState.FAILED and b.job.start_time is None and b.job.work_dir == "/w|with|pipes"
    assert b.job.nodes == ()  # 'None assigned' is not a hostlist
    assert a.job.mem == "64G" and b.job.mem is None  # per node; a per-CPU request is not one


@pytest.mark.parametrize(
    "text,mem",
    [
        ("300M", "300M"),
        ("64G", "64G"),
        ("64Gn", "64G"),
        ("4000Mc", None),
        ("0", None),
        ("", None),
        ("1024", "1024M"),
    ],
)
def test_mem_request(text: str, mem: str | None) -> None:
    assert mem_request(text) == mem


def test_sacct_short_row_is_an_error() -> None:
    with pytest.raises(InputError, match="sacct line 1"):
        list(parse_sacct(["1|2|3"], SACCT_FIELDS))


def test_memory_request_from_squeue_and_scontrol() -> None:
    assert job_from_squeue({"job_id": 5, "memory_per_node": 300}).mem == "300M"
    assert job_from_squeue({"job_id": 5, "memory_per_node": {"set": True, "number": 2048}}).mem == "2048M"
    assert job_from_squeue({"job_id": 5, "memory_per_node": None}).mem is None
    rec = parse_scontrol_record(
        "JobId=7 JobName=x UserId=ann(1000) JobState=OUT_OF_MEMORY MinMemoryNode=300M"
    )
    assert job_from_scontrol(rec).mem == "300M"
    rec = parse_scontrol_record("JobId=7 JobName=x UserId=ann(1000) JobState=FAILED MinMemoryCPU=4000M")
    assert job_from_scontrol(rec).mem is None

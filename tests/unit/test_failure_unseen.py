"""Failure rules learned from unseen logs (session 12), each on variants written here.

The logs that showed the class are not in the project; every case below is a self-written
variant (other wording, spacing, order, scheduler) of the general pattern.
"""

from __future__ import annotations

import os

import pytest

from schedmate.core.errors import ConfigError
from schedmate.failure import FailureClassifier, FailureHandler, FailureLocator, KnowledgeBase
from schedmate.tracker import LineClassifier


@pytest.fixture(scope="module")
def h() -> FailureHandler:
    kb = KnowledgeBase.load()
    return FailureHandler(FailureLocator(LineClassifier(), kb), FailureClassifier(kb))


def test_a_kernel_assertion_pasted_without_backticks_is_the_cause(h: FailureHandler) -> None:
    """Issue trackers eat the backticks around the condition; the assertion still counts."""
    lines = [
        "/build/kernels/Gather.cuh:214: gather_rows: block: [7,0,0], thread: [31,0,0] Assertion "
        "row < n_rows failed.",
        "",
        "Traceback (most recent call last):",
        '  File "fit.py", line 50, in <module>',
        "RuntimeError: CUDA error: device-side assert triggered",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 1 and r.category == "application"


@pytest.mark.parametrize(
    "first",
    [
        "THCudaCheck FAIL file=/src/THC/THCGeneral.cpp line=51 error=30 : unknown error",
        "cudaCheck FAILED in alloc.cu:88 (error=30 : unknown error)",
    ],
)
def test_a_check_macros_failure_print_is_the_first_statement(h: FailureHandler, first: str) -> None:
    lines = [
        "loading weights",
        first,
        "Traceback (most recent call last):",
        '  File "t.py", line 3, in <module>',
        "RuntimeError: cuda runtime error (30) : unknown error at /src/THC/THCGeneral.cpp:51",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.category == "infrastructure"


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: [enforce fail at inline_container.cc:588] . PytorchStreamWriter failed writing "
        "file data/91: file write failed",
        "RuntimeError: [enforce fail at inline_container.cc:300] . unexpected pos 104857600 vs 104857488",
    ],
)
def test_a_checkpoint_write_failing_midway_is_storage(h: FailureHandler, line: str) -> None:
    lines = [
        "epoch 4 done, saving",
        "Traceback (most recent call last):",
        '  File "save.py", line 9, in <module>',
        "    torch.save(state, out)",
        line,
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line == line and r.category == "infrastructure" and r.kind == "file_write_failed"


def test_a_bare_kill_yields_to_the_schedulers_report_far_below(h: FailureHandler) -> None:
    """A batch system appends its report after the job's output (resource summary, the
    script): the limit it names is the cause of the bare `Killed` tens of lines above."""
    script = [f"#SBATCH --option-{i}" for i in range(60)]
    lines = [
        "step 10 loss 3.2",
        "/var/spool/job.sh: line 9: 4242 Killed    python train.py",
        "------------------------------------------",
        "Job 771 report",
        *script,
        "Job exceeded its memory usage limit and was terminated.",
        "Exited with exit code 137.",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line == "Job exceeded its memory usage limit and was terminated."
    assert r.category == "infrastructure"


def test_defer_within_is_validated() -> None:
    base = "version: 1\nsignatures:\n  - kind: k\n    category: application\n    patterns: ['x']\n"
    assert (
        KnowledgeBase.from_yaml(base + "    defer_to: 'y'\n    defer_within: 5\n").signatures[0].defer_within
        == 5
    )
    for bad in ("0", "abc", "100000"):
        with pytest.raises(ConfigError, match="defer_within"):
            KnowledgeBase.from_yaml(base + f"    defer_within: {bad}\n")


@pytest.mark.parametrize(
    "line",
    [
        "E0311 08:00:01.000 77 op.cc:90] conv2d raises an exception BadAlloc, ResourceExhaustedError: ",
        "Out of memory error on device 3. Cannot allocate 2.0GB memory on device 3, 30.1GB memory has "
        "been allocated and available memory is only 11.0MB.",
        "W core/allocator.cc:301] Ran out of memory trying to allocate 1.20GiB.  See logs for memory state.",
    ],
)
def test_gpu_memory_exhaustion_in_other_frameworks_words(h: FailureHandler, line: str) -> None:
    r = h.diagnose_lines(["I core/device.cc:12] device 0 ready", line, "I core/loop.cc:3] shutting down"])
    assert r.root_cause_line == line and r.kind == "oom_cuda" and r.category == "application"


def test_the_allocators_advisory_note_is_not_a_failure(h: FailureHandler) -> None:
    note = (
        "W core/bfc.cc:217] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.1GiB. The caller "
        "indicates that this is not a failure, but may mean that there could be performance gains."
    )
    r = h.diagnose_lines(["step 1 loss 2.0", note, "step 2 loss 1.9", "step 3 loss 1.8"])
    assert r.kind != "oom_cuda"


@pytest.mark.parametrize("killed", ["已杀死", "Getötet", "  12345 Убито   python fit.py"])
def test_a_shells_localised_killed_is_a_kill(h: FailureHandler, killed: str) -> None:
    r = h.diagnose_lines(["epoch 3 step 20 loss 0.5", killed])
    assert (
        r.root_cause_line == killed and r.kind == "process_killed_sigkill" and r.category == "infrastructure"
    )


def test_a_heartbeat_manager_finding_lame_workers_is_lost_coordination(h: FailureHandler) -> None:
    line = "INFO:tf:ShutdownHook: lame worker found: HeartbeatMonitor(/job:tpu_worker/task:3)"
    r = h.diagnose_lines(["INFO:tf:global_step/sec: 3.1", "INFO:tf:loss = 0.41, step = 900", line])
    assert r.root_cause_line == line and r.category == "infrastructure"


def test_a_frames_source_line_is_not_the_cause_even_without_the_header(h: FailureHandler) -> None:
    """A paste that starts mid-traceback: `raise X(` under a `File ...` line is code, the
    exception line after it is the cause."""
    lines = [
        'File "/srv/lib/loop.py", line 88, in _check_finite',
        "    raise FloatingPointError(",
        "FloatingPointError: loss is not finite at step 412",
        "losses = {'cls': nan, 'box': nan}",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 3 and r.category == "application"


def test_a_megabyte_line_is_matched_on_its_head_and_tail_in_bounded_time() -> None:
    import time

    kb = KnowledgeBase.load()
    filler = "0.1234, " * 250_000  # a dumped tensor: 2 MB on one line
    t0 = time.perf_counter()
    head = kb.match("RuntimeError: CUDA out of memory. Tried to allocate 2 GiB; values: " + filler)
    tail = kb.match("step 9 " + filler + " NCCL WARN NET/IB : Got completion with error 12, opcode 0")
    none = kb.match(filler)
    assert time.perf_counter() - t0 < 2.0  # was ~3 s per call: every pattern scanned 2 MB
    assert head is not None and head.kind == "oom_cuda"
    assert tail is not None and tail.category == "infrastructure"
    assert none is None or none.generic


@pytest.mark.parametrize("encoding", ["gbk", "utf-16", "utf-16-le"])
def test_a_log_in_a_cjk_or_utf16_encoding_is_diagnosed_decoded(
    h: FailureHandler, tmp_path, encoding: str
) -> None:  # type: ignore[no-untyped-def]
    from schedmate.tracker import MetricTracker

    text = "开始训练 run 7\nepoch 2 step 40 loss 1.25\n错误：标签文件缺失，训练中止\n"
    p = tmp_path / "job.log"
    p.write_bytes(text.encode(encoding))
    r = h.diagnose(p)
    assert r.root_cause_line == "错误：标签文件缺失，训练中止" and r.root_cause_line_no == 3
    t = MetricTracker().track_file(p)  # UTF-16 CJK text is text, not binary
    assert t.error is None and t.loss == 1.25


@pytest.mark.skipif(
    not os.access("/proc/kmsg", os.R_OK), reason="needs a readable /proc/kmsg (root on Linux)"
)
def test_a_file_that_only_looks_regular_is_refused_without_waiting(h: FailureHandler) -> None:
    """/proc/kmsg is a 'regular' file whose read blocks until the kernel logs something."""
    import subprocess
    import sys

    code = "from schedmate.tracker import MetricTracker; MetricTracker().track_file('/proc/kmsg')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert "InputError: /proc/kmsg: gives no data without waiting" in out.stderr
    assert "without waiting" in (h.diagnose("/proc/kmsg").error or "")


@pytest.mark.parametrize(("sig", "kind"), [(9, "process_killed_sigkill"), (15, "terminated_by_signal")])
def test_the_controllers_record_of_a_signal_is_the_cause(h: FailureHandler, sig: int, kind: str) -> None:
    lines = [
        "[2025-01-09T08:00:01.002] sched: Allocate JobId=5521 NodeList=gn07 #CPUs=8 Partition=a100",
        f"[2025-01-09T09:14:40.771] _job_complete: JobId=5521 WTERMSIG {sig}",
        "[2025-01-09T09:14:40.772] _job_complete: JobId=5521 done",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.kind == kind and r.category == "infrastructure"


@pytest.mark.parametrize(
    "verdict",
    [
        "slurmstepd: error: *** JOB 88 ON cn-12 CANCELLED AT 2025-06-01T10:00:00 DUE TO TIME LIMIT ***",
        "slurmstepd: error: Detected 2 oom-kill event(s) in StepId=88.0. Some of your processes may have been "
        "killed by the cgroup out-of-memory handler.",
        "=>> PBS: job killed: walltime 86430 exceeded limit 86400",
    ],
)
def test_a_startup_complaint_the_job_survived_yields_to_the_schedulers_verdict(
    h: FailureHandler, verdict: str
) -> None:
    lines = [
        "CondaError: Run 'conda init' before 'conda activate'",
        "2025-06-01 08:00:01.5: W core/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; "
        "dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory",
        "",
        verdict,
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line == verdict and r.category == "infrastructure"


def test_an_exception_that_ended_the_program_keeps_its_place_before_a_time_limit(h: FailureHandler) -> None:
    """One rank crashed, the others hung until the limit: the crash is the cause."""
    lines = [
        "step 40 loss 2.0",
        "Traceback (most recent call last):",
        '  File "train.py", line 9, in <module>',
        "ValueError: mask has 3 channels, expected 1",
        "slurmstepd: error: *** JOB 91 ON cn-3 CANCELLED AT 2025-06-01T10:00:00 DUE TO TIME LIMIT ***",
    ]
    assert h.diagnose_lines(lines).root_cause_line_no == 4
    lines[1:4] = ["cn-3:77:90 [0] NCCL WARN NET/IB : Got completion from peer with error 12, opcode 0"]
    assert h.diagnose_lines(lines).root_cause_line_no == 2  # a hang's cause stays first


def test_ncclS_shared_memory_segment_failure_is_the_cause(h: FailureHandler) -> None:
    first = "pod-7:41:90 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-x (size 4194304)"
    lines = [
        first,
        "pod-7:41:90 [0] NCCL INFO transport/shm.cc:101 -> 2",
        "pod-7:41:90 [0] NCCL INFO init.cc:766 -> 2",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 1 and r.kind == "shm_exhausted"


def test_an_exception_name_whose_message_comes_lines_below(h: FailureHandler) -> None:
    msg = "Out of memory error on device 1. Cannot allocate 64.0MB memory on device 1, 15.5GB memory has been allocated."
    lines = [
        "epoch 3 batch 90 loss 0.7",
        "----------------------",
        "MemoryExhaustedError:",
        "",
        msg,
        "",
        "Please check ...",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line == msg and r.kind == "oom_cuda"
    # an exception name with nothing specific below stays the root
    lines = ["epoch 3 batch 90 loss 0.7", "SomeLibraryError:", "", "see the docs"]
    assert h.diagnose_lines(lines).root_cause_line_no == 2


@pytest.mark.parametrize(
    ("line", "kind", "category"),
    [
        (
            "[09:01:02] src/storage/pool.h:84: cudaMalloc retry failed: out of memory",
            "oom_cuda",
            "application",
        ),
        (
            "OSError: Unable to create file (unable to open file: name = 'ck/w.h5', errno = 70, "
            "error message = 'communication error on send')",
            "io_error",
            "infrastructure",
        ),
        (
            "RuntimeError: TPU initialization failed: open(/dev/accel3): Device or resource busy",
            "gpu_busy_unavailable",
            "infrastructure",
        ),
    ],
)
def test_more_frameworks_words_for_known_faults(
    h: FailureHandler, line: str, kind: str, category: str
) -> None:
    r = h.diagnose_lines(["[12] Train-acc=0.81", line])
    assert r.root_cause_line == line and r.kind == kind and r.category == category


def test_a_users_print_quoting_a_platform_message_is_not_the_fault(h: FailureHandler) -> None:
    """Session-11 break test #3: a job's own line that quotes an NCCL or scheduler message
    (a retry note, a docstring printed) must not become an infrastructure root cause."""
    lines = [
        "step 120 loss 0.8",
        'note: last week run hit "NCCL WARN NET/IB : Got completion from peer with error 12", retrying is enabled',
        "info: see 'slurmstepd: error: *** JOB 1 ON gpu-02 CANCELLED AT 2024-01-01 DUE TO NODE FAILURE ***'",
        "Traceback (most recent call last):",
        '  File "train.py", line 30, in <module>',
        "IndexError: index 12 is out of bounds for dimension 0 with size 12",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 6 and r.category == "application"
    # the platform's own line that quotes a word still matches
    own = "gpu-9:12:40 [1] NCCL WARN Cuda failure 'out of memory'"
    assert h.diagnose_lines(["step 1 loss 2", own]).root_cause_line == own


@pytest.mark.parametrize(
    "glued",
    [
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "RuntimeError: DataLoader worker (pid 31) exited unexpectedly with exit code 1",
        "terminate called after throwing an instance of 'std::bad_alloc'",
    ],
)
def test_an_error_glued_after_the_last_bar_redraw_is_the_cause(h: FailureHandler, glued: str) -> None:
    bar = "Epoch 2: 100%|##########| 40/40 [00:12<00:00,  3.31it/s, loss=0.412]"
    lines = [
        "Epoch 1: 100%|##########| 40/40 [00:12<00:00,  3.30it/s, loss=0.52]",
        bar + glued,
        "exit status 2",
    ]
    assert h.diagnose_lines(lines).root_cause_line_no == 2
    # a bar alone (its metrics look like an error print's numbers) is no cause
    assert h.diagnose_lines(["epoch 1", bar, "done"]).root_cause_line is None


def test_a_wrapper_whose_remote_traceback_goes_on_yields_to_the_remote_error(h: FailureHandler) -> None:
    """A task framework re-raises a worker's error: its exception line is followed by the
    worker's own frames; the exception ending those frames is the cause."""
    lines = [
        "Trial failed (attempt 1)",
        "Traceback (most recent call last):",
        '  File "/opt/fw/runner.py", line 90, in fetch',
        "    raise value.as_cause()",
        "fw.exceptions.TaskError(ValueError): fw::Learner.step() (pid=812, ip=10.0.0.4)",
        *[
            f'  File "/srv/job/layer{k}.py", line {k + 10}, in call{k}\n    return self.inner(x)'
            for k in range(20)
        ],
        "ValueError: replay buffer holds 0 transitions, need 256",
        "",
    ]
    lines = [part for ln in lines for part in ln.split("\n")]  # a deep remote stack: 40 frame lines
    r = h.diagnose_lines(lines)
    assert r.root_cause_line == "ValueError: replay buffer holds 0 transitions, need 256"
    assert r.category == "application"
    # interleaved ranks: another rank's frames after this rank's exception do not move it
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "t.py", line 3, in <module>',
        "[rank0]: KeyError: 'input_ids'",
        '[rank1]:   File "t.py", line 3, in <module>',
        "[rank1]: KeyError: 'input_ids'",
    ]
    assert h.diagnose_lines(lines).root_cause_line_no == 3


def test_a_structured_error_records_message_field_is_not_a_quotation(h: FailureHandler) -> None:
    lines = [
        "ERROR: RunFailedException:",
        "{",
        '    "error": {',
        '        "code": "UserError",',
        '        "message": "User script failed with ModuleNotFoundError: No module named \'torchaudio\'",',
        "    }",
        "}",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 5 and r.kind == "import_error"


def test_a_cloud_replicas_memory_kill_is_a_host_oom(h: FailureHandler) -> None:
    line = "The replica worker 3 ran out-of-memory and exited with a non-zero status of 9(SIGKILL)."
    r = h.diagnose_lines(["step 90 loss 1.1", line])
    assert r.root_cause_line == line and r.category == "infrastructure"

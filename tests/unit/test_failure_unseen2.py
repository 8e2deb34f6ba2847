"""Failure rules learned from unseen logs (session 13), each on variants written here.

The logs that showed the class are not in the project; every case below is a self-written
variant (other wording, spacing, order, scheduler) of the general pattern.
"""

from __future__ import annotations

import pytest

from schedmate.failure import FailureClassifier, FailureHandler, FailureLocator, KnowledgeBase
from schedmate.tracker import LineClassifier


@pytest.fixture(scope="module")
def h() -> FailureHandler:
    kb = KnowledgeBase.load()
    return FailureHandler(FailureLocator(LineClassifier(), kb), FailureClassifier(kb))


def test_a_schedulers_job_step_is_not_training_progress(h: FailureHandler) -> None:
    """`Terminating job step 88.0` names the scheduler's step of the job: it must not open a
    'failure region' after the time-limit verdict it follows."""
    lines = [
        "srun: forcing job termination",
        "slurmstepd-c12: error: *** STEP 881234.0 ON c12 CANCELLED AT 2031-02-03T04:05:06 DUE TO TIME LIMIT ***",
        "srun: Terminating job step 881234.0",
        "srun: error: c13: tasks 4-7: Terminated",
        "srun: error: c12: tasks 0-3: Terminated",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.kind == "time_limit"


@pytest.mark.parametrize(
    "line",
    [
        "reading shards: 41% (205/500) [####        ] eta 3:10:02 |Terminated",
        "Terminated",
        "/var/spool/job.sh: line 14: 5521 Terminated              ./bin/train --cfg run.toml",
    ],
)
def test_a_shells_terminated_notice_is_an_external_termination(h: FailureHandler, line: str) -> None:
    lines = ["loading inputs ...", "starting the solver", line]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 3 and r.kind == "terminated_by_signal"
    assert r.category == "infrastructure"
    # the lower-case verb in a program's own sentence is not the shell's notice
    r = h.diagnose_lines(["loading inputs ...", "worker pool terminated"])
    assert r.kind != "terminated_by_signal"


def test_a_gpu_tools_symptom_yields_to_the_kernels_report_of_the_fault(h: FailureHandler) -> None:
    """An operator pastes nvidia-smi's complaint first, then the kernel log that names the fault."""
    lines = [
        "$ nvidia-smi",
        "Unable to determine the device handle for GPU 0000:3D:00.0: Unknown Error",
        "$ journalctl -k | grep -i nvrm",
        "kernel: NVRM: Xid (PCI:0000:3d:00): 79, pid=913, name=trainer, GPU has fallen off the bus.",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 4 and r.category == "infrastructure"
    r = h.diagnose_lines(lines[:2])  # alone, the symptom is the cause
    assert r.root_cause_line_no == 2 and r.category == "infrastructure"


def test_a_tensorflow_kernels_failure_warning_is_the_first_sign_of_the_cause(h: FailureHandler) -> None:
    """TensorFlow logs the failing kernel's status as a warning before Python raises a generic
    `Graph execution error`: that warning states the cause first."""
    lines = [
        "2031-01-02 03:04:05.000001: W tf/core/framework/op_kernel.cc:1830] OP_REQUIRES failed at "
        "gather_op.cc:91 : INVALID_ARGUMENT: indices[5,2] = 30522 is not in [0, 30522)",
        "Traceback (most recent call last):",
        '  File "fit.py", line 9, in <module>',
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: Graph execution error:",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 1 and r.category == "application"
    # a finished input iterator's routine OUT_OF_RANGE is not a failure
    healthy = [
        "W tf/core/framework/op_kernel.cc:1830] OP_REQUIRES failed at iterator_ops.cc:1089 : OUT_OF_RANGE: "
        "End of sequence",
        "Epoch 3/3 - loss: 0.12",
    ]
    assert not h.diagnose_lines(healthy).failed


@pytest.mark.parametrize(
    "line",
    [
        "sanity check: no CUDA out of memory errors detected",
        "run summary: finished without NCCL timeout events",
        "health: zero uncorrectable ECC errors on all GPUs",
    ],
)
def test_a_line_that_negates_a_fault_is_not_that_fault(h: FailureHandler, line: str) -> None:
    """(session-13 break test) A healthy run's report that a fault did not happen."""
    lines = ["Epoch 1/1", line, "step 10/10 loss 0.1", "Finished training"]
    r = h.diagnose_lines(lines)
    assert not r.failed
    # the fault itself is still a cause
    assert h.diagnose_lines(
        ["step 3/10 loss 0.5", "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"]
    ).failed


def test_an_exception_python_ignored_at_exit_is_not_the_failure(h: FailureHandler) -> None:
    """`Exception ignored in: ...` (a finaliser's error at interpreter exit) is not fatal."""
    teardown = [
        "Exception ignored in: <function _Pool.__del__ at 0x7f00>",
        "Traceback (most recent call last):",
        '  File "pool.py", line 80, in __del__',
        "TypeError: 'NoneType' object is not callable",
    ]
    r = h.diagnose_lines(["iter 500/500 loss 0.02", "done: model saved", *teardown])
    assert not r.failed
    # a real failure after the teardown noise is still found
    r = h.diagnose_lines(["iter 500/500 loss 0.02", *teardown, "OSError: [Errno 28] No space left on device"])
    assert r.failed and r.root_cause_line_no == 6

"""Issue 11 rules, each on variants written here (other spelling, spacing, order, language).

Localisation: the first line that states the cause (a user's own print, a localised prefix,
native fatal lines, boxed and rank-prefixed tracebacks, symptoms that yield to the hardware
fault); classification: platform and scheduler messages, evidence that overturns a category.
"""

from __future__ import annotations

import pytest

from schedmate.failure import FailureClassifier, FailureHandler, FailureLocator, KnowledgeBase
from schedmate.tracker import LineClassifier


@pytest.fixture(scope="module")
def bundled() -> KnowledgeBase:
    return KnowledgeBase.load()


@pytest.fixture(scope="module")
def h(bundled: KnowledgeBase) -> FailureHandler:
    return FailureHandler(FailureLocator(LineClassifier(), bundled), FailureClassifier(bundled))


# -- localisation ---------------------------------------------------------------------------
def test_users_own_print_of_the_error_comes_first(h: FailureHandler) -> None:
    lines = [
        "epoch 3 step 120 loss 0.91",
        "job runner: error while training: list index out of range (batch 17)",
        "Traceback (most recent call last):",
        '  File "run.py", line 40, in <module>',
        "IndexError: list index out of range",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.category == "application"


def test_a_bare_failure_message_still_yields_to_the_named_cause(h: FailureHandler) -> None:
    lines = [
        "worker 3: error: step failed, see below",
        "Traceback (most recent call last):",
        '  File "run.py", line 40, in <module>',
        "KeyError: 'attention_mask'",
    ]
    assert h.diagnose_lines(lines).root_cause_line == "KeyError: 'attention_mask'"


def test_a_wrapper_print_that_does_not_state_the_cause_yields(h: FailureHandler) -> None:
    """A launcher's own report (with words that look like a fault in its argument list)
    is not the cause when the exception after it says something else."""
    lines = [
        "Fehler beim Start: Parameter ['trainer.heartbeat_timeout=30', 'model=small']",
        "Traceback (most recent call last):",
        '  File "main.py", line 3, in <module>',
        "ModuleNotFoundError: No module named 'flash_attn'",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 4 and r.kind == "import_error"


@pytest.mark.parametrize(
    "line",
    [
        "Fehler beim Training: Division durch null in Schritt 12",
        "错误：数据集为空，无法继续训练",
        "[2026-02-03 10:00:00] Erreur : le fichier de configuration est invalide",
    ],
)
def test_localised_error_prefix_is_a_candidate(h: FailureHandler, line: str) -> None:
    r = h.diagnose_lines(["step 1 loss 2.0", line, "shutting down"])
    assert r.failed and r.root_cause_line == line


def test_native_check_failure_beats_the_abort(h: FailureHandler) -> None:
    lines = [
        "step 400 loss 1.2",
        "F0305 09:12:44.101 8812 kernel_launch.cc:77] Check failed: status == cudaSuccess (700 vs. 0) "
        "an illegal memory access was encountered",
        "*** Check failure stack trace: ***",
        "    @     0x7f3a2c1d4b2d  google::LogMessage::Fail()",
        "Aborted (core dumped)",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.category == "application"


def test_rich_boxed_traceback_resolves_to_its_exception(h: FailureHandler) -> None:
    lines = [
        "╭──────────── Traceback (most recent call last) ────────────╮",
        "│ /srv/app/train.py:88 in main                               │",
        "│ ❱ 88 │   trainer.fit(model, dl)                             │",
        "╰────────────────────────────────────────────────────────────╯",
        "ValueError: expected 4 channels, got 3",
    ]
    assert h.diagnose_lines(lines).root_cause_line == "ValueError: expected 4 channels, got 3"


def test_rank_prefixed_frames_are_not_causes(h: FailureHandler) -> None:
    lines = [
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/opt/x/launch.py", line 9, in <module>',
        '[rank3]:   File "/opt/x/train.py", line 12, in step',
        "[rank3]: ZeroDivisionError: float division by zero",
    ]
    assert h.diagnose_lines(lines).root_cause_line == "[rank3]: ZeroDivisionError: float division by zero"


def test_socket_symptom_yields_to_the_gpu_fault_after_it(h: FailureHandler) -> None:
    lines = [
        "terminate called after throwing an instance of 'std::runtime_error'",
        "  what():  Connection reset by peer",
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  CUDA error: uncorrectable ECC error encountered",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 4 and r.category == "infrastructure"


def test_device_assert_yields_to_the_kernel_assertion(h: FailureHandler) -> None:
    lines = [
        "RuntimeError: CUDA error: device-side assert triggered",
        "CUDA kernel errors might be asynchronously reported at some other API call",
        "/src/ops/Embedding.cu:120: embed_kernel: block: [3,0,0], thread: [9,0,0] "
        "Assertion `idx < num_rows` failed.",
        "/src/ops/Embedding.cu:120: embed_kernel: block: [3,0,0], thread: [10,0,0] "
        "Assertion `idx < num_rows` failed.",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 3 and r.category == "application"


# -- platform and scheduler messages --------------------------------------------------------
@pytest.mark.parametrize(
    "line,kind",
    [
        ("TERM_MEMLIMIT: job got killed after it reached the LSF memory usage limit", "memory_limit"),
        ("slurmstepd: error: Detected 1 oom_kill event in StepId=77.batch.", "memory_limit"),
        ("  Last State: Terminated   Reason: OOMKilled   Exit Code: 137", "memory_limit"),
        ("TERM_RUNLIMIT: job was killed after reaching LSF run time limit", "time_limit"),
        (
            "slurmstepd: error: *** STEP 9.0 ON a-01 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***",
            "time_limit",
        ),
        ("the job has exceeded the walltime limit and was stopped", "time_limit"),
        ("[agent] cloud metadata: termination is imminent for this preemptible node", "preemption"),
        ("Got an interruption notice for spot instance i-77 (two minutes)", "preemption"),
        ("Reason: NodeShutdown  (pod terminated due to imminent node shutdown)", "kube_evicted"),
        ("[ci:error] job was aborted prematurely; reason: worker failure", "platform_abort"),
        ("resolution: exception / claim_expired", "platform_abort"),
        ("resolver: could not resolve host 'trainer-0.headless.ns': no such host", "dns_failure"),
        ("Error [CUDA] error 999: unknown error at reduce.cu:12", "cuda_driver_error"),
        ("job 5.2 has exceeded hard wall clock time; terminating", "time_limit"),
        ('job 9.1 exceeds job soft limit "s_vmem" of queue "gpu.q" - sending SIGUSR1', "memory_limit"),
        ("held: the job had gone over the memory limit (12000 MB used)", "memory_limit"),
        ("reason: The node had condition: [DiskPressure]", "kube_evicted"),
        ("attempt 2 failed: Host EC2 (instance i-9f9f9f) terminated.", "preemption"),
        ("TERM_OWNER: job killed by its owner", "terminated_by_signal"),
        ("mpirun: process rank 5 on node n-2 exited on signal 9 (Killed).", "process_killed_sigkill"),
        (
            "RuntimeError: store based barrier on rank 2 timed out after 1800 s (8 of 16 joined)",
            "rendezvous_store_error",
        ),
    ],
)
def test_platform_messages_are_root_causes_without_an_exception(
    h: FailureHandler, line: str, kind: str
) -> None:
    r = h.diagnose_lines(["step 7 loss 0.5", "saving checkpoint to /ck/7", line, "exit"])
    assert r.root_cause_line == line and r.kind == kind and r.category == "infrastructure"


def test_a_null_name_lookup_is_noise_not_a_dns_fault(bundled: KnowledgeBase) -> None:
    sig = bundled.match("nslookup: can't resolve '(null)': Name does not resolve", include_generic=False)
    assert sig is None or sig.kind != "dns_failure"


# -- evidence that overturns a category -----------------------------------------------------
def test_oom_looking_error_on_a_node_with_xid_is_infrastructure(h: FailureHandler) -> None:
    lines = [
        "[Mon Mar  2 10:00:01 2026] NVRM: Xid (PCI:0000:3b:00): 48, pid=9912, DBE (0x00000000)",
        "step 80 loss 1.1",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 3 and r.category == "infrastructure"
    assert any("Xid" in e for e in r.evidence)


def test_plain_oom_stays_application(h: FailureHandler) -> None:
    r = h.diagnose_lines(
        ["step 80 loss 1.1", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9 GiB"]
    )
    assert r.category == "application"


def test_timeout_with_one_rank_preparing_data_is_application(h: FailureHandler) -> None:
    lines = [
        "Map (num_proc=32):  97%|█████████▋| 970000/1000000 [31:10<00:58, 510.2 examples/s]",
        "[rank2]:[E ProcessGroupNCCL.cpp:600] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=BROADCAST) ran for 1800090 milliseconds before timing out.",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.category == "application" and r.kind == "slow_rank_timeout"


def test_timeout_with_fabric_errors_stays_infrastructure(h: FailureHandler) -> None:
    lines = [
        "Map (num_proc=32): 100%|██████████| 10/10 [00:01<00:00, 9.1 examples/s]",
        "node7:81:90 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.8 with error 12, opcode 0",
        "[rank0]:[E ProcessGroupNCCL.cpp:600] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
    ]
    r = h.diagnose_lines(lines)
    assert r.category == "infrastructure"


def test_timeout_without_evidence_stays_infrastructure(h: FailureHandler) -> None:
    r = h.diagnose_lines(
        ["[E ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3)"]
    )
    assert r.category == "infrastructure" and r.kind == "nccl_timeout"


def test_bad_defer_to_is_a_one_line_config_error() -> None:
    from schedmate.core.errors import ConfigError

    with pytest.raises(ConfigError, match="defer_to"):
        KnowledgeBase.from_yaml(
            "signatures:\n  - {kind: x, category: application, patterns: [a], defer_to: '('}\n"
        )


def test_a_finished_data_bar_is_not_a_rank_behind(h: FailureHandler) -> None:
    lines = [
        "Loading checkpoint shards: 100%|██████████| 4/4 [00:09<00:00,  2.31s/it]",
        "[rank1]:[E ProcessGroupNCCL.cpp:600] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=ALLGATHER) ran for 600013 milliseconds before timing out.",
    ]
    assert h.diagnose_lines(lines).category == "infrastructure"


def test_a_rank_said_to_lag_makes_the_timeout_application(h: FailureHandler) -> None:
    lines = [
        "[E ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8) "
        "ran for 1800000 milliseconds before timing out.",
        "Desync report: rank 5 is still behind: not yet entered the collective (stuck in the data loader)",
    ]
    r = h.diagnose_lines(lines)
    assert r.category == "application" and r.kind == "slow_rank_timeout"


@pytest.mark.parametrize(
    "line",
    [
        "训练失败：找不到数据文件 train.jsonl",
        "Erro ao treinar: arquivo de dados vazio",
        "Ошибка обучения: пустой датасет",
    ],
)
def test_more_languages_and_unspaced_scripts(h: FailureHandler, line: str) -> None:
    r = h.diagnose_lines(["step 1 loss 2.0", line])
    assert r.root_cause_line == line


def test_ascii_boxed_traceback_resolves_to_its_exception(h: FailureHandler) -> None:
    lines = [
        "+------------------- Traceback (most recent call last) -------------------+",
        "| /app/run.py:12 in main                                                   |",
        "|   12     model.fit(x)                                                    |",
        "+--------------------------------------------------------------------------+",
        "TypeError: fit() missing 1 required positional argument: 'y'",
    ]
    assert h.diagnose_lines(lines).root_cause_line_no == 5


def test_cpp_what_line_is_the_cause_not_the_location_note(h: FailureHandler) -> None:
    lines = [
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  CUDA error: an illegal memory access was encountered",
        "Exception raised from c10_cuda_check_implementation at /src/c10/cuda/CUDAException.cpp:44 "
        "(most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.category == "application"


def test_sigterm_before_the_schedulers_reason_yields_to_it(h: FailureHandler) -> None:
    lines = [
        "step 5000 loss 0.71",
        "[WARNING] torchrun: Received SIGTERM, forwarding to the workers",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        "slurmstepd: error: *** STEP 31.0 ON c-12 CANCELLED AT 2026-04-01T08:00:00 DUE TO TIME LIMIT ***",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 4 and r.kind == "time_limit"


def test_a_kill_then_the_memory_limit_message_yields_to_it(h: FailureHandler) -> None:
    lines = [
        "/var/spool/slurm/job77/slurm_script: line 9:  4321 Killed   python train.py",
        "slurmstepd: error: Detected 2 oom_kill events in StepId=77.batch. Some tasks were OOM Killed.",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.kind == "memory_limit"


def test_program_caused_xid_is_no_hardware_evidence(h: FailureHandler) -> None:
    lines = [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "[Tue Apr  1 10:00:00 2026] NVRM: Xid (PCI:0000:17:00): 31, pid=4242, Ch 00000010, MMU Fault",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 1 and r.category == "application"
    hw = [
        lines[0],
        "[Tue Apr  1 10:00:00 2026] NVRM: Xid (PCI:0000:17:00): 79, pid=0, GPU has fallen off the bus",
    ]
    assert h.diagnose_lines(hw).category == "infrastructure"


def test_logged_print_with_the_quoted_message_stays_first(h: FailureHandler) -> None:
    lines = [
        "2026-05-01 10:00:00 | ERROR | runner:88 - job failed: Split 'dev' not found in corpus 'c4'",
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "KeyError: \"Split 'dev' not found in corpus 'c4'\"",
    ]
    assert h.diagnose_lines(lines).root_cause_line_no == 1


def test_nccl_cuda_failure_that_is_an_oom_is_application(h: FailureHandler) -> None:
    lines = [
        "RuntimeError: NCCL error in: ../c10d/NCCLUtils.hpp:121, unhandled cuda error, NCCL version 2.19.3",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 'out of memory'",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 1 and r.category == "application"


def test_nccl_cuda_failure_without_oom_stays_infrastructure(h: FailureHandler) -> None:
    lines = [
        "RuntimeError: NCCL error in: ../c10d/NCCLUtils.hpp:121, unhandled cuda error, NCCL version 2.19.3",
        "Last error:",
        "Cuda failure 'unspecified launch failure'",
    ]
    assert h.diagnose_lines(lines).category == "infrastructure"


def test_a_native_check_failure_without_a_known_cause_is_application(h: FailureHandler) -> None:
    lines = ["I0301 step 4", "F0301 12:00:00.000 9 graph.cc:41] Check failed: rank == 2 (3 vs. 2)", "Aborted"]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.category == "application"


def test_a_retried_network_error_yields_to_a_definite_cause(h: FailureHandler) -> None:
    lines = [
        "step 900 loss 0.3",
        "metrics uploader: [Errno 111] Connection refused, will retry in 10s",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 3 and r.category == "application"


def test_a_host_oom_kill_is_not_overruled_by_the_nccl_cascade(h: FailureHandler) -> None:
    lines = [
        "step 900 loss 0.3",
        "kernel: Out of memory: Killed process 5151 (python) total-vm:90000000kB",
        "torch.distributed.DistBackendError: NCCL error: remote process exited or there was a network error",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.kind == "host_oom_killed"


def test_another_ranks_cause_printed_before_the_last_progress_line(h: FailureHandler) -> None:
    """Buffered multi-rank output: rank 5's fault is printed, rank 0 logs one more step,
    then the watchdog fires: the fault, not the watchdog, is the root."""
    lines = [
        "step 40 loss 1.10",
        "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB",
        "step 41 loss 1.09",
        "[rank0]:[E ProcessGroupNCCL.cpp:9] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
    ]
    r = h.diagnose_lines(lines)
    assert r.root_cause_line_no == 2 and r.category == "application"


def test_a_cascade_alone_stays_the_root(h: FailureHandler) -> None:
    lines = [
        "step 40 loss 1.10",
        "step 41 loss 1.09",
        "[rank0]:[E ProcessGroupNCCL.cpp:9] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
    ]
    assert h.diagnose_lines(lines).root_cause_line_no == 3

"""The engine's state: a job as the engine tracks it, a virtual cluster, a run's result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from schedmate.sim.interference import DEFAULT_CLASS
from schedmate.sim.placement import Alloc, NodePlacement

__all__ = ["Bound", "EngineCalls", "Event", "JobState", "SimResult", "VCState"]

Event = tuple[float, int, int, int, int]  # time, kind, tie-break (a VC for rounds), job, version
# a running job's key bound, negated (a min-heap is a max-heap of bounds), its index, its start_seq
Bound = tuple[tuple[float, ...], int, int]


@dataclass(slots=True)
class JobState:
    idx: int
    job_id: str
    submit: float
    duration: float
    gpus: int
    vc: str
    user: str
    estimate: float = 0.0
    noise: float = 0.0
    remaining: float = 0.0  # seconds of work left at full speed
    run_start: float = -1.0  # start of the current run segment (same rate), -1 when not running
    first_start: float = -1.0
    end: float = -1.0
    preemptions: int = 0
    version: int = 0
    queued_at: float = 0.0  # when it last joined the queue (FIFO order; a resubmission goes to the tail)
    rate: float = 1.0  # progress per second: 1 / slowdown while packed
    partner: int = -1  # the job sharing its GPUs, -1 when alone
    share: int = DEFAULT_CLASS  # interference class: 0 share freely, 1 with care, 2 do not share
    no_pack: bool = False  # the tracker saw it slowed down while packed
    app_fail: bool = False  # its run ends in an application failure
    failed: bool = False  # it ended in a failure
    failures: int = 0
    retries: int = 0
    kept: float = 0.0  # work saved by its last checkpoint (full-speed seconds)
    lost_in_a_row: int = 0  # infrastructure failures in a row that kept no new work
    alloc: Alloc = ()  # node placement: the (node, GPUs) its latest run held (shared by a pair)
    overhead: float = 0.0  # work added by preemptions (checkpoint + restart), full-speed seconds
    start_seq: int = 0  # order of its latest (re)start (Lucid's run-list order breaks key ties)
    jump_at: float = math.inf  # while running: when its key next jumps up (announced by the policy)

    @property
    def nodes(self) -> tuple[int, ...]:
        """The nodes of its latest run (node placement)."""
        return tuple(n for n, _ in self.alloc)

    def elapsed(self, now: float) -> float:
        """Service received so far (seconds of work at full speed)."""
        ran = self.duration - self.remaining
        return ran + ((now - self.run_start) * self.rate if self.run_start >= 0 else 0.0)


@dataclass
class VCState:
    capacity: int
    free: int
    buckets: dict[int, list[tuple[tuple[float, ...], int, int]]] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    n_pending: int = 0
    solo: dict[tuple[int, int], dict[int, None]] = field(
        default_factory=dict
    )  # (gpus, class) -> packable jobs
    nodes: NodePlacement | None = None  # node placement; None: a pool of GPUs
    stranded: int = 0  # free GPUs while the best pending job fits by count but on no node
    stranded_t: float = 0.0  # since when
    vid: int = 0  # index of the VC (round events)
    round_at: float = -1.0  # batched rounds: time of its pending round, -1 when none
    ver: int = 0  # bumped when its running set or a running job's key jump changes
    # (ver, head, until): no set of worse running jobs lets this head start, while the running
    # set is unchanged (ver) and until the first announced key jump of a running job
    no_evict: tuple[int, tuple[tuple[float, ...], int, int], float] | None = None
    # running jobs by an upper bound of their key (BoundedKey policies; stale entries: jobs
    # since preempted or finished, or sunk); a heap, so the worse jobs are found from the top
    bounds: list[Bound] = field(default_factory=list)
    # (jump_at, job, version) of running jobs with an announced key jump (stale: version moved)
    jumps: list[tuple[float, int, int]] = field(default_factory=list)

    @property
    def max_job(self) -> int:
        """The largest job the empty VC can run."""
        return self.capacity if self.nodes is None else self.nodes.max_job()


@dataclass
class SimResult:
    policy: str
    jobs: list[JobState]
    busy_gpu_s: float
    unschedulable: int
    timeline: list[tuple[float, int, int]]  # (time, busy GPUs, queue length) samples
    vc_capacity: dict[str, int] = field(default_factory=dict)
    packs: int = 0
    unpacks: int = 0
    infra_failures: int = 0
    app_failures: int = 0
    lost_gpu_s: float = 0.0  # work redone after failures, runs of retried application failures
    placement: str = "pool"
    stranded_gpu_s: float = (
        0.0  # node placement: GPU-seconds free while the best pending job fit by count only
    )
    observed: Observation | None = None  # the state at `Simulator(observe_at=t)`'s moment

    @property
    def capacity(self) -> int:
        """GPUs in the whole cluster."""
        return sum(self.vc_capacity.values())

    def finished(self) -> list[JobState]:
        return [j for j in self.jobs if j.end >= 0]


@dataclass
class Observation:
    """The engine's state at one moment of a run: the jobs running then (index -> work left,
    full-speed seconds) and the jobs waiting then (index -> their next start; absent when
    they never start again). A preempted job waits: its next start is not its first."""

    time: float
    running: dict[int, float] = field(default_factory=dict)
    next_start: dict[int, float] = field(default_factory=dict)
    waiting: frozenset[int] = frozenset()


class EngineCalls:
    """The engine methods that both of its mixins (rounds.py, packing.py) call, declared once
    for the type checker; `Simulator` (engine.py) implements them."""

    if TYPE_CHECKING:

        def _pop(self, vc: VCState, gpus: int) -> JobState: ...

        def _start(
            self,
            vc: VCState,
            st: JobState,
            now: float,
            events: list[Event],
            host: int = -1,
            spread: bool = False,
        ) -> None: ...

"""Simulation and start-time prediction, the SDK's face of `schedmate.sim`.

`simulate(...)` replays a trace under policies; `predict_starts(snapshot, ...)` answers "when
will each pending job start?" from any `ClusterSnapshot` (a trace cut, the in-memory fake or a
live Slurm queue): the same code for both. Both return frozen dataclasses; the CLI, `watch`
and the REST service call these, never the engine.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedmate.core.errors import InputError
from schedmate.sim.estimators import DEFAULT_ESTIMATORS, default_estimator

if TYPE_CHECKING:
    from schedmate.sim.metrics import Metrics
    from schedmate.sim.trace import TraceJob
    from schedmate.sim.whatif import StartPrediction
    from schedmate.sim.whatif import predict_from_snapshot as predict_starts


def __getattr__(name: str) -> Any:
    """`StartPrediction` and `predict_starts` load the what-if model on first use: `simulate`
    (a fresh process per command) does not pay for importing it."""
    if name in ("StartPrediction", "predict_starts"):
        from schedmate.sim import whatif

        return whatif.StartPrediction if name == "StartPrediction" else whatif.predict_from_snapshot
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ESTIMATORS",
    "JobRecord",
    "PolicyRun",
    "SimulationReport",
    "StartPrediction",
    "TracePrediction",
    "predict_starts",
    "predict_trace",
    "simulate",
    "plot_runs",
    "SyntheticRun",
    "compare_synthetic",
]


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job of a simulation (`--per-job`): times in seconds from the trace start."""

    job_id: str
    vc: str
    gpus: int
    submit_s: float
    first_start_s: float | None
    end_s: float | None
    queue_s: float | None
    jct_s: float | None
    preemptions: int


@dataclass(frozen=True)
class PolicyRun:
    policy: str
    estimator: str
    metrics: Metrics
    per_vc: dict[str, Metrics]
    vc_capacity: dict[str, int]
    placement: str
    packing: bool
    sim_s: float
    jobs: tuple[JobRecord, ...] = ()  # with per_job=True
    result: object | None = None  # the engine's SimResult, with keep_result=True (plots)


@dataclass(frozen=True)
class SimulationReport:
    trace: str
    n_jobs: int
    cluster: dict[str, int]
    nodes_from_trace: bool
    semantics: str
    runs: tuple[PolicyRun, ...]
    warnings: tuple[str, ...] = ()
    gpus_per_node: int = 8

    @property
    def gpus(self) -> int:
        return sum(self.cluster.values())


def _finite(x: float) -> bool:
    return isinstance(x, float | int) and math.isfinite(x)


def simulate(
    trace: str | Path,
    fmt: str = "native",
    policies: Sequence[str] = ("fifo", "sjf", "srtf", "tiresias", "qssf", "semantic"),
    *,
    cluster: str | dict[str, int] | None = None,
    estimator: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    failures: str | None = None,
    interference: str | Path | None = None,
    placement: str = "pool",
    gpus_per_node: int = 8,
    semantics: str = "default",
    per_job: bool = False,
    scale: float = 1.0,
    window_s: float | None = None,
    keep_result: bool = False,
    timeline: bool = False,
    on_start: Callable[[str, int], Callable[[int], None] | None] | None = None,
) -> SimulationReport:
    """Replay `trace` under each policy. `semantics` is a preset (`default`, `lucid`) with
    optional `name=value` overrides (sim/semantics.py); with `lucid`, placement is on nodes
    with Lucid's rules unless `placement` says otherwise explicitly. `on_start(policy, n_jobs)`
    may return a progress callback (jobs finished). `scale` multiplies every VC's GPUs (a
    scaled cluster keeps the node size; the trace's own node list is used only at 1).
    `window_s` keeps the jobs submitted in the trace's first `window_s` seconds."""
    from schedmate.sim import (
        FailureModel,
        InterferenceModel,
        Simulator,
        default_cluster,
        default_nodes,
        load_trace,
        make_estimator,
        make_policy,
        parse_cluster,
        parse_semantics,
        summarize_sim,
    )
    from schedmate.sim._gc import gc_frozen, gc_paused
    from schedmate.sim.placement import check_placement

    placement = check_placement(placement)
    if gpus_per_node < 1:
        raise InputError(f"--gpus-per-node must be >= 1, got {gpus_per_node}")
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be >= 1, got {limit}")
    if not math.isfinite(scale) or scale <= 0:
        raise InputError(f"scale must be a finite number > 0, got {scale}")
    sem = parse_semantics(semantics)
    names = [p.strip().lower() for p in policies if p.strip()]
    if not names:
        raise InputError("--policy: give at least one policy")
    pols = [make_policy(n, sem) for n in names]  # unknown names fail before the trace is read
    fm = FailureModel.parse(failures) if failures is not None else None
    im = InterferenceModel.fit(Path(interference)) if interference is not None else None
    path = Path(trace)
    jobs = _in_window(load_trace(path, fmt, limit=limit), window_s)
    if isinstance(cluster, dict):
        cl = dict(cluster)
    elif cluster:
        cl = parse_cluster(cluster, gpus_per_node)
    else:
        cl = default_cluster(fmt, path, jobs, gpus_per_node)
    nodes = default_nodes(fmt, path) if not cluster and placement == "node" and scale == 1 else {}
    if scale != 1:
        cl = {k: max(1, int(round(v * scale))) for k, v in cl.items()}
    runs = []
    warnings: list[str] = []
    for name, pol in zip(names, pols, strict=True):
        est = make_estimator(estimator or default_estimator(name, semantics), seed=seed)
        progress = on_start(name, len(jobs)) if on_start is not None else None
        t0 = time.perf_counter()
        with gc_paused():  # the engine's per-job state is acyclic (sim/_gc.py)
            sim = Simulator(
                jobs,
                cl,
                pol,
                est,
                seed=seed,
                timeline_every=max(1, len(jobs) // 500) if timeline else 0,
                interference=im,
                failures=fm,
                placement=placement,
                gpus_per_node=gpus_per_node,
                node_sizes=nodes,
                semantics=sem,
            )
        with gc_frozen():  # full collections during the run skip the trace and the jobs
            res = sim.run(progress=progress)
        dt = time.perf_counter() - t0
        m, vcs = summarize_sim(res)
        if m.unschedulable:
            where = "has" if res.placement == "pool" else "has in whole nodes"
            warnings.append(
                f"{name}: {m.unschedulable} jobs ask for more GPUs than their virtual cluster {where}"
            )
        records: tuple[JobRecord, ...] = ()
        if per_job:
            records = tuple(
                JobRecord(
                    j.job_id,
                    j.vc,
                    j.gpus,
                    j.submit,
                    j.first_start if j.first_start >= 0 else None,
                    j.end if j.end >= 0 else None,
                    j.first_start - j.submit if j.first_start >= 0 else None,
                    j.end - j.submit if j.end >= 0 else None,
                    j.preemptions,
                )
                for j in res.jobs
            )
        runs.append(
            PolicyRun(
                name,
                est.name,
                m,
                vcs,
                dict(res.vc_capacity),
                res.placement,
                bool(getattr(pol, "packing", False)),
                dt,
                records,
                res if keep_result else None,
            )
        )
    return SimulationReport(
        path.name, len(jobs), cl, bool(nodes), semantics, tuple(runs), tuple(warnings), gpus_per_node
    )


@dataclass(frozen=True)
class TracePrediction:
    """`predict_trace`: predictions at `time` and what the replay then did (`actual_s`)."""

    trace: str
    policy: str
    time: float
    running: int
    predictions: tuple[StartPrediction, ...]
    actual_s: dict[str, float]


def predict_trace(
    trace: str | Path,
    fmt: str,
    at_s: float,
    *,
    policy: str = "fifo",
    cluster: str | None = None,
    window_s: float | None = None,
    samples: int = 8,
    arrivals: bool = True,
    semantics: str = "default",
    seed: int = 0,
    placement: str = "pool",
    gpus_per_node: int = 8,
) -> TracePrediction:
    """Replay the trace, cut a `ClusterSnapshot` at `at_s` (what a live cluster would show),
    predict the pending jobs' starts from it with `predict_starts`, and report the replay's
    actual starts beside them."""
    from schedmate.sim import (
        Simulator,
        default_cluster,
        load_trace,
        make_estimator,
        make_policy,
        parse_cluster,
        parse_semantics,
    )
    from schedmate.sim.whatif import predict_from_snapshot, snapshot_from_trace

    for name, v in (("--at", at_s), ("--window-hours", window_s if window_s is not None else 0.0)):
        if not math.isfinite(v) or v < 0:
            raise InputError(f"{name} must be a finite number >= 0, got {v}")
    sem = parse_semantics(semantics)
    pol = make_policy(policy, sem)
    path = Path(trace)
    jobs = _in_window(load_trace(path, fmt), window_s)
    cl = parse_cluster(cluster) if cluster else default_cluster(fmt, path, jobs)
    truth = Simulator(
        jobs, cl, pol, make_estimator(default_estimator(policy, semantics)), semantics=sem, observe_at=at_s
    ).run()
    snap, _, history = snapshot_from_trace(jobs, truth, at_s)
    preds = predict_from_snapshot(
        snap,
        policy=policy,
        cluster=cl,
        history=history,
        samples=samples,
        arrivals=arrivals,
        semantics=semantics,
        seed=seed,
        placement=placement,
        gpus_per_node=gpus_per_node,
    )
    # a job waiting at the moment starts next when the replay (re)starts it: a preempted job's
    # next start, not its first (-1: it never starts again)
    obs = truth.observed
    actual = {
        st.job_id: obs.next_start.get(st.idx, -1.0) if obs is not None else st.first_start
        for st in truth.jobs
    }
    return TracePrediction(
        path.name,
        policy,
        at_s,
        len(snap.running),
        tuple(preds),
        {p.job_id: actual[p.job_id] for p in preds},
    )


def _in_window(jobs: list[TraceJob], window_s: float | None) -> list[TraceJob]:
    """The jobs submitted in the trace's first `window_s` seconds (all of them without one)."""
    if window_s is None:
        return jobs
    if not math.isfinite(window_s) or window_s < 0:
        raise InputError(f"--window-hours must be a finite number >= 0, got {window_s / 3600}")
    kept = [j for j in jobs if j.submit_s <= window_s]
    if not kept:
        raise InputError(f"no job submitted in the first {window_s / 3600:g} hours")
    return kept


def plot_runs(results: Sequence[object], out_dir: str | Path, title: str = "") -> list[Path]:
    """JCT CDF and queue/utilisation plots of simulation results (`PolicyRun.result`s) in
    `out_dir`; needs matplotlib (the `plot` extra), else an InputError saying so."""
    from schedmate.sim.engine import SimResult
    from schedmate.sim.plots import plot_results

    return plot_results([r for r in results if isinstance(r, SimResult)], out_dir, title=title)


@dataclass(frozen=True)
class SyntheticRun:
    """One policy on a synthetic trace (the demo's comparison)."""

    policy: str
    estimator: str
    metrics: Metrics
    result: object


def compare_synthetic(
    runs: Sequence[tuple[str, str]],
    *,
    n_jobs: int = 600,
    gpus: int = 64,
    seed: int = 7,
    mean_gap_s: float = 45.0,
) -> list[SyntheticRun]:
    """Each (policy, estimator) on one synthetic trace of `n_jobs` jobs on a `gpus`-GPU cluster."""
    from schedmate.sim import Simulator, make_estimator, make_policy, summarize_sim, synthetic_trace

    jobs = synthetic_trace(n_jobs, seed=seed, mean_gap_s=mean_gap_s)
    out: list[SyntheticRun] = []
    for pol, est in runs:
        res = Simulator(jobs, {"*": gpus}, make_policy(pol), make_estimator(est), timeline_every=5).run()
        metrics, _ = summarize_sim(res)
        out.append(SyntheticRun(pol, est, metrics, res))
    return out

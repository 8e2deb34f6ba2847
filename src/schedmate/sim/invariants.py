"""Allocation invariants of the engine, checked after every round with `Simulator(check=True)`
(the property tests run with it). A violation is an engine bug, so it raises RuntimeError."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from schedmate.sim.engine import JobState
    from schedmate.sim.placement import NodePlacement

__all__ = ["check_allocation"]


def check_allocation(
    jobs: Sequence[JobState], running: Iterable[int], capacity: int, free: int, nodes: NodePlacement | None
) -> None:
    """Packed pairs are symmetric, of one size and share one allocation; GPUs in use = solo
    jobs + pairs counted once = capacity - free. With nodes: every node holds at most its
    GPUs (a pair once, so at most two jobs per GPU), its free count and bucket agree."""
    used = 0
    running = set(running)
    held = [0] * len(nodes.sizes) if nodes is not None else []
    per_job = [0] * len(held)  # GPUs of jobs on each node, both jobs of a pair counted
    for i in running:
        st = jobs[i]
        p = st.partner
        if p >= 0:
            q = jobs[p]
            if q.partner != i or p not in running or q.gpus != st.gpus or q.alloc != st.alloc:
                raise RuntimeError(f"engine invariant broken: bad pair {st.job_id} / {q.job_id}")
        if nodes is not None:
            if sum(g for _, g in st.alloc) < st.gpus:
                raise RuntimeError(f"engine invariant broken: {st.job_id} holds fewer GPUs than it runs on")
            for n, g in st.alloc:
                per_job[n] += g
        if p < 0 or i < p:
            used += st.gpus
            for n, g in st.alloc if nodes is not None else ():
                held[n] += g
    if nodes is not None:
        nodes.check()
        for n, h in enumerate(held):
            size = nodes.sizes[n]
            if h > size or per_job[n] > 2 * size or h != size - nodes.free[n]:
                raise RuntimeError(
                    f"engine invariant broken: node {n} holds {h} GPUs for {per_job[n]} job-GPUs, "
                    f"{nodes.free[n]} free of {size}"
                )
        used = sum(held)
    if used != capacity - free or free < 0:
        raise RuntimeError(f"engine invariant broken: {used} GPUs in use, {free} free of {capacity}")

"""Placement of jobs on GPUs, a strategy the engine owns (`Simulator(placement=...)`).

- `pool` (default): a virtual cluster (VC) is a pool of GPUs; a job fits if the VC has
  enough free GPUs anywhere (the engine counts them inline, on its hot path).
- `node`: a VC is a list of nodes with G GPUs each (G = its largest node). As real
  schedulers place gang jobs: a job of at most G GPUs goes on one node, best fit (the node
  with the fewest free GPUs that still fits, to limit fragmentation); a larger job takes
  ceil(gpus / G) whole free nodes of size G, exclusively (the unused GPUs of its last node
  stay idle). `NodePlacement` keeps the nodes in buckets by free-GPU count, so placing a job
  looks at G + 1 buckets, never at every node.

Packing stays consistent because the engine gives a packed job its host's allocation: the
pair shares the same GPUs of the same node(s) and holds them once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice

from schedmate.core.errors import ConfigError, InputError

__all__ = ["PLACEMENTS", "Alloc", "LucidNodePlacement", "NodePlacement", "check_placement", "uniform_nodes"]

PLACEMENTS = ("pool", "node")

Alloc = tuple[tuple[int, int], ...]  # (node, GPUs held on it), one entry per node


def check_placement(name: str) -> str:
    name = name.strip().lower()
    if name not in PLACEMENTS:
        raise ConfigError(f"unknown placement '{name}'; valid: {', '.join(PLACEMENTS)}")
    return name


def uniform_nodes(gpus: int, per_node: int) -> list[int]:
    """`gpus` as nodes of `per_node` GPUs; a remainder becomes one smaller node."""
    if per_node < 1:
        raise ConfigError(f"GPUs per node must be >= 1, got {per_node}")
    sizes = [per_node] * (gpus // per_node)
    if gpus % per_node:
        sizes.append(gpus % per_node)
    return sizes


class NodePlacement:
    """The nodes of one virtual cluster: free GPUs per node, nodes bucketed by free count."""

    __slots__ = ("sizes", "per_node", "free", "buckets", "n_big")

    def __init__(self, sizes: Sequence[int]) -> None:
        if not sizes or min(sizes) < 1:
            raise InputError(f"node sizes must be positive GPU counts, got {list(sizes)[:8]}")
        self.sizes = list(sizes)
        self.per_node = max(self.sizes)  # G: larger jobs take whole nodes of this size
        self.free = list(self.sizes)
        self.buckets: list[dict[int, None]] = [{} for _ in range(self.per_node + 1)]  # free count -> nodes
        for n, s in enumerate(self.sizes):
            self.buckets[s][n] = None
        self.n_big = sum(1 for s in self.sizes if s == self.per_node)

    def max_job(self) -> int:
        """The largest job that fits on the empty VC."""
        return self.n_big * self.per_node

    def limit(self) -> int:
        """The largest job that fits now. Fitting is monotone in the GPU count: a job of
        g <= G fits iff some node has g free; a larger one iff ceil(g / G) nodes are whole
        and free, and then a node has G free, so every smaller job fits as well."""
        b = self.buckets
        g = self.per_node
        if b[g]:
            return len(b[g]) * g
        for f in range(g - 1, 0, -1):
            if b[f]:
                return f
        return 0

    def _move(self, n: int, new: int) -> None:
        del self.buckets[self.free[n]][n]
        self.free[n] = new
        self.buckets[new][n] = None

    def allocate(self, gpus: int) -> Alloc | None:
        """Best fit on one node, or whole free nodes for a multi-node job; None if it does not fit."""
        g = self.per_node
        if gpus <= g:
            for f in range(gpus, g + 1):
                bucket = self.buckets[f]
                if bucket:
                    n = next(iter(bucket))
                    self._move(n, f - gpus)
                    return ((n, gpus),)
            return None
        k = -(-gpus // g)
        whole = self.buckets[g]
        if len(whole) < k:
            return None
        nodes = list(islice(whole, k))
        for n in nodes:
            self._move(n, 0)
        return tuple((n, g) for n in nodes)

    def spread(self, gpus: int) -> Alloc | None:
        """A snapshot's running job (its real nodes are unknown): placed by the rules if it
        fits, else across the nodes with the most free GPUs."""
        a = self.allocate(gpus)
        if a is not None or sum(self.free) < gpus:
            return a
        out = []
        left = gpus
        for f in range(self.per_node, 0, -1):
            while self.buckets[f] and left:
                n = next(iter(self.buckets[f]))
                take = min(f, left)
                self._move(n, f - take)
                out.append((n, take))
                left -= take
        return tuple(out)

    def release(self, alloc: Alloc) -> None:
        for n, g in alloc:
            self._move(n, self.free[n] + g)

    def check(self) -> None:
        """Buckets agree with the free counts (tests, `Simulator(check=True)`)."""
        seen = 0
        for f, bucket in enumerate(self.buckets):
            for n in bucket:
                if self.free[n] != f or not 0 <= f <= self.sizes[n]:
                    raise RuntimeError(
                        f"engine invariant broken: node {n} in bucket {f}, free {self.free[n]}"
                    )
            seen += len(bucket)
        if seen != len(self.sizes):
            raise RuntimeError(f"engine invariant broken: {seen} bucketed nodes of {len(self.sizes)}")

    def evictions(self, gpus: int, candidates: Iterable[tuple[int, Alloc]]) -> list[int] | None:
        """Which running jobs to evict so that a job of `gpus` fits, or None if evicting all
        `candidates` (allowed victims, worst first, a packed pair as one) would not make it
        fit. Candidates are taken worst first until a node (or enough whole nodes) would be
        free, and only the victims on those nodes are evicted: a victim elsewhere would be
        evicted for nothing."""
        g = self.per_node
        extra: dict[int, int] = {}
        chosen: list[tuple[int, Alloc]] = []
        target: set[int] = set()
        k = -(-gpus // g)
        whole = len(self.buckets[g])
        newly: dict[int, None] = {}
        for i, alloc in candidates:
            chosen.append((i, alloc))
            for n, h in alloc:
                extra[n] = extra.get(n, 0) + h
            if gpus <= g:  # no node fits now, so only a node of this victim can
                best, best_free = -1, g + 1
                for n, _ in alloc:
                    f = self.free[n] + extra[n]
                    if gpus <= f < best_free:
                        best, best_free = n, f
                if best >= 0:
                    target = {best}
                    break
            else:
                for n, _ in alloc:
                    if self.sizes[n] == g and self.free[n] + extra[n] == g:
                        newly[n] = None
                if whole + len(newly) >= k:
                    target = set(islice(newly, k - whole))
                    break
        else:
            return None
        return [i for i, alloc in chosen if any(n in target for n, _ in alloc)]


class LucidNodePlacement(NodePlacement):
    """The Lucid artifact's consolidating placement (`placer/consolidate.py`), for fidelity:
    a job of at most G GPUs goes on the fullest node that fits, the lowest-numbered among
    equals; a larger job takes gpus // G whole free nodes (lowest-numbered first) and its
    remainder goes on the next node in decreasing free order (another whole node if one is
    left, else the node with the most free GPUs), sharing it with other jobs."""

    __slots__ = ()

    def limit(self) -> int:
        """g <= limit fits: k whole nodes, then the remainder on the next node (a whole one,
        or the partial node with the most free GPUs, m): the largest is G x whole + m."""
        b = self.buckets
        g = self.per_node
        m = next((f for f in range(g - 1, 0, -1) if b[f]), 0)
        return len(b[g]) * g + m

    def allocate(self, gpus: int) -> Alloc | None:
        b = self.buckets
        g = self.per_node
        if gpus <= g:
            for f in range(gpus, g + 1):
                if b[f]:
                    n = min(b[f])
                    self._move(n, f - gpus)
                    return ((n, gpus),)
            return None
        k, r = divmod(gpus, g)
        whole = sorted(b[g])
        if len(whole) < k:
            return None
        rest = -1
        if r:
            if len(whole) > k:
                rest = whole[k]
            else:
                f = next((f for f in range(g - 1, r - 1, -1) if b[f]), 0)
                if not f:
                    return None
                rest = min(b[f])
        out = []
        for n in whole[:k]:
            self._move(n, 0)
            out.append((n, g))
        if rest >= 0:
            self._move(rest, self.free[rest] - r)
            out.append((rest, r))
        return tuple(out)

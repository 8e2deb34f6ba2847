"""Cluster sizes for simulations: `{vc: gpus}`, with `*` as the pool for unlisted VCs; node
sizes (`{vc: [gpus per node]}`) for node placement where a trace lists its nodes."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from schedmate.core.errors import InputError
from schedmate.sim.trace import TraceJob

__all__ = ["parse_cluster", "default_cluster", "default_nodes"]


def _vc_config_csv(path: Path, gpus_per_node: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with path.open(newline="") as fh:
            for no, row in enumerate(csv.reader(fh), 1):
                if no == 1 or not row or not row[0].strip():
                    continue
                try:
                    out[row[0].strip()] = int(row[1]) * gpus_per_node
                except (IndexError, ValueError):
                    raise InputError(f"{path}:{no}: expected 'vc,nodes'") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read cluster config: {exc.strerror}") from None
    if not out:
        raise InputError(f"{path}: no virtual clusters")
    return out


def parse_cluster(spec: str, gpus_per_node: int = 8) -> dict[str, int]:
    """`64` (one pool of 64 GPUs), `a=16,b=32` (GPUs per VC), or a `vc,nodes` CSV file."""
    spec = spec.strip()
    if spec.isdigit():
        return {"*": int(spec)}
    if "=" in spec:
        out: dict[str, int] = {}
        for part in spec.split(","):
            k, _, v = part.partition("=")
            if not v.strip().isdigit():
                raise InputError(f"cluster spec '{spec}': '{part}' is not vc=GPUS")
            out[k.strip()] = int(v)
        return out
    return _vc_config_csv(Path(spec), gpus_per_node)


def default_cluster(
    fmt: str, trace_path: Path, jobs: list[TraceJob], gpus_per_node: int = 8
) -> dict[str, int]:
    """The documented default cluster of each shipped trace (see trace.DEFAULT_CLUSTERS)."""
    if fmt == "philly" and (trace_path.parent / "vc_config.csv").is_file():
        return _vc_config_csv(trace_path.parent / "vc_config.csv", gpus_per_node)
    if fmt == "helios":
        head = trace_path.read_text("utf-8", errors="replace")[:4000]
        m = re.search(r"per-VC pool sizes[^:]*:\s*(.+)", head)
        if m:
            return {k.strip(): int(v) * gpus_per_node for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}
    if fmt == "alibaba":
        nodes = default_nodes(fmt, trace_path)
        if nodes:
            return {"*": sum(nodes["*"])}
    biggest = max(j.gpus for j in jobs)
    return {"*": max(8, 4 * biggest, int(math.ceil(biggest / gpus_per_node)) * gpus_per_node)}


def default_nodes(fmt: str, trace_path: Path) -> dict[str, list[int]]:
    """The nodes of a shipped trace's default cluster where they are not uniform (Alibaba:
    the GPU nodes of `openb_node_list_gpu_node.csv`, 1 to 8 GPUs each); empty elsewhere
    (VCs are then split into nodes of `gpus_per_node`)."""
    path = trace_path.parent / "openb_node_list_gpu_node.csv"
    if fmt != "alibaba" or not path.is_file():
        return {}
    sizes = []
    with path.open(newline="") as fh:
        for no, r in enumerate(csv.DictReader(fh), 2):
            try:
                g = int(r.get("gpu") or 0)
            except ValueError:
                raise InputError(f"{path}:{no}: column 'gpu' is not an integer: {r.get('gpu')!r}") from None
            if g > 0:
                sizes.append(g)
    return {"*": sizes} if sizes else {}

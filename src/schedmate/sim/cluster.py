"""Cluster sizes for simulations: `{vc: gpus}`, with `*` as the pool for unlisted VCs; node
sizes (`{vc: [gpus per node]}`) for node placement where a trace lists its nodes."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from schedmate.core.errors import InputError
from schedmate.inputs import MAX_CONFIG_BYTES, open_regular, read_text
from schedmate.sim.trace import TraceJob

__all__ = ["parse_cluster", "default_cluster", "default_nodes"]


def _vc_config_csv(path: Path, gpus_per_node: int) -> dict[str, int]:
    """`vc,nodes` rows; the first line is a header only when its nodes field is not a number
    (a file without a header loses no VC). Read through the input-limits layer."""
    text = read_text(path, what="cluster config", max_bytes=MAX_CONFIG_BYTES)
    if "\x00" in text:
        raise InputError(f"cluster config {path}: binary data (NUL byte), expected 'vc,nodes' lines")
    out: dict[str, int] = {}
    try:
        rows = list(csv.reader(text.splitlines()))
    except csv.Error as exc:
        raise InputError(f"cluster config {path}: malformed CSV: {exc}") from None
    for no, row in enumerate(rows, 1):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        nodes = row[1].strip() if len(row) > 1 else ""
        if no == 1 and not nodes.isdigit():
            continue  # a header such as ',num' or 'vc,nodes'
        if not nodes.isdigit():
            raise InputError(
                f"cluster config {path}:{no}: expected 'vc,nodes' (a whole number of nodes), got {row!r}"
            )
        out[row[0].strip()] = int(nodes) * gpus_per_node
    if not out:
        raise InputError(f"cluster config {path}: no virtual clusters (expected 'vc,nodes' lines)")
    return out


def parse_cluster(spec: str, gpus_per_node: int = 8) -> dict[str, int]:
    """`64` (one pool of 64 GPUs), `a=16,b=32` (GPUs per VC), or a `vc,nodes` CSV file."""
    spec = spec.strip()
    if spec.isdigit():
        if int(spec) < 1:
            raise InputError(f"cluster spec '{spec}': needs at least 1 GPU")
        return {"*": int(spec)}
    if "=" in spec:
        out: dict[str, int] = {}
        for part in spec.split(","):
            k, _, v = part.partition("=")
            if not k.strip() or not v.strip().isdigit() or int(v) < 1:
                raise InputError(f"cluster spec '{spec}': '{part}' is not vc=GPUS (GPUS >= 1)")
            if k.strip() in out:
                raise InputError(f"cluster spec '{spec}': VC '{k.strip()}' is given twice")
            out[k.strip()] = int(v)
        return out
    if re.fullmatch(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?", spec) and not Path(spec).exists():
        raise InputError(f"cluster spec '{spec}': a number of GPUs must be a whole number >= 1")
    return _vc_config_csv(Path(spec), gpus_per_node)


def default_cluster(
    fmt: str, trace_path: Path, jobs: list[TraceJob], gpus_per_node: int = 8
) -> dict[str, int]:
    """The documented default cluster of each shipped trace (see trace.DEFAULT_CLUSTERS)."""
    if fmt == "philly" and (trace_path.parent / "vc_config.csv").is_file():
        return _vc_config_csv(trace_path.parent / "vc_config.csv", gpus_per_node)
    if fmt == "helios":
        with open_regular(trace_path, what="trace") as fh:
            head = fh.read(4000).decode("utf-8", errors="replace")
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
    text = read_text(path, what="node list", max_bytes=MAX_CONFIG_BYTES)
    for no, r in enumerate(csv.DictReader(text.splitlines()), 2):
        try:
            g = int(r.get("gpu") or 0)
        except ValueError:
            raise InputError(f"{path}:{no}: column 'gpu' is not an integer: {r.get('gpu')!r}") from None
        if g > 0:
            sizes.append(g)
    return {"*": sizes} if sizes else {}

"""Evidence around the root cause that changes what it means.

A line alone can mislead; the lines around it often settle the category:
- an error that looks like the job's own (CUDA out of memory, an illegal address, a launch
  failure) on a node that logged GPU hardware faults (hardware Xids such as 48/63/64/74/79/
  92-95/119-123, uncorrectable ECC, NVLink errors, a GPU off the bus) is infrastructure: the
  faulty GPU produced it. Xids a program causes itself (13, 31, 43: MMU faults, engine
  exceptions) are not evidence;
- a collective or store timeout with one rank visibly behind (a data-preparation progress
  bar still running, a rank said to be lagging, a slow data loader) and no fabric error is
  application: the job starved its own peers; with fabric errors it stays infrastructure;
- NCCL's "unhandled cuda error" whose last CUDA error, printed just after, is out of memory
  is the job's own OOM (application).

The lexicons below describe classes of evidence, not any particular log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from schedmate.failure.classify import Verdict
    from schedmate.failure.kb import KnowledgeBase

__all__ = ["reconsider", "hardware_evidence", "behind_evidence", "fabric_evidence"]

_HARDWARE = re.compile(
    r"\bXid\b\s*(?:\([^)]*\)\s*:?\s*)?(?:48|6[34]|74|79|9[2-5]|119|12[0-3]|140|14[3-5]|15[04])\b"
    r"|uncorrectable ECC|\bECC (?:error|failure)|double[- ]bit (?:ECC )?error|row remap(?:ping)? failure"
    r"|retired pages? pending|fell off the bus|fallen off the bus|\bGPU is lost\b|NVLink.{0,40}(?:error|fatal|down)",
    re.I,
)
_OOM_LIKE = re.compile(
    r"out of memory|OutOfMemory|ALLOC_FAILED|cudaErrorMemoryAllocation|OOM when allocating"
    r"|illegal memory access|unspecified launch failure|misaligned address",
    re.I,
)
_OOM = re.compile(r"out of memory|OutOfMemory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY", re.I)
_CUDA_CALL_FAILED = re.compile(
    r"unhandled cuda error|ncclUnhandledCudaError|Call to CUDA function failed", re.I
)
_TIMEOUT = re.compile(r"time[ds]?[ -]?out|Timeout|ran for \d+ ?milli|watchdog", re.I)
_FABRIC = re.compile(
    r"NET/(?:IB|OFI|Socket|RoCE)\b.{0,160}\b(?:error|fail\w*|closed|reset|unreachable)|IBV_WC_(?!SUCCESS\b)\w+"
    r"|\blink (?:is |went )?down\b|No route to host|transport retry counter exceeded|\bport \d+ (?:is |went )?down"
    r"|ibv_\w+ failed|mlx\d_\d+.{0,60}(?:error|down)|Network is unreachable",
    re.I,
)
# one rank visibly behind: a data-preparation progress bar still running (below 100%), a rank
# said to lag, a slow or stalled data loader
_BEHIND = re.compile(
    r"(?:tokeniz|map|filter|pre-?process|pack|group|load|generat|download|cach|shuffl|sort|index|decod|"
    r"extract|convert|build)\w*\b[^|]{0,80}(?<!\d)\d{1,2}%\s*\|"  # a bar still short of 100%
    r"|\branks?\s*\[?[\d, ]+\]?\s*(?:is|are|was|were|has|have)\s+(?:still\s+)?(?:behind|lagging|slower|not (?:yet )?(?:joined|entered|reached))"
    r"|\bstraggl\w+"
    r"|DataLoader\b.{0,80}(?:timed? ?out|too slow|is slow|stalled)",
    re.I,
)
_BEFORE_HW = 2000
_BEFORE_NEAR = 30
_AFTER_NEAR = 6


def _first(pattern: re.Pattern[str], lines: Sequence[str]) -> str | None:
    return next((ln for ln in lines if pattern.search(ln)), None)


def hardware_evidence(lines: Sequence[str]) -> str | None:
    return _first(_HARDWARE, lines)


def fabric_evidence(lines: Sequence[str]) -> str | None:
    return _first(_FABRIC, lines)


def behind_evidence(lines: Sequence[str]) -> str | None:
    return _first(_BEHIND, lines)


def reconsider(
    v: Verdict, root: str, before: Sequence[str], after: Sequence[str], kb: KnowledgeBase
) -> Verdict:
    """The verdict, changed only when the surrounding lines give evidence against it."""
    rest = [ln for ln in after if ln != root]
    if v.category == "application" and _OOM_LIKE.search(root):
        hw = hardware_evidence([*before[-_BEFORE_HW:], *rest])
        if hw is not None:
            sig = kb.match(hw)
            return replace(
                v,
                category="infrastructure",
                kind=sig.kind if sig is not None and sig.category == "infrastructure" else "gpu_hardware",
                confidence=max(0.8, sig.confidence if sig is not None else 0.0),
                method=f"{v.method}+evidence",
                signature=sig,
                evidence=(root, hw),
            )
    if v.category == "infrastructure" and _CUDA_CALL_FAILED.search(root):
        oom = next((ln for ln in rest[:_AFTER_NEAR] if _OOM.search(ln)), None)
        if oom is not None:  # NCCL's "unhandled cuda error ... Last error: out of memory"
            sig = kb.match(oom)
            return replace(
                v,
                category="application",
                kind=sig.kind if sig is not None and sig.category == "application" else "oom_cuda",
                confidence=0.8,
                method=f"{v.method}+evidence",
                signature=sig,
                evidence=(root, oom),
            )
    if v.category == "infrastructure" and _TIMEOUT.search(root):
        near = [*before[-_BEFORE_NEAR:], *rest]
        fabric = fabric_evidence([*before[-_BEFORE_HW:], *rest])
        if fabric is not None:
            return replace(v, evidence=(*v.evidence[:1], fabric, *v.evidence[1:4]))
        behind = behind_evidence([root, *near])
        if behind is not None:
            return replace(
                v,
                category="application",
                kind="slow_rank_timeout",
                confidence=0.75,
                method=f"{v.method}+evidence",
                evidence=(root, behind) if behind != root else (root,),
            )
    return v

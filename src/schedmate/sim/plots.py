"""PNG plots of simulation results: JCT CDFs, queue length and GPU utilisation over time.

matplotlib is optional (`pip install schedmate[plot]`); it is imported only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from schedmate.core.errors import ConfigError, InputError
from schedmate.sim.engine import SimResult

__all__ = ["plot_results"]


def plot_results(results: Sequence[SimResult], out_dir: str | Path, title: str = "") -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("plots need matplotlib: pip install 'schedmate[plot]'") from None
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"--plot {out}: exists and is not a directory (plots are written into a directory)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--plot {out}: cannot create the directory ({e.strerror})") from None
    files: list[Path] = []

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in results:
        jct = np.sort([j.end - j.submit for j in r.finished()])
        if len(jct):
            ax.plot(np.maximum(jct, 1.0), np.arange(1, len(jct) + 1) / len(jct), label=r.policy)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"JCT CDF {title}".strip())
    ax.grid(alpha=0.3)
    ax.legend()
    files.append(out / "jct_cdf.png")
    fig.tight_layout()
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for r in results:
        if not r.timeline:
            continue
        t = np.array([x[0] for x in r.timeline]) / 3600.0
        a1.plot(t, [x[2] for x in r.timeline], label=r.policy, lw=0.8)
        a2.plot(t, [x[1] / r.capacity for x in r.timeline], label=r.policy, lw=0.8)
    a1.set_ylabel("pending jobs")
    a2.set_ylabel("GPU utilisation")
    a2.set_xlabel("time (h)")
    a1.legend()
    a1.grid(alpha=0.3)
    a2.grid(alpha=0.3)
    a1.set_title(f"Queue and utilisation {title}".strip())
    files.append(out / "queue_util.png")
    fig.tight_layout()
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)
    return files

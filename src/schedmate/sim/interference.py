"""GPU co-location interference: how much a job slows down when packed with another.

Jobs are put in Lucid's three sharing classes (0 share freely, 1 share with care, 2 do not
share). The model is a table fitted on measured co-located pairs (Lucid's profiling data,
`../shared/data/interference`): for every ordered class pair (a, b), the slowdown of a job
of class a next to a job of class b (1 / normalised speed, at least 1: packing never
speeds a job up). Policies see the cell's mean (`expected`); the engine draws the actual
slowdown of each packed pair from the cell's measured distribution (`sample`), so a pair
the table calls harmless can still turn out slow, which is what the tracker detects.

The fitted table ships as `_interference_table.py` (so the simulator works without the
shared data); regenerate it with `python -m schedmate.sim.interference DIR`.
"""

from __future__ import annotations

import csv
import json
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedmate.core.errors import InputError
from schedmate.inputs import MAX_CONFIG_BYTES, read_text

__all__ = ["InterferenceModel", "N_CLASSES", "DEFAULT_CLASS", "QUANTILES"]

N_CLASSES = 3
DEFAULT_CLASS = 1  # a job whose trace says nothing about its GPU use: "share with care"
QUANTILES = tuple(i / 20 for i in range(21))  # 0, 5%, ..., 100%


def _quantiles(values: list[float]) -> tuple[float, ...]:
    v = sorted(values)
    out = []
    for q in QUANTILES:
        pos = q * (len(v) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(v) - 1)
        out.append(round(v[lo] + (v[hi] - v[lo]) * (pos - lo), 4))
    return tuple(out)


@dataclass(frozen=True)
class InterferenceModel:
    """`mean[a][b]`: expected slowdown of class a packed with class b; `quantiles[a][b]`:
    the measured slowdown distribution of that cell; `fit_error`: how well the table
    predicts single measured pairs (mean absolute error, in-sample and 5-fold CV)."""

    mean: tuple[tuple[float, ...], ...]
    quantiles: tuple[tuple[tuple[float, ...], ...], ...]
    n_pairs: tuple[tuple[int, ...], ...]
    fit_error: dict[str, float]
    source: str = ""

    def expected(self, a: int, b: int) -> float:
        return self.mean[a][b]

    def sample(self, a: int, b: int, rng: random.Random) -> float:
        """An actual slowdown of class a next to class b, drawn from the measured cell."""
        qs = self.quantiles[a][b]
        pos = rng.random() * (len(qs) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(qs) - 1)
        return qs[lo] + (qs[hi] - qs[lo]) * (pos - lo)

    # -- fitting and persistence -------------------------------------------------------------
    @classmethod
    def fit(cls, directory: str | Path, *, folds: int = 5, seed: int = 0) -> InterferenceModel:
        """Fit the class table from `single_data.csv` (sharing labels) and `colocate_info.csv`."""
        d = Path(directory)
        labels: dict[tuple[str, ...], int] = {}
        single = read_text(d / "single_data.csv", what="interference data", max_bytes=MAX_CONFIG_BYTES)
        pairs = read_text(d / "colocate_info.csv", what="interference data", max_bytes=MAX_CONFIG_BYTES)
        try:
            for no, r in enumerate(csv.DictReader(single.splitlines()), 2):
                try:
                    labels[(r["model"], r["dataset"], r["batchsize"], r["amp"])] = int(r["label"])
                except (KeyError, ValueError):
                    raise InputError(
                        f"{d / 'single_data.csv'}:{no}: expected model,dataset,batchsize,amp,...,label"
                    ) from None
            samples: list[tuple[int, int, float]] = []  # class, partner class, slowdown
            for no, r in enumerate(csv.DictReader(pairs.splitlines()), 2):
                try:
                    a = labels[(r["model1"], r["dataset1"], r["batchsize1"], r["amp1"])]
                    b = labels[(r["model2"], r["dataset2"], r["batchsize2"], r["amp2"])]
                    s1, s2 = float(r["speed1"]), float(r["speed2"])
                    if not (0 < s1 < float("inf") and 0 < s2 < float("inf")):
                        raise ValueError(r["speed1"])
                except (KeyError, ValueError):
                    raise InputError(
                        f"{d / 'colocate_info.csv'}:{no}: a pair with an unknown workload or speed"
                    ) from None
                samples.append((a, b, 1.0 / min(s1, 1.0)))
                samples.append((b, a, 1.0 / min(s2, 1.0)))
        except csv.Error as exc:
            raise InputError(f"{d}: malformed interference CSV: {exc}") from None
        if not samples:
            raise InputError(f"{d}: no co-located pairs")

        def cells(rows: list[tuple[int, int, float]]) -> list[list[list[float]]]:
            out: list[list[list[float]]] = [[[] for _ in range(N_CLASSES)] for _ in range(N_CLASSES)]
            for a, b, s in rows:
                out[a][b].append(s)
            return out

        def mae(train: list[tuple[int, int, float]], test: list[tuple[int, int, float]]) -> float:
            c = cells(train)
            overall = statistics.fmean(s for _, _, s in train)
            return statistics.fmean(
                abs(s - (statistics.fmean(c[a][b]) if c[a][b] else overall)) for a, b, s in test
            )

        full = cells(samples)
        missing = [(a, b) for a in range(N_CLASSES) for b in range(N_CLASSES) if not full[a][b]]
        if missing:
            raise InputError(f"{d}: no measured pairs for class pairs {missing}")
        order = list(range(len(samples) // 2))  # folds split measured pairs, not their two sides
        random.Random(seed).shuffle(order)
        cv = []
        for k in range(folds):
            held = {p for i, p in enumerate(order) if i % folds == k}
            train = [s for i, s in enumerate(samples) if i // 2 not in held]
            test = [s for i, s in enumerate(samples) if i // 2 in held]
            cv.append(mae(train, test))
        overall = statistics.fmean(s for _, _, s in samples)
        err = {
            "mae_in_sample": round(mae(samples, samples), 4),
            "mae_cv": round(statistics.fmean(cv), 4),
            "mae_constant": round(statistics.fmean(abs(s - overall) for _, _, s in samples), 4),
            "mean_slowdown": round(overall, 4),
            "n_samples": len(samples),
        }
        return cls(
            tuple(
                tuple(round(statistics.fmean(full[a][b]), 4) for b in range(N_CLASSES))
                for a in range(N_CLASSES)
            ),
            tuple(tuple(_quantiles(full[a][b]) for b in range(N_CLASSES)) for a in range(N_CLASSES)),
            tuple(tuple(len(full[a][b]) for b in range(N_CLASSES)) for a in range(N_CLASSES)),
            err,
            source=str(d.name),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "quantiles": self.quantiles,
            "n_pairs": self.n_pairs,
            "fit_error": self.fit_error,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> InterferenceModel:
        return cls(
            tuple(tuple(r) for r in obj["mean"]),
            tuple(tuple(tuple(q) for q in r) for r in obj["quantiles"]),
            tuple(tuple(r) for r in obj["n_pairs"]),
            dict(obj["fit_error"]),
            obj.get("source", ""),
        )

    @classmethod
    def shipped(cls) -> InterferenceModel:
        """The table fitted on Lucid's measurements, shipped with the package."""
        from schedmate.sim._interference_table import TABLE

        return cls.from_dict(TABLE)

    @staticmethod
    def constant(slowdown: float) -> InterferenceModel:
        """Every pair slows down by exactly `slowdown` (tests, what-if studies)."""
        row = tuple(slowdown for _ in range(N_CLASSES))
        q = tuple(tuple((slowdown,) * len(QUANTILES) for _ in range(N_CLASSES)) for _ in range(N_CLASSES))
        return InterferenceModel(
            tuple(row for _ in range(N_CLASSES)),
            q,
            ((0,) * N_CLASSES,) * N_CLASSES,
            {},
            source=f"constant {slowdown}",
        )


def _write_table(model: InterferenceModel, path: Path) -> None:
    d = model.to_dict()
    rows = [f' "{k}": {json.dumps(d[k])},' for k in ("mean", "n_pairs", "fit_error", "source")]
    rows.append(' "quantiles": [')
    rows += [f"  [{', '.join(json.dumps(q) for q in row)}]," for row in d["quantiles"]]
    body = "{\n" + "\n".join(rows) + "\n ],\n}"
    path.write_text(
        '"""Interference table fitted by `python -m schedmate.sim.interference` (generated; do not edit)."""\n\n'
        f"TABLE = {body}\n"
    )


if __name__ == "__main__":  # python -m schedmate.sim.interference ../shared/data/interference
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/data/interference")
    m = InterferenceModel.fit(src)
    _write_table(m, Path(__file__).with_name("_interference_table.py"))
    print("expected slowdown (row: job class, column: partner class):")
    for a, row in enumerate(m.mean):
        print(f"  {a}: " + "  ".join(f"{x:.3f}" for x in row) + f"   pairs {m.n_pairs[a]}")
    print(f"fit error: {m.fit_error}")

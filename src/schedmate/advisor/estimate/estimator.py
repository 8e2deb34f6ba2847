"""Duration prediction with an interval from similar past jobs, and the cold-start fallbacks.

Order (the answer says which one answered):
1. `knn` / `knn-scaled`: neighbours above a similarity threshold; each neighbour's duration
   is scaled by the ratio of work (samples x per-sample cost / GPUs) between the new job and
   it. Candidate scalings (proportional; affine with a start-up cost fitted on the neighbours;
   affine with the framework's start-up cost learned across the history; each with GPU-scaling
   exponents 0 / 0.5 / 1) are scored by leave-one-out error on the neighbours themselves and
   averaged (in log) with weights 1 / error; the weighted error plus the candidates' disagreement
   sets the interval's width. One or two neighbours cannot score them: see `_few`.
2. `metadata`: work units / a throughput calibrated on the whole history (median ratio).
3. `user-history`: the same user's past jobs (same GPU count and similar name first).
4. `prior`: the median of all stored durations.
"""

from __future__ import annotations

import difflib
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from schedmate.advisor.history.base import JobRecord, Neighbor
from schedmate.advisor.metadata import WorkloadMetadata

__all__ = [
    "Prediction",
    "DurationEstimator",
    "work_units",
    "similar_names",
    "Z90",
]

Z90 = 1.2815515655446004  # standard normal quantile of 0.9
_SIGMA_FLOOR = 0.12  # run-to-run noise of identical jobs, in log space
_DEFAULT_PRIOR_S = 3600.0


@dataclass(frozen=True)
class Prediction:
    p10_s: float | None
    p50_s: float | None
    p90_s: float | None
    method: str
    neighbors: tuple[Neighbor, ...] = ()
    detail: str = ""
    extra: Mapping[str, float] = field(default_factory=dict)


def _samples(m: WorkloadMetadata) -> float | None:
    if m.max_samples:
        return float(m.max_samples)
    if m.max_steps and m.global_batch_size:
        return float(m.max_steps * m.global_batch_size)
    if m.epochs and m.dataset_size:
        return float(m.epochs * m.dataset_size)
    return None


def _factors(m: WorkloadMetadata, size: Mapping[str, float]) -> dict[str, float]:
    """Multiplicative work factors that are known for this job."""
    f: dict[str, float] = {}
    s = _samples(m)
    if s:
        f["samples"] = s
    else:
        if m.max_steps:
            f["steps"] = float(m.max_steps)
        if m.epochs:
            f["epochs"] = float(m.epochs)
        if m.dataset_size:
            f["dataset"] = float(m.dataset_size)
        if m.global_batch_size and m.max_steps:
            f["batch"] = float(m.global_batch_size)
    if m.param_count:
        f["params"] = float(m.param_count)
    elif size.get("width"):
        f["width2"] = float(size["width"]) ** 2 * float(size.get("depth", 1.0))
    if m.seq_len:
        f["seq"] = float(m.seq_len)
    if m.image_size:
        f["pixels"] = float(m.image_size) ** 2
    return f


_WORK_KEYS = {"samples", "steps", "epochs", "dataset"}


def work_units(m: WorkloadMetadata, size: Mapping[str, float]) -> float | None:
    """Samples x per-sample cost, when both the amount of data and the model size are known."""
    f = _factors(m, size)
    samples = f.get("samples")
    cost = f.get("params") or f.get("width2")
    if not samples or not cost:
        return None
    return samples * cost * f.get("seq", 1.0) * (f.get("pixels", 1.0) / 1024.0)


def _ratio(q: dict[str, float], n: dict[str, float]) -> float:
    r = 1.0
    for k, v in q.items():
        if k in n and n[k] > 0 and v > 0:
            r *= v / n[k]
    return r


def _gpus(m: WorkloadMetadata | None, rec: JobRecord | None = None) -> float:
    g = (m.n_gpus if m is not None else None) or (rec.n_gpus if rec is not None else None) or 1
    return float(max(1, g))


def similar_names(records: Sequence[JobRecord], name: str, threshold: float = 0.8) -> list[JobRecord]:
    """Records whose job name is at least `threshold` similar to `name` (difflib ratio; Lucid's test)."""
    return [r for r in records if r.name and difflib.SequenceMatcher(None, r.name, name).ratio() >= threshold]


def _wquantile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    pairs = sorted(zip(values, weights, strict=True))
    total = sum(w for _, w in pairs)
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= q * total:
            return v
    return pairs[-1][0]


@dataclass
class _Model:
    name: str
    alpha: float  # GPU scaling exponent
    affine: bool  # start-up cost fitted on the neighbours themselves
    startup: bool = False  # start-up cost of the framework, learned across programs (calibrate)


_ALPHAS = (0.0, 0.5, 1.0)
_MODELS = (
    [_Model(f"prop-g{a}", a, False) for a in _ALPHAS]
    + [_Model(f"affine-g{a}", a, True) for a in _ALPHAS]
    + [_Model(f"startup-g{a}", a, False, True) for a in _ALPHAS]
)
_PROP_G1 = _MODELS[2]


class DurationEstimator:
    """Turns neighbours (or their absence) into p10/p50/p90 and the name of the method used."""

    def __init__(
        self,
        *,
        min_similarity: float = 0.8,
        k: int = 10,
        calibration: Mapping[str, float] | None = None,
        combine: str = "average",
    ) -> None:
        self.min_similarity = min_similarity
        self.k = k
        self.calibration = dict(calibration or {})
        self.combine = combine  # "average" the candidate scalings, or use the "best" one only

    def startup_s(self, meta: WorkloadMetadata) -> float | None:
        """Fixed cost of a run of this framework (interpreter, imports, set-up), learned by `calibrate`."""
        c = self.calibration.get(f"startup_s:{meta.framework}") if meta.framework else None
        return c if c is not None else self.calibration.get("startup_s")

    # -- knn -------------------------------------------------------------------------------
    def _predict_one(
        self,
        model: _Model,
        qf: dict[str, float],
        qg: float,
        train: list[tuple[dict[str, float], float, float, float]],
        startup: float | None = None,
    ) -> float | None:
        """Median-of-neighbours prediction; train rows are (factors, gpus, duration, weight)."""
        if not train:
            return None
        if model.startup:
            if not startup:
                return None
            # d = c + v * work: only the part above the start-up cost scales (c at most 90% of a neighbour)
            preds = []
            for f, g, d, _ in train:
                c = min(startup, 0.9 * d)
                preds.append(c + (d - c) * _ratio(qf, f) * (g / qg) ** model.alpha)
            return _wquantile(preds, [w for *_, w in train], 0.5)
        if model.affine:
            # d = c + b * w, fitted on the neighbours: Theil-Sen slope, median intercept
            xs = [_ratio(f, qf) * (qg / g) ** model.alpha for f, g, _, _ in train]  # effective work w_i / w_q
            ys = [d for _, _, d, _ in train]
            slopes = [
                (ys[j] - ys[i]) / (xs[j] - xs[i])
                for i in range(len(xs))
                for j in range(i + 1, len(xs))
                if abs(xs[j] - xs[i]) > 1e-6 * max(abs(xs[i]), 1e-12)
            ]
            if len(slopes) < 1:
                return None
            b = max(0.0, statistics.median(slopes))
            c = max(0.0, statistics.median(y - b * x for x, y in zip(xs, ys, strict=True)))
            return float(c + b * 1.0)
        preds = [d * _ratio(qf, f) * (g / qg) ** model.alpha for f, g, d, _ in train]
        return _wquantile(preds, [w for *_, w in train], 0.5)

    def _knn(
        self, meta: WorkloadMetadata, size: Mapping[str, float], neighbors: Sequence[Neighbor]
    ) -> Prediction | None:
        close = [
            n
            for n in neighbors
            if n.similarity >= self.min_similarity
            and n.record.duration_s
            and n.record.duration_s > 0
            and n.record.metadata is not None
        ][: self.k]
        qf = _factors(meta, size)
        # a neighbour whose amount of work is stated in other terms (epochs x data vs steps) cannot be
        # scaled to this job: it is similar text, not similar work
        work_keys = set(qf) & _WORK_KEYS
        if work_keys:
            close = [
                n
                for n in close
                if n.record.metadata is not None
                and work_keys & set(_factors(n.record.metadata, n.record.size))
            ]
        if not close:
            return None
        qg = _gpus(meta)
        rows = [
            (_factors(m, n.record.size), _gpus(m, n.record), float(d), max(1e-3, n.similarity) ** 4)
            for n in close
            if (m := n.record.metadata) is not None and (d := n.record.duration_s) is not None
        ]
        scalable = any(_ratio(qf, f) != 1.0 or g != qg for f, g, _, _ in rows)
        startup = self.startup_s(meta)
        top_sim = close[0].similarity
        widen = 1.0 + 2.0 * max(0.0, 0.98 - top_sim)
        method = "knn-scaled" if scalable else "knn"
        # leave-one-out error of each candidate model on the neighbours themselves
        scored: list[tuple[float, _Model, float]] = []  # (mean squared log error, model, prediction)
        if len(rows) >= 3:
            for model in _MODELS:
                errs: list[float] = []
                for i, (f, g, d, _w) in enumerate(rows):
                    pred = self._predict_one(model, f, g, rows[:i] + rows[i + 1 :], startup)
                    if pred is None or pred <= 0:
                        break
                    errs.append(math.log(d / pred))
                if len(errs) < len(rows):
                    continue
                p = self._predict_one(model, qf, qg, rows, startup)
                if p is not None and p > 0:
                    scored.append((statistics.fmean(e * e for e in errs), model, p))
        if not scored:
            return self._few(qf, qg, rows, widen, method, tuple(close))
        if self.combine == "best":
            scored = [min(scored, key=lambda t: t[0])]
        # models weighted by how well they predicted the neighbours (inverse leave-one-out error);
        # the spread is the weighted error plus the models' disagreement
        ws = [1.0 / (mse + _SIGMA_FLOOR**2) for mse, _, _ in scored]
        total = sum(ws)
        log_p50 = sum(w * math.log(p) for w, (_, _, p) in zip(ws, scored, strict=True)) / total
        mse = (
            sum(w * (m + (math.log(p) - log_p50) ** 2) for w, (m, _, p) in zip(ws, scored, strict=True))
            / total
        )
        p50 = math.exp(log_p50)
        sigma = math.sqrt(mse + _SIGMA_FLOOR**2) * widen
        lead = scored[ws.index(max(ws))][1].name
        return Prediction(
            p50 * math.exp(-Z90 * sigma),
            p50,
            p50 * math.exp(Z90 * sigma),
            method,
            tuple(close),
            detail=f"{len(close)} neighbours, {len(scored)} scalings (best {lead}), log-sigma {sigma:.2f}",
        )

    def _few(
        self,
        qf: dict[str, float],
        qg: float,
        rows: list[tuple[dict[str, float], float, float, float]],
        widen: float,
        method: str,
        close: tuple[Neighbor, ...],
    ) -> Prediction | None:
        """One or two neighbours: how duration scales with work is unknown (start-up cost, sub-linear
        scaling), so bracket it: p50 halfway (in log) between no scaling and proportional scaling,
        the interval spanning both, widened by the neighbours' own spread. (A framework start-up cost
        learned across programs did worse here on the corpus's earlier half: with one neighbour, a
        wrong work ratio is not hedged.)"""
        flat = _wquantile([d for _, _, d, _ in rows], [w for *_, w in rows], 0.5)  # no scaling at all
        prop = self._predict_one(_PROP_G1, qf, qg, rows)  # proportional to work / GPUs
        if not flat or not prop or flat <= 0 or prop <= 0:
            return None
        p50 = math.sqrt(flat * prop)
        logs = [math.log(d) for _, _, d, _ in rows]
        spread = (
            math.sqrt((statistics.pstdev(logs) if len(logs) > 1 else 0.0) ** 2 + _SIGMA_FLOOR**2 + 0.2**2)
            * widen
        )
        lo, hi = min(flat, prop), max(flat, prop)
        return Prediction(
            min(lo, p50) * math.exp(-Z90 * spread),
            p50,
            max(hi, p50) * math.exp(Z90 * spread),
            method,
            close,
            detail=f"{len(rows)} neighbour(s): between unscaled and proportional scaling",
        )

    # -- fallbacks -------------------------------------------------------------------------
    def _metadata(self, meta: WorkloadMetadata, size: Mapping[str, float]) -> Prediction | None:
        w = work_units(meta, size)
        rate = self.calibration.get("rate")
        if not w or not rate:
            return None
        p50 = self.calibration.get("overhead_s", 0.0) + w / (rate * _gpus(meta) ** 0.5)
        sigma = max(0.3, self.calibration.get("sigma", 1.0))
        return Prediction(
            p50 * math.exp(-Z90 * sigma),
            p50,
            p50 * math.exp(Z90 * sigma),
            "metadata",
            detail=f"work {w:.3g} units at a calibrated {rate:.3g} units/s",
        )

    @staticmethod
    def _user(
        user: str | None, name: str | None, n_gpus: int | None, past: Sequence[JobRecord]
    ) -> Prediction | None:
        done = [r for r in past if r.duration_s and r.duration_s > 0]
        if not user or not done:
            return None
        pool = [r for r in done if n_gpus is None or r.n_gpus == n_gpus] or done
        if name:
            pool = similar_names(pool, name) or pool
        logs = sorted(math.log(r.duration_s) for r in pool)  # type: ignore[arg-type]
        mid = statistics.median(logs)
        sigma = max(0.5, statistics.pstdev(logs) if len(logs) > 1 else 1.0)
        p50 = math.exp(mid)
        return Prediction(
            p50 * math.exp(-Z90 * sigma),
            p50,
            p50 * math.exp(Z90 * sigma),
            "user-history",
            detail=f"{len(pool)} past jobs of user {user}",
        )

    @staticmethod
    def _prior(durations: Sequence[float]) -> Prediction:
        ds = [d for d in durations if d > 0]
        if not ds:
            p50 = _DEFAULT_PRIOR_S
            return Prediction(p50 / 10, p50, p50 * 10, "prior", detail="empty history: a fixed guess")
        logs = [math.log(d) for d in ds]
        p50 = math.exp(statistics.median(logs))
        q = statistics.quantiles(logs, n=10) if len(logs) >= 2 else [logs[0] - 1, logs[0] + 1]
        return Prediction(
            math.exp(q[0]), p50, math.exp(q[-1]), "prior", detail=f"median of {len(ds)} past jobs"
        )

    def predict(
        self,
        meta: WorkloadMetadata,
        size: Mapping[str, float],
        neighbors: Sequence[Neighbor],
        *,
        user: str | None = None,
        name: str | None = None,
        user_jobs: Callable[[], Sequence[JobRecord]] = tuple,
        durations: Callable[[], Sequence[float]] = tuple,
    ) -> Prediction:
        """`user_jobs` and `durations` are fetched only when the fallbacks need them (store reads)."""
        p: Prediction | None = self._knn(meta, size, neighbors)
        if p is None:
            p = self._metadata(meta, size)
        if p is None and user:
            p = self._user(user, name, meta.n_gpus, user_jobs())
        if p is not None:
            return (
                p
                if p.neighbors
                else Prediction(p.p10_s, p.p50_s, p.p90_s, p.method, tuple(neighbors[:3]), p.detail)
            )
        p = self._prior(durations())
        return Prediction(p.p10_s, p.p50_s, p.p90_s, p.method, tuple(neighbors[:3]), p.detail)

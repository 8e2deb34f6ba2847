"""Duration estimators (plug-ins): what a policy believes a job will take.

- `oracle`: the true duration (upper bound of any estimator).
- `noisy`: the true duration times a log-normal error, or errors drawn from a file of
  relative errors (what the Advisor's benchmark measured).
- `history`: Lucid's naive estimator: mean duration of the same user's finished jobs in the
  same virtual cluster (then the VC's, then the global mean), learned online.
- `file`: predictions by job id from a CSV/JSONL (`job_id,estimate_s`), e.g. the Advisor's.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from schedmate.core.errors import ConfigError, InputError
from schedmate.inputs import read_text

MAX_PREDICTIONS_BYTES = 256 * 1024 * 1024  # a predictions or errors file (read whole)

if TYPE_CHECKING:
    from schedmate.sim.engine import JobState

__all__ = [
    "Estimator",
    "OracleEstimator",
    "NoisyEstimator",
    "HistoryEstimator",
    "FileEstimator",
    "make_estimator",
    "DEFAULT_ESTIMATORS",
    "default_estimator",
]


class Estimator(Protocol):
    name: str

    def estimate(self, job: JobState) -> float: ...

    def observe(self, job: JobState) -> None: ...


class OracleEstimator:
    name = "oracle"

    def estimate(self, job: JobState) -> float:
        return job.duration

    def observe(self, job: JobState) -> None:
        return None


class NoisyEstimator:
    """duration x exp(N(0, sigma)), or x (1 + e) with e drawn from measured relative errors."""

    def __init__(self, sigma: float = 0.7, seed: int = 0, errors: list[float] | None = None) -> None:
        self.sigma = sigma
        self.rng = random.Random(seed)
        self.errors = errors
        self.name = f"noisy({'file' if errors else f'sigma={sigma}'})"

    def estimate(self, job: JobState) -> float:
        if self.errors:
            return max(job.duration * (1.0 + self.rng.choice(self.errors)), 1.0)
        return job.duration * math.exp(self.rng.gauss(0.0, self.sigma))

    def observe(self, job: JobState) -> None:
        return None


class HistoryEstimator:
    """Lucid's naive estimator, learned online from jobs that finished before this one."""

    name = "history"

    def __init__(self, prior_s: float = 3600.0) -> None:
        self.prior_s = prior_s
        self.stats: dict[tuple[str, ...], tuple[float, int]] = {}

    def estimate(self, job: JobState) -> float:
        for key in ((job.user, job.vc, str(job.gpus)), (job.user, job.vc), (job.vc,), ()):
            s = self.stats.get(key)
            if s is not None:
                return s[0] / s[1]
        return self.prior_s

    def observe(self, job: JobState) -> None:
        self.learn(job.user, job.vc, job.gpus, job.duration)

    def learn(self, user: str, vc: str, gpus: int, duration: float) -> None:
        """One finished job (also: what a live cluster's history already knows)."""
        for key in ((user, vc, str(gpus)), (user, vc), (vc,), ()):
            total, n = self.stats.get(key, (0.0, 0))
            self.stats[key] = (total + duration, n + 1)


class FileEstimator:
    def __init__(self, path: str | Path, fallback: Estimator | None = None) -> None:
        p = Path(path)
        self.name = f"file({p.name})"
        self.fallback = fallback or HistoryEstimator()
        self.values: dict[str, float] = {}
        lines = read_text(p, what="predictions", max_bytes=MAX_PREDICTIONS_BYTES).splitlines()
        for no, line in enumerate(lines, 1):
            if not line.strip() or line.startswith(("#", "job_id")):
                continue
            try:
                if line.lstrip().startswith("{"):
                    obj = json.loads(line)
                    jid, val = str(obj["job_id"]), float(obj.get("estimate_s", obj.get("p50_s")))
                else:
                    jid, raw = line.split(",")[:2]
                    val = float(raw)
            except (ValueError, KeyError, TypeError, RecursionError):
                raise InputError(
                    f"{p}:{no}: expected job_id,estimate_s (or JSON with job_id, estimate_s)"
                ) from None
            if not math.isfinite(val) or val <= 0:
                raise InputError(f"{p}:{no}: estimate must be a positive number")
            self.values[jid.strip()] = val

    def estimate(self, job: JobState) -> float:
        v = self.values.get(job.job_id)
        return v if v is not None else self.fallback.estimate(job)

    def observe(self, job: JobState) -> None:
        self.fallback.observe(job)


def make_estimator(spec: str, seed: int = 0) -> Estimator:
    """`oracle`, `history`, `noisy`, `noisy:0.5` (sigma), `noisy:errors.txt`, `file:preds.csv`."""
    name, _, arg = spec.partition(":")
    if name == "oracle":
        return OracleEstimator()
    if name == "history":
        return HistoryEstimator()
    if name == "noisy":
        if not arg:
            return NoisyEstimator(seed=seed)
        try:
            sigma = float(arg)
        except ValueError:
            p = Path(arg)
            text = read_text(p, what="estimate errors", max_bytes=MAX_PREDICTIONS_BYTES)
            try:
                errs = [float(x) for x in text.split() if x.strip()]
            except ValueError:
                raise InputError(f"{p}: expected relative errors, one number per line") from None
            if not errs or not all(math.isfinite(e) and e > -1.0 for e in errs):
                raise InputError(
                    f"{p}: expected relative errors > -1 (finite), one number per line"
                ) from None
            return NoisyEstimator(seed=seed, errors=errs)
        if not math.isfinite(sigma) or not 0 <= sigma <= 10:
            # (sigma 10 already draws factors of e^±30 at 3 sigma; larger ones overflow a float)
            raise ConfigError(f"estimator '{spec}': sigma must be a number from 0 to 10")
        return NoisyEstimator(sigma=sigma, seed=seed)
    if name == "file" and arg:
        return FileEstimator(arg)
    raise ConfigError(
        f"unknown estimator '{spec}'; valid: oracle, history, noisy[:sigma|:errors_file], file:PATH"
    )


# the estimator each policy uses unless told otherwise (what it would have in practice)
DEFAULT_ESTIMATORS = {
    "fifo": "oracle",
    "sjf": "history",
    "srtf": "oracle",
    "tiresias": "oracle",
    "qssf": "history",
    "semantic": "noisy",
    "lucid": "history",
    "semantic-pack": "noisy",
}


def default_estimator(policy: str, semantics: str = "default") -> str:
    """Lucid's SJF keys on the true duration: under `--semantics lucid` it is an oracle."""
    if policy == "sjf" and semantics.split(",")[0].strip() == "lucid":
        return "oracle"
    return DEFAULT_ESTIMATORS.get(policy, "oracle")

"""Failure injection for the simulator (off unless a `FailureModel` is given).

- Infrastructure failures (node, GPU, network): a Poisson process of `infra_per_gpu_h`
  failures per GPU-hour of running. Default 1.5e-5: Llama 3's 405B training saw 419
  unexpected interruptions in 54 days on 16,384 GPUs, ~78% of them hardware
  (Dubey et al. 2024, section 3.3.4), i.e. 419 x 0.78 / (54 x 24 x 16,384) per GPU-hour.
- Application failures (a bug, a bad config, OOM): a job's run ends in failure at the end
  of its recorded duration (a trace's duration of a failed job is its time to failure).
  Which jobs fail comes from the trace's status column when it records failed jobs
  (Helios `final_status`, Alibaba `pod_phase`), otherwise from `app_prob` per job. Default
  0.25: the failed fraction of the shipped traces that record a status (Helios slice 26%,
  Alibaba 2023 pods 23%).

What happens next is the policy's `failure_aware` flag, applied by the engine: classic
policies cannot tell the two kinds apart; they resubmit an infrastructure-failed job from
scratch at the tail of the queue and retry an application failure `blind_retries` times
(it fails again at the same point). A failure-aware policy (semantic: the Failure
Analyzer classified the log) requeues an infrastructure failure at the head of the queue
from its last checkpoint (every `checkpoint_s` seconds of progress) and does not retry an
application failure.

Either way a job is requeued after an infrastructure failure only while it keeps progress:
after `max_requeues` failures in a row that kept nothing (every failure of a job restarted
from scratch; a checkpointed job's failures before its next checkpoint) it ends failed, as
Slurm ends a job after `MaxBatchRequeue` (default 5) requeues. Without the cap a long job on
a failure-prone allocation (a mean time between failures far below its duration) would be
requeued forever.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from schedmate.core.errors import ConfigError

__all__ = ["FailureModel"]


_BOOLS = ("1", "0", "true", "false", "yes", "no")


@dataclass(frozen=True)
class FailureModel:
    infra_per_gpu_h: float = 1.5e-5
    app_prob: float = 0.25
    checkpoint_s: float = 1800.0
    blind_retries: int = 1
    max_requeues: int = 5
    use_trace_status: bool = True
    seed: int = 0
    # scripted infrastructure failures (job_id, time): the job fails then if it is running (tests, replays)
    scripted: tuple[tuple[str, float], ...] = ()

    @classmethod
    def parse(cls, spec: str) -> FailureModel:  # noqa: C901 (one check per field)
        """`on` (the documented defaults) or `infra=1e-4,app=0.1,checkpoint=600,retries=0,requeues=5,seed=1`."""
        spec = spec.strip()
        if spec in ("on", "default", ""):
            return cls()
        names = {
            "infra": "infra_per_gpu_h",
            "app": "app_prob",
            "checkpoint": "checkpoint_s",
            "retries": "blind_retries",
            "requeues": "max_requeues",
            "seed": "seed",
            "trace_status": "use_trace_status",
        }
        types = {f.name: f.type for f in fields(cls)}
        out = cls()
        for part in spec.split(","):
            k, _, v = part.partition("=")
            name = names.get(k.strip())
            if name is None or not v.strip():
                raise ConfigError(f"failure spec '{spec}': '{part}' is not one of {', '.join(names)}=VALUE")
            try:
                kind = types[name]
                if kind == "bool" and v.strip().lower() not in _BOOLS:
                    raise ValueError
                val: float | int | bool = (
                    int(v)
                    if kind == "int"
                    else v.strip().lower() in ("1", "true", "yes")
                    if kind == "bool"
                    else float(v)
                )
            except ValueError:
                raise ConfigError(f"failure spec '{spec}': '{part}' has a bad value") from None
            if isinstance(val, float) and not math.isfinite(val):
                raise ConfigError(f"failure spec '{spec}': '{part}' must be a finite number")
            if isinstance(val, float | int) and not isinstance(val, bool) and val < 0:
                raise ConfigError(f"failure spec '{spec}': '{part}' must be >= 0")
            if name == "app_prob" and isinstance(val, float) and val > 1:
                raise ConfigError(f"failure spec '{spec}': '{part}' is a probability (0 to 1)")
            out = replace(out, **{name: val})  # type: ignore[arg-type]  # checked by kind above
        if out.checkpoint_s <= 0:
            raise ConfigError(f"failure spec '{spec}': checkpoint must be > 0 seconds")
        return out

"""Policy semantics: the modelling choices behind a simulated scheduler, as explicit parameters.

Two simulators that both say "Tiresias" can disagree by 40% on the same trace because of
choices no paper states: when rounds run, whether a blocked head blocks the queue, where
the demotion threshold lies, what a preemption costs, how nodes are picked. `Semantics`
names each choice; `default` is schedmate's (the better modelling choice, docs/sim.md says
why for each), `lucid` reproduces the Lucid artifact (ASPLOS'23, S-Lab-System-Group/Lucid,
`simulation/policy/*.py`): its 1-s loop for FIFO/SJF with head-of-line blocking and the true
duration as SJF's key, its Tiresias (Pollux's 60-s round, 2 queues split at 18,000 GPU-s,
a greedy GPU quota over running and pending jobs, 40/60 s per preemption, the job's end
seen one tick late) and its consolidating placement (best fit, lowest node first).

Spec syntax (CLI `--semantics`, config `sim.semantics`): a preset name, then overrides,
`lucid` or `default,interval_s=60,tiresias_threshold_gpu_s=18000`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Literal

from schedmate.core.errors import ConfigError

__all__ = ["Semantics", "SEMANTICS", "parse_semantics"]

Round = Literal["heads", "quota"]
Rules = Literal["schedmate", "lucid"]


@dataclass(frozen=True)
class Semantics:
    """Every modelling choice of the engine and the classic policies (docs/sim.md)."""

    # rounds: 0 = a round after every event (exact event-driven); N > 0 = events are batched
    # and each touched virtual cluster runs one round at the next multiple of N seconds
    interval_s: float = 0.0
    # the preemptive policies' rounds (None: interval_s); Lucid/Pollux: 60 s
    preemptive_interval_s: float | None = None
    fifo_backfill: bool = False  # False: head-of-line blocking (strict FIFO)
    sjf_backfill: bool = True  # True: a later job that fits starts when the head does not
    sjf_key: Literal["estimate", "duration"] = "estimate"  # Lucid sorts by the true duration
    tiresias_threshold_gpu_s: float = 8 * 3600.0  # attained GPU-seconds that demote a job
    tiresias_demote_above: bool = False  # demote when strictly above (Lucid) or at the threshold
    # round of preemptive policies: "heads" (start the best head; evict strictly worse running
    # jobs only if that lets it start; else backfill) or "quota" (Lucid/Pollux: walk running and
    # pending jobs in key order, keep or start each that fits a GPU quota, preempt the rest)
    round: Round = "heads"
    preempt_overhead_s: tuple[float, float] = (0.0, 0.0)  # added work per preemption: <= 8 GPUs, more
    end_tick_s: float = 0.0  # preemptive policies: a job's end is seen this much later (Lucid: 1)
    placement_rules: Rules = "schedmate"  # node placement: schedmate (whole nodes) or lucid's consolidate
    key_events: bool = True  # a running job's key change (Tiresias demotion) is an event

    def interval_for(self, preemptive: bool) -> float:
        if preemptive and self.preemptive_interval_s is not None:
            return self.preemptive_interval_s
        return self.interval_s

    def overhead(self, gpus: int) -> float:
        return self.preempt_overhead_s[0] if gpus <= 8 else self.preempt_overhead_s[1]


SEMANTICS: dict[str, Semantics] = {
    "default": Semantics(),
    # the Lucid artifact's rules (never fitted to its numbers: each value is read from its source)
    "lucid": Semantics(
        interval_s=1.0,
        preemptive_interval_s=60.0,
        fifo_backfill=False,
        sjf_backfill=False,
        sjf_key="duration",
        tiresias_threshold_gpu_s=18000.0,
        tiresias_demote_above=True,
        round="quota",
        preempt_overhead_s=(40.0, 60.0),
        end_tick_s=1.0,
        placement_rules="lucid",
        key_events=True,
    ),
}
# the engine before issue 14: a running job's demotion waited for an unrelated event
SEMANTICS["legacy"] = replace(SEMANTICS["default"], key_events=False)


def _parse_value(name: str, raw: str, current: object) -> object:
    raw = raw.strip()
    if isinstance(current, bool):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"semantics: {name} expects true/false, got {raw!r}")
    if isinstance(current, tuple):
        parts = raw.replace("/", ":").split(":")
        vals = tuple(_number(name, p) for p in parts)
        if len(vals) == 1:
            vals = vals * 2
        if len(vals) != 2:
            raise ConfigError(f"semantics: {name} expects SMALL:LARGE seconds, got {raw!r}")
        return vals
    if name == "preemptive_interval_s":
        return None if raw.lower() in ("", "none") else _number(name, raw)
    if isinstance(current, float):
        return _number(name, raw)
    choices = {
        "round": ("heads", "quota"),
        "placement_rules": ("schedmate", "lucid"),
        "sjf_key": ("estimate", "duration"),
    }
    allowed = choices.get(name, ())
    if raw not in allowed:
        raise ConfigError(f"semantics: {name} must be one of {', '.join(allowed)}, got {raw!r}")
    return raw


def _number(name: str, raw: str) -> float:
    try:
        v = float(raw)
    except ValueError:
        raise ConfigError(f"semantics: {name} expects a number, got {raw!r}") from None
    if not math.isfinite(v) or v < 0:
        raise ConfigError(f"semantics: {name} must be a finite number >= 0, got {raw!r}")
    return v


def parse_semantics(spec: str | Semantics | None) -> Semantics:
    """`lucid`, `default`, or a preset followed by `name=value` overrides (comma-separated)."""
    if isinstance(spec, Semantics):
        return spec
    parts = [p.strip() for p in (spec or "default").split(",") if p.strip()]
    if not parts:
        parts = ["default"]
    base_name = parts[0] if "=" not in parts[0] else "default"
    if base_name not in SEMANTICS:
        raise ConfigError(f"unknown semantics '{base_name}'; valid: {', '.join(SEMANTICS)}")
    sem = SEMANTICS[base_name]
    known = {f.name for f in fields(Semantics)}
    for part in parts[1 if "=" not in parts[0] else 0 :]:
        name, eq, raw = part.partition("=")
        name = name.strip()
        if not eq or name not in known:
            raise ConfigError(
                f"semantics: '{part}' is not name=value with a name among {', '.join(sorted(known))}"
            )
        sem = replace(sem, **{name: _parse_value(name, raw, getattr(sem, name))})  # type: ignore[arg-type]
    return sem

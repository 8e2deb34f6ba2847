"""What one printed key and its value mean: the `Candidates` a line's numbers collect into, and
the role a key gives its value (step, loss, step time, a phase of a step, an evaluation metric...),
with units and durations. `parse.py` finds the key/value pairs of a line; this module reads them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from schedmate.tracker.fields import (
    RATE_UNITS,
    THROUGHPUT_WORDS,
    TIME_PER_STEP_UNITS,
    field_for_key,
    is_eval_key,
    key_words,
    lexicon,
    normalise_key,
    split_camel,
)

__all__ = [
    "Candidates",
    "parse_duration",
    "to_float",
    "seconds",
    "apply_rate",
    "resolve_key",
    "apply_kv",
    "RATE_KEY_WORDS",
]


@dataclass(slots=True)
class Candidates:
    """Metric candidates read from one line: field -> (rank, value)."""

    values: dict[str, tuple[int, float]] = field(default_factory=dict)
    throughput: tuple[float, str] | None = None
    total_epochs: int | None = None
    is_bar: bool = False
    is_eval: bool = False
    loss_is_nan: bool = False
    is_summary: bool = False
    n_metrics: int = 0
    eval_metric: bool = False
    eval_context: bool = False  # evaluation by the line's label or section, not only its metrics
    phase_times: list[float] = field(default_factory=list)  # forward_time, data_time...
    n_eval_keys: int = 0
    n_other_keys: int = 0
    components: list[float] = field(default_factory=list)
    generic_time: tuple[int, float] | None = None
    outer_time: tuple[int, float] | None = None
    outer_counter: bool = False
    first_role: str | None = None
    is_summary_line: bool = False
    summary_keys: int = 0  # end-of-run report keys (`train_runtime`...)
    epoch_whole: bool = False  # the epoch written as a whole number in a record (`"epoch": 157`)
    kind_loss: tuple[int, float] | None = None  # a loss named by its kind (`lm loss`)
    aux_components: int = 0  # regulariser terms beside the loss (`load_balancing_loss`, `aux_loss`)
    bare_count: bool = False  # a bar with neither total, description nor postfix
    bar_count: tuple[float, float] | None = None  # a bar's n/total, when its description counts them too
    prose: bool = False  # a counter named inside a sentence (`saving the model at step`)
    stage_label: bool = False  # `Step 5: start training...`: a pipeline stage, not a training step
    units_done: bool = False  # `8 epochs have been completed`: the count of units done so far
    rest: str = ""

    def put(self, name: str, rank: int, value: float) -> None:
        cur = self.values.get(name)
        if cur is None or rank < cur[0]:
            self.values[name] = (rank, value)

    def get(self, name: str) -> float | None:
        cur = self.values.get(name)
        return None if cur is None else cur[1]


_TIMEDELTA_DAYS = re.compile(r"(\d+) days?, (?=\d+:)")


def parse_duration(text: str) -> float | None:
    """`3:56:00` / `1:52:09` / `7h 2m 14s` / `0s` / `250ms` -> seconds."""
    t = text.strip()
    if t[-2:].lower() == "ms":
        ms = to_float(t[:-2])
        return ms / 1000.0 if ms is not None else None
    days = 0.0
    if (td := _TIMEDELTA_DAYS.match(t)) is not None:  # `2 days, 3:04:05`: Python's timedelta
        days, t = float(td[1]) * 86400.0, t[td.end() :]
    if ":" in t:
        parts = t.split(":")
        try:
            nums = [float(p) for p in parts]
        except ValueError:
            return None
        total = 0.0
        for n in nums:
            total = total * 60 + n
        return days + total
    m = re.fullmatch(
        r"(?:(\d+(?:\.\d+)?)d\s*)?(?:(\d+(?:\.\d+)?)h\s*)?(?:(\d+(?:\.\d+)?)m\s*)?(?:(\d+(?:\.\d+)?)s)?", t
    )
    if m and any(m.groups()):
        d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        return d * 86400 + h * 3600 + mi * 60 + s
    return None


_TIME_UNITS = frozenset({"s", "sec", "secs", "seconds", "ms", "us", "µs", "min", "h"})


def to_float(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


_MAX_STEP_S = 1e7
_UNIT_WORDS = {"毫秒": "ms", "秒": "s", "分钟": "min"}


def seconds(value: float, unit: str) -> float:
    u = _UNIT_WORDS.get(unit, unit).lower()
    if u.startswith("ms"):
        return value / 1000.0
    if u.startswith(("us", "µs")):
        return value / 1e6
    if u.startswith("min"):
        return value * 60.0
    if u == "h":
        return value * 3600.0
    return value


def _put_time(c: Candidates, key: str, rank: int, value: float, unit: str) -> None:
    if "(ms)" in key or key.startswith("ms/") or key.endswith("_ms"):
        unit = "ms"
    secs = seconds(value, unit)
    # hours: a simulated time step; over ~4 months: a Unix timestamp, not a duration
    if value > 0 and math.isfinite(value) and unit.lower() != "h" and secs < _MAX_STEP_S:
        c.put("step_time", rank, secs)


def apply_rate(c: Candidates, value: float, unit: str, rank: int) -> None:
    u = unit.lower().replace("sec", "s").replace("second", "s")
    if not (value > 0 and math.isfinite(value)):
        return
    if u.endswith("/epoch"):  # time per epoch: a step time only where the epoch is the counter
        if c.outer_time is None or rank < c.outer_time[0]:
            c.outer_time = (rank, seconds(value, u.split("/")[0]))
        return
    if u in TIME_PER_STEP_UNITS or u.replace("sec", "s") in TIME_PER_STEP_UNITS:
        base = u.split("/")[0]
        c.put("step_time", rank, seconds(value, base))
    elif u in RATE_UNITS:
        c.put("step_time", rank, 1.0 / value)
    elif THROUGHPUT_WORDS.match(u) and c.throughput is None:
        c.throughput = (value, unit)


# a key naming a rate (`fps step and policy inference: 3368`): what it times is not a phase
RATE_KEY_WORDS = frozenset({"fps", "sps"})

_GENERIC = {
    "time",
    "it",
    "batch",
    "steps",
    "ep",
    "update",
    "updates",
    "elapsed",
    "remaining",
    "wall",
    "eta",
    "epochs",
    "iters",
}
_LOG_PREFIX = re.compile(r"(?:info|debug|trace|notice|\W+|[\w.]{1,60}\s+info)", re.I)
_SUMMARY_KEYS = {"train_runtime", "total_flos", "train_samples_per_second", "train_steps_per_second"}


_PAIRED_KEY = re.compile(r"^\s*([^\W\d][\w ]*?)\s*\([^\W\d]\w*\)\s*$")
_RATE_WORDS = {"fps", "sps", "throughput", "speed"}
_PREPOSITIONS = {"at", "after", "before", "for", "from", "to", "of", "in", "on", "until", "since"}
COUNT_SUFFIX = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}  # `step:50K`, a bar's `1.23k/10.0k`
_TOTAL_WORDS = {"total", "max", "maximum", "num", "number"}
_TIME_WORDS = {"time", "t", "ms", "s", "sec", "secs", "cost", "duration"}
_GENERIC_TIME = {
    "avg_time",
    "average_time",
    "mean_time",
    "time",
    "seconds",
    "secs",
    "duration",
    "tiempo",
    "zeit",
    "temps",
    "耗时",
}


_NUMBER_WORD = re.compile(r"\s+(?:no|nr|num|number)\.?\s*$", re.I)  # `Epoch No.`: the epoch's number
_KEY_ASIDE = re.compile(r"\s*\([^()]*\)\s*$")


def resolve_key(c: Candidates, raw_key: str) -> tuple[str, tuple[str, int] | None]:
    """The normalised key and its role; multi-word keys fall back to their shorter suffixes
    (`INFO train loss` -> `train loss`), unless a dropped word is an evaluation word
    (`Validation loss`) or the suffix is a generic word qualified by others (`inference time`)."""
    key = normalise_key(raw_key)
    hit = field_for_key(key)
    if hit is None and (split := split_camel(raw_key)) != raw_key:
        return resolve_key(c, split)  # `AvgTime`, `trainLoss`: words written in camel case
    if hit is None and "(" in raw_key and is_eval_key(key):
        return key, None  # `Loss (val)`: a qualifier naming an evaluation set
    if hit is None and (paired := _PAIRED_KEY.match(raw_key)) is not None:
        return resolve_key(c, paired[1])  # `time (data): 1.6 (0.26)`: the first value is `time`
    if hit is None and (aside := _KEY_ASIDE.search(raw_key)) is not None and aside.start() > 0:
        return resolve_key(c, raw_key[: aside.start()])  # `Mean loss (over 50 steps)`: what it averages
    if hit is None and (numbered := _NUMBER_WORD.search(raw_key)) is not None and numbered.start() > 0:
        return resolve_key(c, raw_key[: numbered.start()])  # `Epoch No. 3`, `Iteration number 40`
    if hit is not None or " " not in raw_key.strip():
        return key, hit
    words = raw_key.lower().split()
    for i in range(1, len(words)):
        suffix = normalise_key(" ".join(words[i:]))
        hit = field_for_key(suffix) if len(suffix) > 1 else None  # not the unit of `timing in s`
        if hit is not None:
            head = " ".join(words[:i])
            if is_eval_key(head):
                return key, None
            if hit[0] in ("loss", "loss_component") and set(head.split()) & lexicon().not_a_loss:
                return key, None  # `Time cost=126.9`, `weight loss: 0.1`: not a loss
            if hit[0] in ("step", "epoch") and "best" in head.split():
                return key, None  # `best iteration = 100`, `bestEpoch: 7`: a summary, not the counter
            if hit[0] == "step" and "job" in head.split():
                return key, None  # `Terminating job step 4411.0`: a scheduler's step of a job, not the loop's
            if hit[0] == "step" and set(head.split()) & _TOTAL_WORDS:
                return key, ("total_steps", 2)  # `Total training steps: 560` is the run's total
            prose = [w for w in head.split() if not _LOG_PREFIX.fullmatch(w)]  # without log levels
            if (
                suffix in _GENERIC
                and prose
                and not _LOG_PREFIX.fullmatch(head)
                and not head.endswith((".", ",", ";"))  # `Epoch 0 ended. Steps: 24`: a new sentence
                and not set(prose) <= lexicon().train_words  # `DEBUG TRAIN Batch 30` is a counter
            ):
                return key, None
            if len(prose) >= 3 or set(prose) & _PREPOSITIONS:
                c.prose = True  # `Checkpoint saved after step`: a sentence about a counter
            return suffix, hit
    return key, None


def apply_kv(c: Candidates, raw_key: str, raw_val: str, unit: str) -> bool:
    unit = unit.strip()
    key, hit = resolve_key(c, raw_key)
    if (
        hit is not None
        and hit[0] in ("step", "loss", "total_if_step")
        and _RATE_WORDS & set(key_words(raw_key))
    ):
        # `fps step: 524282.0`, `fps total: 209712.3`: rates of that work, not a counter or a loss
        val = to_float(raw_val)
        if val is not None and c.throughput is None:
            c.throughput = (val, key)
        return False
    if hit is not None and hit[0] == "step" and "." in raw_val and "/" not in raw_val:
        # `Data 0.001 (0.550) Batch 2.924 (3.850)`: a counter is a whole number; a decimal under
        # `batch` is the batch's time (a meter's current value before its average)
        val = to_float(raw_val)
        if val is not None and val != int(val) and key in ("batch", "bch"):
            c.put("step_time", hit[1] + 4, seconds(val, unit or "s"))
            return True
    if hit is None and "/" in raw_val and " " in raw_key.strip():
        # `Finished training it 306969/306969 of ...`: a counter noun closing a sentence, with a
        # value of a total, counts even where the sentence would make it prose
        last = raw_key.lower().split()[-1]
        if last in lexicon().step_nouns and not is_eval_key(normalise_key(raw_key)):
            key, hit = last, ("step", 4)
    if hit is None and "/" in raw_val and normalise_key(raw_key) in lexicon().train_words:
        key, hit = "step", ("step", 4)  # `Training  [ 510/40000]`: the training loop's count of its total
    if key in _SUMMARY_KEYS:
        c.summary_keys += 1
    if hit is None:
        if is_eval_key(key) and not RATE_KEY_WORDS.intersection(key_words(key)):
            c.n_eval_keys += 1
            words = key_words(key)
            if any(w in lexicon().loss_heads for w in words):
                c.eval_metric = True
            if any(w in lexicon().step_nouns for w in words):
                c.is_eval = c.eval_context = True  # `val step:0`: the counter of an evaluation loop
            return False
        c.n_other_keys += 1
        words = key_words(key)
        if len(words) > 1 and words[-1] in _TIME_WORDS and any(w in lexicon().phase_words for w in words):
            val = to_float(raw_val)
            if val is None and (dur := parse_duration(raw_val)) is not None:
                val, unit = dur, "s"  # `data time: 0.100s`
            if val is not None and val >= 0:  # `forward_time`, `data_time (ms)`: a phase of a step
                c.phase_times.append(seconds(val, "ms" if "ms" in words else unit or "s"))
            return False
        if THROUGHPUT_WORDS.search(key) and ("per_s" in key or "/s" in key or key in ("wps", "tps", "tgs")):
            val = to_float(raw_val)
            if val is not None and c.throughput is None:
                c.throughput = (val, key)
                return True
        return False
    name, rank = hit
    if name in ("loss", "loss_component") and unit.strip() in _TIME_UNITS:
        return False  # `avg_step_cost: 0.0021 sec`: a duration is never a loss
    if c.first_role is None:
        c.first_role = name
    sval = raw_val.strip()
    if name in ("elapsed", "remaining"):
        dur = parse_duration(sval + (unit if unit in ("s", "sec", "h", "min", "ms") else ""))
        if dur is None:
            v = to_float(sval)
            dur = None if v is None else seconds(v, unit or "s")
        if dur is not None:
            c.put(name, rank, dur)
        return dur is not None
    if "/" in sval and ":" not in sval:
        num, _, den = sval.partition("/")
        n, d = to_float(num), to_float(den)
        if n is None or d is None:
            return False
        if name in ("step", "total_steps"):  # (`total timesteps 1200/5000`: done of the total)
            cur = c.values.get("step")
            if cur is not None and cur[0] == rank and cur[1] < n and "total_steps" not in c.values:
                del c.values["step"]  # `step:2, iteration:1300/9000`: the counter printed with its total
            c.put("step", rank, n)
            c.put("total_steps", rank, d)
        elif name in ("epoch", "total_epochs"):
            c.put("epoch", rank, n)
            c.total_epochs = int(d)
        else:
            return False
        return True
    if ":" in sval and (name not in ("step_time", "outer_time") or key in _GENERIC_TIME):
        return False  # a clock (`time: 12:30:45`) unless the key names a step's duration (`dt=00:04:58`)
    val = to_float(sval)
    if val is None:
        dur = parse_duration(sval) if name in ("step_time", "outer_time", "step") else None
        if dur is None:
            return False
        val, unit = dur, "s"  # `iter_time: 0.087s` came in as a duration
        if name == "step":  # `Batch: 1.810s`: a counter noun holding a duration is its time
            name, rank = "step_time", 3
    elif name == "step" and unit in _TIME_UNITS:
        name, rank = "step_time", 3  # `Step: 184 ms` too, with the unit apart from the number
    if name in ("step", "total_steps") and unit in COUNT_SUFFIX:
        val *= COUNT_SUFFIX[unit]  # `step:50K`
    elif name == "step_time" and unit in ("k", "K"):
        val, unit = val * 1e3, ""  # `time_per_iteration_ms: 11.5K`: thousands of the key's unit
    if name == "step" and "e" in sval.lower():
        rank += 8  # `global_step=2.01e+4`: a rounded count yields to an exact one (a bar's 20050)
    if name in ("step", "total_steps", "total_epochs") and not val.is_integer():
        return False  # counters are whole numbers (a fractional epoch is a position)
    if name == "loss" and math.isnan(val):
        c.loss_is_nan = True
        c.put("loss", rank, val)
        return True
    if name == "step_time":
        if key in _GENERIC_TIME:
            if val > 0 and math.isfinite(val) and (c.generic_time is None or rank < c.generic_time[0]):
                c.generic_time = (rank, seconds(val, unit) if "ms" not in key else val / 1000.0)
        else:
            _put_time(c, key, rank, val, unit)
    elif name == "outer_time":
        if val > 0 and math.isfinite(val):
            c.outer_time = (rank, seconds(val, unit or ("min" if key.startswith("min") else "s")))
    elif name == "step_rate":
        if val > 0:
            c.put("step_time", rank + 1, 1.0 / val)
    elif name == "loss_component":
        c.components.append(val)
        if any(w in lexicon().auxiliary_loss_words for w in key_words(key)):
            c.aux_components += 1
    elif name == "loss" and key in lexicon().kind_losses:
        c.kind_loss = (rank, val)
        c.put(name, rank, val)
    elif name == "total_if_step":
        if key == "total" and not val.is_integer() and not unit:
            c.put("loss", 8, val)  # `total=2.147 det=1.91 kd=0.46`: a fractional total is the summed loss
        elif "step" in c.values or "epoch" in c.values:
            c.put("total_steps" if "step" in c.values else "total_epochs", rank, val)
    elif name == "total_epochs":
        if c.total_epochs is None:
            c.total_epochs = int(val)
    else:
        c.put(name, rank, val)
    return True

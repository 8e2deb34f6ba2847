"""Field semantics: which role a printed key plays (step, loss, step time, eval metric...).

The vocabulary lives in `data/tracker_lexicon.json` (a new phrasing costs one entry there).
Keys are normalised (lower case, separators unified) and looked up by exact spelling first;
keys the lexicon does not list are read by their parts: a key whose head noun is a loss
(`iters_average_loss`, `Tot Loss`) is the total loss when every other word is a neutral
modifier (train, total, average...), a loss component otherwise (`loss_cls`, `box_loss`); a
key with an evaluation word (`val`, `test`, `dev`...) is an evaluation metric. Ranks order
the candidates when one line states the same role several ways (lower rank wins).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

__all__ = [
    "normalise_key",
    "split_camel",
    "field_for_key",
    "is_eval_key",
    "key_words",
    "lexicon",
    "Lexicon",
    "RATE_UNITS",
    "TIME_PER_STEP_UNITS",
    "THROUGHPUT_WORDS",
]

_SEP = re.compile(r"[\s\-]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")  # `trainLoss`, `AvgTime`; not `mAP`, `GPU`
_WORD_SPLIT = re.compile(r"[_/.\s\-()]+")
# role tables in lookup order (the first table holding a key decides)
ROLES = (
    "step",
    "total_steps",
    "total_if_step",
    "epoch",
    "total_epochs",
    "loss",
    "step_time",
    "outer_time",
    "step_rate",
    "lr",
    "elapsed",
    "remaining",
    "batch_size",
)


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The loaded vocabulary (see data/tracker_lexicon.json)."""

    tables: tuple[tuple[str, dict[str, int]], ...]
    loss_heads: frozenset[str]
    not_a_loss: frozenset[str]
    total_loss_modifiers: frozenset[str]
    eval_words: frozenset[str]
    eval_headings: frozenset[str]
    summary_words: tuple[str, ...]
    train_words: frozenset[str]
    error_metrics: frozenset[str]
    component_before_loss: frozenset[str]
    loss_function_names: frozenset[str]
    training_set_words: frozenset[str]
    counter_nouns: frozenset[str]
    kind_losses: frozenset[str]
    step_nouns: frozenset[str]
    duration_words: frozenset[str]
    phase_words: frozenset[str]
    current_words: frozenset[str]
    average_words: frozenset[str]
    counter_modifiers: frozenset[str]
    function_words: frozenset[str]
    auxiliary_loss_words: frozenset[str]
    done_words: tuple[str, ...]
    save_words: frozenset[str]
    time_unit_words: dict[str, str]


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    raw = json.loads(resources.files("schedmate.data").joinpath("tracker_lexicon.json").read_text("utf-8"))
    return Lexicon(
        tables=tuple((role, {normalise_key(k): int(v) for k, v in raw[role].items()}) for role in ROLES),
        loss_heads=frozenset(raw["loss_heads"]),
        not_a_loss=frozenset(raw["not_a_loss"]),
        total_loss_modifiers=frozenset(raw["total_loss_modifiers"]),
        eval_words=frozenset(raw["eval_words"]),
        eval_headings=frozenset(raw["eval_headings"]),
        summary_words=tuple(raw["summary_words"]),
        train_words=frozenset(raw["train_words"]),
        error_metrics=frozenset(raw["error_metrics"]),
        component_before_loss=frozenset(raw["component_before_loss"]),
        loss_function_names=frozenset(raw["loss_function_names"]),
        training_set_words=frozenset(raw["training_set_words"]),
        counter_nouns=frozenset(raw["counter_nouns"]),
        kind_losses=frozenset(raw["kind_losses"]),
        step_nouns=frozenset(raw["step_nouns"]),
        duration_words=frozenset(raw["duration_words"]),
        phase_words=frozenset(raw["phase_words"]),
        current_words=frozenset(raw["current_words"]),
        average_words=frozenset(raw["average_words"]),
        counter_modifiers=frozenset(raw["counter_modifiers"]),
        function_words=frozenset(raw["function_words"]),
        auxiliary_loss_words=frozenset(raw["auxiliary_loss_words"]),
        done_words=tuple(raw["done_words"]),
        save_words=frozenset(raw["save_words"]),
        time_unit_words={k.lower(): v for k, v in raw["time_unit_words"].items()},
    )


@lru_cache(maxsize=1)
def done_words() -> str:
    """The lexicon's `done_words` as one regular-expression alternative (longest first)."""
    return "|".join(re.escape(w) for w in sorted(lexicon().done_words, key=len, reverse=True))


def normalise_key(key: str) -> str:
    """`Train Loss` -> `train_loss`; keeps `/` and `.` (namespaces such as `actor/loss`)."""
    return _SEP.sub("_", key.strip().strip("'\"").lower())


@lru_cache(maxsize=8192)
def split_camel(key: str) -> str:
    """`AvgTime` -> `Avg Time`, `trainLoss` -> `train Loss` (not `mAP`, `GPU`)."""
    return key if key.islower() or key.isupper() else _CAMEL.sub(" ", key)


def key_words(key: str) -> list[str]:
    """The words of a key: `train/iters_average_Loss` -> [train, iters, average, loss]."""
    lex = lexicon()
    out = []
    for w in _WORD_SPLIT.split(key.lower()):
        if not w or w in lex.function_words:
            continue
        if not w.isascii() and (head := _cjk_loss_head(w)) is not None:
            out += [w[: -len(head)], head]  # `平均損失` (average loss): words written without spaces
        else:
            out.append(w)
    return out


def _cjk_loss_head(word: str) -> str | None:
    heads = (h for h in lexicon().loss_heads if not h.isascii() and len(word) > len(h) and word.endswith(h))
    return next(heads, None)


@lru_cache(maxsize=8192)
def is_eval_key(key: str) -> bool:
    """`val_loss`, `eval/loss`, `test loss`, `验证 损失` are not training metrics."""
    words = lexicon().eval_words
    return any(w in words for w in key_words(key))


_GLUED_LOSS = re.compile(r"[a-z]{1,2}loss")


def _loss_role(words: list[str]) -> tuple[str, int] | None:
    """A key built around a loss noun: the total loss, a component, or None.

    The loss noun must open or close the key (`loss_cls`, `box_loss`); a loss's settings
    (`kl_loss_coef`, `loss_scale`) and summaries (`final_loss`, `best_loss`) are not losses."""
    lex = lexicon()
    heads = [i for i, w in enumerate(words) if w in lex.loss_heads]
    if not heads and len(words) == 1 and _GLUED_LOSS.fullmatch(words[0]):
        return "loss_component", 9  # `closs`, `gloss_d`: a loss named by a glued letter or two
    if not heads or (heads[0] != 0 and heads[-1] != len(words) - 1):
        return None
    others = [w for i, w in enumerate(words) if i not in heads]
    if any(w in lex.not_a_loss or w in lex.summary_words for w in others):
        return None
    if any(w in lex.component_before_loss for w in words[: heads[0]]):
        return "loss_component", 9  # `value_loss` is the critic's loss; `loss_value` is the loss
    if all(w in lex.total_loss_modifiers for w in others):
        # the current value before an average of it (`current batch average objf` over
        # `global average objf`), as in `loss: 2.31 (2.45)`
        if set(others) & lex.current_words:
            return "loss", 3
        if set(others) & lex.average_words:
            return "loss", 5
        return "loss", 4
    return "loss_component", 9


@lru_cache(maxsize=8192)
def field_for_key(key: str) -> tuple[str, int] | None:
    """Map a normalised key to (role, rank), or None when it is not a tracked metric.

    Roles: step, total_steps, total_if_step, epoch, total_epochs, loss, loss_component,
    step_time, outer_time (time per epoch/round), step_rate, lr, elapsed, remaining,
    batch_size.
    """
    if is_eval_key(key):
        return None
    tables = lexicon().tables
    for name, table in tables:
        rank = table.get(key)
        if rank is not None:
            return name, rank
    # namespaced keys: `train/loss`, `metrics/train_loss` -> try the leaf
    if "/" in key and len(key.rsplit("/", 1)[1]) > 1:  # not a unit's `/s`
        leaf = key.rsplit("/", 1)[1]
        for name, table in tables:
            rank = table.get(leaf)
            if rank is not None and name in ("loss", "step", "lr", "epoch", "step_time", "step_rate"):
                return name, rank + 2
    if key.endswith("(t)") and len(key) > 4:  # `batch (t)`, `data(t)`: `t` abbreviates time
        return field_for_key(key[:-3].rstrip("_") + "_time")
    unit = _UNIT_SUFFIX.search(key)
    if unit is not None:  # `step_time_ms`, `iter_time(s)`: a time key with its unit in the name
        base = key[: unit.start()]
        hit = field_for_key(base)
        # a specific time key only: `time_ms` alone is as often a wall-clock timestamp
        if hit is not None and hit[1] <= 1 and hit[0] in ("step_time", "outer_time", "elapsed", "remaining"):
            return hit[0], hit[1] + 1
        if set(key_words(base)) <= lexicon().step_nouns | {"train", "training"} and key_words(base):
            return "step_time", 2  # `updt_s`, `step_ms`: the seconds of a step
    if _RATE_KEY.search(key):
        return "step_rate", 2
    if key in lexicon().loss_function_names:
        return "loss_component", 9  # `smooth_l1=0.1`: a term of the loss, named by its function
    words = key_words(key)
    return _loss_role(words) or _set_metric_role(words) or _counter_role(words) or _time_role(words)


def _time_role(words: list[str]) -> tuple[str, int] | None:
    """A duration of one step, named by its words (`train_step_timing`, `batch_latency`)."""
    lex = lexicon()
    if (
        any(w in lex.duration_words for w in words)
        and any(w in lex.step_nouns for w in words)
        and not any(w in lex.phase_words for w in words)
    ):
        return "step_time", 2
    return None


def _counter_role(words: list[str]) -> tuple[str, int] | None:
    """A counted unit with only neutral words beside it (`updates_done`, `timesteps_total`)."""
    lex = lexicon()
    nouns = [i for i, w in enumerate(words) if w in lex.counter_nouns]
    if len(nouns) != 1 or len(words) < 2:
        return None
    n = nouns[0]
    if all(w in lex.counter_modifiers or (w == "total" and i > n) for i, w in enumerate(words) if i != n):
        # `global iterations` beside `inner iteration`: the run's own count outranks the others
        return "step", -1 if "global" in words else 3
    return None


_UNIT_SUFFIX = re.compile(r"(?:_in_|_\(?|\()(?:ms|s|sec|secs|seconds)\)?$")
# a rate key built from a count noun: `batches_per_sec`, `iters/s`, `updates_per_second`
_RATE_KEY = re.compile(
    r"(?:^|[_/])(?:steps?|iters?|iterations?|batch(?:es)?|updates?|it)(?:_per_|/)(?:s|sec|second)$"
)


def _set_metric_role(words: list[str]) -> tuple[str, int] | None:
    """An error metric on the training set (`train-rmse`, `training's l2`, `rmse_trn`) is the
    training loss."""
    lex = lexicon()
    neutral = lex.training_set_words | lex.loss_heads | lex.total_loss_modifiers
    for i in range(1, len(words)):  # the metric may be several words: `binary_logloss`
        named, metric = words[:i], "_".join(words[i:])
        if metric in lex.error_metrics:
            if any(w in lex.training_set_words for w in named) and all(w in neutral for w in named):
                return "loss", 5
            return None
    for i in range(len(words) - 1, 0, -1):  # the set after the metric: `rmse_trn`, `l2_train`
        metric, named = "_".join(words[:i]), words[i:]
        if metric in lex.error_metrics:
            if any(w in lex.training_set_words for w in named) and all(w in neutral for w in named):
                return "loss", 6
            return None
    return None


THROUGHPUT_WORDS = re.compile(
    r"(samples?|examples?|tokens?|tok|words?|images?|imgs?|sequences?|seqs?|wps|tps|tgs|"
    r"sents?|frames?|task|data|ins|utts?)(?:_per_|/|\s*/\s*)?(s|sec|second)?",
    re.I,
)
RATE_UNITS = {
    "it/s",
    "iters/s",
    "steps/s",
    "step/s",
    "batch/s",
    "batches/s",
    "iter/s",
    "updates/s",
    "update/s",
}
TIME_PER_STEP_UNITS = {
    "us/step",
    "µs/step",
    "us/it",
    "s/it",
    "ms/it",
    "ms/step",
    "s/step",
    "sec/batch",
    "s/batch",
    "ms/batch",
    "sec/it",
    "sec/step",
    "sec/iter",
    "s/iter",
    "ms/iter",
}

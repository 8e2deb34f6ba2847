"""Vocabulary: how metric keys printed by training frameworks map onto tracker fields.

Keys are normalised (lower case, separators unified) and looked up here. Ranks order the
candidates when one line states the same field several ways (lower rank wins), e.g.
`step_avg` (an average) beats `this_step` (time since the previous log line).
"""

from __future__ import annotations

import re

__all__ = [
    "normalise_key",
    "field_for_key",
    "is_eval_key",
    "RATE_UNITS",
    "TIME_PER_STEP_UNITS",
    "THROUGHPUT_WORDS",
]

_SEP = re.compile(r"[\s\-]+")


def normalise_key(key: str) -> str:
    """`Train Loss` -> `train_loss`; keeps `/` and `.` (namespaces such as `actor/loss`)."""
    k = key.strip().strip("'\"").lower()
    return _SEP.sub("_", k)


# field -> {normalised key: rank}
_STEP = {
    "step": 0,
    "global_step": 0,
    "training/global_step": 0,
    "current_steps": 0,
    "iter": 0,
    "iteration": 0,
    "num_updates": 0,
    "global_step/max_steps": 0,
    "steps": 1,
    "it": 2,
    "update": 1,
    "updates": 1,
    "iters": 1,
    "global_steps": 0,
    "train/global_step": 0,
    "trainer/global_step": 0,
    "batch": 2,
    "train_step": 0,
    "total_steps_done": 1,
}
_TOTAL = {
    "total_steps": 0,
    "max_steps": 0,
    "max_iter": 0,
    "max_iters": 0,
    "num_iterations": 0,
    "total_iters": 0,
    "num_training_steps": 0,
    "total_iterations": 0,
    "train_iters": 1,
}
_EPOCH = {"epoch": 0, "training/epoch": 0, "train/epoch": 0, "ep": 1, "epochs": 1}
_LOSS = {
    "loss": 0,
    "train_loss": 1,
    "train/loss": 1,
    "total_loss": 1,
    "loss_total": 1,
    "actor/loss": 1,
    "train/crossentropyloss": 2,
    "crossentropyloss": 2,
    "xent": 2,
    "lm_loss": 2,
    "lm loss": 2,
    "train/lm_loss": 2,
    "ce_loss": 3,
    "loss_value": 2,
    "train_loss_step": 2,
    "train/loss_step": 2,
    "loss_step": 2,
    "avg_loss": 4,
    "loss_avg": 4,
    "running_loss": 4,
    "mean_loss": 4,
    "train_avg_loss": 4,
    "objective/loss": 3,
}
# seconds (or ms by unit) per step; rank 0 = explicit per-step averages
_STEP_TIME = {
    "step_avg": 0,
    "time_per_step": 0,
    "perf/time_per_step": 0,
    "timing_s/step": 0,
    "train_speed(s/it)": 0,
    "iter_time": 0,
    "step_time": 0,
    "time/step": 0,
    "s/it": 1,
    "sec/it": 1,
    "sec/step": 1,
    "s/step": 1,
    "ms/step": 1,
    "ms/it": 1,
    "sec/batch": 1,
    "s/batch": 1,
    "ms/batch": 1,
    "time": 2,
    "batch_time": 1,
    "iteration_time": 0,
    "elapsed_time_per_iteration_(ms)": 0,
    "elapsed time per iteration (ms)": 0,
    "it_time": 1,
    "train_time_per_step": 0,
    "time_per_iteration": 0,
    "step_time_s": 0,
    "avg_step_time": 0,
    "time/iter": 1,
    "sec/iter": 1,
    "s/iter": 1,
}
# per-second rates whose inverse is a step time
_STEP_RATE = {
    "it/s": 1,
    "ups": 1,
    "steps_per_second": 1,
    "train_steps_per_second": 3,
    "throughput/device/batches_per_second": 1,
    "batches_per_second": 1,
    "iters/s": 1,
    "step/s": 1,
    "steps/s": 1,
    "batch/s": 1,
    "batches/s": 1,
    "iter/s": 1,
}
_LR = {"lr": 0, "learning_rate": 0, "actor/lr": 1, "train/lr": 0, "optim/lr": 1, "lr_0": 1}
_ELAPSED = {
    "elapsed_time": 0,
    "elapsed": 0,
    "train_time": 1,
    "train_runtime": 2,
    "wall": 3,
    "time_elapsed": 0,
    "total_time": 2,
    "elapsed_time_s": 0,
}
_REMAINING = {"remaining_time": 0, "eta": 0, "time_left": 0, "remaining": 1, "time_remaining": 0}
_BATCH = {"bsz": 0, "batch_size": 0, "global_batch_size": 0, "train_batch_size": 1}

_TABLES: tuple[tuple[str, dict[str, int]], ...] = (
    ("step", _STEP),
    ("total_steps", _TOTAL),
    ("epoch", _EPOCH),
    ("loss", _LOSS),
    ("step_time", _STEP_TIME),
    ("step_rate", _STEP_RATE),
    ("lr", _LR),
    ("elapsed", _ELAPSED),
    ("remaining", _REMAINING),
    ("batch_size", _BATCH),
)

THROUGHPUT_WORDS = re.compile(
    r"(samples?|examples?|tokens?|tok|words?|images?|imgs?|sequences?|seqs?|wps|tps|tgs|"
    r"sents?|frames?|task)(?:_per_|/|\s*/\s*)?(s|sec|second)?",
    re.I,
)
RATE_UNITS = {"it/s", "iters/s", "steps/s", "step/s", "batch/s", "batches/s", "iter/s"}
TIME_PER_STEP_UNITS = {
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
}

_EVAL = re.compile(r"(?:^|[^a-z])(val|valid|validation|eval|evaluation|test|testing|dev)(?:[^a-z]|$)")


def is_eval_key(key: str) -> bool:
    """`val_loss`, `eval/loss`, `test loss` are not the training loss."""
    return bool(_EVAL.search(key))


def field_for_key(key: str) -> tuple[str, int] | None:
    """Map a normalised key to (field, rank), or None when it is not a tracked metric."""
    if is_eval_key(key):
        return None
    for name, table in _TABLES:
        rank = table.get(key)
        if rank is not None:
            return name, rank
    # namespaced keys: `train/loss`, `metrics/train_loss` -> try the leaf
    if "/" in key and not key.endswith("/"):
        leaf = key.rsplit("/", 1)[1]
        for name, table in _TABLES:
            rank = table.get(leaf)
            if rank is not None and name in ("loss", "step", "lr", "epoch"):
                return name, rank + 2
    return None

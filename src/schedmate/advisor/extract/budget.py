"""Amounts of work stated in tokens or total samples, converted to the metadata's samples.

Language-model trainers often bound the batch or the run in tokens rather than samples:
fairseq `--max-tokens` (tokens per device per batch), nanoGPT-style `tokens_per_iter`, llm.c's
`--total_batch_size` whose help says "in tokens", token budgets (`train_tokens`), and Megatron's
`--train-samples` (samples over the whole run, with no epochs). With a sequence length these
become a micro / global batch or `max_samples`; without one, a note says what was not converted.
"""

from __future__ import annotations

from typing import Any

from schedmate.advisor.extract.derive import IGNORED, Namespace, not_training

__all__ = ["apply_budgets", "TOKEN_SCOPE", "PER_DEVICE_TOKENS", "STEP_TOKENS", "TOTAL_TOKENS"]

TOKEN_SCOPE = "tokens"  # the scope of a batch-size argument whose help says it counts tokens
PER_DEVICE_TOKENS = (
    "max_tokens",
    "max_tokens_per_batch",
    "tokens_per_batch",
    "batch_tokens",
    "micro_batch_tokens",
)
STEP_TOKENS = (
    "tokens_per_iter",
    "tokens_per_step",
    "tokens_per_update",
    "global_batch_tokens",
    "total_batch_tokens",
    "batch_size_tokens",
)
TOTAL_TOKENS = (
    "train_tokens",
    "total_tokens",
    "max_train_tokens",
    "num_train_tokens",
    "training_tokens",
    "total_train_tokens",
    "token_budget",
)
_RUN_SAMPLES = (
    "train_samples",
    "training_samples",
)  # Megatron: samples over the whole run when nothing else bounds it
_MAX_BATCH_TOKENS = 4_000_000  # more tokens than any device holds in one batch: a budget for the whole run


def _lookup(ns: Namespace, leaves: tuple[str, ...], skip: int) -> tuple[int, str, int] | None:
    """The highest-priority positive integer set under one of `leaves`, where, and the layer's priority.

    Layer `skip` (keyword arguments of calls) is not read: `TextVectorization(max_tokens=...)` is a vocabulary.
    """
    best: tuple[int, int, int, str] | None = None
    for prio, flat, src in ns.layers:
        if prio == skip:
            continue
        for k, v in flat.items():
            leaf = k.rsplit(".", 1)[-1].lower().replace("-", "_")
            if (
                leaf not in leaves
                or not_training(k)
                or ns.field_overrides.get(leaf) == IGNORED
                or isinstance(v, bool)
            ):
                continue
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if not isinstance(v, int) or v <= 0:
                continue
            cand = (prio, leaves.index(leaf), v, f"{src}: {k}")
            if best is None or cand[:2] < best[:2]:
                best = cand
    return (best[2], best[3], best[0]) if best else None


def _leaf_of_source(src: str) -> str:
    """`config/a.yaml: train.train_samples` -> `train_samples`."""
    return src.rsplit(": ", 1)[-1].rsplit(".", 1)[-1].lower().replace("-", "_")


def apply_budgets(
    values: dict[str, Any], sources: dict[str, str], ns: Namespace, *, calls: int, computed: int
) -> list[str]:
    """Fill micro / global batch and max_samples from token and run budgets; notes for what needs a sequence length.

    Tokens per step set by the run (llm.c `--total_batch_size` "in tokens") give the global batch; computed in code
    (nanoGPT's module constant `tokens_per_iter`, layer `computed`) only when no batch size in samples is known.
    Keyword arguments of calls (layer `calls`) are not read.
    """
    notes: list[str] = []
    seq = values.get("seq_len")
    step_keys = STEP_TOKENS + tuple(k for k, f in ns.field_overrides.items() if f == TOKEN_SCOPE)
    per_device = _lookup(ns, PER_DEVICE_TOKENS, calls)
    total = _lookup(ns, TOTAL_TOKENS, calls)
    if per_device is not None and per_device[0] > _MAX_BATCH_TOKENS and total is None:
        per_device, total = None, per_device
    step = _lookup(ns, step_keys, calls)
    if step is not None and step[2] >= computed and values.keys() & {"micro_batch_size", "global_batch_size"}:
        step = None
    for what, found in (("batch", per_device), ("batch", step), ("run", total)):
        if found is not None and not seq:
            notes.append(
                f"{what} given in tokens ({found[1]} = {found[0]}) but no sequence length: not converted "
                "to samples"
            )
    if seq:
        if per_device is not None:
            micro = max(1, per_device[0] // seq)
            current = values.get("micro_batch_size")
            if "global_batch_size" not in values and (current is None or micro < current):
                values["micro_batch_size"] = micro  # fairseq: a batch ends at --max-tokens or --batch-size
                sources["micro_batch_size"] = f"{per_device[1]} / seq_len"
        if step is not None and "global_batch_size" not in values:
            values["global_batch_size"] = max(1, step[0] // seq)
            sources["global_batch_size"] = f"{step[1]} / seq_len"
        if total is not None and "max_samples" not in values:
            values["max_samples"] = max(1, total[0] // seq)
            sources["max_samples"] = f"{total[1]} / seq_len"
    ds_src = sources.get("dataset_size", "")
    if (
        "dataset_size" in values
        and not values.keys() & {"epochs", "max_steps", "max_samples"}
        and _leaf_of_source(ds_src) in _RUN_SAMPLES
    ):
        # no epochs and no steps: `--train-samples` bounds the whole run (Megatron), it is not a dataset size
        values["max_samples"] = values.pop("dataset_size")
        sources["max_samples"] = f"{sources.pop('dataset_size')} (samples over the run: no epochs or steps)"
    return notes

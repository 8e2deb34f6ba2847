"""WorkloadMetadata: what a job's code says about the work it will do.

A pydantic model because the same schema validates an LLM agent's answer. Every field is
optional: the extractor fills what it can prove and says where each value came from.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["WorkloadMetadata", "METADATA_FIELDS", "Parallelism", "render_metadata", "merge_metadata"]

Parallelism = Literal["single", "ddp", "fsdp", "deepspeed", "tensor", "pipeline", "horovod", "data"]


# no count, size or rate of a real training job comes near this (a model of 1e15 parameters,
# 1e15 samples); a larger value would overflow the work estimates built from it
_LARGEST = 1e15


class WorkloadMetadata(BaseModel):
    """Workload facts a duration predictor can use. None means unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    framework: str | None = Field(
        None, description="pytorch, lightning, transformers, keras, tensorflow, jax, sklearn, xgboost, ..."
    )
    task: str | None = Field(
        None,
        description="language-modeling, text-classification, image-classification, detection, segmentation, speech, diffusion, rl, tabular, graph, other",
    )
    model_name: str | None = Field(
        None, description="the model as the code names it, e.g. gpt2, resnet50, bert-base-uncased"
    )
    model_family: str | None = Field(
        None, description="gpt, llama, bert, t5, vit, resnet, unet, cnn, mlp, lstm, gnn, tree, ..."
    )
    param_count: float | None = Field(None, ge=0, description="approximate number of model parameters")
    dataset: str | None = Field(None, description="dataset name or path")
    dataset_size: int | None = Field(None, ge=0, description="number of training samples")
    global_batch_size: int | None = Field(None, ge=1, description="samples per optimizer step over all GPUs")
    micro_batch_size: int | None = Field(None, ge=1, description="samples per device per forward pass")
    grad_accum_steps: int | None = Field(None, ge=1)
    epochs: float | None = Field(None, ge=0)
    max_steps: int | None = Field(None, ge=0, description="optimizer steps, when the run is bounded by steps")
    max_samples: int | None = Field(
        None, ge=0, description="training samples processed in total, when bounded that way"
    )
    seq_len: int | None = Field(None, ge=1, description="tokens per sample")
    image_size: int | None = Field(None, ge=1, description="pixels per side")
    precision: str | None = Field(None, description="fp32, fp16, bf16, fp8, mixed")
    optimizer: str | None = Field(None, description="adamw, adam, sgd, lamb, adafactor, ...")
    learning_rate: float | None = Field(None, ge=0)
    parallelism: tuple[Parallelism, ...] = Field((), description="data/model parallel strategies in use")
    zero_stage: int | None = Field(None, ge=0, le=3)
    tensor_parallel: int | None = Field(None, ge=1)
    pipeline_parallel: int | None = Field(None, ge=1)
    n_gpus: int | None = Field(None, ge=0, description="GPUs in total (processes per node x nodes)")
    n_nodes: int | None = Field(None, ge=1)
    gpu_model: str | None = None
    launcher: str | None = Field(
        None, description="python, torchrun, deepspeed, accelerate, srun, mpirun, sbatch"
    )
    entrypoint: str | None = Field(None, description="the training script, relative to the job directory")

    @field_validator(
        "param_count",
        "dataset_size",
        "global_batch_size",
        "micro_batch_size",
        "grad_accum_steps",
        "epochs",
        "max_steps",
        "max_samples",
        "seq_len",
        "image_size",
        "learning_rate",
        "tensor_parallel",
        "pipeline_parallel",
        "n_gpus",
        "n_nodes",
        mode="before",
    )
    @classmethod
    def _a_real_quantity(cls, v: Any) -> Any:
        """`--epochs 1e300`, `lr: .inf`: not a job's setting but a typo or an attack; unknown."""
        if (
            isinstance(v, int | float)
            and not isinstance(v, bool)
            and (not math.isfinite(v) or abs(v) > _LARGEST)
        ):
            return None
        return v

    def missing(self) -> list[str]:
        """Fields still unknown (parallelism counts as unknown when empty)."""
        return [name for name in METADATA_FIELDS if getattr(self, name) in (None, ())]

    def known(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v not in (None, (), [])}


METADATA_FIELDS: tuple[str, ...] = tuple(WorkloadMetadata.model_fields)


def merge_metadata(
    base: WorkloadMetadata, extra: WorkloadMetadata, only: list[str] | None = None
) -> WorkloadMetadata:
    """Fill `base`'s unknown fields from `extra` (restricted to `only` when given); known values win."""
    allowed = set(only) if only is not None else set(METADATA_FIELDS)
    update = {k: v for k, v in extra.known().items() if k in allowed and getattr(base, k) in (None, ())}
    return base.model_copy(update=update) if update else base


def _fmt_count(x: float) -> str:
    for div, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if x >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}"


def render_metadata(meta: WorkloadMetadata, *, name: str | None = None) -> str:
    """A short sentence-like text for embedding: what is trained, on what, how long, on what hardware."""
    parts: list[str] = []
    if meta.task:
        parts.append(f"task {meta.task}")
    model = meta.model_name or meta.model_family
    if model:
        parts.append(
            f"model {model}" + (f" ({meta.model_family})" if meta.model_name and meta.model_family else "")
        )
    if meta.param_count:
        parts.append(f"{_fmt_count(meta.param_count)} params")
    if meta.framework:
        parts.append(f"framework {meta.framework}")
    if meta.dataset:
        parts.append(f"dataset {meta.dataset}")
    if meta.seq_len:
        parts.append(f"seq {meta.seq_len}")
    if meta.image_size:
        parts.append(f"image {meta.image_size}")
    if meta.optimizer:
        parts.append(f"optimizer {meta.optimizer}")
    if meta.precision:
        parts.append(f"precision {meta.precision}")
    if meta.parallelism:
        parts.append("parallel " + "+".join(meta.parallelism))
    if meta.entrypoint:
        parts.append(f"script {meta.entrypoint}")
    if name:
        parts.append(f"job {name}")
    return "; ".join(parts) or "unknown workload"

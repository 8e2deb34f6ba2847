"""Typed experiment configuration. Values come from the dataclass defaults, then an experiment
module in experiments/ (which builds an ExperimentConfig), then dotted CLI overrides such as
`optim.lr=3e-4 train.num_epochs=4`."""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field


@dataclass
class ModelConfig:
    d_model: int = 128
    nhead: int = 4
    num_encoder_layers: int = 2
    num_decoder_layers: int = 2
    dim_feedforward: int = 512
    dropout: float = 0.1


@dataclass
class DataConfig:
    task: str = "reverse"          # reverse | sort | copy
    vocab_size: int = 32
    min_len: int = 8
    max_len: int = 24
    num_train: int = 10000
    num_valid: int = 500


@dataclass
class OptimConfig:
    name: str = "adamw"
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup_steps: int = 100
    grad_clip: float = 1.0


@dataclass
class TrainConfig:
    batch_size: int = 64
    num_epochs: int = 2
    log_every: int = 20
    seed: int = 0
    precision: str = "fp32"        # fp32 | bf16


@dataclass
class ExperimentConfig:
    name: str = "default"
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


def _cast(old, value: str):
    if isinstance(old, bool):
        return value.lower() in ("1", "true", "yes")
    return type(old)(value)


def load_config(experiment: str | None, overrides: list[str]) -> ExperimentConfig:
    cfg = ExperimentConfig()
    if experiment:
        mod = importlib.import_module(f"experiments.{experiment}")
        cfg = mod.get_config()
    for ov in overrides:
        key, value = ov.split("=", 1)
        section, attr = key.split(".")
        sub = getattr(cfg, section)
        setattr(sub, attr, _cast(getattr(sub, attr), value))
    return cfg


def to_dict(cfg: ExperimentConfig) -> dict:
    return dataclasses.asdict(cfg)

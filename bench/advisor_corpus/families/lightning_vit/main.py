"""Tiny ViT on synthetic images, driven by LightningCLI.

    python main.py fit --config configs/vit_tiny.yaml
    python main.py fit --config configs/vit_small.yaml --trainer.max_epochs 5 --data.batch_size 128
"""
import torch
from lightning.pytorch.cli import LightningCLI

from src.data import SyntheticImageDataModule
from src.model import ViTClassifier


def cli_main():
    torch.set_float32_matmul_precision("medium")
    LightningCLI(ViTClassifier, SyntheticImageDataModule, save_config_kwargs={"overwrite": True})


if __name__ == "__main__":
    cli_main()

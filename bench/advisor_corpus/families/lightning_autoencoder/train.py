"""Convolutional autoencoder on synthetic 28x28 digits-like images with PyTorch Lightning.

    python train.py --max_epochs 5 --batch_size 128 --latent_dim 32
"""
from argparse import ArgumentParser

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import LearningRateMonitor
from torch.utils.data import DataLoader, TensorDataset, random_split


class Encoder(nn.Module):
    def __init__(self, c_hid, latent_dim):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, c_hid, 3, padding=1, stride=2), nn.GELU(),      # 14x14
            nn.Conv2d(c_hid, c_hid, 3, padding=1), nn.GELU(),
            nn.Conv2d(c_hid, 2 * c_hid, 3, padding=1, stride=2), nn.GELU(),  # 7x7
            nn.Flatten(), nn.Linear(2 * c_hid * 7 * 7, latent_dim))

    def forward(self, x):
        return self.net(x)


class Decoder(nn.Module):
    def __init__(self, c_hid, latent_dim):
        super().__init__()
        self.c_hid = c_hid
        self.linear = nn.Sequential(nn.Linear(latent_dim, 2 * c_hid * 7 * 7), nn.GELU())
        self.net = nn.Sequential(
            nn.ConvTranspose2d(2 * c_hid, c_hid, 3, output_padding=1, padding=1, stride=2), nn.GELU(),  # 14x14
            nn.Conv2d(c_hid, c_hid, 3, padding=1), nn.GELU(),
            nn.ConvTranspose2d(c_hid, 1, 3, output_padding=1, padding=1, stride=2), nn.Tanh())  # 28x28

    def forward(self, z):
        return self.net(self.linear(z).reshape(z.shape[0], -1, 7, 7))


class Autoencoder(L.LightningModule):
    def __init__(self, base_channel_size: int = 32, latent_dim: int = 64, lr: float = 1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = Encoder(base_channel_size, latent_dim)
        self.decoder = Decoder(base_channel_size, latent_dim)

    def forward(self, x):
        return self.decoder(self.encoder(x))

    def _loss(self, batch):
        x, _ = batch
        return F.mse_loss(self(x), x, reduction="none").sum(dim=[1, 2, 3]).mean()

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.2, patience=5, min_lr=5e-5)
        return {"optimizer": opt, "lr_scheduler": sched, "monitor": "val_loss"}


def synthetic_digits(n, seed=0):
    """Blurry stroke images: random line segments rendered on a 28x28 canvas."""
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.linspace(0, 1, 28), torch.linspace(0, 1, 28), indexing="ij")
    p0, p1 = torch.rand(n, 2, generator=g), torch.rand(n, 2, generator=g)
    d = p1 - p0
    t = (((xx[None] - p0[:, 0, None, None]) * d[:, 0, None, None] + (yy[None] - p0[:, 1, None, None]) * d[:, 1, None, None])
         / (d.pow(2).sum(1)[:, None, None] + 1e-6)).clamp(0, 1)
    dist = (xx[None] - p0[:, 0, None, None] - t * d[:, 0, None, None]) ** 2 + (yy[None] - p0[:, 1, None, None] - t * d[:, 1, None, None]) ** 2
    img = torch.exp(-dist / 0.004) * 2 - 1
    return TensorDataset(img.unsqueeze(1), torch.zeros(n))


def main(hparams):
    L.seed_everything(42)
    full = synthetic_digits(hparams.num_samples)
    n_val = max(1, len(full) // 10)
    train_set, val_set = random_split(full, [len(full) - n_val, n_val])
    train_loader = DataLoader(train_set, batch_size=hparams.batch_size, shuffle=True, drop_last=True, num_workers=hparams.num_workers)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=hparams.num_workers)
    model = Autoencoder(hparams.base_channel_size, hparams.latent_dim, hparams.lr)
    trainer = L.Trainer(
        accelerator=hparams.accelerator,
        devices=hparams.devices,
        max_epochs=hparams.max_epochs,
        precision=hparams.precision,
        callbacks=[LearningRateMonitor("epoch")],
        default_root_dir="checkpoints/autoencoder",
        enable_checkpointing=False,
        enable_progress_bar=False,
        log_every_n_steps=10,
    )
    trainer.fit(model, train_loader, val_loader)
    print(f"final metrics: { {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()} }")


if __name__ == "__main__":
    parser = ArgumentParser()
    parser.add_argument("--accelerator", default="auto")
    parser.add_argument("--devices", default=1)
    parser.add_argument("--max_epochs", type=int, default=5)
    parser.add_argument("--precision", default="32-true")
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--num_samples", type=int, default=6000)
    parser.add_argument("--num_workers", type=int, default=0)
    parser.add_argument("--latent_dim", type=int, default=64)
    parser.add_argument("--base_channel_size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    main(parser.parse_args())

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchEmbed(nn.Module):
    def __init__(self, image_size, patch_size, in_chans, dim):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, dim, patch_size, patch_size)
        self.num_patches = (image_size // patch_size) ** 2

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class ViT(nn.Module):
    def __init__(self, image_size=32, patch_size=4, in_chans=3, num_classes=10, dim=128, depth=4, heads=4, mlp_ratio=4.0, dropout=0.0):
        super().__init__()
        self.patch = PatchEmbed(image_size, patch_size, in_chans, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, self.patch.num_patches + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, int(dim * mlp_ratio), dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch(x)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.encoder(x)
        return self.head(self.norm(x[:, 0]))


class ViTClassifier(L.LightningModule):
    def __init__(self, image_size: int = 32, patch_size: int = 4, num_classes: int = 10, dim: int = 128,
                 depth: int = 4, heads: int = 4, mlp_ratio: float = 4.0, dropout: float = 0.0,
                 lr: float = 1e-3, weight_decay: float = 0.05, warmup_epochs: int = 1):
        super().__init__()
        self.save_hyperparameters()
        self.model = ViT(image_size, patch_size, 3, num_classes, dim, depth, heads, mlp_ratio, dropout)

    def forward(self, x):
        return self.model(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/acc", (logits.argmax(1) == y).float().mean())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val/loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val/acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, self.trainer.max_epochs))
        return {"optimizer": opt, "lr_scheduler": sched}

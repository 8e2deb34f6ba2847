import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class SyntheticImageDataModule(L.LightningDataModule):
    """Random images with a learnable class signal (stands in for CIFAR-10 when offline)."""

    def __init__(self, num_train: int = 4096, num_val: int = 512, image_size: int = 32, num_classes: int = 10,
                 batch_size: int = 64, num_workers: int = 0, seed: int = 0):
        super().__init__()
        self.save_hyperparameters()

    def _make(self, n, seed):
        hp = self.hparams
        g = torch.Generator().manual_seed(seed)
        y = torch.randint(0, hp.num_classes, (n,), generator=g)
        protos = torch.randn(hp.num_classes, 3, hp.image_size, hp.image_size, generator=torch.Generator().manual_seed(123))
        x = 0.5 * protos[y] + torch.randn(n, 3, hp.image_size, hp.image_size, generator=g)
        return TensorDataset(x, y)

    def setup(self, stage=None):
        self.train_ds = self._make(self.hparams.num_train, self.hparams.seed)
        self.val_ds = self._make(self.hparams.num_val, self.hparams.seed + 1)

    def train_dataloader(self):
        return DataLoader(self.train_ds, batch_size=self.hparams.batch_size, shuffle=True,
                          num_workers=self.hparams.num_workers, drop_last=True)

    def val_dataloader(self):
        return DataLoader(self.val_ds, batch_size=256, num_workers=self.hparams.num_workers)

#!/usr/bin/env python
"""Train an MLP classifier on a synthetic tabular dataset.

Usage:
    python train.py --epochs 20 --batch-size 128 --n-samples 50000
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def get_args():
    p = argparse.ArgumentParser(description="MLP on synthetic tabular data")
    p.add_argument("--n-samples", type=int, default=20000, help="number of training rows")
    p.add_argument("--n-features", type=int, default=64)
    p.add_argument("--n-classes", type=int, default=10)
    p.add_argument("--hidden", type=int, default=256, help="hidden width")
    p.add_argument("--depth", type=int, default=3, help="number of hidden layers")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--optimizer", choices=["adam", "adamw", "sgd"], default="adamw")
    p.add_argument("--val-frac", type=float, default=0.1)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-interval", type=int, default=50)
    return p.parse_args()


def make_dataset(n, d, k, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w1 = torch.randn(d, 32, generator=g)
    w2 = torch.randn(32, k, generator=g)
    logits = torch.tanh(x @ w1) @ w2
    y = logits.argmax(1)
    return x, y


class MLP(nn.Module):
    def __init__(self, d_in, hidden, depth, n_out, dropout):
        super().__init__()
        layers, d = [], d_in
        for _ in range(depth):
            layers += [nn.Linear(d, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(dropout)]
            d = hidden
        layers.append(nn.Linear(d, n_out))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def main():
    args = get_args()
    torch.manual_seed(args.seed)
    x, y = make_dataset(args.n_samples, args.n_features, args.n_classes, args.seed)
    n_val = int(len(x) * args.val_frac)
    train_ds = TensorDataset(x[n_val:], y[n_val:])
    val_ds = TensorDataset(x[:n_val], y[:n_val])
    train_dl = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
    val_dl = DataLoader(val_ds, batch_size=512)

    model = MLP(args.n_features, args.hidden, args.depth, args.n_classes, args.dropout)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model params: {n_params/1e6:.2f}M  train rows: {len(train_ds)}")
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=args.weight_decay)
    elif args.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(train_dl))

    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in train_dl:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            if step % args.log_interval == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
            step += 1
        model.eval()
        correct = 0
        with torch.no_grad():
            for xb, yb in val_dl:
                correct += (model(xb).argmax(1) == yb).sum().item()
        print(f"epoch {epoch} val_acc {correct / max(1, len(val_ds)):.4f} elapsed {time.time() - t0:.1f}s")
    print("done")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Keyword-spotting style 1D CNN on synthetic audio, DistributedDataParallel-ready.

Single process:   python train.py --epochs 3
Multi process:    torchrun --nproc_per_node=2 train.py --epochs 3 --batch-size 32
"""
import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SyntheticSpeechCommands(Dataset):
    """1-second clips at `sample_rate`: each class is a chirp with its own base frequency, plus noise."""

    def __init__(self, n, num_classes, sample_rate, seed):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, num_classes, (n,), generator=g)
        t = torch.arange(sample_rate) / sample_rate
        f0 = 200 + 150 * self.labels.float()[:, None]
        phase = torch.rand(n, 1, generator=g) * 2 * math.pi
        self.wave = torch.sin(2 * math.pi * f0 * t * (1 + 0.3 * t) + phase) + 0.5 * torch.randn(n, sample_rate, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.wave[i].unsqueeze(0), self.labels[i]


class M5(nn.Module):
    """M5 network from 'Very Deep Convolutional Neural Networks for Raw Waveforms'."""

    def __init__(self, n_output=12, stride=16, n_channel=32):
        super().__init__()
        self.conv1 = nn.Conv1d(1, n_channel, kernel_size=80, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.conv2 = nn.Conv1d(n_channel, n_channel, 3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, 3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.conv4 = nn.Conv1d(2 * n_channel, 2 * n_channel, 3)
        self.bn4 = nn.BatchNorm1d(2 * n_channel)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        for conv, bn in [(self.conv1, self.bn1), (self.conv2, self.bn2), (self.conv3, self.bn3), (self.conv4, self.bn4)]:
            x = F.max_pool1d(F.relu(bn(conv(x))), 4)
        x = F.adaptive_avg_pool1d(x, 1).squeeze(-1)
        return self.fc1(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-clips", type=int, default=4000)
    p.add_argument("--num-classes", type=int, default=12)
    p.add_argument("--sample-rate", type=int, default=8000)
    p.add_argument("--channels", type=int, default=32)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64, help="per-process batch size")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--backend", default="gloo")
    args = p.parse_args()

    ddp = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if ddp:
        dist.init_process_group(args.backend)
    rank = dist.get_rank() if ddp else 0
    world = dist.get_world_size() if ddp else 1
    torch.manual_seed(0)

    ds = SyntheticSpeechCommands(args.num_clips, args.num_classes, args.sample_rate, seed=0)
    sampler = DistributedSampler(ds) if ddp else None
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=sampler is None, sampler=sampler,
                        num_workers=args.workers, drop_last=True)
    model = M5(args.num_classes, n_channel=args.channels)
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, args.epochs // 2), gamma=0.1)
    if rank == 0:
        print(f"world {world}: {len(ds)} clips @ {args.sample_rate} Hz, {len(loader)} steps/epoch/rank")
    t0 = time.time()
    for epoch in range(1, args.epochs + 1):
        if sampler:
            sampler.set_epoch(epoch)
        model.train()
        correct = total = 0
        for i, (x, y) in enumerate(loader):
            out = model(x)
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (out.argmax(1) == y).sum().item()
            total += len(y)
            if rank == 0 and i % 10 == 0:
                print(f"Train Epoch: {epoch} [{i * len(x) * world}/{len(ds)}]\tLoss: {loss.item():.6f}", flush=True)
        sched.step()
        if rank == 0:
            print(f"epoch {epoch} train acc {correct / max(1, total):.3f} ({time.time() - t0:.1f}s)")
    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

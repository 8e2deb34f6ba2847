"""ResNet-style image classifier, configured with Hydra.

    python train.py                                   # defaults from configs/config.yaml
    python train.py model=resnet_base trainer.max_epochs=3 data.num_samples=4000
"""
import logging
import time

import hydra
import torch
import torch.nn as nn
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader, TensorDataset

log = logging.getLogger(__name__)


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.short = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.short = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.short(x))


class ResNet(nn.Module):
    def __init__(self, width, blocks_per_stage, num_stages, num_classes, in_channels=3):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        layers, c = [], width
        for s in range(num_stages):
            c_out = width * (2 ** s)
            for b in range(blocks_per_stage):
                layers.append(BasicBlock(c, c_out, 2 if (b == 0 and s > 0) else 1))
                c = c_out
        self.layers = nn.Sequential(*layers)
        self.head = nn.Linear(c, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def build_data(cfg):
    g = torch.Generator().manual_seed(cfg.seed)
    n, s = cfg.data.num_samples, cfg.data.image_size
    x = torch.randn(n, cfg.data.channels, s, s, generator=g)
    y = torch.randint(0, cfg.data.num_classes, (n,), generator=g)
    # make the labels learnable: add a class-dependent colour offset
    x += 0.5 * (y.float().view(-1, 1, 1, 1) / cfg.data.num_classes)
    return DataLoader(TensorDataset(x, y), batch_size=cfg.data.batch_size, shuffle=True,
                      num_workers=cfg.data.num_workers, drop_last=True)


def build_optimizer(cfg, params):
    o = cfg.optimizer
    if o.name == "sgd":
        return torch.optim.SGD(params, lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay, nesterov=True)
    return torch.optim.AdamW(params, lr=o.lr, weight_decay=o.weight_decay)


@hydra.main(version_base=None, config_path="configs", config_name="config")
def main(cfg: DictConfig) -> None:
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    torch.manual_seed(cfg.seed)
    loader = build_data(cfg)
    model = ResNet(cfg.model.width, cfg.model.blocks_per_stage, cfg.model.num_stages,
                   cfg.data.num_classes, cfg.data.channels)
    log.info("params: %.2fM", sum(p.numel() for p in model.parameters()) / 1e6)
    opt = build_optimizer(cfg, model.parameters())
    total_steps = cfg.trainer.max_epochs * len(loader)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.optimizer.lr, total_steps=total_steps)
    step, t0 = 0, time.time()
    for epoch in range(cfg.trainer.max_epochs):
        model.train()
        running = 0.0
        for x, y in loader:
            loss = F.cross_entropy(model(x), y, label_smoothing=cfg.trainer.label_smoothing)
            opt.zero_grad()
            loss.backward()
            if cfg.trainer.grad_clip:
                nn.utils.clip_grad_norm_(model.parameters(), cfg.trainer.grad_clip)
            opt.step()
            sched.step()
            running += loss.item()
            step += 1
            if step % cfg.trainer.log_every_n_steps == 0:
                log.info("epoch %d step %d/%d loss %.4f", epoch, step, total_steps, running / cfg.trainer.log_every_n_steps)
                running = 0.0
        log.info("epoch %d done, %.1fs", epoch, time.time() - t0)
    if cfg.trainer.save_checkpoint:
        torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()

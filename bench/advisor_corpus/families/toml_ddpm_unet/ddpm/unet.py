import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, c_in, c_out, t_dim, groups=8):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.t_proj = nn.Linear(t_dim, c_out)
        self.norm2 = nn.GroupNorm(groups, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.t_proj(temb)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class UNet(nn.Module):
    def __init__(self, in_channels=1, base_channels=32, channel_mults=(1, 2), t_dim=128):
        super().__init__()
        self.t_dim = t_dim
        self.t_mlp = nn.Sequential(nn.Linear(t_dim, t_dim * 2), nn.SiLU(), nn.Linear(t_dim * 2, t_dim))
        self.inc = nn.Conv2d(in_channels, base_channels, 3, padding=1)
        chans = [base_channels * m for m in channel_mults]
        self.downs, self.ups = nn.ModuleList(), nn.ModuleList()
        c = base_channels
        skips = []
        for co in chans:
            self.downs.append(ResBlock(c, co, t_dim))
            skips.append(co)
            c = co
        self.mid = ResBlock(c, c, t_dim)
        for co in reversed(chans):
            self.ups.append(ResBlock(c + skips.pop(), co, t_dim))
            c = co
        self.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, in_channels, 3, padding=1))

    def forward(self, x, t):
        temb = self.t_mlp(timestep_embedding(t, self.t_dim))
        h = self.inc(x)
        hs = []
        for i, block in enumerate(self.downs):
            h = block(h, temb)
            hs.append(h)
            if i < len(self.downs) - 1:
                h = F.avg_pool2d(h, 2)
        h = self.mid(h, temb)
        for i, block in enumerate(self.ups):
            skip = hs.pop()
            if h.shape[-1] != skip.shape[-1]:
                h = F.interpolate(h, size=skip.shape[-2:], mode="nearest")
            h = block(torch.cat([h, skip], 1), temb)
        return self.out(h)

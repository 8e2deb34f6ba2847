"""Train a small DDPM (epsilon-prediction UNet) on synthetic 'shapes' images.

    python train.py --config configs/shapes16.toml
"""
import argparse
import time
import tomllib

import torch
import torch.nn.functional as F

from ddpm.diffusion import GaussianDiffusion
from ddpm.unet import UNet


def synthetic_shapes(n, size, seed):
    """Random filled circles / squares on a black background, in [-1, 1]."""
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    cx = torch.randint(size // 4, 3 * size // 4, (n, 1, 1), generator=g)
    cy = torch.randint(size // 4, 3 * size // 4, (n, 1, 1), generator=g)
    r = torch.randint(size // 8, size // 3, (n, 1, 1), generator=g)
    circle = ((xx - cx) ** 2 + (yy - cy) ** 2) < r ** 2
    square = ((xx - cx).abs() < r) & ((yy - cy).abs() < r)
    kind = torch.rand(n, 1, 1, generator=g) < 0.5
    img = torch.where(kind, circle, square).float()
    return (img * 2 - 1).unsqueeze(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/shapes16.toml")
    args = ap.parse_args()
    with open(args.config, "rb") as f:
        cfg = tomllib.load(f)
    dcfg, mcfg, tcfg = cfg["data"], cfg["model"], cfg["train"]
    torch.manual_seed(tcfg["seed"])

    data = synthetic_shapes(dcfg["num_images"], dcfg["image_size"], tcfg["seed"])
    model = UNet(1, mcfg["base_channels"], tuple(mcfg["channel_mults"]), mcfg["time_embed_dim"])
    diffusion = GaussianDiffusion(cfg["diffusion"]["timesteps"], cfg["diffusion"]["beta_start"], cfg["diffusion"]["beta_end"])
    opt = torch.optim.Adam(model.parameters(), lr=tcfg["lr"])
    ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
    print(f"{cfg['run_name']}: {len(data)} images {dcfg['image_size']}px, "
          f"UNet {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params, {tcfg['epochs']} epochs")

    bs = tcfg["batch_size"]
    step, t0 = 0, time.time()
    for epoch in range(tcfg["epochs"]):
        perm = torch.randperm(len(data))
        for i in range(0, len(data) - bs + 1, bs):
            x0 = data[perm[i:i + bs]]
            t = torch.randint(0, diffusion.T, (bs,))
            noise = torch.randn_like(x0)
            loss = F.mse_loss(model(diffusion.q_sample(x0, t, noise), t), noise)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for k, v in model.state_dict().items():
                    ema[k].mul_(tcfg["ema_decay"]).add_(v, alpha=1 - tcfg["ema_decay"]) if v.dtype.is_floating_point else ema[k].copy_(v)
            step += 1
            if step % tcfg["log_every"] == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
    if cfg["sample"]["num_samples"] > 0:
        model.load_state_dict(ema)
        model.eval()
        samples = diffusion.sample(model, (cfg["sample"]["num_samples"], 1, dcfg["image_size"], dcfg["image_size"]), cfg["sample"]["steps"])
        print(f"sampled {samples.shape[0]} images, mean {samples.mean():.3f} std {samples.std():.3f}")
    print(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()

"""Data-parallel training of a small Transformer language model (DDP).

Launch with torchrun (one process per GPU), e.g.
    torchrun --standalone --nproc_per_node=2 train_ddp.py --config configs/lm_small.yaml --max-steps 200
"""
import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--max-steps", type=int, default=None, help="overrides train.max_steps")
    p.add_argument("--batch-size", type=int, default=None, help="per-process batch size; overrides train.batch_size")
    p.add_argument("--seq-len", type=int, default=None)
    p.add_argument("--precision", choices=["fp32", "bf16"], default=None)
    return p.parse_args()


class LM(nn.Module):
    def __init__(self, vocab, d_model, n_layers, n_heads, seq_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        block = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, 0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, n_layers)
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((seq_len, seq_len), float("-inf")), 1))

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        x = self.blocks(x, mask=self.mask[:t, :t], is_causal=True)
        return self.head(self.ln(x))


def main():
    args = parse()
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    tr, m = cfg["train"], cfg["model"]
    for k, v in [("max_steps", args.max_steps), ("batch_size", args.batch_size), ("seq_len", args.seq_len), ("precision", args.precision)]:
        if v is not None:
            tr[k] = v

    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(1234 + rank)
    master = rank == 0

    g = torch.Generator().manual_seed(0)
    n_tokens = cfg["data"]["num_tokens"]
    stream = torch.randint(0, m["vocab_size"], (n_tokens,), generator=g)
    stream[1::2] = (stream[0::2][: len(stream[1::2])] * 7 + 3) % m["vocab_size"]  # learnable structure
    L = tr["seq_len"] + 1
    seqs = stream[: (n_tokens // L) * L].view(-1, L)
    ds = TensorDataset(seqs)
    sampler = DistributedSampler(ds, shuffle=True) if distributed else None
    loader = DataLoader(ds, batch_size=tr["batch_size"], sampler=sampler, shuffle=sampler is None, drop_last=True)

    model = LM(m["vocab_size"], m["d_model"], m["n_layers"], m["n_heads"], tr["seq_len"])
    if distributed:
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=tr["lr"], betas=(0.9, 0.95), weight_decay=tr["weight_decay"])
    if master:
        print(f"world_size={world} params={sum(p.numel() for p in model.parameters())/1e6:.2f}M "
              f"sequences={len(ds)} global_batch={tr['batch_size'] * world}")

    step, epoch, t0 = 0, 0, time.time()
    use_bf16 = tr["precision"] == "bf16"
    while step < tr["max_steps"]:
        if sampler is not None:
            sampler.set_epoch(epoch)
        for (batch,) in loader:
            lr = tr["lr"] * min(1.0, (step + 1) / tr["warmup_steps"]) * 0.5 * (1 + math.cos(math.pi * step / tr["max_steps"]))
            for pg in opt.param_groups:
                pg["lr"] = lr
            x, y = batch[:, :-1], batch[:, 1:]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
                logits = model(x)
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            if master and step % tr["log_interval"] == 0:
                print(f"step {step}/{tr['max_steps']} epoch {epoch} loss {loss.item():.4f} lr {lr:.2e} "
                      f"{(time.time() - t0) / step * 1000:.0f}ms/step", flush=True)
            if step >= tr["max_steps"]:
                break
        epoch += 1
    if master:
        print(f"training finished in {time.time() - t0:.1f}s")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

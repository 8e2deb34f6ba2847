"""Encoder-decoder Transformer on algorithmic seq2seq tasks (reverse / sort / copy).

    python train.py --experiment reverse_small
    python train.py --experiment sort_base train.num_epochs=3 model.d_model=192
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from seq2seq.config import load_config, to_dict

PAD, BOS, EOS = 0, 1, 2


def make_split(dc, n, seed):
    g = torch.Generator().manual_seed(seed)
    L = dc.max_len + 2
    src = torch.full((n, L), PAD)
    tgt = torch.full((n, L + 1), PAD)
    lengths = torch.randint(dc.min_len, dc.max_len + 1, (n,), generator=g)
    for i in range(n):
        ln = int(lengths[i])
        s = torch.randint(3, dc.vocab_size, (ln,), generator=g)
        t = {"reverse": s.flip(0), "sort": s.sort().values, "copy": s}[dc.task]
        src[i, :ln] = s
        src[i, ln] = EOS
        tgt[i, 0] = BOS
        tgt[i, 1:ln + 1] = t
        tgt[i, ln + 1] = EOS
    return src, tgt


class Seq2Seq(nn.Module):
    def __init__(self, mc, vocab, max_len):
        super().__init__()
        self.emb = nn.Embedding(vocab, mc.d_model, padding_idx=PAD)
        self.pos = nn.Embedding(max_len + 4, mc.d_model)
        self.tf = nn.Transformer(mc.d_model, mc.nhead, mc.num_encoder_layers, mc.num_decoder_layers,
                                 mc.dim_feedforward, mc.dropout, batch_first=True)
        self.out = nn.Linear(mc.d_model, vocab)
        self.scale = math.sqrt(mc.d_model)

    def embed(self, x):
        return self.emb(x) * self.scale + self.pos(torch.arange(x.shape[1]))

    def forward(self, src, tgt_in):
        causal = self.tf.generate_square_subsequent_mask(tgt_in.shape[1])
        h = self.tf(self.embed(src), self.embed(tgt_in), tgt_mask=causal,
                    src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt_in == PAD)
        return self.out(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--experiment", default=None, help="module name in experiments/")
    ap.add_argument("overrides", nargs="*", help="dotted overrides, e.g. train.num_epochs=3")
    args = ap.parse_args()
    cfg = load_config(args.experiment, args.overrides)
    print(json.dumps(to_dict(cfg), indent=1))
    torch.manual_seed(cfg.train.seed)

    src, tgt = make_split(cfg.data, cfg.data.num_train, cfg.train.seed)
    vsrc, vtgt = make_split(cfg.data, cfg.data.num_valid, cfg.train.seed + 1)
    model = Seq2Seq(cfg.model, cfg.data.vocab_size, cfg.data.max_len + 2)
    print(f"params {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M, train pairs {len(src)}")
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    steps_per_epoch = len(src) // cfg.train.batch_size
    total = steps_per_epoch * cfg.train.num_epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.optim.warmup_steps) * max(0.0, 1 - s / total))
    use_bf16 = cfg.train.precision == "bf16"
    step, t0 = 0, time.time()
    for epoch in range(cfg.train.num_epochs):
        model.train()
        perm = torch.randperm(len(src))
        for b in range(steps_per_epoch):
            idx = perm[b * cfg.train.batch_size:(b + 1) * cfg.train.batch_size]
            s, t = src[idx], tgt[idx]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
                logits = model(s, t[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1), ignore_index=PAD)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
            opt.step()
            sched.step()
            step += 1
            if step % cfg.train.log_every == 0:
                print(f"[{cfg.name}] epoch {epoch} step {step}/{total} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
        model.eval()
        with torch.no_grad():
            logits = model(vsrc, vtgt[:, :-1])
            mask = vtgt[:, 1:] != PAD
            acc = ((logits.argmax(-1) == vtgt[:, 1:]) & mask).sum().item() / mask.sum().item()
        print(f"[{cfg.name}] epoch {epoch} valid token acc (teacher forced) {acc:.4f}")


if __name__ == "__main__":
    main()

"""
Character-level GPT training, nanoGPT style. Defaults below; override with a config file and/or
--key=value flags:
$ python train.py config/train_shakespeare_char.py --max_iters=500
"""
import math
import os
import time
from contextlib import nullcontext

import numpy as np
import torch

from model import GPT, GPTConfig

# -----------------------------------------------------------------------------
# default config values
out_dir = 'out'
eval_interval = 100
log_interval = 10
eval_iters = 10
always_save_checkpoint = False
dataset = 'synthetic_char'
dataset_chars = 100000  # size of the generated character corpus
gradient_accumulation_steps = 1
batch_size = 12
block_size = 64
# model
n_layer = 4
n_head = 4
n_embd = 128
dropout = 0.0
bias = False
# adamw optimizer
learning_rate = 1e-3
max_iters = 200
weight_decay = 1e-1
beta1 = 0.9
beta2 = 0.99
grad_clip = 1.0
# learning rate decay settings
decay_lr = True
warmup_iters = 20
lr_decay_iters = 200
min_lr = 1e-4
# system
device = 'cpu'
dtype = 'float32'  # 'float32', 'bfloat16'
compile = False
seed = 1337
# -----------------------------------------------------------------------------
config_keys = [k for k, v in globals().items() if not k.startswith('_') and isinstance(v, (int, float, bool, str))]
exec(open('configurator.py').read())  # overrides from command line or config file
config = {k: globals()[k] for k in config_keys}
# -----------------------------------------------------------------------------

torch.manual_seed(seed)
tokens_per_iter = gradient_accumulation_steps * batch_size * block_size
print(f"tokens per iteration will be: {tokens_per_iter:,}")
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16}[dtype]
ctx = nullcontext() if dtype == 'float32' else torch.amp.autocast(device_type='cpu', dtype=ptdtype)

# synthetic "text": a random character-level Markov source over a 65 char alphabet
rng = np.random.default_rng(0)
vocab_size = 65
trans = rng.dirichlet(np.ones(vocab_size) * 0.1, size=vocab_size)
cdf = trans.cumsum(1)
u = rng.random(dataset_chars)
data = np.empty(dataset_chars, dtype=np.int64)
c = 0
for i in range(dataset_chars):
    c = min(int(np.searchsorted(cdf[c], u[i])), vocab_size - 1)
    data[i] = c
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]
print(f"{dataset}: {len(train_data):,} train chars, {len(val_data):,} val chars")


def get_batch(split):
    d = train_data if split == 'train' else val_data
    ix = torch.randint(len(d) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(d[i:i + block_size]) for i in ix])
    y = torch.stack([torch.from_numpy(d[i + 1:i + 1 + block_size]) for i in ix])
    return x, y


model = GPT(GPTConfig(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                      bias=bias, vocab_size=vocab_size, dropout=dropout))
print("number of parameters: %.2fM" % (model.get_num_params() / 1e6,))
optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2))
if compile:
    model = torch.compile(model)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


X, Y = get_batch('train')
t0 = time.time()
iter_num = 0
while True:
    lr = get_lr(iter_num) if decay_lr else learning_rate
    for param_group in optimizer.param_groups:
        param_group['lr'] = lr
    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if always_save_checkpoint and iter_num > 0:
            os.makedirs(out_dir, exist_ok=True)
            torch.save({'model': model.state_dict(), 'config': config, 'iter_num': iter_num}, os.path.join(out_dir, 'ckpt.pt'))
    for micro_step in range(gradient_accumulation_steps):
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        X, Y = get_batch('train')
        loss.backward()
    if grad_clip != 0.0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    t1 = time.time()
    dt = t1 - t0
    t0 = t1
    if iter_num % log_interval == 0:
        lossf = loss.item() * gradient_accumulation_steps
        print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms")
    iter_num += 1
    if iter_num > max_iters:
        break

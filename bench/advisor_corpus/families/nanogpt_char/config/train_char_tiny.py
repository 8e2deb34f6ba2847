# very small debug model, quick sanity run
out_dir = 'out-char-tiny'
eval_interval = 50
eval_iters = 5
log_interval = 10
batch_size = 8
block_size = 64
n_layer = 2
n_head = 2
n_embd = 64
max_iters = 150
lr_decay_iters = 150
warmup_iters = 10

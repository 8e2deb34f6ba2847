# wider model, bf16 autocast, grad accumulation
out_dir = 'out-char-wide'
eval_interval = 100
eval_iters = 10
batch_size = 8
block_size = 64
gradient_accumulation_steps = 2
n_layer = 4
n_head = 6
n_embd = 192
dtype = 'bfloat16'
max_iters = 40
lr_decay_iters = 40
warmup_iters = 10
learning_rate = 6e-4

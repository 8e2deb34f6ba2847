# train a miniature character-level shakespeare-like model
out_dir = 'out-shakespeare-char'
eval_interval = 100
eval_iters = 10
log_interval = 10
always_save_checkpoint = False

dataset = 'synthetic_char'
gradient_accumulation_steps = 1
batch_size = 8
block_size = 64

# baby GPT model :)
n_layer = 4
n_head = 4
n_embd = 128
dropout = 0.2

learning_rate = 1e-3
max_iters = 150
lr_decay_iters = 150
min_lr = 1e-4
beta2 = 0.99
warmup_iters = 30

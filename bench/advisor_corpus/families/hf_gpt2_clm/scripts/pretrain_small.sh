#!/usr/bin/env bash
# Pre-train a small GPT-2 from scratch on the synthetic corpus.
# usage: bash scripts/pretrain_small.sh [MAX_STEPS] [NPROC]
set -euo pipefail
MAX_STEPS=${1:-100}
NPROC=${2:-1}
OUT=out/gpt2-small-${MAX_STEPS}

torchrun --standalone --nproc_per_node=${NPROC} run_clm.py \
  --output_dir ${OUT} \
  --n_layer 4 --n_embd 128 --n_head 4 \
  --block_size 64 \
  --num_train_samples 2000 \
  --per_device_train_batch_size 8 \
  --gradient_accumulation_steps 1 \
  --max_steps ${MAX_STEPS} \
  --learning_rate 6e-4 --lr_scheduler_type cosine --warmup_steps 10 \
  --weight_decay 0.1 \
  --logging_steps 10 \
  --save_strategy no \
  --report_to none \
  --use_cpu \
  --ddp_backend gloo

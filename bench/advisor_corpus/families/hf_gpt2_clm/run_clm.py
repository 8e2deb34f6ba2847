#!/usr/bin/env python
"""Causal language modelling from scratch with a GPT-2 style model and the HF Trainer.

Example:
    python run_clm.py --output_dir out/gpt2-small --n_layer 4 --n_embd 256 --block_size 128 \
        --per_device_train_batch_size 8 --max_steps 200 --learning_rate 6e-4 --report_to none
"""
import logging
import math
import sys
from dataclasses import dataclass, field

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer, TrainingArguments, set_seed

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    n_layer: int = field(default=4)
    n_embd: int = field(default=256)
    n_head: int = field(default=4)
    vocab_size: int = field(default=4096)
    dropout: float = field(default=0.0)


@dataclass
class DataArguments:
    num_train_samples: int = field(default=4000, metadata={"help": "number of synthetic training sequences"})
    block_size: int = field(default=128, metadata={"help": "sequence length"})


class SyntheticLM(Dataset):
    """Sequences from a random order-1 Markov chain, so there is something to learn."""

    def __init__(self, n, block_size, vocab_size, seed=0):
        g = torch.Generator().manual_seed(seed)
        successors = torch.randint(0, vocab_size, (vocab_size, 8), generator=g)  # sparse transition table
        choice = torch.randint(0, 8, (n, block_size), generator=g)
        x = torch.empty(n, block_size, dtype=torch.long)
        x[:, 0] = torch.randint(0, vocab_size, (n,), generator=g)
        for t in range(1, block_size):
            x[:, t] = successors[x[:, t - 1], choice[:, t]]
        self.data = x

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main():
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        handlers=[logging.StreamHandler(sys.stdout)], level=logging.INFO)
    set_seed(training_args.seed)

    config = GPT2Config(vocab_size=model_args.vocab_size, bos_token_id=model_args.vocab_size - 1, eos_token_id=model_args.vocab_size - 1,
                        n_positions=data_args.block_size, n_embd=model_args.n_embd,
                        n_layer=model_args.n_layer, n_head=model_args.n_head, resid_pdrop=model_args.dropout,
                        embd_pdrop=model_args.dropout, attn_pdrop=model_args.dropout)
    model = GPT2LMHeadModel(config)
    logger.info("Training new model from scratch - Total size=%.2fM params", model.num_parameters() / 1e6)

    train_dataset = SyntheticLM(data_args.num_train_samples, data_args.block_size, model_args.vocab_size, seed=training_args.seed)
    trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset)
    train_result = trainer.train()
    metrics = train_result.metrics
    metrics["train_samples"] = len(train_dataset)
    try:
        metrics["perplexity"] = math.exp(metrics["train_loss"])
    except OverflowError:
        metrics["perplexity"] = float("inf")
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)


if __name__ == "__main__":
    main()

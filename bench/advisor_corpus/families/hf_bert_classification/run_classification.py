#!/usr/bin/env python
"""Fine-tune / pre-train a small BERT sequence classifier with the HF Trainer.

All arguments come from a JSON file (or the command line):

    python run_classification.py configs/bert_mini.json
    python run_classification.py --model_config_name configs/bert_tiny_config.json --output_dir out/x ...
"""
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

import torch
from torch.utils.data import Dataset
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    HfArgumentParser,
    Trainer,
    TrainingArguments,
    set_seed,
)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_config_name: str = field(metadata={"help": "Path to a BertConfig json (weights are initialised from scratch)"})
    num_labels: int = field(default=2)
    hidden_dropout_prob: Optional[float] = field(default=None)


@dataclass
class DataTrainingArguments:
    train_samples: int = field(default=2000, metadata={"help": "number of synthetic training examples"})
    eval_samples: int = field(default=200)
    max_seq_length: int = field(default=128)
    vocab_size: int = field(default=8000)


class SyntheticTextClassification(Dataset):
    """Random token sequences; the label depends on the token statistics so the task is learnable."""

    def __init__(self, n, seq_len, vocab_size, num_labels, seed):
        g = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(5, vocab_size, (n, seq_len), generator=g)
        lengths = torch.randint(seq_len // 2, seq_len + 1, (n,), generator=g)
        self.attention_mask = (torch.arange(seq_len)[None, :] < lengths[:, None]).long()
        self.input_ids[self.attention_mask == 0] = 0
        self.input_ids[:, 0] = 2  # [CLS]
        self.labels = (self.input_ids[:, 1:9].float().mean(1) > vocab_size / 2).long() % num_labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.input_ids[i], "attention_mask": self.attention_mask[i], "labels": self.labels[i]}


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    logger.info("Training/evaluation parameters %s", training_args)
    set_seed(training_args.seed)

    with open(model_args.model_config_name) as f:
        cfg_dict = json.load(f)
    config = BertConfig(**cfg_dict, num_labels=model_args.num_labels)
    config.vocab_size = data_args.vocab_size
    config.max_position_embeddings = max(config.max_position_embeddings, data_args.max_seq_length)
    if model_args.hidden_dropout_prob is not None:
        config.hidden_dropout_prob = model_args.hidden_dropout_prob
    model = BertForSequenceClassification(config)
    logger.info("model params: %.2fM", model.num_parameters() / 1e6)

    train_ds = SyntheticTextClassification(data_args.train_samples, data_args.max_seq_length,
                                           data_args.vocab_size, model_args.num_labels, training_args.seed)
    eval_ds = SyntheticTextClassification(data_args.eval_samples, data_args.max_seq_length,
                                          data_args.vocab_size, model_args.num_labels, training_args.seed + 1)

    def compute_metrics(p):
        preds = p.predictions.argmax(-1)
        return {"accuracy": float((preds == p.label_ids).mean())}

    trainer = Trainer(model=model, args=training_args, train_dataset=train_ds,
                      eval_dataset=eval_ds, compute_metrics=compute_metrics)
    train_result = trainer.train()
    trainer.log_metrics("train", train_result.metrics)
    if training_args.do_eval:
        metrics = trainer.evaluate()
        trainer.log_metrics("eval", metrics)


if __name__ == "__main__":
    main()

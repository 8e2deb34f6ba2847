#!/usr/bin/env python3
"""Write jobs.json: the corpus job list, randomly interleaved across families (fixed seed).

Each entry: job_id, family, user, name, command, config_files (relative to the family dir),
n_gpus (worker processes / cores the launch uses), n_nodes, code_dir.
Re-run after editing the table below:  python bench/advisor_corpus/make_jobs.py
"""

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20261121

GPT2_COMMON = "--logging_steps 10 --save_strategy no --report_to none --use_cpu"

# family -> list of (user, name, command, config_files, n_gpus)
JOBS = {
    "argparse_mlp": [
        ("alice", "mlp-10k-e3", "python train.py --n-samples 10000 --epochs 3", [], 1),
        ("alice", "mlp-20k-e5-bs256", "python train.py --n-samples 20000 --epochs 5 --batch-size 256", [], 1),
        (
            "alice",
            "mlp-50k-h512-d4",
            "python train.py --n-samples 50000 --hidden 512 --depth 4 --epochs 4 --batch-size 256",
            [],
            1,
        ),
        (
            "alice",
            "mlp-h1024-sgd",
            "python train.py --n-samples 20000 --hidden 1024 --epochs 3 --optimizer sgd --lr 0.05",
            [],
            1,
        ),
        ("bob", "mlp-5k-e10-bs64", "python train.py --n-samples 5000 --epochs 10 --batch-size 64", [], 1),
        ("alice", "mlp-40k-e8-bs512", "python train.py --n-samples 40000 --epochs 8 --batch-size 512", [], 1),
    ],
    "hydra_resnet": [
        (
            "bob",
            "resnet-small-default",
            "python train.py",
            [
                "configs/config.yaml",
                "configs/model/resnet_small.yaml",
                "configs/data/synthetic_cifar.yaml",
                "configs/optimizer/sgd.yaml",
                "configs/trainer/default.yaml",
            ],
            1,
        ),
        (
            "bob",
            "resnet-small-e3",
            "python train.py trainer.max_epochs=3",
            [
                "configs/config.yaml",
                "configs/model/resnet_small.yaml",
                "configs/data/synthetic_cifar.yaml",
                "configs/optimizer/sgd.yaml",
                "configs/trainer/default.yaml",
            ],
            1,
        ),
        (
            "bob",
            "resnet-base-e1",
            "python train.py model=resnet_base trainer.max_epochs=1",
            [
                "configs/config.yaml",
                "configs/model/resnet_base.yaml",
                "configs/data/synthetic_cifar.yaml",
                "configs/optimizer/sgd.yaml",
                "configs/trainer/default.yaml",
            ],
            1,
        ),
        (
            "carol",
            "resnet-tiny16-adamw",
            "python train.py data=synthetic_tiny optimizer=adamw trainer.max_epochs=3",
            [
                "configs/config.yaml",
                "configs/model/resnet_small.yaml",
                "configs/data/synthetic_tiny.yaml",
                "configs/optimizer/adamw.yaml",
                "configs/trainer/default.yaml",
            ],
            1,
        ),
        (
            "bob",
            "resnet-w24-3k-bs128",
            "python train.py model.width=24 data.num_samples=3072 data.batch_size=128 trainer.max_epochs=2",
            [
                "configs/config.yaml",
                "configs/model/resnet_small.yaml",
                "configs/data/synthetic_cifar.yaml",
                "configs/optimizer/sgd.yaml",
                "configs/trainer/default.yaml",
            ],
            1,
        ),
        (
            "bob",
            "resnet-base-16px-e3",
            "python train.py model=resnet_base data.image_size=16 trainer.max_epochs=3",
            [
                "configs/config.yaml",
                "configs/model/resnet_base.yaml",
                "configs/data/synthetic_cifar.yaml",
                "configs/optimizer/sgd.yaml",
                "configs/trainer/default.yaml",
            ],
            1,
        ),
    ],
    "hf_bert_classification": [
        (
            "carol",
            "bert-tiny-sst2",
            "python run_classification.py configs/tiny_sst2.json",
            ["configs/tiny_sst2.json", "configs/bert_tiny_config.json"],
            1,
        ),
        (
            "carol",
            "bert-tiny-sst2-3ep",
            "python run_classification.py configs/tiny_sst2_3ep.json",
            ["configs/tiny_sst2_3ep.json", "configs/bert_tiny_config.json"],
            1,
        ),
        (
            "carol",
            "bert-mini-mnli",
            "python run_classification.py configs/mini_mnli.json",
            ["configs/mini_mnli.json", "configs/bert_mini_config.json"],
            1,
        ),
        (
            "carol",
            "bert-mini-mnli-480-len128-accum2",
            "python run_classification.py configs/mini_mnli_long.json",
            ["configs/mini_mnli_long.json", "configs/bert_mini_config.json"],
            1,
        ),
        (
            "dan",
            "bert-tiny-150steps",
            "python run_classification.py configs/tiny_steps.json",
            ["configs/tiny_steps.json", "configs/bert_tiny_config.json"],
            1,
        ),
    ],
    "hf_gpt2_clm": [
        (
            "dan",
            "gpt2-l2-50steps",
            "python run_clm.py --output_dir out/gpt2-l2 --n_layer 2 --n_embd 128 --n_head 4 --block_size 64 "
            "--num_train_samples 1000 --per_device_train_batch_size 8 --max_steps 50 --learning_rate 5e-4 "
            + GPT2_COMMON,
            [],
            1,
        ),
        (
            "dan",
            "gpt2-l2-400steps",
            "python run_clm.py --output_dir out/gpt2-l2 --n_layer 2 --n_embd 128 --n_head 4 --block_size 64 "
            "--num_train_samples 1000 --per_device_train_batch_size 8 --max_steps 400 --learning_rate 5e-4 "
            + GPT2_COMMON,
            [],
            1,
        ),
        (
            "carol",
            "gpt2-l4-d256-90steps",
            "python run_clm.py --output_dir out/gpt2-l4 --n_layer 4 --n_embd 256 --n_head 4 --block_size 64 "
            "--num_train_samples 2000 --per_device_train_batch_size 8 --max_steps 90 --learning_rate 3e-4 "
            + GPT2_COMMON,
            [],
            1,
        ),
        (
            "dan",
            "gpt2-small-60steps-1proc",
            "bash scripts/pretrain_small.sh 60 1",
            ["scripts/pretrain_small.sh"],
            1,
        ),
        (
            "dan",
            "gpt2-small-60steps-2proc",
            "bash scripts/pretrain_small.sh 60 2",
            ["scripts/pretrain_small.sh"],
            2,
        ),
        (
            "carol",
            "gpt2-l2-2epochs",
            "python run_clm.py --output_dir out/gpt2-ep --n_layer 2 --n_embd 128 --n_head 4 --block_size 128 "
            "--num_train_samples 240 --per_device_train_batch_size 8 --num_train_epochs 2 --learning_rate 5e-4 "
            + GPT2_COMMON,
            [],
            1,
        ),
    ],
    "lightning_vit": [
        (
            "erin",
            "vit-tiny",
            "python main.py fit --config configs/vit_tiny.yaml",
            ["configs/vit_tiny.yaml"],
            1,
        ),
        (
            "erin",
            "vit-tiny-6ep",
            "python main.py fit --config configs/vit_tiny.yaml --trainer.max_epochs 6",
            ["configs/vit_tiny.yaml"],
            1,
        ),
        (
            "erin",
            "vit-small",
            "python main.py fit --config configs/vit_small.yaml",
            ["configs/vit_small.yaml"],
            1,
        ),
        (
            "erin",
            "vit-small-1.5k-5ep-bs128",
            "python main.py fit --config configs/vit_small.yaml --data.num_train 1536 --data.batch_size 128 --trainer.max_epochs 5",
            ["configs/vit_small.yaml"],
            1,
        ),
        (
            "frank",
            "vit-tiny-ddp2-bf16",
            "python main.py fit --config configs/vit_tiny_bf16_ddp.yaml",
            ["configs/vit_tiny_bf16_ddp.yaml"],
            2,
        ),
    ],
    "lightning_autoencoder": [
        ("frank", "ae-4k-e2", "python train.py --max_epochs 2 --num_samples 4000", [], 1),
        ("frank", "ae-4k-e5", "python train.py --max_epochs 5 --num_samples 4000", [], 1),
        (
            "erin",
            "ae-4k-c64-l128-e4",
            "python train.py --max_epochs 4 --num_samples 4000 --latent_dim 128 --base_channel_size 64",
            [],
            1,
        ),
        (
            "frank",
            "ae-2k-e8-bs32",
            "python train.py --max_epochs 8 --num_samples 2000 --batch_size 32",
            [],
            1,
        ),
        (
            "frank",
            "ae-6k-bf16",
            "python train.py --max_epochs 3 --num_samples 6000 --precision bf16-mixed",
            [],
            1,
        ),
    ],
    "keras_lstm_text": [
        ("grace", "lstm-1k-e2", "python train.py --epochs 2 --num_samples 1000", [], 1),
        ("grace", "lstm-1k-e5", "python train.py --epochs 5 --num_samples 1000", [], 1),
        ("grace", "bilstm-1.2k-e2", "python train.py --epochs 2 --num_samples 1200 --bidirectional", [], 1),
        (
            "grace",
            "lstm128-len160",
            "python train.py --epochs 1 --num_samples 800 --maxlen 160 --lstm_units 128",
            [],
            1,
        ),
        (
            "henry",
            "lstm-2.5k-e5-bs128",
            "python train.py --epochs 5 --num_samples 2500 --batch_size 128",
            [],
            1,
        ),
    ],
    "slurm_ddp_transformer": [
        (
            "dan",
            "lm-small-1g-100",
            "bash slurm/train_1gpu.sbatch",
            ["slurm/train_1gpu.sbatch", "configs/lm_small.yaml"],
            1,
        ),
        (
            "dan",
            "lm-small-1g-300",
            "MAX_STEPS=300 bash slurm/train_1gpu.sbatch",
            ["slurm/train_1gpu.sbatch", "configs/lm_small.yaml"],
            1,
        ),
        (
            "dan",
            "lm-small-ddp2-200",
            "bash slurm/train_ddp.sbatch configs/lm_small.yaml 200",
            ["slurm/train_ddp.sbatch", "configs/lm_small.yaml"],
            2,
        ),
        (
            "ivan",
            "lm-medium-ddp2-60",
            "bash slurm/train_ddp.sbatch configs/lm_medium.yaml 60",
            ["slurm/train_ddp.sbatch", "configs/lm_medium.yaml"],
            2,
        ),
        (
            "dan",
            "lm-small-ddp2-150-len128",
            "bash slurm/train_ddp.sbatch configs/lm_small.yaml 150 --seq-len 128",
            ["slurm/train_ddp.sbatch", "configs/lm_small.yaml"],
            2,
        ),
        (
            "ivan",
            "lm-medium-1g-40",
            "CONFIG=configs/lm_medium.yaml MAX_STEPS=40 bash slurm/train_1gpu.sbatch",
            ["slurm/train_1gpu.sbatch", "configs/lm_medium.yaml"],
            1,
        ),
    ],
    "nanogpt_char": [
        ("frank", "char-tiny", "python train.py config/train_char_tiny.py", ["config/train_char_tiny.py"], 1),
        (
            "frank",
            "char-shakespeare",
            "python train.py config/train_shakespeare_char.py",
            ["config/train_shakespeare_char.py"],
            1,
        ),
        (
            "frank",
            "char-shakespeare-250",
            "python train.py config/train_shakespeare_char.py --max_iters=250 --lr_decay_iters=250",
            ["config/train_shakespeare_char.py"],
            1,
        ),
        (
            "judy",
            "char-wide-bf16",
            "python train.py config/train_char_wide.py",
            ["config/train_char_wide.py"],
            1,
        ),
        (
            "frank",
            "char-tiny-bs32-ctx128",
            "python train.py config/train_char_tiny.py --batch_size=32 --block_size=128 --max_iters=400",
            ["config/train_char_tiny.py"],
            1,
        ),
        (
            "judy",
            "char-defaults-l6",
            "python train.py --max_iters=40 --n_layer=6 --n_embd=192 --n_head=6",
            [],
            1,
        ),
    ],
    "click_gnn": [
        ("grace", "gcn-10k-100ep", "python train.py --epochs 100 --num-nodes 10000", [], 1),
        ("grace", "gcn-20k-200ep", "python train.py --epochs 200", [], 1),
        (
            "alice",
            "sage-30k-h256",
            "python train.py --arch sage --epochs 100 --num-nodes 30000 --hidden 256",
            [],
            1,
        ),
        ("grace", "gcn-5k-3layer-300ep", "python train.py --epochs 300 --num-nodes 5000 --layers 3", [], 1),
        (
            "alice",
            "sage-50k-deg20",
            "python train.py --arch sage --num-nodes 50000 --avg-degree 20 --epochs 30 --eval-every 10",
            [],
            1,
        ),
    ],
    "xgboost_tabular": [
        (
            "henry",
            "xgb-baseline",
            "python train_xgb.py --config configs/baseline.json",
            ["configs/baseline.json"],
            1,
        ),
        (
            "henry",
            "xgb-deep",
            "python train_xgb.py --config configs/deep_trees.json",
            ["configs/deep_trees.json"],
            1,
        ),
        (
            "henry",
            "xgb-large-2threads",
            "python train_xgb.py --config configs/large_data.json --n-jobs 2",
            ["configs/large_data.json"],
            2,
        ),
        (
            "alice",
            "xgb-exact-small",
            "python train_xgb.py --config configs/exact_small.json",
            ["configs/exact_small.json"],
            1,
        ),
        (
            "henry",
            "xgb-large",
            "python train_xgb.py --config configs/large_data.json",
            ["configs/large_data.json"],
            1,
        ),
    ],
    "sklearn_forest": [
        ("henry", "rf-small", "python fit.py conf/rf_small.yaml", ["conf/rf_small.yaml"], 1),
        ("henry", "rf-large-cv2", "python fit.py conf/rf_large.yaml", ["conf/rf_large.yaml"], 2),
        ("alice", "extra-trees-5fold", "python fit.py conf/extra_trees.yaml", ["conf/extra_trees.yaml"], 1),
        ("henry", "hgb", "python fit.py conf/hgb.yaml", ["conf/hgb.yaml"], 1),
        ("henry", "hgb-cv2", "python fit.py conf/hgb.yaml --n-jobs 2", ["conf/hgb.yaml"], 2),
        ("alice", "rf-regression", "python fit.py conf/rf_regression.yaml", ["conf/rf_regression.yaml"], 2),
    ],
    "toml_ddpm_unet": [
        (
            "ivan",
            "ddpm-shapes16",
            "python train.py --config configs/shapes16.toml",
            ["configs/shapes16.toml"],
            1,
        ),
        (
            "ivan",
            "ddpm-shapes16-long",
            "python train.py --config configs/shapes16_long.toml",
            ["configs/shapes16_long.toml"],
            1,
        ),
        (
            "ivan",
            "ddpm-shapes32",
            "python train.py --config configs/shapes32.toml",
            ["configs/shapes32.toml"],
            1,
        ),
        (
            "ivan",
            "ddpm-shapes32-wide",
            "python train.py --config configs/shapes32_wide.toml",
            ["configs/shapes32_wide.toml"],
            1,
        ),
        (
            "judy",
            "ddpm-shapes16-bigdata",
            "python train.py --config configs/shapes16_bigdata.toml",
            ["configs/shapes16_bigdata.toml"],
            1,
        ),
    ],
    "dotenv_ppo_cartpole": [
        ("ivan", "ppo-default", "bash scripts/run.sh", [".env", "scripts/run.sh"], 1),
        (
            "ivan",
            "ppo-long",
            "bash scripts/run.sh envs/ppo_long.env",
            ["envs/ppo_long.env", "scripts/run.sh"],
            1,
        ),
        (
            "ivan",
            "ppo-many-envs",
            "bash scripts/run.sh envs/ppo_many_envs.env",
            ["envs/ppo_many_envs.env", "scripts/run.sh"],
            1,
        ),
        (
            "grace",
            "ppo-big-net",
            "bash scripts/run.sh envs/ppo_big_net.env",
            ["envs/ppo_big_net.env", "scripts/run.sh"],
            1,
        ),
        (
            "ivan",
            "ppo-short",
            "bash scripts/run.sh envs/ppo_short.env",
            ["envs/ppo_short.env", "scripts/run.sh"],
            1,
        ),
    ],
    "dataclass_seq2seq": [
        (
            "judy",
            "reverse-small",
            "python train.py --experiment reverse_small",
            ["experiments/reverse_small.py", "seq2seq/config.py"],
            1,
        ),
        (
            "judy",
            "reverse-small-5ep",
            "python train.py --experiment reverse_small train.num_epochs=5",
            ["experiments/reverse_small.py", "seq2seq/config.py"],
            1,
        ),
        (
            "judy",
            "sort-base",
            "python train.py --experiment sort_base",
            ["experiments/sort_base.py", "seq2seq/config.py"],
            1,
        ),
        (
            "erin",
            "copy-long-bf16",
            "python train.py --experiment copy_long_bf16",
            ["experiments/copy_long_bf16.py", "seq2seq/config.py"],
            1,
        ),
        (
            "judy",
            "sort-3k-bs64-d96",
            "python train.py --experiment sort_base train.batch_size=64 data.num_train=3000 model.d_model=96",
            ["experiments/sort_base.py", "seq2seq/config.py"],
            1,
        ),
        (
            "judy",
            "reverse-defaults-6k-1ep",
            "python train.py train.num_epochs=1 data.num_train=6000",
            ["seq2seq/config.py"],
            1,
        ),
    ],
    "torchrun_audio_cnn": [
        ("judy", "m5-4k-e2", "python train.py --epochs 2", [], 1),
        ("judy", "m5-6k-e4", "python train.py --epochs 4 --num-clips 6000", [], 1),
        ("dan", "m5-ddp2-e3", "torchrun --standalone --nproc_per_node=2 train.py --epochs 3", [], 2),
        (
            "dan",
            "m5-ddp2-8k-e4-bs32",
            "NPROC=2 bash scripts/launch.sh --epochs 4 --num-clips 8000 --batch-size 32",
            ["scripts/launch.sh"],
            2,
        ),
        (
            "judy",
            "m5-c64-1proc",
            "NPROC=1 bash scripts/launch.sh --epochs 3 --channels 64",
            ["scripts/launch.sh"],
            1,
        ),
        (
            "dan",
            "m5-ddp2-16khz",
            "torchrun --standalone --nproc_per_node=2 train.py --epochs 2 --sample-rate 16000",
            [],
            2,
        ),
    ],
}


def main():
    flat = []
    for family, jobs in JOBS.items():
        for user, name, command, config_files, n_gpus in jobs:
            for cf in config_files:
                assert (HERE / "families" / family / cf).exists(), (family, cf)
            flat.append(
                {
                    "family": family,
                    "user": user,
                    "name": name,
                    "command": command,
                    "config_files": config_files,
                    "n_gpus": n_gpus,
                    "n_nodes": 1,
                    "code_dir": f"families/{family}",
                }
            )
    # random interleaving; bump the seed until every family shows up in both halves of the run order
    seed = SEED
    while True:
        order_ = flat[:]
        random.Random(seed).shuffle(order_)
        h = len(order_) // 2
        if all({j["family"] for j in part} == set(JOBS) for part in (order_[:h], order_[h:])):
            break
        seed += 1
    flat = order_
    print(f"shuffle seed {seed}")
    for i, job in enumerate(flat, 1):
        job["job_id"] = f"job-{i:04d}"
    order = ["job_id", "family", "user", "name", "code_dir", "command", "config_files", "n_gpus", "n_nodes"]
    flat = [{k: j[k] for k in order} for j in flat]
    (HERE / "jobs.json").write_text(json.dumps(flat, indent=1) + "\n")
    half = len(flat) // 2
    fams = set(JOBS)
    print(
        f"{len(flat)} jobs, {len(JOBS)} families; families in first half: {len({j['family'] for j in flat[:half]})}, "
        f"second half: {len({j['family'] for j in flat[half:]})} (of {len(fams)})"
    )


if __name__ == "__main__":
    main()

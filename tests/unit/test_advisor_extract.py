"""Static metadata extraction from job directories written by the tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jobfiles import write

from schedmate.advisor.extract.extractor import StaticExtractor, directory_digest, guess_entrypoint
from schedmate.advisor.extract.launch import parse_launch


def test_nanogpt_constants_override_file_and_flags(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "import torch\nbatch_size = 12\nblock_size = 1024\nn_layer = 12\nn_embd = 768\n"
            "max_iters = 600000\ndtype = 'bfloat16'\nexec(open('configurator.py').read())\n"
            "opt = torch.optim.AdamW([], lr=6e-4)\n",
            "config/small.py": "batch_size = 64\nblock_size = 256\nn_layer = 6\nn_embd = 384\nmax_iters = 5000\n",
        },
    )
    e = x.extract(tmp_path, command="python train.py config/small.py --max_iters=2000")
    m = e.metadata
    assert (m.max_steps, m.micro_batch_size, m.seq_len) == (2000, 64, 256)
    assert e.sources["max_steps"].startswith("command line")
    assert e.sources["micro_batch_size"].startswith("config/small.py")
    assert m.param_count == pytest.approx(12 * 6 * 384**2)
    assert (m.precision, m.optimizer, m.framework) == ("bf16", "adamw", "pytorch")


def test_hf_trainer_json_args(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "from dataclasses import dataclass, field\n"
            "from transformers import AutoModelForSequenceClassification, HfArgumentParser, TrainingArguments\n"
            "from datasets import load_dataset\n"
            "@dataclass\nclass ModelArgs:\n    model_name_or_path: str = field(default='bert-base-uncased')\n"
            "    max_seq_length: int = 128\n"
            "def main():\n    m, t = HfArgumentParser((ModelArgs, TrainingArguments)).parse_json_file('args.json')\n"
            "    model = AutoModelForSequenceClassification.from_pretrained(m.model_name_or_path)\n"
            "    ds = load_dataset('glue', 'sst2')\n",
            "args.json": '{"num_train_epochs": 3, "per_device_train_batch_size": 32, "bf16": true, '
            '"gradient_accumulation_steps": 2, "eval_batch_size": 256}',
        },
    )
    m = x.extract(tmp_path, command="torchrun --nproc_per_node 4 train.py").metadata
    assert (m.model_name, m.model_family, m.task) == ("bert-base-uncased", "bert", "text-classification")
    assert (m.epochs, m.micro_batch_size, m.grad_accum_steps, m.precision) == (3.0, 32, 2, "bf16")
    assert m.n_gpus == 4 and "ddp" in m.parallelism
    assert m.global_batch_size == 32 * 2 * 4
    assert m.dataset == "glue/sst2" and m.dataset_size == 67349


def test_hydra_defaults_and_overrides(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "import hydra\nimport lightning as L\n"
            "@hydra.main(config_path='conf', config_name='config', version_base=None)\n"
            "def main(cfg):\n    L.Trainer(max_epochs=cfg.trainer.max_epochs)\n",
            "conf/config.yaml": "defaults:\n  - model: small\n  - _self_\ntrainer:\n  max_epochs: 10\n  precision: 16-mixed\n"
            "data:\n  batch_size: 128\n  dataset: cifar10\n",
            "conf/model/small.yaml": "name: resnet18\nwidth: 32\n",
            "conf/model/big.yaml": "name: resnet50\nwidth: 64\n",
        },
    )
    e = x.extract(tmp_path, command="python train.py model=big trainer.max_epochs=3")
    m = e.metadata
    assert m.epochs == 3 and m.micro_batch_size == 128 and m.precision == "fp16"
    assert m.model_name == "resnet50" and m.model_family == "resnet" and m.framework == "lightning"
    assert m.dataset_size == 50_000 and m.task == "image-classification"


def test_sbatch_script_env_file_and_deepspeed_config(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "run.sh": "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:a100:8\nsource .env\nEPOCHS=${EPOCHS:-4}\n"
            "srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=8 main.py --epochs $EPOCHS "
            "--batch-size $BS --model gpt2-medium --deepspeed ds.json\n",
            ".env": "BS=16\n",
            "main.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=1)\n"
            "p.add_argument('--batch-size', '--bs', type=int, default=8)\np.add_argument('--seq-len', type=int, default=1024)\n",
            "ds.json": '{"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}',
        },
    )
    m = x.extract(tmp_path, command="sbatch run.sh").metadata
    assert (m.n_gpus, m.n_nodes, m.gpu_model) == (16, 2, "a100")
    assert (m.epochs, m.micro_batch_size, m.seq_len) == (4, 16, 1024)
    assert m.zero_stage == 2 and "deepspeed" in m.parallelism and m.precision == "bf16"
    assert m.param_count == 355e6 and m.launcher in ("sbatch", "srun", "torchrun")


def test_scheduler_resources_win_over_launcher(tmp_path: Path, x: StaticExtractor) -> None:
    write(tmp_path, {"train.py": "import torch\n"})
    m = x.extract(
        tmp_path, command="torchrun --nproc_per_node=8 train.py", n_gpus=2, gpu_model="h100"
    ).metadata
    assert m.n_gpus == 2 and m.gpu_model == "h100"


def test_keras_fit_and_click_defaults(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "import click\nimport keras\n@click.command()\n@click.option('--epochs', default=7)\n"
            "@click.option('--num-samples', default=20000)\ndef main(epochs, num_samples):\n"
            "    model = keras.Sequential([keras.layers.LSTM(64), keras.layers.Dense(1)])\n"
            "    model.compile(optimizer='adam')\n    model.fit(x, y, epochs=epochs, batch_size=64)\n",
        },
    )
    m = x.extract(tmp_path, command="python train.py --epochs 2").metadata
    assert m.epochs == 2 and m.micro_batch_size == 64 and m.dataset_size == 20000
    assert m.framework == "keras" and m.optimizer == "adam" and m.model_family == "rnn"


def test_eval_batch_size_does_not_win(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "import yaml\ncfg = yaml.safe_load(open('c.yaml'))\n",
            "c.yaml": "eval:\n  batch_size: 512\ntrain:\n  batch_size: 32\n  epochs: 4\n",
        },
    )
    m = x.extract(tmp_path, command="python train.py").metadata
    assert m.micro_batch_size == 32 and m.epochs == 4


def test_no_command_guesses_entrypoint(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--max-steps', type=int, default=300)\n",
            "utils.py": "",
        },
    )
    assert guess_entrypoint(tmp_path) == "train.py"
    assert x.extract(tmp_path).metadata.max_steps == 300


# -- hostile input ------------------------------------------------------------------------


def test_paths_outside_the_job_dir_are_never_read(tmp_path: Path, x: StaticExtractor) -> None:
    outside = tmp_path / "secret"
    write(outside, {"cfg.yaml": "epochs: 999\n", "evil.py": "max_iters = 999\n"})
    job = write(tmp_path / "job", {"train.py": "epochs = 1\n"})
    os.symlink(outside / "cfg.yaml", job / "link.yaml")
    os.symlink(outside, job / "linkdir")
    for cmd in (
        "python train.py ../secret/cfg.yaml",
        f"python train.py {outside}/cfg.yaml",
        "python train.py link.yaml",
        "python train.py linkdir/cfg.yaml",
        "python ../secret/evil.py",
        "bash ../secret/run.sh",
    ):
        e = x.extract(job, command=cmd, config_files=["../secret/cfg.yaml", "link.yaml"])
        assert e.metadata.epochs in (None, 1), cmd
        assert e.metadata.max_steps is None, cmd


def test_broken_and_binary_files_give_notes_not_errors(tmp_path: Path, x: StaticExtractor) -> None:
    write(tmp_path, {"train.py": "def broken(:\n", "bad.yaml": "a: [1, 2\n", "c.json": "{nope"})
    (tmp_path / "bin.yaml").write_bytes(b"\x00\xff\xfe" * 1000)
    e = x.extract(
        tmp_path,
        command="python train.py --config bad.yaml",
        config_files=["c.json", "bin.yaml", "nope.yaml"],
    )
    assert any("cannot parse Python" in n for n in e.notes)
    assert any("bad.yaml" in n for n in e.notes) and any("c.json" in n for n in e.notes)
    assert any("nope.yaml" in n for n in e.notes)


def test_huge_and_deep_files_are_bounded(tmp_path: Path, x: StaticExtractor) -> None:
    write(tmp_path, {"train.py": "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"})
    (tmp_path / "big.yaml").write_text("epochs: 3\n" + "# pad\n" * 400_000)
    e = x.extract(tmp_path, command="python train.py big.yaml")
    assert e.metadata.epochs is None
    assert any("big.yaml" in n for n in e.notes)


def test_launch_parsing_variants(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "", "pkg/mod.py": ""})
    assert parse_launch("deepspeed --num_gpus 4 a.py --x 1", tmp_path).n_gpus == 4
    ac = parse_launch("accelerate launch --num_processes 2 --mixed_precision bf16 a.py", tmp_path)
    assert (ac.n_gpus, ac.precision, ac.entrypoint) == (2, "bf16", "a.py")
    mp = parse_launch("mpirun -np 8 python a.py", tmp_path)
    assert (mp.n_gpus, mp.entrypoint) == (8, "a.py")
    mod = parse_launch("CUDA_VISIBLE_DEVICES=0 python -m pkg.mod --lr 1", tmp_path)
    assert (mod.entrypoint, mod.args) == ("pkg/mod.py", ["--lr", "1"])
    assert parse_launch('python a.py --name "unterminated', tmp_path).entrypoint == "a.py"


def test_digest_changes_with_content_only(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": "a = 1\n"})
    d1 = directory_digest(tmp_path)
    assert directory_digest(tmp_path) == d1
    (tmp_path / "train.py").write_text("a = 2\n")
    assert directory_digest(tmp_path) != d1


def test_pytorch_example_style_layers_dataset_and_optimizer(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "main.py": (
                "import argparse\nimport torch.nn as nn\nimport torch.optim as optim\nfrom torchvision import datasets\n"
                "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.conv1 = nn.Conv2d(1, 32, 3, 1)\n        self.fc1 = nn.Linear(9216, 128)\n"
                "def main():\n    p = argparse.ArgumentParser()\n    p.add_argument('--batch-size', type=int, default=64)\n"
                "    p.add_argument('--test-batch-size', type=int, default=1000)\n    p.add_argument('--epochs', type=int, default=14)\n"
                "    args = p.parse_args()\n    ds = datasets.MNIST('../data', train=True)\n"
                "    opt = optim.Adadelta(Net().parameters(), lr=1.0)\n"
            )
        },
    )
    e = x.extract(tmp_path, command="python main.py --epochs 3")
    m = e.metadata
    assert (m.epochs, m.micro_batch_size, m.dataset, m.dataset_size) == (3, 64, "mnist", 60000)
    assert (m.model_name, m.model_family, m.optimizer) == ("Net", "cnn", "adadelta")
    assert m.param_count == 1 * 32 * 9 + 9216 * 128


def test_exec_wrapper_passes_script_arguments_on(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "scripts/launch.sh": "#!/bin/bash\nset -euo pipefail\nNPROC=${NPROC:-2}\n"
            'exec torchrun --standalone --nproc_per_node="${NPROC}" train.py --epochs 2 "$@"\n',
            "train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=1)\n"
            "p.add_argument('--num-clips', type=int, default=4000)\n",
        },
    )
    m = x.extract(tmp_path, command="NPROC=4 bash scripts/launch.sh --epochs 5 --num-clips 8000").metadata
    assert (m.launcher, m.n_gpus, m.epochs, m.dataset_size) == ("torchrun", 4, 5, 8000)


def test_sampling_and_eval_sections_are_not_training(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "import tomllib\n",
            "c.toml": "[data]\nnum_images = 256\n[diffusion]\ntimesteps = 1000\n"
            "[train]\nepochs = 4\nbatch_size = 32\n[sample]\nnum_samples = 16\nsteps = 20\n"
            "[eval]\nbatch_size = 512\n",
        },
    )
    m = x.extract(tmp_path, command="python train.py --config c.toml").metadata
    assert (m.dataset_size, m.epochs, m.micro_batch_size, m.max_steps) == (256, 4, 32, None)


def test_env_file_totals_and_graph_sizes(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "run.sh": 'ENV_FILE=${1:-.env}\nset -a\nsource "$ENV_FILE"\nset +a\npython ppo.py\n',
            "envs/long.env": "TOTAL_TIMESTEPS=200000\nNUM_STEPS=128\n",
            "ppo.py": "import os\nimport torch\nsteps = int(os.environ.get('TOTAL_TIMESTEPS', 1000))\n",
            "gnn.py": "import click\n@click.command()\n@click.option('--num-nodes', default=20000)\n"
            "@click.option('--epochs', default=100)\ndef main(num_nodes, epochs):\n    pass\n",
        },
    )
    assert x.extract(tmp_path, command="bash run.sh envs/long.env").metadata.max_steps == 200000
    m = x.extract(tmp_path, command="python gnn.py --num-nodes 5000").metadata
    assert (m.dataset_size, m.n_nodes, m.epochs) == (5000, None, 100)


def test_an_option_default_sizes_the_model_like_the_same_option_given(
    tmp_path: Path, x: StaticExtractor
) -> None:
    # `--hidden` left at its default and `--hidden 1024` must both give a width, or the two jobs
    # compare as if they had the same model; a bare `hidden=` of some other function call does not
    root = write(
        tmp_path,
        {
            "train.py": (
                "import argparse\nimport torch.nn as nn\n"
                "p = argparse.ArgumentParser()\n"
                "p.add_argument('--hidden', type=int, default=256)\np.add_argument('--epochs', type=int, default=3)\n"
                "args = p.parse_args()\n"
                "def block(d, hidden=64):\n    return nn.Linear(d, hidden)\n"
            )
        },
    )
    default = x.extract(root, command="python train.py")
    given = x.extract(root, command="python train.py --hidden 1024")
    assert default.size.get("width") == 256.0
    assert given.size.get("width") == 1024.0

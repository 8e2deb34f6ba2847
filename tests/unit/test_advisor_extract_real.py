"""Extraction on the shapes public training code takes (each fixture is a small file written here)."""

from __future__ import annotations

from pathlib import Path

from jobfiles import write

from schedmate.advisor.extract.extractor import StaticExtractor
from schedmate.advisor.extract.launch import parse_launch
from schedmate.advisor.extract.shell import ShellState, assignment, expand_words, split_statements


def _words(script: str, positional: list[str] | None = None) -> list[list[str]]:
    st = ShellState(positional=positional or [], script_dir="tools")
    return [expand_words(s, st) for s in split_statements(script) if not assignment(s, st)]


# -- shell ----------------------------------------------------------------------------------
def test_shell_variable_holding_an_argument_list_is_split_into_words() -> None:
    script = 'MODEL_ARGS="\n  --layers 4 \\\n  --width 64\n"\nOPT="--lr 0.1"\npython t.py $MODEL_ARGS "$OPT" --x "a b"\n'
    assert _words(script) == [["python", "t.py", "--layers", "4", "--width", "64", "--lr 0.1", "--x", "a b"]]


def test_shell_arrays_arithmetic_dirname_and_positional_slices() -> None:
    script = (
        "N=2\nPER=4\nDIST=(\n  --nproc_per_node $PER  # per node\n  --nnodes $N\n)\nTOTAL=$(($PER*$N))\n"
        'python -m torch.distributed.run "${DIST[@]}" $(dirname "$0")/train.py $1 --world $TOTAL ${@:2}\n'
    )
    assert _words(script, ["cfg.py", "--a", "1"]) == [
        [
            "python",
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "4",
            "--nnodes",
            "2",
            "tools/train.py",
            "cfg.py",
            "--world",
            "8",
            "--a",
            "1",
        ]
    ]


def test_launcher_script_with_argument_list_variables(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "pretrain.py": "import torch\n",
            "run.sh": '#!/bin/bash\nGPUS=4\nDIST_ARGS="--nproc_per_node $GPUS --nnodes 2"\n'
            "TRAIN_ARGS=(\n  --micro-batch-size 2\n  --global-batch-size 64\n  --train-iters 1000  # steps\n"
            '  --seq-length 512\n)\ntorchrun $DIST_ARGS pretrain.py "${TRAIN_ARGS[@]}" --bf16\n',
        },
    )
    m = x.extract(tmp_path, command="bash run.sh").metadata
    assert (m.n_gpus, m.n_nodes, m.launcher) == (8, 2, "torchrun")
    assert (m.micro_batch_size, m.global_batch_size, m.max_steps, m.seq_len, m.precision) == (
        2,
        64,
        1000,
        512,
        "bf16",
    )


# -- launchers ------------------------------------------------------------------------------
def test_training_cli_arguments_are_the_run_settings(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "job.sh": "#!/bin/bash\n#SBATCH --gres=gpu:2\nmodule load cuda\nwget -q http://example.invalid/x.zip\n"
            "detector-cli detect train data=shapes.yaml model=yolo_tiny.pt epochs=30 imgsz=320 batch=16\n",
            "shapes.yaml": "path: ../shapes\ntrain: images/train\nnames:\n  0: square\n",
        },
    )
    e = x.extract(tmp_path, command="sbatch job.sh")
    m = e.metadata
    assert (m.launcher, m.entrypoint, m.n_gpus) == ("sbatch", None, 2)
    assert (m.epochs, m.image_size, m.micro_batch_size, m.model_name) == (30.0, 320, 16, "yolo_tiny.pt")
    assert e.sources["epochs"] == "command line: epochs"


def test_accelerate_config_file_sets_processes_precision_and_strategy(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "train.py": "import torch\n",
            "acc.yaml": "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_machines: 1\nnum_processes: 4\n",
        },
    )
    launch = parse_launch("accelerate launch --config_file acc.yaml train.py --lr 1", tmp_path)
    assert (launch.n_gpus, launch.precision, launch.parallelism, launch.entrypoint) == (
        4,
        "bf16",
        {"ddp"},
        "train.py",
    )
    assert launch.args == ["--lr", "1"]


# -- configs that inherit ---------------------------------------------------------------------
def test_python_config_with_base_files_and_dict_calls(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "tools/train.py": "import argparse\nfrom mmengine.config import Config\nfrom mmengine.runner import Runner\n"
            "p = argparse.ArgumentParser()\np.add_argument('config')\nargs = p.parse_args()\n"
            "Runner.from_cfg(Config.fromfile(args.config)).train()\n",
            "configs/_base_/data.py": "kind = 'CocoDataset'\nroot = 'data/coco/'\npipe = [dict(type='Resize', scale=(1333, 800))]\n"
            "train_dataloader = dict(batch_size=2, dataset=dict(type=kind, data_root=root, pipeline=pipe))\n"
            "val_dataloader = dict(batch_size=1, dataset=dict(type=kind))\n",
            "configs/_base_/sched.py": "train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=12)\n"
            "optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.02, momentum=0.9))\n",
            "configs/_base_/model.py": "model = dict(type='RetinaNet', backbone=dict(type='ResNet', depth=50))\n",
            "configs/det/base.py": "_base_ = ['../_base_/model.py', '../_base_/data.py', '../_base_/sched.py']\n",
            "configs/det/long.py": "_base_ = './base.py'\ntrain_cfg = dict(max_epochs=24)\n"
            "optim_wrapper = dict(optimizer=dict(_delete_=True, type='AdamW', lr=1e-4))\n",
        },
    )
    e = x.extract(tmp_path, command="python tools/train.py configs/det/long.py", n_gpus=1)
    m = e.metadata
    assert (m.epochs, m.micro_batch_size, m.optimizer, m.learning_rate) == (24.0, 2, "adamw", 1e-4)
    assert (m.model_name, m.task, m.dataset, m.dataset_size) == (
        "RetinaNet",
        "detection",
        "CocoDataset",
        118_287,
    )
    assert e.sources["micro_batch_size"] == "configs/det/long.py (+4 inherited): train_dataloader.batch_size"


def test_yaml_base_chain_and_yacs_command_line_opts(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train_net.py": "from detectron2.engine import default_argument_parser\n",
            "configs/Base.yaml": 'DATASETS:\n  TRAIN: ("coco_2017_train",)\nSOLVER:\n  IMS_PER_BATCH: 16\n  MAX_ITER: 90000\n'
            "  BASE_LR: 0.02\nMODEL:\n  META_ARCHITECTURE: GeneralizedRCNN\n",
            "configs/det/r50_3x.yaml": '_BASE_: "../Base.yaml"\nSOLVER:\n  MAX_ITER: 270000\n',
            "configs/det/loop.yaml": '_BASE_: "./loop.yaml"\n',
        },
    )
    e = x.extract(
        tmp_path,
        command="python train_net.py --config-file configs/det/r50_3x.yaml --num-gpus 8 "
        "SOLVER.IMS_PER_BATCH 32 SOLVER.BASE_LR 0.04",
    )
    m = e.metadata
    assert (m.max_steps, m.global_batch_size, m.learning_rate) == (270_000, 32, 0.04)
    assert (m.dataset, m.dataset_size, m.task, m.model_family) == (
        "coco_2017_train",
        118_287,
        "detection",
        "detector",
    )
    looped = x.extract(tmp_path, command="python train_net.py --config-file configs/det/loop.yaml")
    assert any("inherits from itself" in n for n in looped.notes)


def test_missing_or_escaping_base_becomes_a_note(tmp_path: Path, x: StaticExtractor) -> None:
    (tmp_path.parent / "outside.py").write_text("train_cfg = dict(max_epochs=99)\n")
    write(
        tmp_path,
        {
            "train.py": "import torch\n",
            "cfg.py": "_base_ = ['../outside.py', 'nope.py']\ntrain_cfg = dict(max_epochs=3)\nbad = dict(x=open('f'))\n",
        },
    )
    e = x.extract(tmp_path, command="python train.py cfg.py")
    assert e.metadata.epochs == 3.0
    assert sum("not found inside the job directory" in n for n in e.notes) == 2


# -- framework defaults -----------------------------------------------------------------------
_HF_SCRIPT = (
    "from dataclasses import dataclass, field\nfrom typing import Optional\n"
    "from datasets import load_dataset\n"
    "from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments\n"
    "@dataclass\nclass DataArgs:\n"
    "    dataset_name: Optional[str] = field(default=None, metadata={'help': 'hub name'})\n"
    "    dataset_config_name: Optional[str] = field(default=None, metadata={'help': 'config'})\n"
    "def main():\n    d, t = HfArgumentParser((DataArgs, TrainingArguments)).parse_args_into_dataclasses()\n"
    "    raw = load_dataset(d.dataset_name, d.dataset_config_name)\n"
    "    model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
    "    Trainer(model=model, args=t, train_dataset=raw['train']).train()\n"
)


def test_hf_trainer_defaults_decide_the_work(tmp_path: Path, x: StaticExtractor) -> None:
    write(tmp_path, {"run_lm.py": _HF_SCRIPT})
    cmd = "torchrun --nproc_per_node 2 run_lm.py --dataset_name wikitext --dataset_config_name wikitext-2-raw-v1 --do_train"
    e = x.extract(tmp_path, command=cmd)
    m = e.metadata
    assert (m.epochs, m.micro_batch_size, m.global_batch_size, m.optimizer) == (3.0, 8, 16, "adamw")
    assert e.sources["epochs"] == "framework default (transformers num_train_epochs)"
    assert (m.dataset, m.dataset_size) == ("wikitext/wikitext-2-raw-v1", 36_718)
    stepped = x.extract(tmp_path, command=cmd + " --max_steps 500 --per_device_train_batch_size 4").metadata
    assert (stepped.max_steps, stepped.epochs, stepped.micro_batch_size) == (500, None, 4)


def test_keras_fit_defaults_and_tf_keras_names(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "quick.py": "import tensorflow as tf\nds = tf.keras.datasets.fashion_mnist\n"
            "(xt, yt), _ = ds.load_data()\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(10)])\n"
            "model.compile(optimizer='adam', loss='mse')\nmodel.fit(xt, yt)\n"
        },
    )
    e = x.extract(tmp_path, command="python quick.py")
    m = e.metadata
    assert (m.framework, m.dataset, m.dataset_size) == ("keras", "fashion_mnist", 60_000)
    assert (m.epochs, m.micro_batch_size) == (1.0, 32)
    assert e.sources["micro_batch_size"] == "framework default (keras fit(batch_size))"


def test_lightning_cli_constructor_defaults_and_trainer_default(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "cli.py": "import torch\nfrom lightning.pytorch import LightningDataModule, LightningModule\n"
            "from lightning.pytorch.cli import LightningCLI\nfrom somewhere import MNIST\n"
            "class Lit(LightningModule):\n    def __init__(self, lr: float = 0.01):\n"
            "        super().__init__()\n"
            "class Data(LightningDataModule):\n    def __init__(self, batch_size: int = 48):\n"
            "        self.ds = MNIST('data', train=True)\n"
            "if __name__ == '__main__':\n    LightningCLI(Lit, Data)\n"
        },
    )
    m = x.extract(tmp_path, command="python cli.py fit").metadata
    assert (m.framework, m.epochs, m.micro_batch_size, m.learning_rate) == ("lightning", 1000.0, 48, 0.01)
    assert (m.dataset, m.dataset_size) == ("mnist", 60_000)
    m = x.extract(tmp_path, command="python cli.py fit --trainer.max_steps 300 --data.batch_size 8").metadata
    assert (m.epochs, m.max_steps, m.micro_batch_size) == (None, 300, 8)


# -- what the code says about its settings ----------------------------------------------------
def test_batch_scope_from_help_text_and_divided_settings(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "a.py": "import argparse\nimport torch\nfrom torch.nn.parallel import DistributedDataParallel\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--train_batch_size', type=int, default=16, help='Batch size (per device) for training.')\n"
            "args = p.parse_args()\n",
            "b.py": "import argparse\nimport torch\nfrom torch.nn.parallel import DistributedDataParallel\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('-b', '--batch-size', type=int, default=256, help='mini-batch size, the total '\n"
            "               'batch size of all GPUs on the node')\n"
            "p.add_argument('data', help='path to dataset')\nargs = p.parse_args()\n"
            "args.batch_size = int(args.batch_size / torch.cuda.device_count())\n",
            "c.py": "import os\nimport torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "batch_size = 12\ngradient_accumulation_steps = 40\nworld = int(os.environ.get('WORLD_SIZE', 1))\n"
            "gradient_accumulation_steps //= world\n",
        },
    )
    a = x.extract(tmp_path, command="torchrun --nproc_per_node 4 a.py --train_batch_size 2").metadata
    assert (a.micro_batch_size, a.global_batch_size) == (2, 8)
    b = x.extract(tmp_path, command="python b.py -b 512 /data/imagenet", n_gpus=8).metadata
    assert (b.global_batch_size, b.micro_batch_size, b.dataset, b.dataset_size) == (
        512,
        None,
        "/data/imagenet",
        1_281_167,
    )
    c = x.extract(tmp_path, command="torchrun --nproc_per_node 8 c.py").metadata
    assert (c.micro_batch_size, c.grad_accum_steps, c.global_batch_size) == (12, 40, 480)


def test_code_details_real_scripts_rely_on(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "import torch\nimport torchvision.transforms as T\nfrom model import Net\n"
            "dtype = 'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'\n"
            "init_from = 'scratch'\nmodel = Net.from_pretrained(init_from)\n"
            "tf = T.Compose([T.RandomResizedCrop(176), T.ToTensor()])\n"
            "opt_cls = torch.optim.AdamW\nopt = opt_cls(model.parameters(), lr=1e-3)\n",
            "model.py": "import torch\nclass Net(torch.nn.Module):\n    def from_pretrained(self, name):\n"
            "        from transformers import AutoModel\n        return AutoModel.from_pretrained(name)\n",
        },
    )
    m = x.extract(tmp_path, command="python train.py").metadata
    assert (m.framework, m.precision, m.image_size, m.optimizer, m.model_name) == (
        "pytorch",
        "bf16",
        176,
        "adamw",
        "Net",
    )


def test_shell_reading_is_bounded_and_never_raises() -> None:
    assert _words("python t.py --a 1 2>&1 | tee log.txt &\nwait\n") == [
        ["python", "t.py", "--a", "1", "2>&1"],
        ["tee", "log.txt"],
        ["wait"],
    ]
    grow = 'A="x"\n' + 'A="$A $A"\n' * 40 + "python t.py $A\n"
    (words,) = _words(grow)
    assert len(words) < 60_000
    for broken in (
        "X=( a b",
        "python 'unterminated",
        "${",
        "$((1/0))",
        "echo $(( 2 ** 99999 ))",
        "a && || ; ;; )(",
        "",
    ):
        _words(broken)

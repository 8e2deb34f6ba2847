"""Extraction on the shapes public training code takes (each fixture is a small file written here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedmate.advisor.extract import StaticExtractor
from schedmate.advisor.launch import parse_launch
from schedmate.advisor.shell import ShellState, assignment, expand_words, split_statements


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture
def x() -> StaticExtractor:
    return StaticExtractor()


def _words(script: str, positional: list[str] | None = None) -> list[list[str]]:
    st = ShellState(positional=positional or [], script_dir="tools")
    return [expand_words(s, st) for s in split_statements(script) if not assignment(s, st)]


# -- shell ----------------------------------------------------------------------------------
def test_shell_variable_holding_an_argument_list_is_split_into_words() -> None:
    script = 'MODEL_ARGS="\n  --layers 4 \\\n  --width 64\n"\nOPT="--lr 0.1"\npython t.py $MODEL_ARGS "$OPT" --x "a b"\n'
    assert _words(script) == [["python", "t.py", "--layers", "4", "--width", "64", "--lr 0.1", "--x", "a b"]]


def test_shell_arrays_arithmetic_dirname_and_positional_slices() -> None:
    script = ("N=2\nPER=4\nDIST=(\n  --nproc_per_node $PER  # per node\n  --nnodes $N\n)\nTOTAL=$(($PER*$N))\n"
              'python -m torch.distributed.run "${DIST[@]}" $(dirname "$0")/train.py $1 --world $TOTAL ${@:2}\n')
    assert _words(script, ["cfg.py", "--a", "1"]) == [[
        "python", "-m", "torch.distributed.run", "--nproc_per_node", "4", "--nnodes", "2", "tools/train.py",
        "cfg.py", "--world", "8", "--a", "1"]]


def test_launcher_script_with_argument_list_variables(tmp_path: Path, x: StaticExtractor) -> None:
    write(tmp_path, {
        "pretrain.py": "import torch\n",
        "run.sh": "#!/bin/bash\nGPUS=4\nDIST_ARGS=\"--nproc_per_node $GPUS --nnodes 2\"\n"
                  "TRAIN_ARGS=(\n  --micro-batch-size 2\n  --global-batch-size 64\n  --train-iters 1000  # steps\n"
                  "  --seq-length 512\n)\ntorchrun $DIST_ARGS pretrain.py \"${TRAIN_ARGS[@]}\" --bf16\n",
    })
    m = x.extract(tmp_path, command="bash run.sh").metadata
    assert (m.n_gpus, m.n_nodes, m.launcher) == (8, 2, "torchrun")
    assert (m.micro_batch_size, m.global_batch_size, m.max_steps, m.seq_len, m.precision) == (2, 64, 1000, 512, "bf16")


# -- launchers ------------------------------------------------------------------------------
def test_training_cli_arguments_are_the_run_settings(tmp_path: Path, x: StaticExtractor) -> None:
    write(tmp_path, {
        "job.sh": "#!/bin/bash\n#SBATCH --gres=gpu:2\nmodule load cuda\nwget -q http://example.invalid/x.zip\n"
                  "detector-cli detect train data=shapes.yaml model=yolo_tiny.pt epochs=30 imgsz=320 batch=16\n",
        "shapes.yaml": "path: ../shapes\ntrain: images/train\nnames:\n  0: square\n",
    })
    e = x.extract(tmp_path, command="sbatch job.sh")
    m = e.metadata
    assert (m.launcher, m.entrypoint, m.n_gpus) == ("sbatch", None, 2)
    assert (m.epochs, m.image_size, m.micro_batch_size, m.model_name) == (30.0, 320, 16, "yolo_tiny.pt")
    assert e.sources["epochs"] == "command line: epochs"


def test_accelerate_config_file_sets_processes_precision_and_strategy(tmp_path: Path) -> None:
    write(tmp_path, {
        "train.py": "import torch\n",
        "acc.yaml": "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_machines: 1\nnum_processes: 4\n",
    })
    launch = parse_launch("accelerate launch --config_file acc.yaml train.py --lr 1", tmp_path)
    assert (launch.n_gpus, launch.precision, launch.parallelism, launch.entrypoint) == (4, "bf16", {"ddp"}, "train.py")
    assert launch.args == ["--lr", "1"]


# -- configs that inherit ---------------------------------------------------------------------
def test_python_config_with_base_files_and_dict_calls(tmp_path: Path, x: StaticExtractor) -> None:
    write(tmp_path, {
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
    })
    e = x.extract(tmp_path, command="python tools/train.py configs/det/long.py", n_gpus=1)
    m = e.metadata
    assert (m.epochs, m.micro_batch_size, m.optimizer, m.learning_rate) == (24.0, 2, "adamw", 1e-4)
    assert (m.model_name, m.task, m.dataset, m.dataset_size) == ("RetinaNet", "detection", "CocoDataset", 118_287)
    assert e.sources["micro_batch_size"] == "configs/det/long.py (+4 inherited): train_dataloader.batch_size"


def test_yaml_base_chain_and_yacs_command_line_opts(tmp_path: Path, x: StaticExtractor) -> None:
    write(tmp_path, {
        "train_net.py": "from detectron2.engine import default_argument_parser\n",
        "configs/Base.yaml": 'DATASETS:\n  TRAIN: ("coco_2017_train",)\nSOLVER:\n  IMS_PER_BATCH: 16\n  MAX_ITER: 90000\n'
                             "  BASE_LR: 0.02\nMODEL:\n  META_ARCHITECTURE: GeneralizedRCNN\n",
        "configs/det/r50_3x.yaml": '_BASE_: "../Base.yaml"\nSOLVER:\n  MAX_ITER: 270000\n',
        "configs/det/loop.yaml": '_BASE_: "./loop.yaml"\n',
    })
    e = x.extract(tmp_path, command="python train_net.py --config-file configs/det/r50_3x.yaml --num-gpus 8 "
                                    "SOLVER.IMS_PER_BATCH 32 SOLVER.BASE_LR 0.04")
    m = e.metadata
    assert (m.max_steps, m.global_batch_size, m.learning_rate) == (270_000, 32, 0.04)
    assert (m.dataset, m.dataset_size, m.task, m.model_family) == ("coco_2017_train", 118_287, "detection", "detector")
    looped = x.extract(tmp_path, command="python train_net.py --config-file configs/det/loop.yaml")
    assert any("inherits from itself" in n for n in looped.notes)


def test_missing_or_escaping_base_becomes_a_note(tmp_path: Path, x: StaticExtractor) -> None:
    (tmp_path.parent / "outside.py").write_text("train_cfg = dict(max_epochs=99)\n")
    write(tmp_path, {
        "train.py": "import torch\n",
        "cfg.py": "_base_ = ['../outside.py', 'nope.py']\ntrain_cfg = dict(max_epochs=3)\nbad = dict(x=open('f'))\n",
    })
    e = x.extract(tmp_path, command="python train.py cfg.py")
    assert e.metadata.epochs == 3.0
    assert sum("not found inside the job directory" in n for n in e.notes) == 2

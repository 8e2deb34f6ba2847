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

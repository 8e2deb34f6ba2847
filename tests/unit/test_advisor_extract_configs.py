"""Extraction of Python config objects, sequence-length / width spellings, estimators, token budgets and
model families named by the entrypoint (each fixture is a small file written here)."""

from __future__ import annotations

import ast
from pathlib import Path

from jobfiles import write

from schedmate.advisor.extract.configs import flatten
from schedmate.advisor.extract.extractor import StaticExtractor
from schedmate.advisor.extract.pyconfig import python_config

# -- Python config objects ------------------------------------------------------------------
_DATACLASS_JOB = {
    "train.py": "import argparse\nimport torch\nfrom exp.config import load_config\n"
    "ap = argparse.ArgumentParser()\nap.add_argument('--experiment', default=None)\n"
    "ap.add_argument('overrides', nargs='*')\nargs = ap.parse_args()\n"
    "cfg = load_config(args.experiment, args.overrides)\n"
    "model = torch.nn.Transformer(cfg.model.d_model, 4, cfg.model.num_encoder_layers)\n"
    "opt = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr)\n",
    "exp/__init__.py": "",
    "exp/config.py": "import importlib\nfrom dataclasses import dataclass, field\n\n"
    "@dataclass\nclass ModelConfig:\n    d_model: int = 256\n    num_encoder_layers: int = 2\n\n"
    "@dataclass\nclass DataConfig:\n    num_train: int = 10000\n    max_len: int = 24\n\n"
    "@dataclass\nclass TrainConfig:\n    batch_size: int = 64\n    num_epochs: int = 2\n\n"
    "@dataclass\nclass OptimConfig:\n    lr: float = 5e-4\n\n"
    "@dataclass\nclass ExperimentConfig:\n    name: str = 'default'\n"
    "    model: ModelConfig = field(default_factory=ModelConfig)\n"
    "    data: DataConfig = field(default_factory=DataConfig)\n"
    "    train: TrainConfig = field(default_factory=TrainConfig)\n"
    "    optim: OptimConfig = field(default_factory=OptimConfig)\n\n"
    "def load_config(experiment, overrides):\n    cfg = ExperimentConfig()\n    if experiment:\n"
    "        cfg = importlib.import_module(f'experiments.{experiment}').get_config()\n    return cfg\n",
    "experiments/sort_small.py": "from exp.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig\n\n"
    "def get_config():\n    return ExperimentConfig(\n        name='sort_small',\n"
    "        model=ModelConfig(d_model=128, num_encoder_layers=3),\n"
    "        data=DataConfig(num_train=2500, max_len=32),\n        train=TrainConfig(batch_size=32, num_epochs=1),\n    )\n",
    "experiments/copy_attr.py": "from exp.config import DataConfig, ExperimentConfig, TrainConfig\n\n"
    "def get_config():\n    cfg = ExperimentConfig(name='copy')\n    cfg.data = DataConfig(num_train=2000)\n"
    "    cfg.train = TrainConfig(batch_size=16, num_epochs=3)\n    cfg.train.num_epochs = 4\n    return cfg\n",
}


def test_experiment_module_with_nested_constructor_calls_overrides_dataclass_defaults(
    tmp_path: Path, x: StaticExtractor
) -> None:
    write(tmp_path, _DATACLASS_JOB)
    default = x.extract(tmp_path, command="python train.py", n_gpus=1)
    assert (default.metadata.dataset_size, default.metadata.epochs, default.metadata.micro_batch_size) == (
        10000,
        2.0,
        64,
    )
    # the module named by --experiment is found through import_module(f"experiments.{experiment}")
    e = x.extract(tmp_path, command="python train.py --experiment sort_small", n_gpus=1)
    m = e.metadata
    assert (m.dataset_size, m.epochs, m.micro_batch_size, m.seq_len) == (2500, 1.0, 32, 32)
    assert (e.size["width"], e.size["depth"]) == (128.0, 3.0)
    assert e.sources["dataset_size"] == "experiments/sort_small.py: data.num_train"
    assert m.model_family == "transformer"  # nn.Transformer
    # dotted command-line overrides after it still win; listing the file in config_files reads it once
    o = x.extract(
        tmp_path,
        command="python train.py --experiment sort_small train.num_epochs=5",
        config_files=["experiments/sort_small.py"],
        n_gpus=1,
    )
    assert (o.metadata.epochs, o.metadata.dataset_size) == (5.0, 2500)
    assert o.sources["epochs"] == "command line: train.num_epochs"
    a = x.extract(tmp_path, command="python train.py --experiment copy_attr", n_gpus=1).metadata
    assert (a.dataset_size, a.micro_batch_size, a.epochs) == (2000, 16, 4.0)


def test_ml_collections_config_dict_filled_attribute_by_attribute(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "main.py": "from absl import app\nfrom ml_collections import config_flags\nimport jax\n"
            "_CONFIG = config_flags.DEFINE_config_file('config')\n",
            "configs/base.py": "import ml_collections\n\nSEQ = 256\n\n"
            "def get_model_config():\n    m = ml_collections.ConfigDict()\n    m.num_layers = 6\n"
            "    m.emb_dim = 512\n    return m\n\n"
            "def get_config(variant='base'):\n    config = ml_collections.ConfigDict()\n    config.batch_size = 128\n"
            "    config.num_train_steps = 50_000\n    config.max_target_length = SEQ\n"
            "    config.seq_len = SEQ\n    config.model = get_model_config()\n"
            "    config.model.num_layers = 8\n    config['optimizer'] = 'adafactor'\n"
            "    with config.unlocked():\n        config.update(learning_rate=2e-3)\n"
            "    config.data = ml_collections.ConfigDict({'dataset': 'lm1b', 'num_train': 30_301_028})\n"
            "    config.seed = jax.random.PRNGKey(0)\n    return config\n",
        },
    )
    e = x.extract(tmp_path, command="python main.py --config configs/base.py --config.num_train_steps 1000")
    m = e.metadata
    assert (m.micro_batch_size, m.max_steps, m.seq_len, m.optimizer, m.learning_rate) == (
        128,
        1000,
        256,
        "adafactor",
        2e-3,
    )
    assert (m.dataset, m.dataset_size, m.framework) == ("lm1b", 30_301_028, "jax")
    assert (e.size["depth"], e.size["width"]) == (8.0, 512.0)
    assert e.sources["micro_batch_size"] == "configs/base.py: batch_size"
    # `--config=file.py:arg` passes an argument to get_config; the file is still the config
    assert (
        x.extract(tmp_path, command="python main.py --config=configs/base.py:small").metadata.max_steps
        == 50_000
    )


def test_python_config_evaluation_is_bounded_and_never_runs_code() -> None:
    src = (
        "import os\nA = dict(x=open('/etc/passwd').read(), y=os.system('true'), z=3)\n"
        "def get_config():\n    c = Config(a=1)\n    c.self = c\n    c.deep = get_config()\n"
        "    c.big = [0] * 10 ** 9\n    c.n = int(c.a) * 2\n    for i in range(10):\n        c.a = i\n    return c\n"
    )
    out = python_config(ast.parse(src))
    assert flatten(out) == {"A.z": 3, "a": 1, "n": 2}  # no recursion, no cycle, unknown calls dropped
    top = python_config(
        ast.parse("cfg = Config(model=Config(depth=6))\ncfg.model.depth = 12\ncfg.x = os.cpu_count()\n")
    )
    assert flatten(top) == {"cfg.model.depth": 12}
    deep = "x = " + "Config(a=" * 150 + "1" + ")" * 150 + "\n"
    assert len(flatten(python_config(ast.parse(deep)))) == 0  # deeper than flatten follows
    loop = "def get_config():\n    c = Config()\n" + "    c.a = c.b = Config(k=1)\n" * 3000 + "    return c\n"
    assert (
        flatten(python_config(ast.parse(loop))) == {}
    )  # statement budget spent: nothing half-evaluated is returned


def test_broken_or_escaping_python_config_becomes_a_note(tmp_path: Path, x: StaticExtractor) -> None:
    (tmp_path.parent / "evil.py").write_text("def get_config():\n    return Config(num_epochs=99)\n")
    write(
        tmp_path,
        {
            "train.py": "import importlib, argparse\np = argparse.ArgumentParser()\np.add_argument('--exp')\n"
            "a = p.parse_args()\ncfg = importlib.import_module('experiments.' + a.exp).get_config()\n",
            "experiments/bad.py": "def get_config(:\n",
            "experiments/long.py": "def get_config():\n    return Config(num_epochs="
            + "1 + " * 60_000
            + "1)\n",
        },
    )
    assert x.extract(tmp_path, command="python train.py --exp ../../evil").metadata.epochs is None
    e = x.extract(tmp_path, command="python train.py --exp bad")
    assert any("experiments/bad.py" in n and "SyntaxError" in n for n in e.notes)
    long = x.extract(
        tmp_path, command="python train.py --exp long"
    )  # too deep to evaluate: a note, no exception
    assert long.metadata.epochs is None and any("experiments/long.py" in n for n in long.notes)


# -- sequence length and width spellings ----------------------------------------------------------
def test_keras_maxlen_units_and_recurrent_layers_built_from_arguments(
    tmp_path: Path, x: StaticExtractor
) -> None:
    write(
        tmp_path,
        {
            "train.py": "import argparse\nimport keras\nfrom keras import layers\np = argparse.ArgumentParser()\n"
            "p.add_argument('--maxlen', type=int, default=80, help='tokens per review')\n"
            "p.add_argument('--lstm_units', type=int, default=64)\n"
            "p.add_argument('--max_len', type=int, default=20, help='maximum length of generated text')\n"
            "p.add_argument('--epochs', type=int, default=3)\np.add_argument('--bidirectional', action='store_true')\n"
            "args = p.parse_args()\ninp = keras.Input(shape=(args.maxlen,))\nx = layers.Embedding(1000, 32)(inp)\n"
            "lstm = layers.LSTM(args.lstm_units)\nx = layers.Bidirectional(lstm)(x) if args.bidirectional else lstm(x)\n"
            "out = layers.Dense(1)(x)\n"
            "model = keras.Model(inp, out)\nmodel.fit(xs, ys, epochs=args.epochs)\n"
            "model.generate(prompt, max_length=512)\n",
        },
    )
    e = x.extract(tmp_path, command="python train.py --maxlen 100 --lstm_units 96 --bidirectional")
    m = e.metadata
    assert (m.seq_len, m.model_name, m.model_family) == (100, "bilstm", "rnn")
    assert (
        x.extract(tmp_path, command="python train.py").metadata.model_name == "lstm"
    )  # Bidirectional not taken
    assert e.size["width"] == 96.0
    assert "LSTM layer built in the code" in e.sources["model_name"]


def test_width_from_a_literal_recurrent_layer_and_eval_lengths_ignored(
    tmp_path: Path, x: StaticExtractor
) -> None:
    write(
        tmp_path,
        {
            "train.py": "import torch.nn as nn\nimport yaml\ncfg = yaml.safe_load(open('cfg.yaml'))\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.rnn = nn.GRU(32, 200)\n",
            "cfg.yaml": "data:\n  max_seq_len: 128\neval:\n  max_len: 999\ngeneration:\n  max_length: 64\n",
        },
    )
    e = x.extract(tmp_path, command="python train.py")
    assert (e.metadata.seq_len, e.size["width"], e.metadata.model_family) == (128, 200.0, "rnn")


def test_sequence_length_of_text_vectorization_not_of_generation(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "train.py": "from tensorflow import keras\n"
            "vec = keras.layers.TextVectorization(max_tokens=20000, output_sequence_length=200)\n"
            "gen = GenerationConfig(max_length=20)\nmodel.fit(xs, ys, epochs=2)\n",
        },
    )
    m = x.extract(tmp_path, command="python train.py").metadata
    assert (m.seq_len, m.micro_batch_size, m.epochs) == (200, 32, 2.0)  # max_tokens is a vocabulary size here


# -- estimators -----------------------------------------------------------------------------
def test_estimator_named_in_a_config_file(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "fit.py": "import sys, yaml\nfrom sklearn.ensemble import RandomForestClassifier, ExtraTreesClassifier\n"
            "EST = {'random_forest': RandomForestClassifier, 'extra_trees': ExtraTreesClassifier}\n"
            "exp = yaml.safe_load(open(sys.argv[1]))\nest = EST[exp['model']['estimator']](**exp['model']['params'])\n",
            "conf/rf.yaml": "dataset:\n  n_samples: 30000\nmodel:\n  estimator: random_forest\n  params:\n    n_estimators: 60\n",
            "conf/et.json": '{"model": {"estimator": "extra_trees", "params": {"n_estimators": 100}}}',
            "conf/hgb.yaml": "model:\n  estimator: hist_gradient_boosting\n  params:\n    max_iter: 100\n",
        },
    )
    rf = x.extract(tmp_path, command="python fit.py conf/rf.yaml", config_files=["conf/rf.yaml"])
    assert (rf.metadata.model_name, rf.metadata.model_family, rf.metadata.task) == (
        "random_forest",
        "tree",
        "tabular",
    )
    assert rf.sources["model_name"] == "conf/rf.yaml: model.estimator"
    et = x.extract(tmp_path, command="python fit.py conf/et.json").metadata
    hgb = x.extract(tmp_path, command="python fit.py conf/hgb.yaml").metadata
    assert (et.model_name, et.model_family, hgb.model_name, hgb.model_family) == (
        "extra_trees",
        "tree",
        "hist_gradient_boosting",
        "tree",
    )


def test_estimator_built_in_code(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "a/train.py": "from sklearn.ensemble import HistGradientBoostingRegressor as HGB\n"
            "m = HGB(max_iter=200).fit(X, y)\n",
            "b/train.py": "import xgboost as xgb\nbst = xgb.train(params, dtrain, num_boost_round=150)\n",
            "c/train.py": "import torch.nn as nn\nclass TextClassifier(nn.Module):\n    pass\n",
        },
    )
    a = x.extract(tmp_path / "a", command="python train.py").metadata
    b = x.extract(tmp_path / "b", command="python train.py").metadata
    c = x.extract(tmp_path / "c", command="python train.py").metadata
    assert (a.model_name, a.model_family) == ("hist_gradient_boosting", "tree")
    assert (b.model_name, b.model_family, b.max_steps) == ("xgboost", "tree", 150)
    assert c.model_name == "TextClassifier"  # not a classical estimator: not imported from sklearn / xgboost


# -- token budgets --------------------------------------------------------------------------
def test_fairseq_max_tokens_with_tokens_per_sample(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "run.sh": "fairseq-train data-bin/wikitext-103 --task language_modeling --arch transformer_lm "
            "--tokens-per-sample 512 --max-tokens 2048 --update-freq 4 --max-update 1000\n"
        },
    )
    e = x.extract(tmp_path, command="bash run.sh", n_gpus=1)
    m = e.metadata
    assert (m.seq_len, m.micro_batch_size, m.grad_accum_steps, m.global_batch_size, m.max_steps) == (
        512,
        4,
        4,
        16,
        1000,
    )
    assert e.sources["micro_batch_size"] == "command line: max_tokens / seq_len"
    # the smaller of --batch-size and --max-tokens / tokens per sample ends a batch
    small = x.extract(
        tmp_path, command="fairseq-train d --tokens-per-sample 512 --max-tokens 8192 --batch-size 8"
    ).metadata
    assert small.micro_batch_size == 8
    # translation: sentences of any length, no sequence length to convert with
    mt = x.extract(tmp_path, command="fairseq-train d --arch transformer --max-tokens 4096 --max-update 300")
    assert mt.metadata.micro_batch_size is None and mt.metadata.max_steps == 300
    assert any("max_tokens = 4096" in n and "no sequence length" in n for n in mt.notes)


def test_megatron_train_samples_and_entrypoint_family(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "pretrain_gpt.py": "from megatron.training import pretrain\n",
            "pretrain_bert.py": "from megatron.training import pretrain\n",
            "run.sh": "ARGS=(\n  --num-layers 24 --hidden-size 1024 --num-attention-heads 16\n  --seq-length 2048\n"
            "  --micro-batch-size 4 --global-batch-size 256\n  --train-samples 1000000\n)\n"
            'torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}" --bf16\n',
        },
    )
    e = x.extract(tmp_path, command="bash run.sh")
    m = e.metadata
    assert (m.max_samples, m.dataset_size, m.global_batch_size, m.seq_len) == (1_000_000, None, 256, 2048)
    assert (m.model_family, e.sources["model_family"]) == ("gpt", "entrypoint name (pretrain_gpt.py)")
    iters = x.extract(
        tmp_path, command="python pretrain_bert.py --train-iters 500 --global-batch-size 32 --seq-length 128"
    ).metadata
    assert (iters.max_steps, iters.global_batch_size, iters.max_samples, iters.model_family) == (
        500,
        32,
        None,
        "bert",
    )


def test_nanogpt_tokens_per_iteration_and_total_batch_in_tokens(tmp_path: Path, x: StaticExtractor) -> None:
    write(
        tmp_path,
        {
            "nano/train.py": "import torch\nbatch_size = 12\nblock_size = 1024\ngradient_accumulation_steps = 40\n"
            "max_iters = 600000\nexec(open('configurator.py').read())\n"
            "tokens_per_iter = gradient_accumulation_steps * batch_size * block_size\n",
            "nano/config/small.py": "batch_size = 8\nblock_size = 256\ngradient_accumulation_steps = 2\nmax_iters = 100\n",
            "llmc/train_gpt2.py": "import argparse\nimport torch\np = argparse.ArgumentParser()\n"
            "p.add_argument('-b', '--batch_size', type=int, default=4, help='batch size, in units of #batch dimensions')\n"
            "p.add_argument('-T', '--sequence_length', type=int, default=64)\n"
            "p.add_argument('--total_batch_size', type=int, default=256, help='total desired batch size, in units of #tokens')\n"
            "p.add_argument('--num_iterations', type=int, default=10)\n",
            "budget/train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--seq_len', default=2048)\n"
            "p.add_argument('--train_tokens', type=float, default=2e9)\n",
        },
    )
    n = x.extract(tmp_path / "nano", command="python train.py config/small.py", n_gpus=1).metadata
    assert (n.micro_batch_size, n.grad_accum_steps, n.global_batch_size, n.max_steps, n.seq_len) == (
        8,
        2,
        16,
        100,
        256,
    )
    c = x.extract(
        tmp_path / "llmc",
        command="python train_gpt2.py -b 8 -T 1024 --total_batch_size 65536 --num_iterations 500",
        n_gpus=1,
    )
    # the total batch is counted in tokens (help text): 65,536 / 1,024 = 64 sequences per step, not 65,536
    assert (c.metadata.micro_batch_size, c.metadata.global_batch_size, c.metadata.max_steps) == (8, 64, 500)
    assert c.sources["global_batch_size"] == "command line: total_batch_size / seq_len"
    b = x.extract(tmp_path / "budget", command="python train.py")
    assert (b.metadata.max_samples, b.sources["max_samples"]) == (
        976_562,
        "defaults in train.py: train_tokens / seq_len",
    )


def test_entrypoint_name_gives_a_family_only_when_nothing_better_is_known(
    tmp_path: Path, x: StaticExtractor
) -> None:
    write(
        tmp_path,
        {
            "train_t5.py": "import torch\n",
            "train_rnn.py": "import torch\nfrom transformers import AutoModel\nm = AutoModel.from_pretrained('bert-base-uncased')\n",
            "main.py": "import torch\n",
        },
    )
    assert x.extract(tmp_path, command="python train_t5.py").metadata.model_family == "t5"
    assert x.extract(tmp_path, command="python train_rnn.py").metadata.model_family == "bert"
    assert x.extract(tmp_path, command="python main.py").metadata.model_family is None

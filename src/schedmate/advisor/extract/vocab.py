"""Names people give to workload settings, mapped to WorkloadMetadata fields.

Training code spells the same knob many ways (`max_iters`, `num_train_epochs`,
`per_device_train_batch_size`, `trainer.max_epochs`). Keys are matched on their last
dotted component, lower-cased, with `-` read as `_`.
"""

from __future__ import annotations

import re

__all__ = [
    "FIELD_KEYS",
    "SIZE_KEYS",
    "field_for_key",
    "size_key",
    "KNOWN_MODELS",
    "KNOWN_DATASETS",
    "model_facts",
    "dataset_size",
    "FRAMEWORK_IMPORTS",
    "normalize_precision",
    "normalize_optimizer",
    "tool_framework",
    "FRAMEWORK_DEFAULTS",
    "FRAMEWORK_MARKERS",
    "help_scope",
]

# field -> key spellings (most specific first); the last dotted component is matched
FIELD_KEYS: dict[str, tuple[str, ...]] = {
    "epochs": (
        "num_train_epochs",
        "max_epochs",
        "num_epochs",
        "n_epochs",
        "epochs",
        "train_epochs",
        "total_epochs",
        "epoch",
        "nepochs",
        "num_epoch",
        "max_epoch",
    ),
    "max_steps": (
        "max_steps",
        "total_timesteps",
        "total_steps",
        "max_iters",
        "max_iter",
        "num_steps",
        "train_steps",
        "training_steps",
        "num_iterations",
        "iterations",
        "iters",
        "n_steps",
        "steps",
        "total_iters",
        "num_iters",
        "train_iters",
        "n_iters",
        "max_updates",
        "num_updates",
        "num_train_steps",
        "max_train_steps",
        "max_update",
        "num_rounds",
        "num_boost_round",
        "n_estimators",
        "num_episodes",
        "episodes",
        "n_episodes",
        "updates",
    ),
    "global_batch_size": (
        "global_batch_size",
        "total_batch_size",
        "effective_batch_size",
        "train_batch_size",
        "ims_per_batch",
    ),
    "micro_batch_size": (
        "per_device_train_batch_size",
        "micro_batch_size",
        "train_micro_batch_size_per_gpu",
        "batch_size_per_gpu",
        "per_gpu_train_batch_size",
        "batch_size",
        "batchsize",
        "bs",
        "batch",
        "mini_batch_size",
        "minibatch_size",
    ),
    "grad_accum_steps": (
        "gradient_accumulation_steps",
        "grad_accum_steps",
        "grad_accum",
        "accumulate_grad_batches",
        "accum_steps",
        "accumulation_steps",
        "gradient_accumulation",
        "update_freq",
    ),
    "dataset_size": (
        "num_train_samples",
        "max_train_samples",
        "max_samples",
        "train_samples",
        "num_samples",
        "n_samples",
        "dataset_size",
        "train_size",
        "n_train",
        "num_examples",
        "data_size",
        "samples",
        "num_train",
        "n_examples",
        "num_data",
        "n_data",
    ),
    "max_samples": ("total_samples", "train_num_samples"),
    "seq_len": (
        "max_seq_length",
        "max_seq_len",
        "seq_len",
        "seq_length",
        "sequence_length",
        "block_size",
        "context_length",
        "max_length",
        "n_ctx",
        "ctx_len",
        "max_source_length",
        "context_len",
        "sequence_len",
        "cutoff_len",
        "tokens_per_sample",
        "bptt",
        "max_sequence_length",
        "maxlen",
        "max_len",
        "max_input_length",
        "output_sequence_length",
    ),
    "image_size": (
        "image_size",
        "img_size",
        "resolution",
        "input_size",
        "crop_size",
        "image_res",
        "imsize",
        "imgsz",
        "train_crop_size",
    ),
    "learning_rate": ("learning_rate", "lr", "base_lr", "max_lr", "init_lr"),
    "optimizer": ("optimizer", "optim", "opt", "optimizer_name", "optimizer_type"),
    "precision": ("precision", "mixed_precision", "dtype", "amp_dtype", "compute_dtype", "torch_dtype"),
    "model_name": (
        "model_name_or_path",
        "model_name",
        "pretrained_model_name_or_path",
        "base_model",
        "model",
        "arch",
        "architecture",
        "model_type",
        "backbone",
        "network",
        "net",
        "model_arch",
        "encoder",
        "meta_architecture",
        "estimator",
        "estimator_name",
        "classifier",
        "regressor",
        "algo",
    ),
    "dataset": (
        "dataset_name",
        "dataset",
        "data_name",
        "task_name",
        "train_file",
        "data_path",
        "dataset_path",
        "data_dir",
        "data",
        "train_data",
        "corpus",
    ),
    "n_gpus": (
        "num_gpus",
        "n_gpus",
        "ngpus",
        "gpus",
        "n_gpu",
        "nproc_per_node",
        "num_processes",
        "devices",
        "gpus_per_node",
        "world_size",
    ),
    "n_nodes": ("nnodes", "num_nodes"),
    "zero_stage": ("zero_stage", "stage"),
    "tensor_parallel": (
        "tensor_model_parallel_size",
        "tensor_parallel_size",
        "tp_size",
        "tensor_parallel",
        "tp",
    ),
    "pipeline_parallel": (
        "pipeline_model_parallel_size",
        "pipeline_parallel_size",
        "pp_size",
        "pipeline_parallel",
        "pp",
    ),
}

# size knobs that do not map to a field but drive the parameter count
SIZE_KEYS: dict[str, tuple[str, ...]] = {
    "width": (
        "n_embd",
        "hidden_size",
        "d_model",
        "hidden_dim",
        "embed_dim",
        "emb_dim",
        "embedding_dim",
        "dim",
        "width",
        "hidden",
        "n_hidden",
        "hidden_units",
        "units",
        "channels",
        "base_channels",
        "num_channels",
        "model_dim",
        "d_hidden",
        "nhid",
        "filters",
        "num_filters",
        "ch",
    ),
    "depth": (
        "n_layer",
        "n_layers",
        "num_layers",
        "num_hidden_layers",
        "depth",
        "layers",
        "nlayers",
        "num_blocks",
        "n_blocks",
        "blocks",
        "num_encoder_layers",
    ),
    "vocab": ("vocab_size", "n_vocab", "num_tokens", "ntokens", "num_embeddings"),
    "heads": ("n_head", "num_heads", "num_attention_heads", "nhead", "heads"),
    "ffn": ("intermediate_size", "ffn_dim", "dim_feedforward", "d_ff", "mlp_dim"),
}

_KEY_TO_FIELD: dict[str, str] = {}
for _field, _keys in FIELD_KEYS.items():
    for _k in _keys:
        _KEY_TO_FIELD.setdefault(_k, _field)
_KEY_TO_SIZE: dict[str, str] = {k: f for f, ks in SIZE_KEYS.items() for k in ks}

# keys too generic to trust outside a telling context (a dotted parent or an argparse flag)
_WEAK = {
    "size",
    "stage",
    "data",
    "net",
    "model",
    "steps",
    "iters",
    "batch",
    "opt",
    "dim",
    "hidden",
    "units",
    "layers",
    "blocks",
    "channels",
    "ch",
    "filters",
    "heads",
    "tp",
    "pp",
    "devices",
    "nodes",
}


def _leaf(key: str) -> str:
    return key.rsplit(".", 1)[-1].strip().lstrip("-").lower().replace("-", "_")


# counts of training items under any name: num_images, n_clips, num_train_sequences, ...
_DATA_COUNT = re.compile(
    r"^(?:num|n|number_of|total)_(?:train_|training_)?(?:samples|examples|images|clips|"
    r"sequences|sentences|documents|docs|rows|points|records|items|utterances|graphs|"
    r"videos|texts|pairs|instances|observations|tokens_train)$"
)

_NAMED_PARENTS = {
    "model": "model_name",
    "net": "model_name",
    "network": "model_name",
    "arch": "model_name",
    "backbone": "model_name",
    "dataset": "dataset",
    "data": "dataset",
    "optimizer": "optimizer",
    "optim": "optimizer",
    "opt": "optimizer",
}


def field_for_key(key: str, *, strict: bool = False) -> str | None:
    """The metadata field a config/argument key sets, or None. `strict` skips generic names."""
    leaf = _leaf(key)
    if leaf in ("name", "_name", "type", "_target_", "_component_", "class_path", "id") and "." in key:
        parent = _leaf(key.rsplit(".", 1)[0])
        return _NAMED_PARENTS.get(parent)
    if leaf in ("train", "path") and re.search(r"(^|\.)(datasets?|data)(\.\d+)?\.(train|path)$", key.lower()):
        return "dataset"  # DATASETS.TRAIN: (coco_2017_train,), datasets: [{path: org/name}]
    if strict and leaf in _WEAK:
        return None
    if leaf == "stage" and "zero" not in key.lower():
        return None
    if leaf in ("num_nodes", "n_nodes") and not re.search(
        r"trainer|distributed|slurm|launch|cluster", key.lower()
    ):
        return "dataset_size"  # graph nodes, not machines
    if leaf not in _KEY_TO_FIELD and _DATA_COUNT.match(leaf):
        return "dataset_size"  # num_images, n_clips, num_sequences, ...
    if leaf in ("size", "samples") and not re.search(r"(data|train|sample)", key.lower()):
        return None
    return _KEY_TO_FIELD.get(leaf)


def size_key(key: str) -> str | None:
    leaf = _leaf(key)
    if leaf not in _KEY_TO_SIZE and re.fullmatch(r"[a-z]+_units", leaf):
        return "width"  # lstm_units, rnn_units, num_units: a recurrent or dense layer's width
    return _KEY_TO_SIZE.get(leaf)


# model name pattern -> (family, task, params). Matched against a lower-cased name, in order.
KNOWN_MODELS: tuple[tuple[str, str, str | None, float | None], ...] = (
    (r"gpt2[-_]?xl", "gpt", "language-modeling", 1.5e9),
    (r"gpt2[-_]?large", "gpt", "language-modeling", 774e6),
    (r"gpt2[-_]?medium", "gpt", "language-modeling", 355e6),
    (r"distilgpt2", "gpt", "language-modeling", 82e6),
    (r"gpt2", "gpt", "language-modeling", 124e6),
    (r"gpt[-_]?neox[-_]?20b", "gpt", "language-modeling", 20e9),
    (r"pythia[-_]?(\d+(?:\.\d+)?)([mb])", "gpt", "language-modeling", None),
    (r"(?<![a-z])opt[-_](\d+(?:\.\d+)?)([mb])", "gpt", "language-modeling", None),
    (r"(?:llama|mistral|qwen|gemma|phi)[-_\w]*?(\d+(?:\.\d+)?)([mb])\b", "llama", "language-modeling", None),
    (r"llama|mistral|qwen|gemma|(?<![a-z])phi[-_]?\d", "llama", "language-modeling", None),
    (r"gpt|nanogpt|transformer_lm|causal_lm|causallm", "gpt", "language-modeling", None),
    (r"distilbert", "bert", "text-classification", 66e6),
    (r"roberta[-_]large", "bert", "text-classification", 355e6),
    (r"roberta", "bert", "text-classification", 125e6),
    (r"bert[-_]large", "bert", "text-classification", 340e6),
    (r"bert[-_]base|bert", "bert", "text-classification", 110e6),
    (r"(?<![a-z])t5[-_]small", "t5", "seq2seq", 60e6),
    (r"(?<![a-z])t5[-_]base", "t5", "seq2seq", 220e6),
    (r"(?<![a-z])t5[-_]large", "t5", "seq2seq", 770e6),
    (r"(?<![a-z])t5", "t5", "seq2seq", None),
    (r"whisper|wav2vec|hubert", "speech", "speech", None),
    (r"(?<![a-z])vit[-_]?h", "vit", "image-classification", 632e6),
    (r"(?<![a-z])vit[-_]?l", "vit", "image-classification", 304e6),
    (r"(?<![a-z])vit[-_]?b", "vit", "image-classification", 86e6),
    (r"(?<![a-z])vit[-_]?s", "vit", "image-classification", 22e6),
    (r"(?<![a-z])vit|deit|swin", "vit", "image-classification", None),
    (r"resnet[-_]?152", "resnet", "image-classification", 60.2e6),
    (r"resnet[-_]?101", "resnet", "image-classification", 44.5e6),
    (r"resnet[-_]?50", "resnet", "image-classification", 25.6e6),
    (r"resnet[-_]?34", "resnet", "image-classification", 21.8e6),
    (r"resnet[-_]?18", "resnet", "image-classification", 11.7e6),
    (r"resnet|resnext|wide_resnet", "resnet", "image-classification", None),
    (
        r"efficientnet|mobilenet|convnext|vgg|alexnet|densenet|regnet|lenet",
        "cnn",
        "image-classification",
        None,
    ),
    (r"yolo|detr|rcnn|retinanet|fcos|ssd(?![a-z])|centernet", "detector", "detection", None),
    (r"unet|diffusion|ddpm|ddim|stable[-_]?diffusion", "unet", "diffusion", None),
    (r"lstm|(?<![a-z])(bi)?gru|rnn", "rnn", None, None),
    (r"(?<![a-z])(gcn|gat|graphsage|gnn|gin|mpnn)(?![a-z])", "gnn", "graph", None),
    (r"(?<![a-z])mlp|feedforward|fc_?net|dense_?net_?small", "mlp", None, None),
    (r"(?<![a-z])cnn|convnet|conv_net", "cnn", None, None),
    (
        r"xgb|lightgbm|lgbm|catboost|gradient_?boost|random_?forest|extra_?trees?|decision_?tree|adaboost|gbm|gbdt",
        "tree",
        "tabular",
        None,
    ),
    (r"(?<![a-z])(dqn|ppo|a2c|sac)(?![a-z])|reinforce|actor_?critic", "rl", "rl", None),
)
_KNOWN_MODELS_RE = [(re.compile(p), fam, task, params) for p, fam, task, params in KNOWN_MODELS]


def model_facts(name: str) -> tuple[str | None, str | None, float | None]:
    """(family, task, params) for a model name, from well-known names; Nones when unknown."""
    low = name.lower()
    for rx, fam, task, params in _KNOWN_MODELS_RE:
        m = rx.search(low)
        if not m:
            continue
        if params is None and m.lastindex and m.lastindex >= 2:
            with_unit = float(m.group(m.lastindex - 1)) * (1e9 if m.group(m.lastindex) == "b" else 1e6)
            return fam, task, with_unit
        return fam, task, params
    return None, None, None


# well-known datasets: name pattern -> (training samples, task)
KNOWN_DATASETS: tuple[tuple[str, int, str], ...] = (
    (r"cifar[-_]?100", 50_000, "image-classification"),
    (r"cifar[-_]?10", 50_000, "image-classification"),
    (r"fashion[-_]?mnist", 60_000, "image-classification"),
    (r"mnist", 60_000, "image-classification"),
    (r"svhn", 73_257, "image-classification"),
    (r"imagenet[-_]?1k|imagenet|ilsvrc", 1_281_167, "image-classification"),
    (r"tiny[-_]?imagenet", 100_000, "image-classification"),
    (r"coco", 118_287, "detection"),
    (r"sst[-_]?2", 67_349, "text-classification"),
    (r"imdb", 25_000, "text-classification"),
    (r"ag[-_]?news", 120_000, "text-classification"),
    (r"mrpc", 3_668, "text-classification"),
    (r"cola", 8_551, "text-classification"),
    (r"qnli", 104_743, "text-classification"),
    (r"mnli", 392_702, "text-classification"),
    (r"squad", 87_599, "question-answering"),
    (r"wikitext[-_]?103", 1_801_350, "language-modeling"),
    (r"wikitext[-_]?2", 36_718, "language-modeling"),
    (r"shakespeare", 1, "language-modeling"),
    (r"openwebtext", 8_013_769, "language-modeling"),
    (r"cartpole|atari|mujoco|gym", 0, "rl"),
    (r"cora", 2_708, "graph"),
)
_KNOWN_DATASETS_RE = [(re.compile(p), n, task) for p, n, task in KNOWN_DATASETS]


def dataset_size(name: str) -> tuple[int | None, str | None]:
    """(training samples, task) for a well-known dataset name; size None when not meaningful."""
    low = name.lower()
    for rx, n, task in _KNOWN_DATASETS_RE:
        if rx.search(low):
            return (n if n > 1 else None), task
    return None, None


# top-level import -> framework (most specific wins: the first found in this order)
FRAMEWORK_IMPORTS: tuple[tuple[str, str], ...] = (
    ("lightning", "lightning"),
    ("pytorch_lightning", "lightning"),
    ("transformers", "transformers"),
    ("deepspeed", "deepspeed"),
    ("keras", "keras"),
    ("tensorflow", "tensorflow"),
    ("jax", "jax"),
    ("flax", "jax"),
    ("xgboost", "xgboost"),
    ("lightgbm", "lightgbm"),
    ("sklearn", "sklearn"),
    ("torch", "pytorch"),
    ("numpy", "numpy"),
)


def normalize_precision(value: object) -> str | None:
    s = str(value).lower().strip()
    if s in ("", "none", "no", "false", "0"):
        return None
    for pat, out in (
        ("bf16", "bf16"),
        ("bfloat16", "bf16"),
        ("fp8", "fp8"),
        ("float8", "fp8"),
        ("16-mixed", "fp16"),
        ("fp16", "fp16"),
        ("float16", "fp16"),
        ("half", "fp16"),
        ("16", "fp16"),
        ("amp", "mixed"),
        ("mixed", "mixed"),
        ("fp32", "fp32"),
        ("float32", "fp32"),
        ("32", "fp32"),
        ("tf32", "fp32"),
        ("fp64", "fp64"),
        ("float64", "fp64"),
        ("64", "fp64"),
    ):
        if pat in s:
            return out
    return None


def normalize_optimizer(value: object) -> str | None:
    s = str(value).lower().strip()
    if not s or s in ("none", "null"):
        return None
    s = s.rsplit(".", 1)[-1]
    for pat, out in (
        ("adamw", "adamw"),
        ("adam_torch", "adamw"),
        ("adafactor", "adafactor"),
        ("lamb", "lamb"),
        ("lion", "lion"),
        ("adagrad", "adagrad"),
        ("rmsprop", "rmsprop"),
        ("adam", "adam"),
        ("sgd", "sgd"),
        ("lbfgs", "lbfgs"),
        ("muon", "muon"),
    ):
        if pat in s:
            return out
    return s if re.fullmatch(r"[a-z][a-z0-9_]{1,20}", s) else None


# training CLIs whose code is not in the job directory -> framework
_TOOL_FRAMEWORKS: tuple[tuple[str, str], ...] = (
    (r"^yolo$|ultralytics", "ultralytics"),
    (r"^fairseq", "fairseq"),
    (r"^tune$|torchtune", "torchtune"),
    (r"llamafactory|^axolotl|^trl$", "transformers"),
    (r"^deepspeed$", "deepspeed"),
)


def tool_framework(tool: str) -> str | None:
    return next((fw for pat, fw in _TOOL_FRAMEWORKS if re.search(pat, tool)), None)


# settings a framework uses when the run does not give them: field -> (value, the framework's own name)
FRAMEWORK_DEFAULTS: dict[str, dict[str, tuple[object, str]]] = {
    # transformers TrainingArguments (and TRL's configs built on it); epochs only count when max_steps is unset
    "transformers": {
        "epochs": (3.0, "num_train_epochs"),
        "micro_batch_size": (8, "per_device_train_batch_size"),
        "learning_rate": (5e-5, "learning_rate"),
        "optimizer": ("adamw", "optim"),
    },
    # keras Model.fit
    "keras": {"epochs": (1.0, "fit(epochs)"), "micro_batch_size": (32, "fit(batch_size)")},
    # Lightning Trainer: max_epochs=None means 1000 when max_steps is unset too
    "lightning": {"epochs": (1000.0, "Trainer(max_epochs)")},
    # ultralytics `yolo train`
    "ultralytics": {
        "epochs": (100.0, "epochs"),
        "micro_batch_size": (16, "batch"),
        "image_size": (640, "imgsz"),
    },
}
# code that shows the framework's defaults are in play (its trainer / argument classes)
FRAMEWORK_MARKERS: dict[str, frozenset[str]] = {
    "transformers": frozenset(
        {
            "TrainingArguments",
            "Seq2SeqTrainingArguments",
            "SFTConfig",
            "DPOConfig",
            "ORPOConfig",
            "KTOConfig",
            "GRPOConfig",
            "RewardConfig",
            "PPOConfig",
            "CPOConfig",
        }
    ),
    "keras": frozenset({"fit"}),
    "lightning": frozenset({"Trainer", "LightningCLI"}),
}


# what an argument's help text says about the setting
_PER_DEVICE = re.compile(
    r"per[ _-]?(device|gpu|process|replica|core|worker|rank)|each (gpu|device|process)|"
    r"on each (gpu|device)",
    re.I,
)
_ALL_DEVICES = re.compile(
    r"total|global|effective|all (gpus|devices|processes)|across (all )?(gpus|devices)", re.I
)
_NOT_TRAINING_HELP = re.compile(
    r"\b(generat\w*|sampling|decod\w*|inference|evaluation|eval|validation|beam|"
    r"new tokens|completions?)\b"
)


def help_scope(help_text: str) -> str | None:
    """What an argument's help says about it: a batch per device ("micro"), for all devices ("global"), counted in
    tokens ("tokens"), or a setting of generation / evaluation only ("ignore")."""
    low = help_text.lower()
    if _NOT_TRAINING_HELP.search(low) and "train" not in low:
        return "ignore"
    if "batch" not in low:
        return None
    if re.search(r"\btokens?\b", low):
        return "tokens"
    if _PER_DEVICE.search(low):
        return "micro"
    if _ALL_DEVICES.search(low):
        return "global"
    return None

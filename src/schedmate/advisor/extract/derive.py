"""From raw values to WorkloadMetadata: layered lookup with provenance, then derived fields.

`Namespace` holds the layers (command line, configs, environment, code keyword arguments,
defaults, constants) and resolves variable references; `derive_metadata` turns the chosen
values plus code facts into the final metadata (model facts, parameter estimate, precision,
parallelism, global batch).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from schedmate.advisor.extract.configs import Flat
from schedmate.advisor.extract.launch import Launch
from schedmate.advisor.extract.pyscan import CodeFacts, Ref
from schedmate.advisor.extract.vocab import (
    FIELD_KEYS,
    FRAMEWORK_IMPORTS,
    dataset_size,
    field_for_key,
    model_facts,
    normalize_optimizer,
    normalize_precision,
    tool_framework,
)
from schedmate.advisor.metadata import WorkloadMetadata

__all__ = [
    "Namespace",
    "Candidate",
    "derive_metadata",
    "precision_flag",
    "framework_of",
    "not_training",
    "IGNORED",
]

_NOT_TRAINING = re.compile(
    r"(^|[._])(eval|evaluation|val|valid|validation|test|predict|prediction|inference|"
    r"sample|sampling|generate|generation|sampler)[._]"
)
IGNORED = "-"  # Namespace.field_overrides value: a key the code uses for something other than training


def not_training(key: str) -> bool:
    """Settings of evaluation or sampling (`eval.batch_size`, `sample.steps`) are not training's."""
    return bool(_NOT_TRAINING.search(key.lower()))


@dataclass
class Candidate:
    priority: int
    rank: int
    value: Any
    source: str


class Namespace:
    """Layered key/value lookup with provenance."""

    def __init__(self) -> None:
        self.layers: list[tuple[int, Flat, str]] = []  # (priority, flat, source label)
        self.field_overrides: dict[str, str] = {}  # key leaf -> field, when the code says what a key means

    def add(self, priority: int, flat: Mapping[str, Any], source: str) -> None:
        if flat:
            self.layers.append((priority, dict(flat), source))

    def resolve(self, ref: Ref, aliases: Mapping[str, str]) -> tuple[Any, int, str] | None:
        key = ref.key
        leaf = key.rsplit(".", 1)[-1]
        names = [key, leaf, aliases.get(leaf, leaf)]
        for prio, flat, src in sorted(self.layers, key=lambda t: t[0]):
            for n in names:
                for k in (n, n.upper(), n.lower()):
                    if k in flat:
                        return flat[k], prio, f"{src} ({k})"
            for k, v in flat.items():  # dotted key ending with the leaf (cfg.train.lr -> train.lr)
                if k.endswith("." + leaf) and key.endswith(k.rsplit(".", 2)[-1]):
                    return v, prio, f"{src} ({k})"
        return None

    def candidates(self, fieldname: str, strict: frozenset[int]) -> Iterable[Candidate]:
        keys = FIELD_KEYS.get(fieldname, ())
        for prio, flat, src in self.layers:
            for k, v in flat.items():
                leaf = k.rsplit(".", 1)[-1].lower().replace("-", "_")
                f = self.field_overrides.get(leaf) or field_for_key(k, strict=prio in strict)
                if f != fieldname:
                    continue
                parent = k.rsplit(".", 2)[-2].lower() if k.count(".") else ""
                if leaf in keys:
                    rank = keys.index(leaf)
                elif (
                    leaf in ("type", "name", "_component_", "class_path")
                    and parent in keys
                    and k.count(".") == 1
                ):
                    rank = keys.index(
                        parent
                    )  # model.type / model._component_ name the model like `model` does
                else:
                    rank = len(keys) + (50 if leaf in ("_name", "_target_") else 0)
                if not_training(k):
                    continue
                yield Candidate(prio, rank, v, f"{src}: {k}")


def _image_hint(facts: CodeFacts, sources: dict[str, str]) -> int | None:
    """The crop the training transforms take (`RandomResizedCrop(224)`), else the evaluation resize."""
    for key in ("image_size", "image_size_eval"):
        if key in facts.hints and isinstance(facts.hints[key][0], int):
            sources["image_size"] = f"{facts.hints[key][1]} transform size"
            return int(facts.hints[key][0])
    return None


_PRECISION_FLAGS = {
    "bf16": "bf16",
    "fp16": "fp16",
    "half": "fp16",
    "amp": "mixed",
    "use_amp": "mixed",
    "mixed_precision": "mixed",
    "use_fp16": "fp16",
    "use_bf16": "bf16",
}


def precision_flag(ns: Namespace, sources: dict[str, str]) -> str | None:
    """Boolean switches such as HF `bf16: true` or DeepSpeed `fp16.enabled: true`."""
    for _prio, flat, src in sorted(ns.layers, key=lambda t: t[0]):
        for k, v in flat.items():
            if v is not True:
                continue
            parts = k.lower().split(".")
            name = parts[-2] if parts[-1] == "enabled" and len(parts) > 1 else parts[-1]
            prec = _PRECISION_FLAGS.get(name)
            if prec:
                sources["precision"] = f"{src}: {k}"
                return prec
    return None


def _hint(facts: CodeFacts, ns: Namespace, key: str) -> tuple[Any, str] | None:
    """A value the code names (a literal, or variables resolved against the run's settings) and where."""
    if key not in facts.hints:
        return None
    value, where = facts.hints[key]
    parts = value if isinstance(value, tuple) else (value,)
    out: list[Any] = []
    for part in parts:
        if isinstance(part, Ref):
            r = ns.resolve(part, {})
            part = r[0] if r else None
        if part is not None:
            out.append(part)
    if isinstance(value, tuple):
        return "/".join(str(p) for p in out if isinstance(p, str)) or None, where
    return (out[0] if out else None), where


# names a model factory receives that are not models (nanoGPT's init_from='scratch')
_NOT_MODELS = {"scratch", "resume", "none", "auto", "local", "latest", "best", "last", ""}


def framework_of(facts: CodeFacts, launch: Launch) -> str | None:
    """The framework the code imports at module level (else inside functions), or the training CLI's."""
    for imports in (facts.imports, facts.lazy_imports):
        fw = next((fw for mod, fw in FRAMEWORK_IMPORTS if mod in imports), None)
        if fw is not None:
            return fw
    return tool_framework(launch.tool) if launch.tool else None


_TRANSFORMERS = {"gpt", "llama", "bert", "t5", "vit"}


def _taken(cond: Any, ns: Namespace) -> bool:
    """Whether code under `if <setting>` (cond = (Ref, branch)) runs with this run's settings; True when unconditional."""
    if not isinstance(cond, tuple):
        return bool(cond)
    r = ns.resolve(cond[0], {})
    return r is not None and bool(r[0]) is cond[1]


def _built_model(facts: CodeFacts, ns: Namespace, sources: dict[str, str]) -> str | None:
    """A model named by what the code builds: a classical estimator (RandomForestClassifier -> random_forest),
    else a recurrent network from its layers (`layers.LSTM(...)` -> lstm, wrapped in Bidirectional -> bilstm)."""
    if "estimator" in facts.hints:
        name, sources["model_name"] = facts.hints["estimator"]
        return str(name)
    if "rnn_layer" in facts.hints:
        layer, where = facts.hints["rnn_layer"]
        sources["model_name"] = f"{where} {layer} layer built in the code"
        name = {"SimpleRNN": "rnn"}.get(str(layer), str(layer).lower())
        bi = "bidirectional" in facts.hints and _taken(facts.hints["bidirectional"][0], ns)
        return ("bi" + name) if bi else name
    return None


def derive_metadata(
    values: dict[str, Any],
    sources: dict[str, str],
    size: Mapping[str, float],
    facts: CodeFacts,
    launch: Launch,
    ns: Namespace,
    n_gpus: int | None,
    n_nodes: int | None,
    gpu_model: str | None,
) -> WorkloadMetadata:
    framework = framework_of(facts, launch)
    # model name: a setting, else the name passed to a model factory, else the model class
    model_name = values.get("model_name")
    hint = _hint(facts, ns, "model_ref") if model_name is None else None
    if hint is not None and isinstance(hint[0], str) and hint[0].strip().lower() not in _NOT_MODELS:
        model_name, sources["model_name"] = hint
    if model_name is None and facts.model_classes:
        # the model the entrypoint builds; else the last one defined (composites follow their parts)
        entry = launch.entrypoint or ""
        built = [c for c in facts.model_classes if (entry, c[0]) in facts.called]
        model_name, _f, sources["model_name"] = (built or facts.model_classes)[-1]
    if model_name is None:
        model_name = _built_model(facts, ns, sources)
    family = task = None
    params: float | None = None
    if model_name:
        family, task, params = model_facts(str(model_name))
    if family is None and facts.layers:
        order = ("transformer", "unet", "gnn", "rnn", "cnn", "mlp")
        present = [k for k in order if facts.layers.get(k)]
        if present:
            family = present[0]
            sources["model_family"] = "layers used in the code"
    if family is None and "attention" in size:
        family = "transformer"
        sources["model_family"] = "attention settings"
    script = launch.entrypoint or launch.module
    if family in (None, "transformer") and script:
        # pretrain_gpt.py, train_t5.py, -m tools.train_bert: the script's name, when nothing more specific is known
        named, _t, _p = model_facts(re.split(r"[/.]", re.sub(r"\.py$", "", script))[-1])
        if named is not None and (family is None or named in _TRANSFORMERS):
            family = named
            sources["model_family"] = f"entrypoint name ({script})"
    if params is None and size.get("width") and size.get("depth"):
        d, L = size["width"], size["depth"]
        transformer = family in ("gpt", "llama", "bert", "t5", "vit", "transformer") or "attention" in size
        params = (12 * L * d * d + size.get("vocab", 0) * d) if transformer else L * d * d
        sources["param_count"] = "estimated from width/depth settings"
    elif params is not None:
        sources["param_count"] = "known model size"
    elif facts.layer_params > 0:
        params = float(facts.layer_params)
        sources["param_count"] = "sum of layer sizes written in the code"
    dataset = values.get("dataset")
    hint = _hint(facts, ns, "dataset")
    if (
        hint is not None
        and isinstance(hint[0], str)
        and (dataset is None or hint[0].startswith(f"{dataset}/"))
    ):  # load_dataset(name, config) is more specific
        dataset, sources["dataset"] = hint
    ds_size = values.get("dataset_size")
    ds_task = None
    if dataset:
        known_size, ds_task = dataset_size(str(dataset))
        if ds_size is None and known_size:
            ds_size = known_size
            sources["dataset_size"] = f"known size of {dataset}"
    if "task" in facts.hints:
        task, sources["task"] = facts.hints["task"]
    elif ds_task and (task is None or family in ("cnn", "mlp", "rnn", None)):
        task = ds_task
    # precision
    precision = normalize_precision(values["precision"]) if "precision" in values else None
    if precision is None and launch.precision:
        precision = normalize_precision(launch.precision)
        sources["precision"] = "launcher"
    if precision is None:
        precision = precision_flag(ns, sources)
    if precision is None and "precision" in facts.hints:
        precision, sources["precision"] = facts.hints["precision"]
    optimizer = normalize_optimizer(values["optimizer"]) if "optimizer" in values else None
    if optimizer is None and "optimizer" in facts.hints:
        optimizer = normalize_optimizer(facts.hints["optimizer"][0])
        sources["optimizer"] = facts.hints["optimizer"][1]
    # resources: the scheduler's word first, then the launcher, then settings in code
    gpus = n_gpus if n_gpus is not None else launch.n_gpus
    if n_gpus is not None:
        sources["n_gpus"] = "scheduler"
    elif gpus is not None:
        sources["n_gpus"] = launch.sources.get("n_gpus", "launcher")
    elif isinstance(values.get("n_gpus"), int):
        gpus = values["n_gpus"]
    nodes = n_nodes if n_nodes is not None else (launch.n_nodes or values.get("n_nodes"))
    # parallelism
    par: set[str] = set(launch.parallelism) | set(facts.parallelism)
    for _prio, flat, _src in ns.layers:
        for k, v in flat.items():
            leaf = k.rsplit(".", 1)[-1].lower()
            if leaf == "strategy" and isinstance(v, str):
                for p in ("fsdp", "deepspeed", "ddp"):
                    if p in v.lower():
                        par.add(p)
                m = re.search(r"stage_?(\d)", v)
                if m and "zero_stage" not in values:
                    values["zero_stage"] = int(m.group(1))
            elif leaf in ("fsdp",) and v not in (None, "", False, [], "no"):
                par.add("fsdp")
            elif (leaf in ("deepspeed", "deepspeed_config") and isinstance(v, str) and v) or (
                k.lower().startswith("zero_optimization") and leaf == "stage"
            ):
                par.add("deepspeed")
    if values.get("zero_stage") is not None:
        par.add("deepspeed")
    if (values.get("tensor_parallel") or 1) > 1:
        par.add("tensor")
    if (values.get("pipeline_parallel") or 1) > 1:
        par.add("pipeline")
    if not par and gpus == 1:
        par.add("single")
    # batch: global = micro x accumulation x data-parallel processes
    micro = values.get("micro_batch_size")
    accum = values.get("grad_accum_steps") or 1
    gbs = values.get("global_batch_size")
    # the code divides the setting by the process count (`accum //= world_size`): it already covers all processes
    divided = any(
        f"divided:{k}" in facts.hints
        for f in ("micro_batch_size", "grad_accum_steps")
        for k in FIELD_KEYS[f]
        if f in values
    )
    if gbs is None and micro is not None:
        dp = (
            gpus
            if (gpus and gpus > 1 and par & {"ddp", "fsdp", "deepspeed", "horovod"} and not divided)
            else 1
        )
        dp = max(1, dp // ((values.get("tensor_parallel") or 1) * (values.get("pipeline_parallel") or 1)))
        gbs = micro * accum * dp
        sources["global_batch_size"] = "micro batch x accumulation x data-parallel processes"
    par_order = ("single", "ddp", "fsdp", "deepspeed", "tensor", "pipeline", "horovod", "data")
    return WorkloadMetadata(
        framework=framework,
        task=task,
        model_name=str(model_name) if model_name else None,
        model_family=family,
        param_count=params,
        dataset=str(dataset) if dataset else None,
        dataset_size=ds_size,
        global_batch_size=gbs,
        micro_batch_size=micro,
        grad_accum_steps=values.get("grad_accum_steps"),
        epochs=values.get("epochs"),
        max_steps=values.get("max_steps"),
        max_samples=values.get("max_samples"),
        seq_len=values.get("seq_len"),
        image_size=values.get("image_size") or _image_hint(facts, sources),
        precision=precision,
        optimizer=optimizer,
        learning_rate=values.get("learning_rate"),
        parallelism=tuple(p for p in par_order if p in par),
        zero_stage=values.get("zero_stage"),
        tensor_parallel=values.get("tensor_parallel"),
        pipeline_parallel=values.get("pipeline_parallel"),
        n_gpus=gpus,
        n_nodes=nodes,
        gpu_model=gpu_model or launch.gpu_model,
        launcher=launch.launcher,
        entrypoint=launch.entrypoint,
    )

"""Static facts from Python training code, through `ast` only (code is never imported or run).

Collects what a duration predictor needs: argument defaults (argparse, click, dataclasses
such as HfArgumentParser's, module constants), keyword arguments of the calls that set the
work (`TrainingArguments(...)`, Lightning `Trainer(...)`, Keras `fit(...)`, `DataLoader`,
optimizers, model configs), imports, and hints (model names, datasets, parallelism,
precision). Values that refer to variables (`args.epochs`, `cfg.train.bs`) are kept as
references and resolved later against the run's arguments and configs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from schedmate.advisor.extract.paths import read_source
from schedmate.advisor.extract.pyfacts import MAX_PY_BYTES, CodeFacts, Ref
from schedmate.advisor.extract.pyfacts import dotted as _dotted
from schedmate.advisor.extract.pyfacts import value_of as _value
from schedmate.advisor.extract.vocab import dataset_size, help_scope
from schedmate.core.errors import InputError

__all__ = ["Ref", "CodeFacts", "MAX_PY_BYTES", "scan_python", "scan_source"]

_ARGPARSE_ADD = {"add_argument", "add_option"}
_CROPS = {"RandomResizedCrop", "RandomCrop", "RandomSizedCrop", "CenterCrop", "Resize"}
_LAYER_HINTS = {
    "Conv2d": "cnn",
    "Conv1d": "cnn",
    "Conv3d": "cnn",
    "Conv2D": "cnn",
    "Conv1D": "cnn",
    "LSTM": "rnn",
    "GRU": "rnn",
    "RNN": "rnn",
    "SimpleRNN": "rnn",
    "TransformerEncoderLayer": "transformer",
    "TransformerDecoderLayer": "transformer",
    "Transformer": "transformer",
    "TransformerEncoder": "transformer",
    "TransformerDecoder": "transformer",
    "MultiheadAttention": "transformer",
    "MultiHeadAttention": "transformer",
    "Linear": "mlp",
    "Dense": "mlp",
    "Embedding": "embedding",
    "GCNConv": "gnn",
    "GATConv": "gnn",
    "SAGEConv": "gnn",
    "ConvTranspose2d": "unet",
}
# libraries of classical estimators (and how their short names read)
_TABULAR = {
    "sklearn": "sklearn",
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "catboost": "catboost",
    "xgb": "xgboost",
    "lgbm": "lightgbm",
    "lgb": "lightgbm",
}
_MODEL_FACTORIES = re.compile(
    r"(from_pretrained|from_config|create_model|models\.\w+|get_model|build_model|load_model|AutoModel\w*)$"
)
_TASK_CLASSES = (
    (r"ForCausalLM|LMHeadModel|CausalLM", "language-modeling"),
    (r"ForMaskedLM", "language-modeling"),
    (r"ForSequenceClassification", "text-classification"),
    (r"ForTokenClassification", "token-classification"),
    (r"ForQuestionAnswering", "question-answering"),
    (r"ForSeq2SeqLM|ForConditionalGeneration", "seq2seq"),
    (r"ForImageClassification", "image-classification"),
    (r"ForObjectDetection", "detection"),
    (r"ForSemanticSegmentation|Segmentation", "segmentation"),
    (r"UNet2DModel|DDPMScheduler|DDIMScheduler", "diffusion"),
)


class _Visitor(ast.NodeVisitor):
    def __init__(self, facts: CodeFacts, fname: str) -> None:
        self.f = facts
        self.fname = fname
        self.depth = 0  # function nesting
        self.cond: tuple[Ref, bool] | None = None  # inside `if args.flag` (True) or its else (False)
        self.tabular: dict[
            str, tuple[str, str]
        ] = {}  # name or module alias -> (sklearn / xgboost / ..., class)

    def _import(self, module: str) -> None:
        (self.f.lazy_imports if self.depth else self.f.imports).add(module.split(".")[0])

    def where(self, node: ast.AST) -> str:
        return f"{self.fname}:{getattr(node, 'lineno', 0)}"

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._import(a.name)
            if a.name.split(".")[0] in _TABULAR:
                self.tabular[a.asname or a.name.split(".")[0]] = (a.name.split(".")[0], "")
            self.f.local_modules.append(a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.f.imported_names.update(a.name for a in node.names)
        if node.module and node.level == 0:
            self._import(node.module)
            if node.module.split(".")[0] in _TABULAR:
                self.tabular.update(
                    {a.asname or a.name: (node.module.split(".")[0], a.name) for a in node.names}
                )
            if node.module in ("tensorflow", "tf_keras") and any(a.name == "keras" for a in node.names):
                self._import("keras")
            self.f.local_modules.append(node.module)
            if node.module.startswith("torch.nn.parallel") or node.module.startswith(
                "torch.distributed.fsdp"
            ):
                for a in node.names:
                    self._parallel_name(a.name, node)
        elif node.module:
            self.f.local_modules.append(node.module)

    def _parallel_name(self, name: str, node: ast.AST) -> None:
        if name in ("DistributedDataParallel", "DDP"):
            self.f.parallelism.setdefault("ddp", self.where(node))
        elif name in ("FullyShardedDataParallel", "FSDP", "fully_shard"):
            self.f.parallelism.setdefault("fsdp", self.where(node))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        is_dc = any(
            _dotted(d.func if isinstance(d, ast.Call) else d).endswith("dataclass")
            for d in node.decorator_list
        )
        bases = {_dotted(b) for b in node.bases}
        config_like = (
            is_dc
            or any(b.endswith(("Config", "Args", "Arguments", "BaseModel", "Settings")) for b in bases)
            or node.name.lower().endswith(("config", "args", "arguments", "hparams", "settings"))
        )
        if config_like:
            for stmt in node.body:
                target: ast.expr | None = None
                value: ast.expr | None = None
                if isinstance(stmt, ast.AnnAssign):
                    target, value = stmt.target, stmt.value
                elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    target, value = stmt.targets[0], stmt.value
                if not isinstance(target, ast.Name) or value is None:
                    continue
                if isinstance(value, ast.Call) and _dotted(value.func).endswith("field"):
                    kw = {k.arg: k.value for k in value.keywords}
                    value = kw.get("default")
                    if value is None:
                        continue
                v = _value(value, self.f.constants)
                if v is not None and not isinstance(v, Ref):
                    self.f.defaults.setdefault(target.id, (v, self.where(stmt)))
        if any(b.endswith(("LightningModule", "LightningDataModule", "DataModule")) for b in bases):
            # LightningCLI exposes these constructors' arguments as settings (`--data.batch_size`)
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                    self._arg_defaults(stmt)
        if any(b.endswith(("Module", "LightningModule", "Model", "Layer")) for b in bases) and not re.search(
            r"Data|Loader|Callback|Dataset|Sampler|Metric", node.name + " ".join(bases)
        ):
            self.f.model_classes.append((node.name, self.fname, self.where(node)))
            for pat, kind in (
                (r"attention|transformer|gpt|bert", "transformer"),
                (r"unet|diffusion", "unet"),
                (r"gcn|gnn|graph", "gnn"),
                (r"lstm|rnn|gru", "rnn"),
            ):
                if re.search(pat, node.name, re.I):
                    self.f.layers[kind] += 1
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for d in node.decorator_list:
            if isinstance(d, ast.Call):
                name = _dotted(d.func)
                kw = {k.arg: k.value for k in d.keywords if k.arg}
                if (
                    name.endswith("hydra.main")
                    or name == "main"
                    and ("config_name" in kw or "config_path" in kw)
                ):
                    cp = kw.get("config_path")
                    cn = kw.get("config_name")
                    self.f.hydra = (
                        cp.value if isinstance(cp, ast.Constant) and isinstance(cp.value, str) else None,
                        cn.value if isinstance(cn, ast.Constant) and isinstance(cn.value, str) else None,
                    )
                elif name.endswith(("click.option", "option")) and d.args:
                    flags = [
                        a.value for a in d.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    ]
                    longs = [f for f in flags if f.startswith("--")] or flags
                    if longs and "default" in kw:
                        v = _value(kw["default"], self.f.constants)
                        if v is not None and not isinstance(v, Ref):
                            dest = longs[0].lstrip("-").split("/")[0].replace("-", "_")
                            self.f.defaults.setdefault(dest, (v, self.where(d)))
        # typer / fire style: def main(epochs: int = 3, batch_size: int = 32)
        if node.name in ("main", "train", "run", "cli"):
            self._arg_defaults(node)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def _arg_defaults(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        if not args.defaults:
            return
        for a, dflt in zip(args.args[-len(args.defaults) :], args.defaults, strict=False):
            v = _value(dflt, self.f.constants)
            if v is not None and not isinstance(v, Ref):
                self.f.defaults.setdefault(a.arg, (v, self.where(a)))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        expr = _dotted(node)
        if expr.startswith(("tf.keras.", "tensorflow.keras.")):
            self.f.imports.add("keras")
        if m := re.search(r"keras\.datasets\.(\w+)$", expr):
            self.f.hints.setdefault("dataset", (m.group(1).lower(), self.where(node)))
        # an optimizer class chosen without calling it here: `optimizer_cls = torch.optim.AdamW`
        if re.search(r"(^|\.)(optim|optimizers)\.[A-Z]\w*$", expr) and not expr.endswith(".Optimizer"):
            self.f.hints.setdefault("optimizer", (node.attr, self.where(node)))
        self.generic_visit(node)

    def _divided(self, target: ast.expr, value: ast.expr, op: ast.operator | None) -> None:
        """`accum //= world_size`, `args.batch_size = int(args.batch_size / ngpus)`: the setting is for all processes."""
        leaf = _dotted(target).rsplit(".", 1)[-1]
        if not leaf:
            return
        if op is not None:
            hit = isinstance(op, (ast.Div, ast.FloorDiv))
        else:
            hit = any(
                isinstance(n, ast.BinOp)
                and isinstance(n.op, (ast.Div, ast.FloorDiv))
                and _dotted(n.left) == _dotted(target)
                for n in ast.walk(value)
            )
        if hit:
            self.f.hints.setdefault(f"divided:{leaf}", (True, self.where(target)))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._divided(node.target, node.value, node.op)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1:
            self._divided(node.targets[0], node.value, None)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _branches(self, test: ast.expr, body: list[ast.AST], orelse: list[ast.AST]) -> None:
        """Visit both branches, remembering when they depend on a setting (`x = A(x) if args.flag else x`)."""
        self.visit(test)
        ref = _value(test, self.f.constants)
        saved = self.cond
        for part, taken in ((body, True), (orelse, False)):
            self.cond = (ref, taken) if isinstance(ref, Ref) else saved
            for n in part:
                self.visit(n)
        self.cond = saved

    def visit_If(self, node: ast.If) -> None:
        self._branches(node.test, list(node.body), list(node.orelse))

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._branches(node.test, [node.body], [node.orelse])

    def _layer_params(self, last: str, node: ast.Call) -> None:
        """Parameters of a torch layer whose sizes are literal (or module constants)."""
        vals = [_value(a, self.f.constants) for a in node.args[:3]]
        ints = [v for v in vals if isinstance(v, int) and not isinstance(v, bool) and v > 0]
        if len(ints) < 2 or len(ints) != len([v for v in vals if v is not None]):
            return
        a, b = ints[0], ints[1]
        if last in ("Linear", "Embedding"):
            n = a * b
        elif last.startswith("Conv") and last[-2:] in ("1d", "2d", "3d"):
            k = ints[2] if len(ints) > 2 else 3
            n = a * b * k ** int(last[-2])
        elif last in ("LSTM", "GRU", "RNN"):
            n = {"LSTM": 4, "GRU": 3, "RNN": 1}[last] * b * (a + b)
        else:
            return
        self.f.layer_params += n

    def _layer_width(self, last: str, node: ast.Call, kw: dict[str, ast.expr]) -> None:
        """Units of recurrent and dense layers (`layers.LSTM(args.lstm_units)`, `Dense(512)`): width hints."""
        kind = _LAYER_HINTS[last]
        if kind != "rnn" and last != "Dense":
            return
        arg = kw.get("units") or kw.get("hidden_size") or kw.get("num_units")
        if arg is None and node.args:  # torch `nn.LSTM(input_size, hidden_size)`, keras `LSTM(units)`
            arg = node.args[1] if len(node.args) > 1 else node.args[0]
        v = _value(arg, self.f.constants) if arg is not None else None
        if kind == "rnn":
            self.f.hints.setdefault("rnn_layer", (last, self.where(node)))
            if isinstance(v, Ref) or (isinstance(v, int) and not isinstance(v, bool) and v > 0):
                self.f.hints.setdefault("rnn_units", (v, self.where(node)))
        elif (
            isinstance(v, int)
            and not isinstance(v, bool)
            and v > max(1, self.f.hints.get("dense_units", (0, ""))[0])
        ):
            self.f.hints["dense_units"] = (v, self.where(node))  # the widest dense layer written literally

    def _config_template(self, last: str, arg: ast.expr) -> None:
        """A config file named by a run setting: `import_module(f"experiments.{args.exp}")`, `open(f"cfg/{name}.yaml")`."""
        parts: list[ast.expr] = []
        if isinstance(arg, ast.JoinedStr):
            parts = list(arg.values)
        elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):  # "experiments." + name (+ ".py")
            node: ast.expr = arg
            while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                parts.insert(0, node.right)
                node = node.left
            parts.insert(0, node)
        refs = [i for i, p in enumerate(parts) if not isinstance(p, ast.Constant)]
        if len(refs) != 1 or not all(isinstance(p.value, str) for p in parts if isinstance(p, ast.Constant)):
            return
        i = refs[0]
        inner = parts[i].value if isinstance(parts[i], ast.FormattedValue) else parts[i]  # type: ignore[attr-defined]
        ref = _value(inner, self.f.constants)
        if not isinstance(ref, Ref):
            return
        prefix = "".join(str(p.value) for p in parts[:i] if isinstance(p, ast.Constant))
        suffix = "".join(str(p.value) for p in parts[i + 1 :] if isinstance(p, ast.Constant))
        if last == "import_module" and not suffix:
            self.f.config_templates.append((prefix.replace(".", "/"), ref, ".py"))
        elif re.search(r"\.(ya?ml|json|toml|py)$", suffix):
            self.f.config_templates.append((prefix, ref, suffix))

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        self.f.called.add((self.fname, last))
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if last in _ARGPARSE_ADD:
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            dest_node = kw.get("dest")
            dest = (
                dest_node.value
                if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str)
                else None
            )
            if dest is None and flags:
                longs = [f for f in flags if f.startswith("--")]
                dest = (longs[0] if longs else flags[0]).lstrip("-").replace("-", "_")
            if dest and flags and not flags[0].startswith("-") and dest not in self.f.positionals:
                self.f.positionals.append(dest)
            help_node = kw.get("help")
            if dest and isinstance(help_node, ast.Constant) and isinstance(help_node.value, str):
                scope = help_scope(help_node.value)
                if scope:
                    self.f.hints.setdefault(f"scope:{dest}", (scope, self.where(node)))
            if dest:
                if "default" in kw:
                    v = _value(kw["default"], self.f.constants)
                    if v is not None and not isinstance(v, Ref):
                        self.f.defaults.setdefault(dest, (v, self.where(node)))
                act = kw.get("action")
                if (
                    isinstance(act, ast.Constant)
                    and act.value in ("store_true", "store_false")
                    and "default" not in kw
                ):
                    self.f.defaults.setdefault(dest, (act.value == "store_false", self.where(node)))
                for f in flags:
                    if f.startswith("-") and f.lstrip("-").replace("-", "_") != dest:
                        self.f.hints.setdefault(
                            f"alias:{f.lstrip('-').replace('-', '_')}", (dest, self.where(node))
                        )
        elif last in _LAYER_HINTS:
            self.f.layers[_LAYER_HINTS[last]] += 1
            self._layer_params(last, node)
            self._layer_width(last, node, kw)
        lib, cls = self.tabular.get(last) or (self.tabular.get(name.split(".")[0], ("", ""))[0], last)
        if lib and (
            re.search(r"[a-z](Classifier|Regressor|Ranker)$", cls) or (cls == "train" and lib != "sklearn")
        ):
            est = re.sub(r"(Classifier|Regressor|Ranker)$", "", cls) if cls != "train" else lib
            est = _TABULAR.get(est.lower(), re.sub(r"(?<=[a-z])(?=[A-Z])", "_", est).lower())
            self.f.hints.setdefault("estimator", (est, f"{self.where(node)} {name}(...)"))  # -> random_forest
        if last == "Bidirectional":  # (Ref, taken) when only built under a setting
            self.f.hints.setdefault("bidirectional", (self.cond or True, self.where(node)))
        if last in ("DistributedDataParallel", "DDP", "FullyShardedDataParallel", "FSDP", "fully_shard"):
            self._parallel_name(last, node)
        if name.endswith("deepspeed.initialize") or last == "DeepSpeedStrategy":
            self.f.parallelism.setdefault("deepspeed", self.where(node))
        if last in ("autocast", "GradScaler") or name.endswith("amp.autocast"):
            self.f.hints.setdefault("precision", ("mixed", self.where(node)))
            for v in kw.values():
                val = _value(v, self.f.constants)
                if isinstance(val, str) and ("bfloat16" in val or "float16" in val):
                    self.f.hints["precision"] = ("bf16" if "bfloat16" in val else "fp16", self.where(node))
        if last in ("half",) and not node.args:
            self.f.hints.setdefault("precision", ("fp16", self.where(node)))
        # optimizers: torch.optim.AdamW(...), optax.adam(...), keras.optimizers.Adam(...)
        if re.search(r"(^|\.)(optim|optimizers|optax)\.[A-Za-z]+$", name):
            self.f.hints.setdefault("optimizer", (last, self.where(node)))
        # model from a name: from_pretrained("gpt2"), timm.create_model("vit_base"), models.resnet50()
        if _MODEL_FACTORIES.search(name) or name.startswith(("torchvision.models.", "models.")):
            arg0 = (
                node.args[0] if node.args else kw.get("model_name") or kw.get("pretrained_model_name_or_path")
            )
            v = _value(arg0, self.f.constants) if arg0 is not None else None
            if isinstance(v, (str, Ref)):
                self.f.hints.setdefault("model_ref", (v, self.where(node)))
            elif name.startswith(("torchvision.models.", "models.")) and last[:1].islower():
                self.f.hints.setdefault("model_ref", (last, self.where(node)))
        for pat, task in _TASK_CLASSES:
            if re.search(pat, name):
                self.f.hints.setdefault("task", (task, self.where(node)))
        if last == "load_dataset" and node.args:
            parts = tuple(
                p for p in (_value(a, self.f.constants) for a in node.args[:2]) if isinstance(p, (str, Ref))
            )
            if parts:  # names, or variables resolved later: load_dataset(args.dataset_name, args.dataset_config_name)
                self.f.hints.setdefault("dataset", (parts if len(parts) > 1 else parts[0], self.where(node)))
        if re.search(r"(^|\.)datasets\.[A-Z][A-Za-z0-9]+$", name) or re.search(
            r"keras\.datasets\.\w+\.load_data$", name
        ):
            ds = last if last != "load_data" else name.split(".")[-2]
            self.f.hints.setdefault("dataset", (ds.lower(), self.where(node)))
        elif last[:1].isupper() and len(last) <= 24 and dataset_size(last)[1] is not None:
            self.f.hints.setdefault("dataset", (last.lower(), self.where(node)))  # MNIST(root, train=True)
        if last in _CROPS and node.args:
            size = _value(node.args[0], self.f.constants)
            if isinstance(size, int) and not isinstance(size, bool) and 8 <= size <= 8192:
                key = "image_size" if last.startswith("Random") else "image_size_eval"
                self.f.hints.setdefault(key, (size, self.where(node)))
        if node.args:
            self._config_template(last, node.args[0])
        for a in [*node.args[:2], *kw.values()]:  # any call given a config file name reads it
            if (
                isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and re.search(r"\.(ya?ml|json|toml)$", a.value)
            ):
                self.f.config_literals.append(a.value)
        for k, v in kw.items():
            self.f.call_kwargs.append((name, k, _value(v, self.f.constants), self.where(node)))
        self.generic_visit(node)


def scan_source(text: str, fname: str, facts: CodeFacts | None = None) -> CodeFacts:
    """Scan one Python source; syntax errors are recorded, not raised."""
    facts = facts or CodeFacts()
    try:
        tree = ast.parse(text, filename=fname)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        facts.errors.append(f"{fname}: cannot parse Python: {type(exc).__name__}")
        return facts
    for node in tree.body:  # module constants first, so later references resolve
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                continue
            v = _value(node.value, facts.constants)
            for t in targets:
                if not isinstance(t, ast.Name):
                    continue
                if v is None or isinstance(v, Ref):
                    facts.constants.pop(t.id, None)  # `EPOCHS = f()` after `EPOCHS = 2`: unknown now
                else:
                    facts.constants[t.id] = (v, f"{fname}:{node.lineno}")  # the last assignment holds
    try:
        _Visitor(facts, fname).visit(tree)
    except RecursionError:
        facts.errors.append(f"{fname}: code nested too deeply")
    return facts


def scan_python(path: Path, rel: str, facts: CodeFacts | None = None) -> CodeFacts:
    facts = facts or CodeFacts()
    try:
        text = read_source(path, MAX_PY_BYTES, what=rel)
    except InputError as exc:
        facts.errors.append(f"{exc}; not scanned")
        return facts
    return scan_source(text, rel, facts)

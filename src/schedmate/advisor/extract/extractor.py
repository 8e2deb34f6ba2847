"""Static metadata extraction: launch command + configs + Python AST -> WorkloadMetadata.

Values are looked up in layers, highest first: the script's command-line arguments, config
files (Hydra composition, --config files, nanoGPT-style override files, DeepSpeed/HF JSON),
launcher environment, keyword arguments of the calls that set the work, then defaults in
code (argparse, click, dataclasses) and module constants. Every value keeps its source.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedmate.advisor.extract.budget import TOKEN_SCOPE, apply_budgets
from schedmate.advisor.extract.configs import Flat, compose_hydra, literal
from schedmate.advisor.extract.derive import IGNORED, Candidate, Namespace, derive_metadata, framework_of
from schedmate.advisor.extract.inherit import load_inherited
from schedmate.advisor.extract.launch import Launch, parse_launch
from schedmate.advisor.extract.paths import inside
from schedmate.advisor.extract.pyscan import CodeFacts, Ref, scan_python
from schedmate.advisor.extract.vocab import (
    FIELD_KEYS,
    FRAMEWORK_DEFAULTS,
    FRAMEWORK_MARKERS,
    field_for_key,
    size_key,
)
from schedmate.advisor.metadata import WorkloadMetadata
from schedmate.core.errors import InputError
from schedmate.inputs import read_bytes

__all__ = ["Extraction", "StaticExtractor", "guess_entrypoint", "directory_digest", "tree_signature"]

_YACS_KEY = re.compile(r"[A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)+")
_CONFIG_EXT = re.compile(r"\.(ya?ml|json|toml)$", re.I)
_TEXT_EXT = {".py", ".yaml", ".yml", ".json", ".toml", ".sh", ".cfg", ".ini", ".env", ".txt", ".bash", ""}
_CODE_EXT = {".py", ".yaml", ".yml", ".json", ".toml", ".sh", ".cfg", ".ini", ".bash"}
_SKIP_DIRS = {
    ".git",
    "__pycache__",
    ".venv",
    "venv",
    "node_modules",
    "wandb",
    "outputs",
    "logs",
    "data",
    "checkpoints",
    ".mypy_cache",
    ".pytest_cache",
    "lightning_logs",
    "runs",
}
_MAX_LOCAL_MODULES = 12
_INT_FIELDS = {
    "dataset_size",
    "global_batch_size",
    "micro_batch_size",
    "grad_accum_steps",
    "max_steps",
    "max_samples",
    "seq_len",
    "image_size",
    "n_gpus",
    "n_nodes",
    "zero_stage",
    "tensor_parallel",
    "pipeline_parallel",
}
_FLOAT_FIELDS = {"epochs", "learning_rate"}
_STR_FIELDS = {"model_name", "dataset", "optimizer", "precision"}
_WORK_CALLS = re.compile(
    r"(TrainingArguments|Seq2SeqTrainingArguments|Trainer|\bfit|DataLoader|Config|"
    r"train|SFTConfig|Accelerator|initialize|compile|Strategy|Dataset|pad_sequences|"
    r"TextVectorization)$"
)
# calls whose settings are not training's: GenerationConfig(max_length=...), SamplingParams, evaluate(...)
_NOT_TRAINING_CALL = re.compile(r"generat|sampl|eval|predict|infer|decod", re.I)

# settings that only attention models have
_ATTENTION_KEYS = {
    "n_embd",
    "d_model",
    "n_head",
    "num_heads",
    "num_attention_heads",
    "nhead",
    "n_ctx",
    "block_size",
    "num_hidden_layers",
    "max_position_embeddings",
}

# priority of each layer (lower wins)
_CLI, _CONFIG, _ENV, _KWARG, _DEFAULT, _CONST = range(6)


@dataclass(frozen=True)
class Extraction:
    """Metadata, where each value came from, size knobs, and what could not be read."""

    metadata: WorkloadMetadata
    sources: Mapping[str, str] = field(default_factory=dict)
    size: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def guess_entrypoint(root: Path) -> str | None:
    """The training script of a job directory when no command names it."""
    try:
        names = sorted(p.name for p in root.iterdir() if p.is_file())
    except OSError:
        return None
    for cand in ("train.py", "main.py", "run.py", "pretrain.py", "finetune.py", "run_train.py", "trainer.py"):
        if cand in names:
            return cand
    pys = [n for n in names if n.endswith(".py") and "train" in n.lower()]
    if pys:
        return pys[0]
    pys = [n for n in names if n.endswith(".py") and not n.startswith(("setup", "test_", "conftest"))]
    return pys[0] if len(pys) == 1 else None


def _text_files(
    base: Path, max_files: int, max_bytes: int, max_entries: int = 50_000
) -> Iterator[tuple[Path, str, os.stat_result]]:
    """(path, relative path, stat) of the directory's regular text files, in a stable order;
    bounded in files kept and in directory entries looked at."""
    count = seen = 0
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        seen += len(dirnames) + len(filenames)
        # code and configs before other text (`notes.txt`, extension-less files), so a directory
        # of thousands of data files does not push the training script past the bound
        for fn in sorted(filenames, key=lambda n: (Path(n).suffix.lower() not in _CODE_EXT, n)):
            p = Path(dirpath, fn)
            if p.suffix.lower() not in _TEXT_EXT and not fn.startswith(".env"):
                continue
            try:
                st = p.lstat()
            except (OSError, ValueError):
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
                continue
            yield p, str(p.relative_to(base)), st
            count += 1
            if count >= max_files:
                return
        if seen >= max_entries:
            return


def directory_digest(root: Path, *, max_files: int = 2000, max_bytes: int = 1_000_000) -> str:
    """A content hash of the directory's text files (code and configs), for caching."""
    h = hashlib.blake2b(digest_size=16)
    base = root.resolve()
    for p, rel, _st in _text_files(base, max_files, max_bytes):
        try:
            data = read_bytes(p, what="code file", max_bytes=max_bytes)
        except InputError:
            continue
        h.update(
            rel.encode("utf-8", "surrogateescape") + b"\0" + hashlib.blake2b(data, digest_size=16).digest()
        )
    return h.hexdigest()


def tree_signature(root: Path, *, max_files: int = 2000, max_bytes: int = 1_000_000) -> str:
    """A cheap fingerprint of the same files (names, sizes, modification times; nothing is read):
    when it is unchanged, `directory_digest` is too, so a long-running process can trust a cache."""
    h = hashlib.blake2b(digest_size=16)
    for _p, rel, st in _text_files(root.resolve(), max_files, max_bytes):
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _cli_args(tokens: Sequence[str]) -> tuple[Flat, list[str], list[str]]:
    """Script arguments -> ({key: value}, positional, hydra-style overrides)."""
    out: Flat = {}
    positional: list[str] = []
    overrides: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("--") and len(tok) > 2:
            body = tok[2:]
            if "=" in body:
                k, v = body.split("=", 1)
                out[k.replace("-", "_")] = literal(v)
                i += 1
                continue
            vals: list[str] = []
            j = i + 1
            while (
                j < len(tokens)
                and not tokens[j].startswith("--")
                and not re.match(r"^-[A-Za-z]", tokens[j])
                and "=" not in tokens[j]
            ):
                vals.append(tokens[j])
                j += 1
                if len(vals) == 1 and not _CONFIG_EXT.search(vals[0]):
                    break
            out[body.replace("-", "_")] = literal(vals[0]) if len(vals) == 1 else (vals or True)
            i = j
        elif re.match(r"^-[A-Za-z]$", tok):
            if i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                out[tok[1:]] = literal(tokens[i + 1])
                i += 2
            else:
                out[tok[1:]] = True
                i += 1
        elif "=" in tok and re.match(r"^[+~]?[A-Za-z_][\w.]*=", tok):
            overrides.append(tok)
            k, v = tok.split("=", 1)
            out[k.lstrip("+~")] = literal(v)
            i += 1
        elif _YACS_KEY.fullmatch(tok) and i + 1 < len(tokens):
            out[tok] = literal(tokens[i + 1])  # yacs/detectron2 opts: `SOLVER.MAX_ITER 90000`
            i += 2
        else:
            positional.append(tok)
            i += 1
    return out, positional, overrides


def _sequence_text(value: Any) -> Any:
    """YAML strings that spell a Python tuple or list (yacs: `TRAIN: ("coco_2017_train",)`) as that value."""
    if isinstance(value, str) and len(value) < 2000 and re.fullmatch(r"\s*[(\[].*[)\]]\s*", value, re.S):
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
        if isinstance(parsed, (list, tuple)):
            return list(parsed)
    return value


def _coerce(fieldname: str, value: Any) -> Any:
    """A raw value as the field's type, or None when it cannot be one."""
    value = _sequence_text(value)
    if fieldname in _STR_FIELDS and isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]  # a single training dataset or model, written as a list
    if value is None or isinstance(value, (Ref, dict)):
        return None
    if isinstance(value, (list, tuple)):
        if fieldname in ("image_size",) and value and all(isinstance(v, int) for v in value):
            return int(max(value))
        return None
    if fieldname in _INT_FIELDS:
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            value = literal(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return (
            value
            if isinstance(value, int)
            and value >= (0 if fieldname in ("zero_stage", "max_steps", "dataset_size", "max_samples") else 1)
            else None
        )
    if fieldname in _FLOAT_FIELDS:
        if isinstance(value, str):
            value = literal(value)
        return (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
            else None
        )
    if fieldname in _STR_FIELDS:
        if isinstance(value, bool) or value == "":
            return None
        s = str(value).strip()
        return s if 0 < len(s) <= 200 and "\n" not in s else None
    return value


class StaticExtractor:
    """Reads a job directory without running it; fast (milliseconds) and side-effect free."""

    # -- code -------------------------------------------------------------------------------
    @staticmethod
    def _scan(root: Path, entry: str | None, notes: list[str]) -> CodeFacts:
        """The entrypoint and the local modules it imports (breadth first, at most 12 files)."""
        facts = CodeFacts()
        scanned: list[str] = []
        if entry is None:
            return facts
        queue = [entry]
        while queue and len(scanned) < _MAX_LOCAL_MODULES:
            rel = queue.pop(0)
            path = inside(root, rel)
            if path is None or rel in scanned:
                continue
            scanned.append(rel)
            before = len(facts.local_modules)
            scan_python(path, rel, facts)  # size cap and unreadable files end up in facts.errors
            base = Path(rel).parent
            for mod in facts.local_modules[before:]:
                parts = mod.split(".")
                for cand in (
                    base.joinpath(*parts).with_suffix(".py"),
                    Path(*parts).with_suffix(".py"),
                    base.joinpath(*parts, "__init__.py"),
                ):
                    if inside(root, cand) is not None and str(cand) not in scanned:
                        queue.append(str(cand))
                        break
        notes.extend(facts.errors)
        return facts

    # -- main -------------------------------------------------------------------------------
    def extract(
        self,
        code_dir: str | Path,
        *,
        command: str | None = None,
        config_files: Sequence[str] = (),
        n_gpus: int | None = None,
        n_nodes: int | None = None,
        gpu_model: str | None = None,
    ) -> Extraction:
        root = Path(code_dir).resolve()
        notes: list[str] = []
        sources: dict[str, str] = {}
        launch = parse_launch(command, root, default_entry=guess_entrypoint(root))
        notes.extend(launch.notes)
        facts = self._scan(root, launch.entrypoint, notes)
        entry_dir = Path(launch.entrypoint).parent if launch.entrypoint else Path(".")

        cli, positional, overrides = _cli_args(launch.args)
        aliases = {k.split(":", 1)[1]: str(v[0]) for k, v in facts.hints.items() if k.startswith("alias:")}
        cli = {aliases.get(k, k): v for k, v in cli.items()}
        for dest, tok in zip(facts.positionals, positional, strict=False):  # argparse positionals, in order
            cli.setdefault(dest, literal(tok))
        ns = Namespace()
        for k, (scope, _w) in facts.hints.items():  # `--train_batch_size` whose help says "per device"
            if not k.startswith("scope:"):
                continue
            if scope in (
                "ignore",
                TOKEN_SCOPE,
            ):  # "max length of generated text", "total batch size in tokens"
                ns.field_overrides[k[6:].lower()] = IGNORED if scope == "ignore" else TOKEN_SCOPE
            elif field_for_key(k[6:]) in ("micro_batch_size", "global_batch_size"):
                ns.field_overrides[k[6:].lower()] = (
                    "micro_batch_size" if scope == "micro" else "global_batch_size"
                )
        if facts.hydra is not None:
            cp, cn = facts.hydra
            cn = str(cli.get("config_name") or cli.get("cn") or cn or "config")
            cdir = root / entry_dir / (str(cli.get("config_path")) if cli.get("config_path") else (cp or "."))
            hflat, used, groups = compose_hydra(cdir, cn, overrides, root)
            cli = {k: v for k, v in cli.items() if k not in groups}
            if used:
                ns.add(_CONFIG, hflat, "hydra " + ",".join(str(u.relative_to(root)) for u in used[:4]))
            else:
                notes.append(f"hydra config {cn!r} not found")
        ns.add(_CLI, cli, "command line")

        # config files: explicit list, files named on the command line, code defaults naming files
        cfg_paths: list[str] = [str(p) for p in config_files]
        for v in [*cli.values(), *positional]:
            for s in v if isinstance(v, list) else [v]:
                if isinstance(s, str) and (m := re.fullmatch(r"(.+\.py):[\w,.=-]*", s)):
                    s = m.group(
                        1
                    )  # ml_collections `--config=configs/base.py:small` (an argument to get_config)
                if (
                    isinstance(s, str)
                    and (_CONFIG_EXT.search(s) or s.endswith(".py"))
                    and s != launch.entrypoint
                ):
                    cfg_paths.append(s)
        for k, (v, _w) in facts.defaults.items():
            if isinstance(v, str) and _CONFIG_EXT.search(v) and k not in cli:
                cfg_paths.append(v)
        cfg_paths.extend(facts.config_literals)
        cfg_paths.extend(self._templated_configs(facts, ns, aliases))
        cfg_paths.extend(launch.config_paths)
        seen: set[Path] = set()
        for rel in cfg_paths:
            path = inside(root, rel) or inside(root, entry_dir / rel)
            if path is None:
                if rel in config_files:
                    notes.append(f"config file {rel!r} not found inside the job directory")
                continue
            if path in seen:
                continue
            seen.add(path)
            flat, used, errs = load_inherited(path, root)
            label = str(path.relative_to(root)) + (f" (+{len(used) - 1} inherited)" if len(used) > 1 else "")
            notes.extend(errs)
            ns.add(_CONFIG, flat, label)
        env = {k.lower(): literal(v) for k, v in launch.env.items()}
        ns.add(_ENV, env, "environment")
        kw_flat: Flat = {}
        kw_src: dict[str, str] = {}
        for callee, kw, val, where in facts.call_kwargs:
            if not _WORK_CALLS.search(callee) and field_for_key(kw, strict=True) not in (
                "learning_rate",
                "epochs",
            ):
                continue
            if _NOT_TRAINING_CALL.search(callee.rsplit(".", 1)[-1]):
                continue
            if isinstance(val, Ref):
                r = ns.resolve(val, aliases)
                if r is None:
                    d = facts.defaults.get(val.key.rsplit(".", 1)[-1]) or facts.constants.get(val.key)
                    if d is None:
                        continue
                    val = d[0]
                else:
                    val = r[0]
            if val is None:
                continue
            key = f"{callee.rsplit('.', 1)[-1]}.{kw}"  # Trainer.num_nodes: the callee gives context
            kw_flat.setdefault(key, val)
            kw_src.setdefault(key, f"{where} {callee.rsplit('.', 1)[-1]}({kw}=...)")
        ns.add(_DEFAULT, {k: v for k, (v, _) in facts.defaults.items()}, f"defaults in {launch.entrypoint}")
        ns.add(_CONST, {k: v for k, (v, _) in facts.constants.items()}, f"constants in {launch.entrypoint}")
        ns.add(_KWARG, kw_flat, "code")

        values: dict[str, Any] = {}
        for fieldname in FIELD_KEYS:
            best: Candidate | None = None
            for cand in ns.candidates(fieldname, strict=frozenset((_KWARG, _CONST))):
                v = _coerce(fieldname, cand.value)
                if v is None:
                    continue
                if best is None or (cand.priority, cand.rank) < (best.priority, best.rank):
                    best = Candidate(cand.priority, cand.rank, v, cand.source)
            if best is not None:
                values[fieldname] = best.value
                src = best.source
                if src.startswith("code: "):
                    src = kw_src.get(src.split(": ", 1)[1], src)
                sources[fieldname] = src

        self._framework_defaults(values, sources, facts, launch)
        notes.extend(apply_budgets(values, sources, ns, calls=_KWARG, computed=_CONST))
        size = self._size_knobs(ns)
        self._layer_width(size, facts, ns)
        meta = derive_metadata(values, sources, size, facts, launch, ns, n_gpus, n_nodes, gpu_model)
        return Extraction(metadata=meta, sources=sources, size=size, notes=tuple(dict.fromkeys(notes)))

    @staticmethod
    def _framework_defaults(
        values: dict[str, Any], sources: dict[str, str], facts: CodeFacts, launch: Launch
    ) -> None:
        """Fill what the framework decides when nothing sets it (HF 3 epochs, Keras fit 1 epoch x 32, ...)."""
        fw = framework_of(facts, launch)
        if fw is None or fw not in FRAMEWORK_DEFAULTS:
            return
        marker = FRAMEWORK_MARKERS.get(fw)
        used = {name for _f, name in facts.called} | facts.imported_names
        if marker is not None and not launch.tool and not marker & used:
            return
        for fieldname, (value, name) in FRAMEWORK_DEFAULTS[fw].items():
            if fieldname in values or (fieldname == "epochs" and "max_steps" in values):
                continue
            if fieldname == "micro_batch_size" and "global_batch_size" in values:
                continue
            values[fieldname] = value
            sources[fieldname] = f"framework default ({fw} {name})"

    @staticmethod
    def _templated_configs(facts: CodeFacts, ns: Namespace, aliases: Mapping[str, str]) -> list[str]:
        """Config files the code builds from a run setting: `import_module(f"experiments.{args.experiment}")`."""
        out: list[str] = []
        for prefix, ref, suffix in facts.config_templates:
            r = ns.resolve(ref, aliases)
            value = r[0] if r is not None else facts.defaults.get(ref.key.rsplit(".", 1)[-1], (None, ""))[0]
            if isinstance(value, str) and re.fullmatch(r"\w[\w./-]{0,200}", value) and ".." not in value:
                if (
                    suffix == ".py" and prefix.endswith("/") and "." in value
                ):  # import_module: dots are packages
                    value = value.replace(".", "/")
                out.append(f"{prefix}{value}{suffix}")
        return out

    @staticmethod
    def _layer_width(size: dict[str, float], facts: CodeFacts, ns: Namespace) -> None:
        """No width setting: the units of the recurrent layer the code builds, else of its widest dense layer."""
        if "width" in size:
            return
        for key in ("rnn_units", "dense_units"):
            if key not in facts.hints:
                continue
            value = facts.hints[key][0]
            if isinstance(value, Ref):
                r = ns.resolve(value, {})
                value = r[0] if r is not None else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                size["width"] = float(value)
                return

    @staticmethod
    def _size_knobs(ns: Namespace) -> dict[str, float]:
        out: dict[str, tuple[int, float]] = {}
        for prio, flat, _src in ns.layers:
            for k, v in flat.items():
                if k.rsplit(".", 1)[-1].lower() in _ATTENTION_KEYS:
                    out["attention"] = (0, 1.0)
                s = size_key(k)
                if s is None or isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                    continue
                # a bare generic name ("hidden", "dim") in code is some function's argument; as the default of
                # a command-line option or config field it is the run's setting, like the same option given
                if prio in (_KWARG, _CONST) and k.rsplit(".", 1)[-1].lower() in (
                    "dim",
                    "hidden",
                    "units",
                    "layers",
                    "blocks",
                    "channels",
                    "ch",
                    "filters",
                    "heads",
                ):
                    continue
                if s not in out or prio < out[s][0]:
                    out[s] = (prio, float(v))
        return {k: v for k, (_, v) in out.items()}

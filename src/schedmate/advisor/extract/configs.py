"""Config files read as flat `dotted.key -> value` maps: YAML, JSON, TOML, .env, Python overrides.

Everything here reads untrusted files: sizes are capped, parsers are the safe ones (YAML
`safe_load`, Python through `ast` only, never executed), and a file that cannot be read
gives an empty map plus a one-line reason instead of an exception.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from schedmate.advisor.extract.pyconfig import python_config

__all__ = [
    "Flat",
    "flatten",
    "load_config",
    "load_data",
    "python_config",
    "parse_env_text",
    "python_assignments",
    "compose_hydra",
    "literal",
    "MAX_CONFIG_BYTES",
]

Flat = dict[str, Any]
MAX_CONFIG_BYTES = 1_000_000
_MAX_DEPTH = 12


def flatten(data: Any, prefix: str = "", depth: int = 0) -> Flat:
    """Nested dicts to dotted keys; lists of scalars kept as values, lists of dicts indexed."""
    out: Flat = {}
    if depth > _MAX_DEPTH:
        return out
    if isinstance(data, Mapping):
        for k, v in data.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, Mapping) or (
                isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v)
            ):
                out.update(flatten(v, key, depth + 1))
            else:
                out[key] = v
    elif isinstance(data, list):
        for i, v in enumerate(data[:50]):
            out.update(flatten(v, f"{prefix}.{i}" if prefix else str(i), depth + 1))
    return out


def literal(text: str) -> Any:
    """A command-line or env value as the program would most likely read it."""
    s = text.strip().strip("'\"")
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null", "~"):
        return None
    try:
        return int(s.replace("_", "")) if re.fullmatch(r"[-+]?\d[\d_]*", s) else float(s)
    except ValueError:
        return s


def parse_env_text(text: str) -> Flat:
    """`KEY=value` lines (with optional `export`), as in .env files and shell scripts."""
    out: Flat = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
        if m:
            value = m.group(2).split(" #", 1)[0].strip()
            out[m.group(1)] = value.strip("'\"")
    return out


def _const(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOVALUE


class _NoValue:
    pass


_NOVALUE = _NoValue()


def python_assignments(tree: ast.Module) -> Iterator[tuple[str, Any, int]]:
    """Top-level `name = <literal>` assignments (nanoGPT-style config and override files)."""
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is None:
            continue
        v = _const(value)
        if v is _NOVALUE:
            continue
        for t in targets:
            if isinstance(t, ast.Name):
                yield t.id, v, node.lineno


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise ValueError("not a regular file")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"larger than {MAX_CONFIG_BYTES} bytes")
    return path.read_bytes().decode("utf-8", errors="replace")


def load_data(path: Path) -> tuple[Any, str | None]:
    """A config file's content (nested), and a one-line reason when it could not be read."""
    try:
        text = _read_text(path)
        suffix = path.suffix.lower()
        if suffix in (".yaml", ".yml"):
            data: Any = {}
            for doc in yaml.safe_load_all(text):
                if isinstance(doc, Mapping):
                    data = {**data, **doc}
            return data, None
        if suffix == ".json":
            return json.loads(text), None
        if suffix == ".toml":
            return tomllib.loads(text), None
        if suffix == ".py":
            return python_config(ast.parse(text)), None
        if suffix in (".env", ".sh", ".cfg", ".ini", "") or path.name.startswith(".env"):
            return {k: literal(v) for k, v in parse_env_text(text).items()}, None
        return {}, f"unsupported config type '{suffix}'"
    except (
        OSError,
        ValueError,
        yaml.YAMLError,
        tomllib.TOMLDecodeError,
        SyntaxError,
        RecursionError,
        MemoryError,
    ) as exc:
        return {}, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]


def load_config(path: Path) -> tuple[Flat, str | None]:
    """A config file as a flat map, and a one-line reason when it could not be read."""
    data, err = load_data(path)
    return flatten(data), err


def _set_dotted(flat: Flat, key: str, value: Any) -> None:
    # an override of a group replaces its dotted children
    for k in [k for k in flat if k.startswith(key + ".")]:
        del flat[k]
    flat[key] = value


def compose_hydra(
    config_dir: Path, config_name: str, overrides: list[str], inside: Path
) -> tuple[Flat, list[Path], set[str]]:
    """Hydra-style composition: primary config, its `defaults:` list, then `a.b=c` overrides.

    Group choices in overrides (`model=resnet`) pick `<group>/<choice>.yaml`; they are
    returned so the caller does not read them as values. Files outside `inside` are never read.
    """
    used: list[Path] = []
    groups: set[str] = set()
    choice = {o.split("=", 1)[0].lstrip("+~"): o.split("=", 1)[1] for o in overrides if "=" in o}

    def safe(p: Path) -> Path | None:
        try:
            rp = p.resolve()
        except (OSError, RuntimeError):
            return None
        return rp if rp.is_relative_to(inside) and rp.is_file() else None

    def load(rel: str) -> Any:
        for suffix in ("", ".yaml", ".yml"):
            p = safe(config_dir / f"{rel}{suffix}")
            if p is not None:
                if p not in used:
                    used.append(p)
                try:
                    return yaml.safe_load(_read_text(p)) or {}
                except (OSError, ValueError, yaml.YAMLError):
                    return {}
        return None

    primary = load(config_name)
    if not isinstance(primary, Mapping):
        primary = {}
    flat: Flat = {}
    for entry in primary.get("defaults", []) or []:
        if isinstance(entry, Mapping):
            for group, option in entry.items():
                g = str(group).split("@", 1)[0].lstrip("/").replace("override ", "").strip()
                option = choice.get(g, option)
                if option is None or g == "_self_":
                    continue
                sub = load(f"{g}/{option}")
                if isinstance(sub, Mapping):
                    pkg = g.replace("/", ".")
                    for k, v in flatten(sub).items():
                        flat[f"{pkg}.{k}"] = v
                    flat[f"{pkg}._name"] = option
                    groups.add(g)
        elif isinstance(entry, str) and entry != "_self_":
            sub = load(entry)
            if isinstance(sub, Mapping):
                flat.update(flatten(sub))
    flat.update(flatten({k: v for k, v in primary.items() if k != "defaults"}))
    for o in overrides:
        if "=" not in o:
            continue
        k, v = o.split("=", 1)
        k = k.lstrip("+~")
        if "." not in k and isinstance(load(f"{k}/{v}"), Mapping):
            groups.add(k)
            continue  # a group choice, already applied through the defaults list
        _set_dotted(flat, k, literal(v))
    return flat, used, groups

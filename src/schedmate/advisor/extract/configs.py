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

from schedmate.advisor.extract.paths import inside as inside_root
from schedmate.advisor.extract.paths import read_source
from schedmate.advisor.extract.pyconfig import python_config
from schedmate.core.errors import InputError

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
    "yaml_documents",
]

Flat = dict[str, Any]
MAX_CONFIG_BYTES = 1_000_000
_MAX_DEPTH = 12


MAX_FLAT_KEYS = 20_000  # a config is a few hundred keys; an alias bomb expands to billions
MAX_YAML_ALIASES = 1_000


def flatten(data: Any, prefix: str = "", depth: int = 0, *, max_keys: int = MAX_FLAT_KEYS) -> Flat:
    """Nested dicts to dotted keys; lists of scalars kept as values, lists of dicts indexed.

    Bounded: at most `max_keys` nodes are visited in all (YAML aliases share one subtree many
    times, so a 2 KB file can name billions of keys) and nesting stops at 12 levels."""
    out: Flat = {}
    budget = [max_keys]

    def walk(node: Any, pre: str, d: int) -> None:
        if d > _MAX_DEPTH:
            return
        if isinstance(node, Mapping):
            items: Any = node.items()
        elif isinstance(node, list):
            items = ((str(i), v) for i, v in enumerate(node[:50]))
        else:
            return
        for k, v in items:
            if budget[0] <= 0:
                return
            budget[0] -= 1
            key = f"{pre}.{k}" if pre else str(k)
            if (
                isinstance(node, list)
                or isinstance(v, Mapping)
                or (isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v))
            ):
                if isinstance(v, Mapping | list):
                    walk(v, key, d + 1)
                elif isinstance(node, list):
                    continue  # a list of dicts keeps only its dicts, as before
                else:
                    out[key] = v
            else:
                out[key] = v

    walk(data, prefix, depth)
    return out


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML has no stubs installed
    """yaml.SafeLoader that refuses more than MAX_YAML_ALIASES aliases (a "billion laughs" file)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise ValueError(f"more than {MAX_YAML_ALIASES} YAML aliases (an alias bomb?)")
        return super().compose_node(parent, index)


def yaml_documents(text: str) -> Iterator[Any]:
    """The documents of a YAML text, with the safe loader and a bound on aliases."""
    loader = _BoundedLoader(text)
    try:
        while loader.check_data():
            yield loader.get_data()
    finally:
        loader.dispose()


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
    """A config file's text; a FIFO, device, oversize or unusable path is a ValueError (the
    callers' "could not read" path), never a hang."""
    try:
        return read_source(path, MAX_CONFIG_BYTES, what="config")
    except InputError as exc:
        raise ValueError(str(exc).removeprefix(f"config {path}: ")) from None


def load_data(path: Path) -> tuple[Any, str | None]:
    """A config file's content (nested), and a one-line reason when it could not be read."""
    try:
        text = _read_text(path)
        suffix = path.suffix.lower()
        if suffix in (".yaml", ".yml"):
            data: Any = {}
            for doc in yaml_documents(text):
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
        return inside_root(inside, p)

    def load(rel: str) -> Any:
        for suffix in ("", ".yaml", ".yml"):
            p = safe(config_dir / f"{rel}{suffix}")
            if p is not None:
                if p not in used:
                    used.append(p)
                try:
                    return next(yaml_documents(_read_text(p)), None) or {}
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

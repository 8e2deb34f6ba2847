"""What pyscan finds in Python code (`CodeFacts`, `Ref`) and the bounded evaluation of the
expressions it meets (`_value`: literals, module constants, simple arithmetic)."""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Ref", "CodeFacts", "MAX_PY_BYTES", "dotted", "value_of"]

MAX_PY_BYTES = 1_000_000
_MAX_NUMBER = 10**18  # larger operands are not settings; bounds the cost of `a * a`


@dataclass(frozen=True)
class Ref:
    """A value the code reads from a variable: `args.epochs` -> Ref('epochs', 'args.epochs')."""

    key: str
    expr: str


@dataclass
class CodeFacts:
    defaults: dict[str, tuple[Any, str]] = field(default_factory=dict)
    constants: dict[str, tuple[Any, str]] = field(default_factory=dict)
    call_kwargs: list[tuple[str, str, Any, str]] = field(default_factory=list)  # callee, kw, value|Ref, where
    imports: set[str] = field(default_factory=set)
    lazy_imports: set[str] = field(default_factory=set)  # imported inside functions (optional dependencies)
    imported_names: set[str] = field(default_factory=set)
    positionals: list[str] = field(default_factory=list)  # argparse positional arguments, in order
    hints: dict[str, tuple[Any, str]] = field(default_factory=dict)
    parallelism: dict[str, str] = field(default_factory=dict)
    hydra: tuple[str | None, str | None] | None = None
    config_literals: list[str] = field(default_factory=list)
    config_templates: list[tuple[str, Ref, str]] = field(default_factory=list)  # f"experiments/{args.exp}.py"
    layers: Counter[str] = field(default_factory=Counter)
    local_modules: list[str] = field(default_factory=list)
    layer_params: int = 0
    model_classes: list[tuple[str, str, str]] = field(default_factory=list)  # name, file, where
    called: set[tuple[str, str]] = field(default_factory=set)  # (file, simple name called)
    errors: list[str] = field(default_factory=list)


def dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(dotted(node.func) + "()")
    else:
        return ""
    return ".".join(reversed(parts))


def value_of(node: ast.AST, constants: dict[str, tuple[Any, str]]) -> Any:
    """A literal, a resolved module constant, or a Ref to a variable; None when unknowable."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name):
        if node.id in constants:
            return constants[node.id][0]
        return Ref(node.id, node.id)
    if isinstance(node, ast.Attribute):
        expr = dotted(node)
        if expr.startswith(("torch.", "tf.", "jnp.", "np.")):
            return expr  # dtypes like torch.bfloat16
        # args.x / cfg.train.x / self.config.x -> key after the root object
        parts = expr.split(".")
        return Ref(".".join(parts[1:]) if len(parts) > 1 else parts[0], expr) if expr else None
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        base = dotted(node.value)
        return Ref(node.slice.value, f"{base}[{node.slice.value!r}]")
    if isinstance(node, ast.Call) and dotted(node.func).endswith(("get", "getenv")) and node.args:
        key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            default = value_of(node.args[1], constants) if len(node.args) > 1 else None
            return (
                Ref(key.value, f"get({key.value!r})")
                if default is None or isinstance(default, Ref)
                else (Ref(key.value, f"get({key.value!r}, {default!r})"))
            )
    if isinstance(node, ast.IfExp):  # `'bfloat16' if cuda_ok else 'float16'`: the value the code prefers
        body = value_of(node.body, constants)
        return body if not isinstance(body, Ref) else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("int", "float")
        and node.args
    ):
        return value_of(node.args[0], constants)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.FloorDiv, ast.Add)):
        left, right = value_of(node.left, constants), value_of(node.right, constants)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) and not isinstance(left, bool):
            if abs(left) > _MAX_NUMBER or abs(right) > _MAX_NUMBER:
                return None  # `b = a * a` line after line: numbers of millions of digits, never a setting
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Add):
                return left + right
            return left // right if right else None
    return None

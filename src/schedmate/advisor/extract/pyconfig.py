"""Python config files read through `ast`, never executed: assignments, `dict(...)`, config objects.

Three shapes are common in training code:
- nanoGPT / mmengine: top-level `name = <value>` and `dict(k=v)` (merged over `_base_` files elsewhere);
- a `get_config()` function returning nested constructor calls,
  `ExperimentConfig(model=ModelConfig(d_model=128), train=TrainConfig(batch_size=32))`;
- ml_collections / Google-research style, a config object filled attribute by attribute:
  `config = ml_collections.ConfigDict(); config.model = ConfigDict(); config.model.num_layers = 6`.

A call to a class (a capitalised name) becomes the mapping of its keyword arguments, so nested
calls become dotted keys (`model.d_model`); values that cannot be known statically are dropped.
Work is bounded by an evaluation budget, a statement budget and a nesting depth.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["python_config", "py_value", "NOVALUE", "CONFIG_FUNCTION"]


class _NoValue:
    """A value that cannot be known without running the code."""


NOVALUE: Any = _NoValue()
_MAX_PY_VALUE = 10_000  # expression nodes one config file may evaluate
_MAX_STATEMENTS = 2_000  # statements of config functions one file may evaluate
_MAX_CALL_DEPTH = 4  # config functions calling each other
_MAX_NUMBER = 10**18  # larger operands are not settings
_MAX_SEQUENCE = 10_000  # items (or characters) of a value built by `+`
# functions that build a config: get_config, get_cfg, make_config, default_hparams, base_config, config, ...
CONFIG_FUNCTION = re.compile(
    r"^(?:(?:get|make|build|create|default|base)_?(?:\w+_)?)?(?:config|cfg|hparams|"
    r"hyperparams|hyperparameters)$"
)
_BINOPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
}


class _Eval:
    """Evaluates config expressions and config-building functions of one module."""

    def __init__(self, functions: Mapping[str, ast.FunctionDef]) -> None:
        self.budget = _MAX_PY_VALUE
        self.statements = _MAX_STATEMENTS
        self.functions = functions
        self.active: list[str] = []  # config functions being evaluated (no recursion)

    def value(self, node: ast.AST, env: Mapping[str, Any]) -> Any:
        """Literals, names assigned earlier, containers, simple arithmetic, `dict(...)` and class calls."""
        self.budget -= 1
        if self.budget < 0:
            return NOVALUE
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id, NOVALUE)
        if isinstance(node, ast.Attribute):  # config.model.d_model read back
            base = self.value(node.value, env)
            return base.get(node.attr, NOVALUE) if isinstance(base, dict) else NOVALUE
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.value(e, env) for e in node.elts]
            if any(i is NOVALUE for i in items):
                return NOVALUE
            return list(items) if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=False):
                val = self.value(v, env)
                if k is None:  # {**base, ...}
                    if isinstance(val, Mapping):
                        out.update(val)
                    continue
                key = self.value(k, env)
                if val is not NOVALUE and isinstance(key, (str, int)):
                    out[key] = val
            return out
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.value(node.operand, env)
            return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else NOVALUE
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = self.value(node.left, env), self.value(node.right, env)
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right))
            same_seq = type(left) is type(right) and isinstance(left, (str, list, tuple))
            # `b = a * a` / `b = a + a` line after line: values of millions of digits or items
            if numbers and max(abs(left), abs(right)) > _MAX_NUMBER:
                return NOVALUE
            if same_seq and len(left) + len(right) > _MAX_SEQUENCE:
                return NOVALUE
            if (numbers and not (isinstance(node.op, (ast.Div, ast.FloorDiv)) and right == 0)) or (
                same_seq and isinstance(node.op, ast.Add)
            ):
                try:
                    return _BINOPS[type(node.op)](left, right)
                except (ArithmeticError, TypeError, ValueError, MemoryError):
                    return NOVALUE
        return NOVALUE

    def call(self, node: ast.Call, env: Mapping[str, Any]) -> Any:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if isinstance(func, ast.Name) and func.id in self.functions and not node.args and not node.keywords:
            return self.function(
                self.functions[func.id], env
            )  # a helper of the same file: get_model_config()
        if name in ("int", "float") and len(node.args) == 1 and not node.keywords:
            v = self.value(node.args[0], env)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return int(v) if name == "int" else float(v)
            return NOVALUE
        if name != "dict" and not name[:1].isupper():
            return NOVALUE  # a function whose result is unknown without running it
        out: dict[Any, Any] = {}
        if len(node.args) == 1:  # ConfigDict({...}), dict(base, k=v)
            first = self.value(node.args[0], env)
            if isinstance(first, Mapping):
                out.update(first)
        elif node.args and name == "dict":
            return NOVALUE
        for kw in node.keywords:
            val = self.value(kw.value, env)
            if kw.arg is None:
                if isinstance(val, Mapping):
                    out.update(val)
            elif val is not NOVALUE:
                out[kw.arg] = val
        return out

    def function(self, fn: ast.FunctionDef, outer: Mapping[str, Any]) -> Any:
        """The value a config function returns, following assignments to names, attributes and keys."""
        if len(self.active) >= _MAX_CALL_DEPTH or fn.name in self.active:
            return NOVALUE
        self.active.append(fn.name)
        try:
            env: dict[str, Any] = dict(outer)
            for a in fn.args.args + fn.args.kwonlyargs:
                env.pop(a.arg, None)  # parameters are unknown unless defaulted
            defaults = fn.args.defaults
            for a, d in zip(fn.args.args[len(fn.args.args) - len(defaults) :], defaults, strict=False):
                env[a.arg] = self.value(d, env)
            return self.block(fn.body, env)
        finally:
            self.active.pop()

    def block(self, body: list[ast.stmt], env: dict[str, Any]) -> Any:
        for stmt in body:
            self.statements -= 1
            if self.statements < 0:
                return NOVALUE
            if isinstance(stmt, ast.Return):
                return self.value(stmt.value, env) if stmt.value is not None else NOVALUE
            if isinstance(stmt, ast.With):  # `with config.unlocked():`
                result = self.block(stmt.body, env)
                if result is not NOVALUE:
                    return result
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                val = self.value(stmt.value, env)
                for t in targets:
                    self.assign(t, val, env)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.update(stmt.value, env)
        return NOVALUE

    def assign(self, target: ast.expr, val: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            if val is NOVALUE:
                env.pop(target.id, None)
            else:
                env[target.id] = val
            return
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return
        key = target.attr if isinstance(target, ast.Attribute) else self.value(target.slice, env)
        if not isinstance(key, str):
            return
        owner = self.value(target.value, env)
        if isinstance(owner, dict):
            if isinstance(val, dict) and _reaches(val, owner):
                return  # `config.x = config`: a cycle no config needs
            if val is NOVALUE:
                owner.pop(key, None)
            else:
                owner[key] = val

    def update(self, call: ast.Call, env: dict[str, Any]) -> None:
        """`config.update(batch_size=32)` / `config.model.update({...})`."""
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "update"):
            return
        owner = self.value(call.func.value, env)
        if not isinstance(owner, dict):
            return
        new = self.call(
            ast.Call(func=ast.Name(id="dict", ctx=ast.Load()), args=call.args[:1], keywords=call.keywords),
            env,
        )
        if isinstance(new, dict):
            owner.update(new)


def _reaches(value: Any, target: dict[Any, Any], limit: int = 10_000) -> bool:
    """Whether `target` is `value` or nested inside it (bounded walk)."""
    stack, seen = [value], 0
    while stack and seen < limit:
        v = stack.pop()
        seen += 1
        if v is target:
            return True
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return seen >= limit


def py_value(node: ast.AST, env: Mapping[str, Any]) -> Any:
    """One config expression's value, or NOVALUE."""
    return _Eval({}).value(node, env)


def python_config(tree: ast.Module) -> dict[str, Any]:
    """A Python config module as nested values: its top-level assignments, then what its config function returns."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    ev = _Eval(functions)
    env: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        v = ev.value(value, env)
        for t in targets:
            if isinstance(t, ast.Name) and v is not NOVALUE:
                env[t.id] = v
            elif not isinstance(t, ast.Name):
                ev.assign(t, v, env)  # `cfg.model.depth = 12` after `cfg = Config(...)`
    out = {k: v for k, v in env.items() if not k.startswith("__")}
    names = [n for n in functions if CONFIG_FUNCTION.match(n)]
    if names:
        name = "get_config" if "get_config" in names else names[0]
        result = ev.function(functions[name], env)
        if isinstance(result, Mapping):
            out.update(result)
    return out

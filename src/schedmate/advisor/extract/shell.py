"""Just enough POSIX shell to read training launchers: statements, quoting, expansion.

Real launchers keep whole argument lists in variables (`GPT_ARGS="--num-layers 24 ..."`,
bash arrays `ARGS=(--lr 3e-4)` expanded as `${ARGS[@]}`), compute values (`$((8*2))`) and
refer to their own folder (`$(dirname $0)/train.py`). Unquoted expansions are split into
words as the shell would; nothing is ever executed, unknown command substitutions become
empty and unknown variables stay as written.
"""

from __future__ import annotations

import ast
import operator
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["ShellState", "split_statements", "expand_words", "assignment", "env_prefix"]

_MAX_EXPANSION = 20_000  # characters a single statement may grow to (values past it are dropped)


@dataclass
class ShellState:
    """Variables, arrays and positional arguments of one script run."""

    env: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)
    script_dir: str = "."
    keep_unknown: bool = True  # `$NAME` with no value stays as written (commands typed by users)


def split_statements(text: str) -> list[str]:
    """Simple commands of a script: split at newlines, `;`, `&&`, `||`, `|` outside quotes and parentheses."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    out: list[str] = []
    buf: list[str] = []
    quote = ""
    depth = 0
    i = 0
    n = len(text)

    def flush() -> None:
        s = "".join(buf).strip()
        buf.clear()
        if s:
            out.append(s)

    while i < n:
        c = text[i]
        if quote:
            buf.append(c)
            if c == "\\" and quote == '"' and i + 1 < n:
                buf.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
            buf.append(c)
        elif c == "\\" and i + 1 < n:
            buf.append(text[i : i + 2])
            i += 1
        elif c == "#" and (not buf or buf[-1][-1:].isspace() or buf[-1] in (";", "(")):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c == "(":
            depth += 1
            buf.append(c)
        elif c == ")":
            depth = max(0, depth - 1)
            buf.append(c)
        elif depth == 0 and (c == "\n" or c == ";"):
            flush()
        elif (
            depth == 0
            and c in "&|"
            and not (c == "&" and (text[i - 1 : i] in "<>" and i > 0 or text[i + 1 : i + 2] == ">"))
        ):
            if text[i : i + 2] in ("&&", "||"):
                i += 1
            flush()
        else:
            buf.append(c)
        i += 1
    flush()
    return out


_DIRNAME = re.compile(
    r"""\$\(\s*(?:cd\s+["']?)?\$?\(?\s*dirname\s+["']?(?:\$0|\$\{0\}|\$\{?BASH_SOURCE(?:\[0\])?\}?)["']?\s*\)?"""
    r"""(?:["']?\s*(?:&&|;)\s*pwd\s*)?\)"""
)
_ARITH = re.compile(r"\$\(\(([^()]*(?:\([^()]*\)[^()]*)*)\)\)")
_SUBST = re.compile(r"\$\([^()]*\)|`[^`]*`")
_VAR = re.compile(
    r"\$\{(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|@|\*)(\[[^\]]*\])?(?::?([-=+?])([^}]*)|:(\d+)(?::(\d+))?)?\}"
    r"|\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?!$])"
)
_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.floordiv,
    ast.Mod: operator.mod,
}


def _arith(expr: str) -> str | None:
    """Integer arithmetic on literals (after expansion), as `$(( ))` computes it; None when not that."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None

    def ev(node: ast.AST) -> int:
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, (ast.FloorDiv, ast.Div, ast.Mod)) and right == 0:
                raise ValueError("division by zero")
            result = _OPS[type(node.op)](left, right)
            if abs(result) > 10**15:
                raise ValueError("too large")
            return result
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError("not arithmetic")

    try:
        return str(ev(tree.body))
    except (ValueError, RecursionError):
        return None


def _lookup(m: re.Match[str], st: ShellState) -> list[str] | str | None:
    """The value of one `$...` reference: a list for arrays and `$@`, a string, or None when unknown."""
    if m.group(8) is not None:
        name = m.group(8)
        if name in ("@", "*"):
            return list(st.positional)
        if name == "0":
            return st.script_dir + "/script"
        if name.isdigit():
            k = int(name)
            return st.positional[k - 1] if k <= len(st.positional) else ""
        if name in "#?!$":
            return str(len(st.positional)) if name == "#" else ""
        return st.env.get(name)
    length, name, index, op, word, offset, count = m.group(1, 2, 3, 4, 5, 6, 7)
    if name in ("@", "*") or (name in st.arrays and index in ("[@]", "[*]")):
        items = list(st.positional) if name in ("@", "*") else list(st.arrays[name])
        if offset is not None:
            start = int(offset) - (1 if name in ("@", "*") else 0)
            items = items[max(0, start) :]
            if count is not None:
                items = items[: int(count)]
        return str(len(items)) if length else items
    if name.isdigit():
        k = int(name)
        val: str | None = (
            st.positional[k - 1] if 0 < k <= len(st.positional) else ("" if k else st.script_dir + "/script")
        )
    elif name in st.arrays and index not in (None, "[0]"):
        m_idx = re.fullmatch(r"\[(\d+)\]", index or "")
        arr = st.arrays[name]
        val = arr[int(m_idx.group(1))] if m_idx and int(m_idx.group(1)) < len(arr) else ""
    else:
        val = st.env.get(name)
        if val is None and name in st.arrays:
            val = st.arrays[name][0] if st.arrays[name] else ""
    if length:
        return str(len(val or ""))
    if op in ("-", "="):
        return val if val else word
    if op == "+":
        return word if val else ""
    return val


def _expand_text(text: str, st: ShellState) -> str:
    """Expand `$...` in `text`, quoting values so that a later `shlex.split` splits words like the shell."""
    text = _DIRNAME.sub(lambda _m: st.script_dir, text)
    text = _ARITH.sub(
        lambda m: (
            _arith(
                _expand_text(m.group(1), ShellState(st.env, st.arrays, st.positional, st.script_dir, False))
            )
            or ""
        ),
        text,
    )
    text = _SUBST.sub("", text)
    out: list[str] = []
    size = 0
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            out.append(c)
            if c == "'":
                quote = ""
            i += 1
            continue
        if c == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if c in "'\"":
            quote = "" if quote == c else (quote or c)
            out.append(c)
            i += 1
            continue
        m = _VAR.match(text, i) if c == "$" else None
        if m is None:
            out.append(c)
            i += 1
            continue
        val = _lookup(m, st)
        i = m.end()
        if size > _MAX_EXPANSION:
            continue
        if val is None:
            out.append(m.group(0) if st.keep_unknown else "")
            continue
        if isinstance(val, list):  # each element its own word, quoted or not
            joined = " ".join(shlex.quote(v) for v in val)
            out.append('"' + joined + '"' if quote == '"' else joined)
            size += len(joined)
            continue
        if quote == '"':
            out.append(val.replace("\\", "\\\\").replace('"', '\\"'))
        else:
            out.append(val)  # unquoted: split into words by the caller
        size += len(out[-1])
    return "".join(out)


def expand_words(statement: str, st: ShellState) -> list[str]:
    """One simple command as the words the shell would pass to the program."""
    expanded = _expand_text(statement, st)
    try:
        words = shlex.split(expanded, comments=True)
    except ValueError:
        words = expanded.split()
    return [w for w in words if w != ""]


_ASSIGN = re.compile(
    r"""^(?:export\s+|local\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?([A-Za-z_][A-Za-z0-9_]*)(\+?)="""
)


def assignment(statement: str, st: ShellState) -> bool:
    """Apply `NAME=value`, `NAME+=value`, `NAME=(a b c)`; False when the statement is not only that."""
    m = _ASSIGN.match(statement)
    if m is None:
        return False
    name, append = m.group(1), bool(m.group(2))
    rest = statement[m.end() :]
    if rest.startswith("("):
        if not rest.rstrip().endswith(")"):
            return False
        items = expand_words(rest.strip()[1:-1], st)
        st.arrays[name] = ((st.arrays.get(name, []) if append else []) + items)[: _MAX_EXPANSION // 10]
        st.env.pop(name, None)
        return True
    try:
        words = shlex.split(
            _expand_text(rest, ShellState(st.env, st.arrays, st.positional, st.script_dir, False)),
            comments=True,
        )
    except ValueError:
        return False
    if len(words) > 1:
        return False  # `A=1 cmd ...`: an environment prefix, not an assignment
    value = words[0] if words else ""
    st.env[name] = ((st.env.get(name, "") + value) if append else value)[:_MAX_EXPANSION]
    return True


def env_prefix(words: Sequence[str], env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """`A=1 B=2 cmd args` -> ({A: 1, B: 2} over `env`, [cmd, args])."""
    out = dict(env)
    rest = list(words)
    while rest and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", rest[0]):
        k, v = rest.pop(0).split("=", 1)
        out[k] = v
    return out, rest

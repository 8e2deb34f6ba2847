"""Read-only tools an LLM agent uses to explore a job directory, confined to that directory.

Each `Tool` describes itself (name, description, typed inputs) so the prompt is generated
from the code. Every path is resolved relative to the job root and must stay inside it
after symlinks are resolved; only regular files are opened, never more than
`max_file_bytes` of them. Problems the model causes (bad path, escape attempt, bad regex,
unknown tool, bad arguments) come back as a `ToolError` value for the agent to show the
model; they are never raised to the caller.
"""

from __future__ import annotations

import fnmatch
import inspect
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex  # pinned in pyproject; untyped (mypy override)

from schedmate.core.errors import InputError
from schedmate.inputs import Deadline

__all__ = ["Tool", "ToolError", "JobDirTools", "SKIP_DIRS"]

ArgValue = str | int

SKIP_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        "site-packages",
        "wandb",
    }
)
_BINARY_PROBE_BYTES = 8192
_MAX_PATTERN_CHARS = 200
_MAX_LINE_CHARS = 300  # per line shown by file_read / grep
_MAX_GREP_LINE_CHARS = 2000  # longer lines are searched only up to here (bounds regex time)
_MAX_DEPTH = 6
_MAX_READ_LINES = 500
# Patterns come from the model and lines from the job: a pattern such as (a|aa)*b backtracks
# exponentially in Python's re, which has no timeout. grep uses the `regex` engine (re syntax,
# V0) whose matching takes a timeout, under one deadline for the whole call. The engine checks
# its timeout coarsely (measured: up to 2.4x late), so each search gets half the time left.
GREP_DEADLINE_S = 2.0


class ToolError(Exception):
    """A problem the model caused; its message is shown to the model as the observation."""

    def __str__(self) -> str:
        return f"error: {self.args[0] if self.args else 'tool failed'}"


@dataclass(frozen=True)
class Tool:
    """A self-describing tool: `inputs` maps argument name -> (type, description).

    Types are "string" or "integer"; arguments with a default in `func`'s signature are optional.
    """

    name: str
    description: str
    inputs: Mapping[str, tuple[str, str]]
    func: Callable[..., str] = field(compare=False, repr=False)

    def defaults(self) -> dict[str, Any]:
        params = inspect.signature(self.func).parameters
        return {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}

    def describe(self) -> str:
        defaults = self.defaults()
        sig = ", ".join(
            f"{n}: {t}" + (f" = {defaults[n]!r}" if n in defaults else "")
            for n, (t, _) in self.inputs.items()
        )
        lines = [f"- {self.name}({sig}): {self.description}"]
        lines += [f"    {n}: {d}" for n, (_, d) in self.inputs.items()]
        return "\n".join(lines)

    def _coerce(self, args: Mapping[str, object]) -> dict[str, ArgValue]:
        unknown = sorted(set(args) - set(self.inputs))
        if unknown:
            raise ToolError(
                f"{self.name} got unknown argument(s) {', '.join(unknown)}; it takes {', '.join(self.inputs)}"
            )
        defaults = self.defaults()
        out: dict[str, ArgValue] = {}
        for name, (kind, _) in self.inputs.items():
            value = args.get(name)
            if value is None:
                if name not in defaults:
                    raise ToolError(f"{self.name} needs argument '{name}'")
                continue
            if kind == "integer":
                if isinstance(value, bool) or not isinstance(value, int | str):
                    raise ToolError(f"{self.name}: argument '{name}' must be an integer")
                try:
                    out[name] = int(value)
                except ValueError:
                    raise ToolError(
                        f"{self.name}: argument '{name}' must be an integer, got {value!r}"
                    ) from None
            else:
                if isinstance(value, bool) or not isinstance(value, str | int):
                    raise ToolError(f"{self.name}: argument '{name}' must be a string")
                out[name] = str(value)
        return out

    def run(self, args: Mapping[str, object]) -> str | ToolError:
        """Call the tool; model-caused problems (and I/O errors on the model's paths) come back as ToolError."""
        try:
            return self.func(**self._coerce(args))
        except ToolError as exc:
            return exc
        except OSError as exc:
            return ToolError(f"{self.name}: {exc.strerror or type(exc).__name__}")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class JobDirTools:
    """file_tree, file_read and grep over one job directory; nothing outside it is ever opened."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_file_bytes: int = 256_000,
        max_read_chars: int = 4000,
        max_tree_entries: int = 300,
        max_grep_hits: int = 40,
        max_grep_files: int = 2000,
        grep_deadline_s: float = GREP_DEADLINE_S,
    ) -> None:
        root_path = Path(root)
        if not root_path.is_dir():
            raise InputError(f"job directory {root_path} does not exist or is not a directory")
        if min(max_file_bytes, max_read_chars, max_tree_entries, max_grep_hits, max_grep_files) < 1:
            raise InputError("JobDirTools limits must all be >= 1")
        self.root = root_path.resolve()
        self.max_file_bytes = max_file_bytes
        self.max_read_chars = max_read_chars
        self.max_tree_entries = max_tree_entries
        self.max_grep_hits = max_grep_hits
        self.max_grep_files = max_grep_files
        self.grep_deadline_s = grep_deadline_s
        self.tools: dict[str, Tool] = {
            t.name: t
            for t in (
                Tool(
                    "file_tree",
                    "List the files and folders under a directory of the job (sizes in bytes; "
                    "'@' marks a symlink, which is not followed).",
                    {
                        "path": ("string", "directory relative to the job directory"),
                        "depth": ("integer", f"how many levels to descend (1-{_MAX_DEPTH})"),
                    },
                    self.file_tree,
                ),
                Tool(
                    "file_read",
                    "Read lines of a text file of the job, numbered.",
                    {
                        "path": ("string", "file relative to the job directory"),
                        "start_line": ("integer", "first line to show (1-based)"),
                        "max_lines": ("integer", f"how many lines to show (at most {_MAX_READ_LINES})"),
                    },
                    self.file_read,
                ),
                Tool(
                    "grep",
                    "Search text files of the job for a regular expression (case-insensitive); "
                    "shows path:line: text of matching lines.",
                    {
                        "pattern": ("string", "a Python regular expression or plain text"),
                        "path": ("string", "file or directory to search, relative to the job directory"),
                        "glob": ("string", "only files whose name matches this glob, e.g. *.py or *.yaml"),
                    },
                    self.grep,
                ),
            )
        }

    # -- the facade the agent uses -------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.tools)

    def describe(self) -> str:
        """The tools, rendered for a system prompt."""
        return "\n".join(t.describe() for t in self.tools.values())

    def run(self, name: str, args: Mapping[str, object]) -> str | ToolError:
        """Run tool `name`; every model-caused problem (unknown tool too) is returned as ToolError."""
        tool = self.tools.get(name)
        if tool is None:
            return ToolError(f"unknown tool '{name}'; available: {', '.join(self.tools)}")
        return tool.run(args)

    # -- confinement ---------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The real path of `path` (relative to the root); ToolError unless it stays inside the root."""
        if not path or "\x00" in path:
            raise ToolError("empty or invalid path")
        if os.path.isabs(path) or path.startswith("~") or re.match(r"^[A-Za-z]:", path):
            raise ToolError(
                f"'{_clip(path, 80)}' is absolute; give a path relative to the job directory, e.g. '.'"
            )
        try:
            resolved = (self.root / path).resolve()  # follows every symlink, at any level
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11)
            raise ToolError(f"'{_clip(path, 80)}' cannot be resolved (symlink loop?)") from None
        if not resolved.is_relative_to(self.root):
            raise ToolError(f"'{_clip(path, 80)}' is outside the job directory; access refused")
        return resolved

    def _rel(self, p: Path) -> str:
        rel = p.relative_to(self.root).as_posix()
        return rel or "."

    def _open_regular(self, p: Path) -> tuple[bytes, int]:
        """The first max_file_bytes of a regular file and its size; refuses FIFOs, devices, sockets."""
        st = os.stat(p)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"'{self._rel(p)}' is a directory; use file_tree")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"'{self._rel(p)}' is not a regular file; refused")
        # O_NONBLOCK: opening a FIFO swapped in since the stat must not block; O_NOFOLLOW: the
        # resolved path has no symlink, so one appearing now is a race and is refused.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(p, flags)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"'{self._rel(p)}' is not a regular file; refused")
            chunks: list[bytes] = []
            remaining = self.max_file_bytes
            while remaining > 0:
                chunk = os.read(fd, min(remaining, 65536))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
            return b"".join(chunks), st.st_size
        finally:
            os.close(fd)

    @staticmethod
    def _is_binary(data: bytes) -> bool:
        return b"\x00" in data[:_BINARY_PROBE_BYTES]

    @staticmethod
    def _skip_dir(entry: os.DirEntry[str]) -> bool:
        return entry.name in SKIP_DIRS or os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))

    # -- the tools -----------------------------------------------------------------------

    def file_tree(self, path: str = ".", depth: int = 3) -> str:
        base = self.resolve(path)
        if not base.is_dir():
            raise ToolError(
                f"'{_clip(path, 80)}' is not a directory" + ("" if base.exists() else " (not found)")
            )
        depth = max(1, min(depth, _MAX_DEPTH))
        lines: list[str] = [f"{self._rel(base)}/"]
        shown = 0
        omitted = 0

        def walk(d: Path, level: int) -> None:
            nonlocal shown, omitted
            try:
                entries = sorted(os.scandir(d), key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
            except OSError:
                lines.append("  " * level + "(unreadable)")
                return
            for e in entries:
                if shown >= self.max_tree_entries:
                    omitted += 1
                    continue
                indent = "  " * level
                if e.is_symlink():
                    lines.append(f"{indent}{e.name}@")
                elif e.is_dir(follow_symlinks=False):
                    if self._skip_dir(e):
                        lines.append(f"{indent}{e.name}/ (skipped)")
                    else:
                        lines.append(f"{indent}{e.name}/")
                        if level < depth:
                            shown += 1
                            walk(Path(e.path), level + 1)
                            continue
                else:
                    try:
                        size = e.stat(follow_symlinks=False).st_size
                    except OSError:
                        size = -1
                    lines.append(f"{indent}{e.name} ({size})")
                shown += 1

        walk(base, 1)
        if omitted:
            lines.append(f"... {omitted} more entries not shown; list a subdirectory")
        return "\n".join(lines)

    def file_read(self, path: str, start_line: int = 1, max_lines: int = 200) -> str:
        p = self.resolve(path)
        if not p.exists():
            raise ToolError(f"'{_clip(path, 80)}' not found; use file_tree to see the files")
        data, size = self._open_regular(p)
        if self._is_binary(data):
            raise ToolError(f"'{self._rel(p)}' is a binary file; not shown")
        text = data.decode("utf-8", errors="replace")
        truncated = size > len(data)
        all_lines = text.splitlines()
        if truncated and all_lines and not text.endswith("\n"):
            all_lines.pop()  # the last line was cut by the byte cap
        start = max(1, start_line)
        max_lines = max(1, min(max_lines, _MAX_READ_LINES))
        if start > max(1, len(all_lines)):
            raise ToolError(f"'{self._rel(p)}' has only {len(all_lines)} lines (read from line 1)")
        out: list[str] = []
        used = 0
        last = start - 1
        for i in range(start - 1, min(len(all_lines), start - 1 + max_lines)):
            line = f"{i + 1:>5}| {_clip(all_lines[i], _MAX_LINE_CHARS)}"
            if used + len(line) + 1 > self.max_read_chars and out:
                break
            out.append(line)
            used += len(line) + 1
            last = i + 1
        header = f"{self._rel(p)}: lines {start}-{last} of {len(all_lines)}" + (
            f" (only the first {len(data)} of {size} bytes are readable)" if truncated else ""
        )
        more = f"\n... more lines follow; read from start_line={last + 1}" if last < len(all_lines) else ""
        return header + "\n" + "\n".join(out) + more

    def _walk_files(self, base: Path) -> Iterator[Path]:
        """Regular files under `base`, never following symlinks, skipping SKIP_DIRS and venvs."""
        stack = [base]
        while stack:
            d = stack.pop()
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError:
                continue
            subdirs: list[Path] = []
            for e in entries:
                if e.is_symlink():
                    continue
                if e.is_dir(follow_symlinks=False):
                    if not self._skip_dir(e):
                        subdirs.append(Path(e.path))
                elif e.is_file(follow_symlinks=False):
                    yield Path(e.path)
            stack.extend(reversed(subdirs))

    def grep(self, pattern: str, path: str = ".", glob: str | None = None) -> str:
        if not pattern:
            raise ToolError("grep needs a non-empty pattern")
        if len(pattern) > _MAX_PATTERN_CHARS:
            raise ToolError(f"pattern longer than {_MAX_PATTERN_CHARS} characters")
        try:
            rx = regex.compile(pattern, regex.IGNORECASE | regex.V0)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            raise ToolError(
                f"invalid regular expression {pattern!r}: {exc}; escape special characters "
                "to search plain text"
            ) from None
        base = self.resolve(path)
        if not base.exists():
            raise ToolError(f"'{_clip(path, 80)}' not found")
        files: Iterator[Path] = iter([base]) if base.is_file() else self._walk_files(base)
        deadline = Deadline(self.grep_deadline_s, "grep")
        hits: list[str] = []
        scanned = 0
        capped = False
        for f in files:
            rel = self._rel(f)
            if glob and not (fnmatch.fnmatch(f.name, glob) or fnmatch.fnmatch(rel, glob)):
                continue
            if scanned >= self.max_grep_files:
                capped = True
                break
            scanned += 1
            try:
                data, _ = self._open_regular(f)
            except (OSError, ToolError):
                if base.is_file():
                    raise
                continue
            if self._is_binary(data):
                continue
            for no, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                try:
                    found = rx.search(
                        line[:_MAX_GREP_LINE_CHARS], timeout=max(deadline.remaining() / 2, 1e-3)
                    )
                except TimeoutError:
                    raise ToolError(
                        f"pattern {_clip(pattern, 60)!r} took more than {self.grep_deadline_s:g} s "
                        f"(stopped at {rel}:{no}); use a simpler pattern or plain text"
                    ) from None
                if found:
                    hits.append(f"{rel}:{no}: {_clip(line.strip(), 200)}")
                    if len(hits) >= self.max_grep_hits:
                        capped = True
                        break
            if len(hits) >= self.max_grep_hits:
                break
        if not hits:
            return f"no match for {pattern!r} in {scanned} file(s)"
        tail = "\n... stopped at the search limit; narrow path or glob" if capped else ""
        return "\n".join(hits) + tail

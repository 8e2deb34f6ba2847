"""Shared CLI plumbing: global options -> validated Settings; errors -> one line, exit 2."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.exceptions import TyperException

from schedmate.core.errors import SchedmateError
from schedmate.core.settings import Settings, load_settings

__all__ = ["State", "console", "err_console", "settings_of", "friendly_errors"]


def _console(stderr: bool = False) -> Console:
    """Rich console; when piped (no terminal) use a wide fixed width so tables stay legible."""
    c = Console(stderr=stderr)
    if not c.is_terminal:
        c = Console(stderr=stderr, width=140)
    return c


console = _console()
err_console = _console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


class State:
    """What the global options asked for; settings are built lazily, once."""

    def __init__(self, config: str | None, overrides: dict[str, Any]) -> None:
        self.config = config
        self.overrides = overrides
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config, self.overrides)
        return self._settings


def settings_of(ctx: typer.Context) -> Settings:
    state = ctx.find_object(State)
    return state.settings if state is not None else load_settings()


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def friendly_errors(fn: F) -> F:
    """Turn SchedmateError into `error: <one line>` on stderr and exit code 2, and any other
    exception (a bug) into one `internal error:` line and exit code 1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SchedmateError as exc:
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        except BrokenPipeError:
            sys.stderr.close()
            raise typer.Exit(0) from None
        except (TyperException, typer.Exit, typer.Abort):
            raise  # usage errors and exits are typer's to print
        except Exception as exc:  # the last boundary: a bug of ours is one line, never a traceback
            if os.environ.get("SCHEDMATE_DEBUG"):
                raise
            err_console.print(
                f"[bold red]internal error:[/] {type(exc).__name__}: {escape(_one_line(str(exc)))} "
                "(a schedmate bug: please report it; SCHEDMATE_DEBUG=1 shows the traceback)",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def sim_semantics(ctx: typer.Context, semantics: str | None, placement: str | None) -> tuple[str, str]:
    """The simulator's semantics (the option, else the config's `sim.semantics`) and placement
    (the option, else nodes for the `lucid` preset and a pool otherwise): `simulate` and
    `whatif` replay a trace the same way."""
    sem = semantics if semantics is not None else settings_of(ctx).sim.semantics
    return sem, placement or ("node" if sem.split(",")[0].strip() == "lucid" else "pool")


# terminal escape sequences (CSI `ESC[2J`, OSC `ESC]0;title BEL`, two-character ones), then any
# other control character
_ESCAPES = re.compile(
    r"\x1b(?:\[[0-?]{0,64}[ -/]{0,8}[@-~]|[\]PX^_][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)?|[ -~])?"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(value: object) -> str:
    """Text from a job, a history file or code, safe to print in a table: no terminal control
    sequences (`ESC]0;title BEL`, `ESC[2J`) and no rich markup (`[bold]`) of its own."""
    text = str(value)
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    return escape(_CONTROL.sub("?", text))

"""Bounded work in the extractor: hostile strings, bombs and special files in a small job dir.

Every case is a file of our own; each must finish fast, never raise, and keep what it can."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jobfiles import write

from schedmate.advisor.extract import StaticExtractor
from schedmate.advisor.extract.configs import flatten, load_config
from schedmate.advisor.extract.paths import inside, plausible_path, read_source
from schedmate.core.errors import InputError


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """fn() run in a thread that must finish in `seconds` (a hang fails the test, not the run)."""
    out: list[Any] = []
    err: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            err.append(exc)

    t = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"did not finish within {seconds} s"
    if err:
        raise err[0]
    assert time.monotonic() - start < seconds
    return out[0]


# -- paths: the depth where strings become paths ------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["x" * 300, "a/" * 3000 + "b", "train\0.py", "", "--lr=" + "9" * 5000],
)
def test_inside_never_raises_on_strings_that_cannot_be_paths(tmp_path: Path, text: str) -> None:
    assert inside(tmp_path, text) is None
    assert not plausible_path(text)


def test_inside_finds_a_plain_file_and_refuses_an_escape(tmp_path: Path) -> None:
    write(tmp_path / "job", {"train.py": "print(1)\n"})
    (tmp_path / "secret.py").write_text("x = 1\n")
    assert inside(tmp_path / "job", "train.py") == (tmp_path / "job" / "train.py").resolve()
    assert inside(tmp_path / "job", "../secret.py") is None


def test_a_shell_argument_string_taken_for_a_path_is_not_an_oserror(tmp_path: Path) -> None:
    """The `File name too long` of the real import: a long argument list run as a script."""
    long_arg = "--" + "x" * 5000
    write(tmp_path, {"run.sh": f"python train.py {long_arg}\nbash {long_arg}.sh\nsource {long_arg}\n"})
    write(tmp_path, {"train.py": "import torch\nepochs = 3\n"})
    ext = StaticExtractor().extract(tmp_path, command=f"bash run.sh && python {'y' * 4000}.py")
    assert ext.metadata is not None


def test_read_source_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "train.py"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        within(5, lambda: read_source(fifo, 1000))


def test_a_fifo_as_entrypoint_and_config_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "train.py")
    os.mkfifo(tmp_path / "cfg.yaml")
    ext = within(
        10, lambda: StaticExtractor().extract(tmp_path, command="python train.py", config_files=("cfg.yaml",))
    )
    assert ext.metadata.entrypoint == "train.py"


# -- configs ------------------------------------------------------------------------------------
def _alias_bomb(levels: int = 30) -> str:
    lines = ["a0: &a0 {k: v, j: w}"]
    lines += [f"a{i}: &a{i} {{x: *a{i - 1}, y: *a{i - 1}, z: *a{i - 1}}}" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_with_mappings_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(_alias_bomb())
    assert (tmp_path / "bomb.yaml").stat().st_size < 2100
    flat, _err = within(10, lambda: load_config(tmp_path / "bomb.yaml"))
    assert 0 < len(flat) <= 20_000


def test_too_many_yaml_aliases_is_a_reason_not_an_exception(tmp_path: Path) -> None:
    (tmp_path / "many.yaml").write_text("a: &a 1\nb: [" + ", ".join(["*a"] * 5000) + "]\n")
    flat, err = load_config(tmp_path / "many.yaml")
    assert flat == {} and err is not None and "alias" in err


def test_flatten_keeps_ordinary_configs_whole() -> None:
    data = {"train": {"lr": 0.1, "epochs": 3, "sched": [{"warmup": 5}]}, "model": "gpt2", "ids": [1, 2]}
    assert flatten(data) == {
        "train.lr": 0.1,
        "train.epochs": 3,
        "train.sched.0.warmup": 5,
        "model": "gpt2",
        "ids": [1, 2],
    }


def test_non_utf8_config_is_read_with_replacement_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_bytes(b"epochs: 7\nname: \xff\xfe\x80 run\n")
    flat, err = load_config(tmp_path / "cfg.yaml")
    assert err is None and flat["epochs"] == 7


def test_binary_config_gives_a_reason(tmp_path: Path) -> None:
    (tmp_path / "cfg.json").write_bytes(bytes(range(256)) * 4)
    flat, err = load_config(tmp_path / "cfg.json")
    assert flat == {} and err


# -- Python: values that double line after line ---------------------------------------------------
DOUBLING = {
    "int_square": "a0 = 3\n" + "".join(f"a{i} = a{i - 1} * a{i - 1}\n" for i in range(1, 60)),
    "str_concat": "a0 = 'ab'\n" + "".join(f"a{i} = a{i - 1} + a{i - 1}\n" for i in range(1, 60)),
    "list_concat": "a0 = [1, 2]\n" + "".join(f"a{i} = a{i - 1} + a{i - 1}\n" for i in range(1, 60)),
    "int_add": "a0 = 3\n" + "".join(f"a{i} = a{i - 1} * 10**9 + a{i - 1}\n" for i in range(1, 60)),
}


@pytest.mark.parametrize("name", sorted(DOUBLING))
def test_doubling_python_entrypoint_is_bounded(tmp_path: Path, name: str) -> None:
    write(tmp_path, {"train.py": DOUBLING[name] + "epochs = 4\n"})
    ext = within(10, lambda: StaticExtractor().extract(tmp_path, command="python train.py"))
    assert ext.metadata.epochs == 4


@pytest.mark.parametrize("name", sorted(DOUBLING))
def test_doubling_python_config_is_bounded(tmp_path: Path, name: str) -> None:
    write(tmp_path, {"cfg.py": DOUBLING[name] + "max_iters = 500\n", "train.py": "import torch\n"})
    ext = within(
        10, lambda: StaticExtractor().extract(tmp_path, command="python train.py", config_files=("cfg.py",))
    )
    assert ext.metadata.known()


def test_small_arithmetic_still_evaluates(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": "base = 16\nbatch_size = base * 4\nepochs = 2 + 1\n"})
    ext = StaticExtractor().extract(tmp_path, command="python train.py")
    assert ext.metadata.epochs == 3

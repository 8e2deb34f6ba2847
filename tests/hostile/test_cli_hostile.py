"""Every command on hostile inputs, as an outsider would run it: the real CLI in a subprocess.

Each case must finish within a bound, never print a traceback, print at most a few lines on
stderr, exit 0/1/2 (1 or 2 when the input could not be used, with the file named), keep
stdout valid JSON under --json, and leave what was stored before intact.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

BOUND_S = 60.0  # generous: two busy cores, a cold interpreter per case
MAX_STDERR_LINES = 6


@dataclass
class Run:
    code: int
    out: str
    err: str
    seconds: float


def run_cli(args: list[str], tmp: Path, timeout: float = BOUND_S) -> Run:
    env = {
        **os.environ,
        "SCHEDMATE_CACHE_DIR": str(tmp / "cache"),
        "SCHEDMATE_EMBEDDER__BACKEND": "none",  # hostile inputs, not the model, are under test
        "COLUMNS": "200",
    }
    env.pop("SCHEDMATE_CONFIG", None)
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            [_cli(), *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=env,
            cwd=tmp,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"schedmate {' '.join(args)}: still running after {timeout:.0f} s (a hang)")
    return Run(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)


def _cli() -> str:
    exe = Path(sys.executable).with_name("schedmate")
    return str(exe) if exe.exists() else "schedmate"


def check_clean(r: Run, args: list[str], *, must_fail: bool, names: str | None = None) -> None:
    where = f"schedmate {' '.join(args)}"
    assert "Traceback" not in r.err and "Traceback" not in r.out, f"{where}: traceback\n{r.err[-2000:]}"
    assert r.code in ((1, 2) if must_fail else (0, 1, 2)), f"{where}: exit {r.code}\n{r.err[-1000:]}"
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) <= MAX_STDERR_LINES, f"{where}: {len(lines)} stderr lines\n" + "\n".join(lines[:20])
    if names is not None and must_fail:
        assert names in r.err or names in r.out, f"{where}: the message does not name {names}\n{r.err}"
    if "--json" in args:
        for line in r.out.splitlines():
            if line.strip():
                rec = json.loads(line, parse_constant=_no_nan)  # valid JSON, no NaN/Infinity
                assert isinstance(rec, dict), f"{where}: a JSON line that is not an object"


def _no_nan(token: str) -> float:
    raise AssertionError(f"non-standard JSON constant {token}")


# --- hostile inputs: each a function making a path in tmp ----------------------------------


def _binary(tmp: Path) -> Path:
    p = tmp / "binary.bin"
    p.write_bytes(bytes(range(256)) * 4096 + os.urandom(1 << 16))
    return p


def _empty(tmp: Path) -> Path:
    p = tmp / "empty.txt"
    p.write_bytes(b"")
    return p


def _fifo(tmp: Path) -> Path:
    p = tmp / "pipe.log"
    os.mkfifo(p)
    return p


def _directory(tmp: Path) -> Path:
    p = tmp / "adir"
    p.mkdir()
    return p


def _missing(tmp: Path) -> Path:
    return tmp / "does-not-exist.txt"


def _long_line(tmp: Path) -> Path:
    p = tmp / "long.txt"
    with p.open("wb") as fh:
        chunk = b"x" * (1 << 20)
        for _ in range(24):
            fh.write(chunk)
    return p


def _bad_encoding(tmp: Path) -> Path:
    p = tmp / "latin.txt"
    p.write_bytes("époque 3/10 perte=0,5 \n".encode("latin-1") * 200 + b"\xff\xfe\x00\x00" * 100)
    return p


def _dev_zero(tmp: Path) -> Path:
    return Path("/dev/zero")


INPUTS: dict[str, Callable[[Path], Path]] = {
    "binary": _binary,
    "empty": _empty,
    "fifo": _fifo,
    "directory": _directory,
    "missing": _missing,
    "long-line": _long_line,
    "bad-encoding": _bad_encoding,
    "dev-zero": _dev_zero,
}
# inputs a command cannot use at all: it must fail (exit 1 or 2) and name them
UNUSABLE = {"fifo", "directory", "missing", "dev-zero"}

# command lines with {F} where the hostile file goes
COMMANDS: dict[str, list[str]] = {
    "track": ["track", "--json", "{F}"],
    "diagnose": ["diagnose", "--json", "{F}"],
    "advise-batch": ["advise", "--json", "--store", "{S}", "--batch", "{F}"],
    "history-import": ["history", "import", "--store", "{S}", "{F}"],
    "simulate-trace": [
        "simulate",
        "--trace",
        "{F}",
        "--format",
        "native",
        "--cluster",
        "8",
        "--policy",
        "fifo",
    ],
    "whatif-trace": ["whatif", "--trace", "{F}", "--format", "native", "--cluster", "8", "--policy", "fifo"],
    "config": ["--config", "{F}", "track", "--json", "{G}"],
}


def _good_log(tmp: Path) -> Path:
    p = tmp / "good.log"
    p.write_text("".join(f"step {i}/100 loss={2.0 - i / 100:.3f} time 0.5s\n" for i in range(1, 40)))
    return p


def _store_with_a_job(tmp: Path) -> Path:
    """A history store holding one job, imported before the hostile command runs."""
    store = tmp / "history.db"
    hist = tmp / "seed.jsonl"
    hist.write_text(
        json.dumps({"job_id": "seed-1", "duration_s": 120.0, "command": "python train.py"}) + "\n"
    )
    r = run_cli(["history", "import", "--store", str(store), str(hist)], tmp)
    assert r.code == 0, r.err
    return store


def _job_ids(store: Path) -> set[str]:
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        tables = {row[0] for row in con.execute("select name from sqlite_master where type='table'")}
        table = "jobs" if "jobs" in tables else sorted(tables)[0]
        return {str(row[0]) for row in con.execute(f"select job_id from {table}")}
    finally:
        con.close()


# an empty config file is a valid config (all defaults), not a hostile input
CASES = [(c, k) for c in sorted(COMMANDS) for k in sorted(INPUTS) if (c, k) != ("config", "empty")]


@pytest.mark.parametrize(("command", "kind"), CASES)
def test_command_on_hostile_input(tmp_path: Path, command: str, kind: str) -> None:
    bad = INPUTS[kind](tmp_path)
    uses_store = "{S}" in COMMANDS[command]
    store = _store_with_a_job(tmp_path) if uses_store else tmp_path / "unused.db"
    good = _good_log(tmp_path)
    args = [
        a.replace("{F}", str(bad)).replace("{S}", str(store)).replace("{G}", str(good))
        for a in COMMANDS[command]
    ]
    r = run_cli(args, tmp_path)
    must_fail = kind in UNUSABLE or (
        command in ("config", "simulate-trace", "whatif-trace") and kind != "empty"
    )
    check_clean(r, args, must_fail=must_fail, names=str(bad) if kind in UNUSABLE else None)
    if uses_store:
        assert "seed-1" in _job_ids(store), f"{command} on {kind}: the stored job was lost"


def test_read_only_store_advise_still_answers(tmp_path: Path) -> None:
    store = _store_with_a_job(tmp_path)
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text("import torch\nEPOCHS = 3\n")
    store.chmod(0o444)
    tmp_path.chmod(0o555)  # no journal can be created next to it either
    try:
        args = ["advise", "--json", "--store", str(store), "--code", str(job), "--cmd", "python train.py"]
        r = run_cli(args, tmp_path)
    finally:
        tmp_path.chmod(0o755)
        store.chmod(0o644)
    check_clean(r, args, must_fail=False)
    assert "seed-1" in _job_ids(store)


def test_locked_store_is_one_line(tmp_path: Path) -> None:
    store = _store_with_a_job(tmp_path)
    con = sqlite3.connect(store, timeout=0.1)
    con.execute("begin exclusive")
    try:
        hist = tmp_path / "more.jsonl"
        hist.write_text(json.dumps({"job_id": "j2", "duration_s": 60.0, "command": "python x.py"}) + "\n")
        args = ["history", "import", "--store", str(store), str(hist)]
        r = run_cli(args, tmp_path, timeout=120)
    finally:
        con.rollback()
        con.close()
    check_clean(r, args, must_fail=True)
    assert "seed-1" in _job_ids(store)


@pytest.mark.parametrize(
    "args",
    [
        ["whatif", "--trace", "{T}", "--format", "native", "--cluster", "8", "--scale", "nan"],
        ["simulate", "--trace", "{T}", "--format", "native", "--cluster", "8", "--limit", "-1"],
        ["--embedder", "bogus", "track", "{G}"],
        ["--llm-url", "not a url", "track", "--json", "{G}"],
    ],
    ids=["whatif-scale-nan", "simulate-limit-negative", "embedder-bogus", "llm-url-garbage"],
)
def test_bad_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        "".join(
            json.dumps({"job_id": f"j{i}", "submit_time": i * 10, "duration_s": 100, "n_gpus": 1}) + "\n"
            for i in range(5)
        )
    )
    good = _good_log(tmp_path)
    argv = [a.replace("{T}", str(trace)).replace("{G}", str(good)) for a in args]
    r = run_cli(argv, tmp_path)
    must_fail = "llm-url" not in " ".join(
        args
    )  # an unusable LLM URL degrades to rules (warned), not a failure
    check_clean(r, argv, must_fail=must_fail)
    if "--embedder" in args:
        assert "command line" in r.err and "SCHEDMATE_" not in r.err, r.err

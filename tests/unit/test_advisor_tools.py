"""JobDirTools: self-description, and confinement to the job directory (the security-critical part)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from schedmate.advisor.agent import JobDirTools, Tool, ToolError
from schedmate.core.errors import InputError


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    """A directory next to the job with a secret the tools must never show."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("TOP-SECRET-TOKEN\n")
    return d


@pytest.fixture()
def job(tmp_path: Path) -> Path:
    root = tmp_path / "job"
    (root / "configs").mkdir(parents=True)
    (root / "train.py").write_text("import torch\nBATCH_SIZE = 32\nmodel = resnet50()\n")
    (root / "configs" / "base.yaml").write_text("lr: 0.001\nepochs: 10\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("BATCH_SIZE in git\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.py").write_text("BATCH_SIZE cached\n")
    env = root / "myenv"
    env.mkdir()
    (env / "pyvenv.cfg").write_text("home = /usr\n")
    (env / "lib.py").write_text("BATCH_SIZE in venv\n")
    return root


def ok(result: str | ToolError) -> str:
    assert isinstance(result, str), f"expected output, got {result}"
    return result


def err(result: str | ToolError) -> str:
    assert isinstance(result, ToolError), f"expected a ToolError, got {result!r}"
    return str(result)


# -- self-description and arguments ------------------------------------------------------


def test_tools_describe_themselves(job: Path) -> None:
    tools = JobDirTools(job)
    assert tools.names == ("file_tree", "file_read", "grep")
    text = tools.describe()
    for needle in (
        "file_tree(path: string = '.', depth: integer = 3)",
        "file_read(path: string,",
        "grep(pattern: string",
        "glob",
    ):
        assert needle in text
    assert isinstance(tools.tools["grep"], Tool)


def test_unknown_tool_and_bad_arguments_are_tool_errors(job: Path) -> None:
    tools = JobDirTools(job)
    assert "unknown tool 'shell'" in err(tools.run("shell", {"cmd": "cat /etc/passwd"}))
    assert "unknown argument" in err(tools.run("file_read", {"path": "train.py", "mode": "w"}))
    assert "needs argument 'path'" in err(tools.run("file_read", {}))
    assert "must be an integer" in err(tools.run("file_tree", {"depth": "deep"}))
    assert "must be an integer" in err(tools.run("file_tree", {"depth": True}))
    # numbers as strings (common with small models) are accepted
    assert "train.py" in ok(tools.run("file_tree", {"depth": "1"}))


def test_missing_root_is_our_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        JobDirTools(tmp_path / "nope")


# -- the tools work ------------------------------------------------------------------------


def test_file_tree_lists_and_skips_vcs_caches_and_venvs(job: Path) -> None:
    out = ok(JobDirTools(job).run("file_tree", {}))
    assert "train.py (" in out and "configs/" in out and "base.yaml" in out
    assert ".git/ (skipped)" in out and "__pycache__/ (skipped)" in out and "myenv/ (skipped)" in out
    assert "config (" not in out and "lib.py" not in out


def test_file_tree_is_bounded(job: Path) -> None:
    for i in range(50):
        (job / f"f{i:02d}.txt").write_text("x")
    out = ok(JobDirTools(job, max_tree_entries=10).run("file_tree", {}))
    assert "more entries not shown" in out
    assert len(out.splitlines()) <= 12


def test_file_read_numbers_lines_and_pages(job: Path) -> None:
    tools = JobDirTools(job)
    out = ok(tools.run("file_read", {"path": "train.py", "start_line": 2, "max_lines": 1}))
    assert "lines 2-2 of 3" in out and "    2| BATCH_SIZE = 32" in out
    assert "start_line=3" in out
    assert "only 3 lines" in err(tools.run("file_read", {"path": "train.py", "start_line": 9}))
    assert "is a directory" in err(tools.run("file_read", {"path": "configs"}))
    assert "not found" in err(tools.run("file_read", {"path": "nope.py"}))


def test_file_read_is_capped_in_chars(job: Path) -> None:
    (job / "long.py").write_text("".join(f"x = {i}  # {'y' * 50}\n" for i in range(1000)))
    out = ok(JobDirTools(job, max_read_chars=500).run("file_read", {"path": "long.py", "max_lines": 500}))
    assert len(out) < 700
    assert "more lines follow" in out


def test_grep_finds_and_skips_ignored_dirs(job: Path) -> None:
    tools = JobDirTools(job)
    out = ok(tools.run("grep", {"pattern": r"batch_size\s*="}))
    assert out == "train.py:2: BATCH_SIZE = 32"
    assert "epochs" in ok(tools.run("grep", {"pattern": "epochs", "glob": "*.yaml"}))
    assert "no match" in ok(tools.run("grep", {"pattern": "epochs", "glob": "*.py"}))
    assert "train.py:1" in ok(tools.run("grep", {"pattern": "torch", "path": "train.py"}))


def test_grep_bad_regex_is_a_tool_error(job: Path) -> None:
    tools = JobDirTools(job)
    assert "invalid regular expression" in err(tools.run("grep", {"pattern": "lr=(0.1"}))
    assert "longer than" in err(tools.run("grep", {"pattern": "a" * 500}))
    assert "non-empty" in err(tools.run("grep", {"pattern": ""}))
    for fine in (r"(batch_size|bs)\s*[:=]\s*(\d+)", r"(\w+)\s*=", r"lr\s*=\s*[\d.e-]+"):
        assert isinstance(tools.run("grep", {"pattern": fine}), str)


@pytest.mark.parametrize("pattern", ["(a|aa)*b", "(a+)+$", r"(\w+\s?)*!$", "(x+x+)+y", "(a|a)*(b|c)"])
def test_grep_catastrophic_patterns_are_bounded_in_time(tmp_path: Path, pattern: str) -> None:
    """Was: a nested-quantifier heuristic that missed (a|aa)*b (minutes on one line). Now a real
    bound: the regex engine's timeout under one deadline for the whole grep."""
    (tmp_path / "data.txt").write_text(("a" * 1999 + "\n") * 50 + "x" * 1999 + "\n")
    tools = JobDirTools(tmp_path, grep_deadline_s=1.0)
    t0 = time.monotonic()
    out = tools.run("grep", {"pattern": pattern})
    assert time.monotonic() - t0 < 5.0  # minutes before
    assert isinstance(out, str) or "took more than 1 s" in str(out)


def test_grep_hits_and_files_are_bounded(job: Path) -> None:
    (job / "many.txt").write_text("hit\n" * 500)
    out = ok(JobDirTools(job, max_grep_hits=5).run("grep", {"pattern": "hit"}))
    assert len(out.splitlines()) == 6 and "search limit" in out
    for i in range(20):
        (job / f"g{i:02d}.txt").write_text("needle\n")
    out = ok(JobDirTools(job, max_grep_files=3).run("grep", {"pattern": "needle"}))
    assert "search limit" in out


# -- confinement ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside/secret.txt", "configs/../../outside/secret.txt", "..", "./.."])
def test_dotdot_escapes_are_refused(job: Path, outside: Path, path: str) -> None:
    tools = JobDirTools(job)
    for tool, args in (
        ("file_read", {"path": path}),
        ("file_tree", {"path": path}),
        ("grep", {"pattern": "SECRET", "path": path}),
    ):
        msg = err(tools.run(tool, args))
        assert "outside the job directory" in msg
        assert "TOP-SECRET" not in msg


@pytest.mark.parametrize("path", ["/etc/passwd", "/", "~/.ssh/id_rsa", "C:/Windows/win.ini"])
def test_absolute_paths_are_refused(job: Path, path: str) -> None:
    tools = JobDirTools(job)
    assert "absolute" in err(tools.run("file_read", {"path": path}))
    assert "absolute" in err(tools.run("grep", {"pattern": "root", "path": path}))


def test_absolute_path_inside_the_root_is_refused_too(job: Path) -> None:
    assert "absolute" in err(JobDirTools(job).run("file_read", {"path": str(job / "train.py")}))


def test_symlinked_file_pointing_outside_is_refused_everywhere(job: Path, outside: Path) -> None:
    (job / "link.txt").symlink_to(outside / "secret.txt")
    (job / "passwd").symlink_to("/etc/passwd")
    tools = JobDirTools(job)
    assert "outside the job directory" in err(tools.run("file_read", {"path": "link.txt"}))
    assert "outside the job directory" in err(tools.run("file_read", {"path": "passwd"}))
    assert "outside the job directory" in err(tools.run("grep", {"pattern": "SECRET", "path": "link.txt"}))
    # the walk neither follows nor reads it
    assert "no match" in ok(tools.run("grep", {"pattern": "TOP-SECRET"}))
    assert "link.txt@" in ok(tools.run("file_tree", {}))


def test_symlinked_dir_pointing_outside_is_refused_at_any_level(job: Path, outside: Path) -> None:
    (job / "configs" / "data").symlink_to(outside, target_is_directory=True)
    (job / "up").symlink_to("..", target_is_directory=True)
    tools = JobDirTools(job)
    for path in ("configs/data/secret.txt", "configs/data", "up/outside/secret.txt", "configs/data/.."):
        assert "outside the job directory" in err(tools.run("file_read", {"path": path}))
    assert "outside the job directory" in err(tools.run("file_tree", {"path": "configs/data"}))
    assert "outside the job directory" in err(tools.run("grep", {"pattern": "x", "path": "configs/data"}))
    tree = ok(tools.run("file_tree", {"depth": 6}))
    assert "data@" in tree and "secret.txt" not in tree
    assert "no match" in ok(tools.run("grep", {"pattern": "TOP-SECRET"}))


def test_symlink_inside_the_root_is_readable(job: Path) -> None:
    (job / "alias.py").symlink_to(job / "train.py")
    assert "BATCH_SIZE" in ok(JobDirTools(job).run("file_read", {"path": "alias.py"}))


def test_symlink_loop_is_a_tool_error(job: Path) -> None:
    (job / "a").symlink_to(job / "b")
    (job / "b").symlink_to(job / "a")
    msg = err(JobDirTools(job).run("file_read", {"path": "a"}))
    assert "symlink loop" in msg or "outside" in msg or "not found" in msg


def test_root_given_through_a_symlink_still_confines(tmp_path: Path, job: Path, outside: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(job, target_is_directory=True)
    tools = JobDirTools(alias)
    assert "BATCH_SIZE" in ok(tools.run("file_read", {"path": "train.py"}))
    assert "outside" in err(tools.run("file_read", {"path": "../outside/secret.txt"}))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(job: Path) -> None:
    os.mkfifo(job / "pipe")
    tools = JobDirTools(job)
    results: list[str | ToolError] = []
    worker = threading.Thread(
        target=lambda: results.extend(
            [tools.run("file_read", {"path": "pipe"}), tools.run("grep", {"pattern": "x"})]
        ),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert "not a regular file" in err(results[0])
    assert "no match" in ok(results[1])


def test_device_is_refused(job: Path) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    tools = JobDirTools(Path("/dev"))  # a root full of devices
    assert "not a regular file" in err(tools.run("file_read", {"path": "zero"}))


def test_huge_file_is_read_only_up_to_the_cap(job: Path) -> None:
    with (job / "huge.log").open("w") as f:
        for i in range(200_000):
            f.write(f"line {i}\n")
        f.write("TAIL-MARKER\n")
    tools = JobDirTools(job, max_file_bytes=10_000)
    out = ok(tools.run("file_read", {"path": "huge.log", "start_line": 1, "max_lines": 5}))
    assert "only the first 10000 of" in out
    assert "only" in err(tools.run("file_read", {"path": "huge.log", "start_line": 100_000}))
    assert "no match" in ok(tools.run("grep", {"pattern": "TAIL-MARKER"}))


def test_binary_file_is_not_shown_and_grep_skips_it(job: Path) -> None:
    (job / "weights.bin").write_bytes(b"\x00\x01BATCH_SIZE\x00" * 100)
    tools = JobDirTools(job)
    assert "binary" in err(tools.run("file_read", {"path": "weights.bin"}))
    assert "weights.bin" not in ok(tools.run("grep", {"pattern": "BATCH_SIZE"}))


def test_unreadable_file_is_a_tool_error(job: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    p = job / "locked.py"
    p.write_text("x")
    p.chmod(0)
    assert "Permission denied" in err(JobDirTools(job).run("file_read", {"path": "locked.py"}))

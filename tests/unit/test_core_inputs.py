"""The input-limits layer: only regular files, never blocking, bounded size, strict UTF-8."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from schedmate.core.errors import InputError
from schedmate.inputs import Deadline, check_regular, open_regular, read_bytes, read_text


def test_regular_file_is_read(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    f.write_bytes(b"\xef\xbb\xbfkey: 1\n")
    assert read_text(f) == "key: 1\n"
    assert read_bytes(f) == b"\xef\xbb\xbfkey: 1\n"
    with open_regular(f) as fh:
        assert fh.read() == b"\xef\xbb\xbfkey: 1\n"


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "cfg.yaml"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(InputError, match="FIFO"):
        read_text(fifo, what="config")
    assert time.monotonic() - t0 < 1.0


@pytest.mark.parametrize(("path", "needle"), [("/dev/zero", "character device"), ("/", "directory")])
def test_devices_and_directories_are_refused(path: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        read_bytes(path)
    with pytest.raises(InputError, match=needle):
        check_regular(path)


def test_size_cap_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "big.json"
    f.write_bytes(b"x" * 5000)
    with pytest.raises(InputError) as ei:
        read_bytes(f, what="history file", max_bytes=4096)
    msg = str(ei.value)
    assert "history file" in msg and str(f) in msg and "4,096" in msg and "\n" not in msg


def test_non_utf8_reports_the_offset(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_bytes(b"abc\xff\xfe")
    with pytest.raises(InputError, match="byte 3"):
        read_text(f)
    assert read_text(f, errors="replace").startswith("abc")


def test_missing_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="No such file"):
        read_text(tmp_path / "nope")


def test_deadline() -> None:
    d = Deadline(0.05, "grep")
    assert not d.expired and d.remaining() > 0
    time.sleep(0.06)
    assert d.expired and d.remaining() == 0
    with pytest.raises(InputError, match="grep: gave up after 0.05 s"):
        d.check()

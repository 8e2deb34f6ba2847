"""logio reading: any bytes, \\r bars, chunk edges, huge lines, reverse reading, validation."""

from __future__ import annotations

import gc
import os
import random
import re
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedmate.core.errors import InputError
from schedmate.core.types import LogLine
from schedmate.logio import (
    clean_text,
    iter_line_batches,
    iter_lines,
    iter_lines_reverse,
    iter_text_blocks,
    open_log,
    sniff_text,
    split_lines,
)

MiB = 1024 * 1024


def write(tmp_path: Path, data: bytes, name: str = "x.log") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def texts(p: Path, **kw: int) -> list[str]:
    return [ln.text for ln in iter_lines(p, **kw)]


def reference(data: bytes, max_line_chars: int | None = None) -> list[str]:
    """The definition: clean the whole file, split on \\r\\n | \\r | \\n, drop a trailing ''."""
    lines = re.split(r"\r\n|\r|\n", clean_text(data))
    if lines[-1] == "":
        lines.pop()
    return lines if max_line_chars is None else [s[:max_line_chars] for s in lines]


# -- cleaning --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"\xff\xfebad", "\ufffd\ufffdbad"),
        ("中文".encode() + b"\xe4\xb8", "中文\ufffd"),  # a truncated multibyte char
        (b"st\x00ep\x00", "step"),
        (b"\x1b[32mgreen\x1b[0m \x1b[1;31mbold\x1b[m", "green bold"),
        (b"\x1b[38;2;255;128;0mrgb\x1b[39m", "rgb"),
        (b"\x1b[A\x1b[2K\x1b[Kredraw\x1b[10D", "redraw"),  # cursor up, erase line, cursor left
        (b"\x1b]0;title\x07text", "text"),  # OSC window title ended by BEL
        (b"\x1b]8;;http://x.org/a\x1b\\link\x1b]8;;\x1b\\", "link"),  # hyperlink, ended by ST
        (b"\x1b(B\x1b7saved\x1b8", "saved"),  # charset and cursor save/restore
        (b"a\x1b\x1b[0mb\x1b", "ab"),  # stray ESCs go alone
        (b"\x1b[31", "31"),  # unfinished CSI: only the introducer goes
    ],
)
def test_clean_text(raw: bytes, text: str) -> None:
    assert clean_text(raw) == text


def test_escape_sequences_never_swallow_line_breaks(tmp_path: Path) -> None:
    p = write(tmp_path, b"\x1b]0;unterminated title\nnext\n\x1b(\rafter\n")
    assert texts(p) == ["", "next", "(", "after"]


# -- line breaks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"a\nb\n", ["a", "b"]),  # LF; a final break adds no empty line
        (b"a\r\nb\r\n", ["a", "b"]),  # CRLF is one break
        (b"a\rb\r", ["a", "b"]),  # CR alone (progress bars)
        (b"a\r\r\nb", ["a", "", "b"]),
        (b"a\n\rb", ["a", "", "b"]),  # LF then CR is two breaks
        (b"\n\n", ["", ""]),
        (b"\r\n", [""]),
        (b"", []),
        (b"no break", ["no break"]),
        (b"50%\r\x1b[K\n", ["50%"]),  # erase-line between CR and LF: still one break
        (b"a\r\x00\nb", ["a", "b"]),
        (
            b"  1%|   | 1/100\r  2%|   | 2/100\r  3%|   | 3/100\n",
            ["  1%|   | 1/100", "  2%|   | 2/100", "  3%|   | 3/100"],
        ),
    ],
)
def test_breaks(tmp_path: Path, data: bytes, lines: list[str]) -> None:
    p = write(tmp_path, data)
    assert texts(p) == lines == reference(data)
    assert [ln.no for ln in iter_lines(p)] == list(range(1, len(lines) + 1))
    assert list(iter_lines_reverse(p)) == lines[::-1]


@pytest.mark.parametrize(
    "data",
    [
        b"ab\r\ncd\r\nef\r\n",
        "训练 第1轮\n损失 0.5\n".encode(),
        "emoji 😀 ok\n".encode(),
        b"\x1b[31mred\x1b[0m\r\x1b[2K\ngreen\n",
        b"x\r" + b"\x1b]0;" + b"t" * 40 + b"\x07" + b"\ny\n",
        b"\xff\xe4\xb8\n\x00\x00\r\x00\n",
    ],
)
def test_every_chunk_and_block_size(tmp_path: Path, data: bytes) -> None:
    p = write(tmp_path, data)
    ref = reference(data)
    assert "\ufffd" not in "".join(ref) or b"\xff" in data
    for size in range(1, len(data) + 2):
        assert texts(p, chunk_bytes=size) == ref, size
        assert list(iter_lines_reverse(p, block_bytes=size)) == ref[::-1], size


TOKENS = [
    b"a",
    b"b",
    b" ",
    b"\n",
    b"\r",
    b"\r\n",
    b"\x00",
    b"\x1b",
    b"\x1b[",
    b"\x1b[31m",
    b"\x1b[0m",
    b"\x1b[K",
    b"\x1b[A",
    b"\x1b]0;t\x07",
    b"\x1b]8;;u\x1b\\",
    b"\x1b(B",
    b"\x07",
    b"\x08",
    "中".encode(),
    "😀".encode(),
    b"\xe4",
    b"\xb8",
    b"\x80",
    b"\xff",
    b"\x0b",
    b"\x0c",
    b"\x1c",
    "\x85".encode(),
    "\u2028".encode(),  # str.splitlines() breaks, not ours
]
byte_strings = st.one_of(
    st.lists(st.sampled_from(TOKENS), max_size=60).map(b"".join),
    st.binary(max_size=120),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(byte_strings, st.integers(min_value=1, max_value=17))
def test_chunking_never_changes_lines(tmp_path: Path, data: bytes, size: int) -> None:
    p = write(tmp_path, data)
    ref = reference(data)
    got = list(iter_lines(p, chunk_bytes=size))
    assert [ln.text for ln in got] == ref
    assert [ln.no for ln in got] == list(range(1, len(ref) + 1))
    assert list(iter_lines_reverse(p, block_bytes=size)) == ref[::-1]
    blocks = list(iter_text_blocks(p, chunk_bytes=size))
    assert [s for b in blocks for s in split_lines(b)] == ref
    assert split_lines("".join(blocks)) == ref
    assert not any(b.endswith("\r") for b in blocks)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(byte_strings, st.integers(min_value=1, max_value=17), st.integers(min_value=1, max_value=6))
def test_long_lines_keep_their_head_in_both_directions(
    tmp_path: Path, data: bytes, size: int, limit: int
) -> None:
    p = write(tmp_path, data)
    ref = reference(data, max_line_chars=limit)
    assert texts(p, chunk_bytes=size, max_line_chars=limit) == ref
    assert list(iter_lines_reverse(p, block_bytes=size, max_line_chars=limit)) == ref[::-1]
    blocks = iter_text_blocks(p, chunk_bytes=size, max_line_chars=limit)
    assert [s for b in blocks for s in split_lines(b)] == ref


def test_batches_are_numbered_across_chunks(tmp_path: Path) -> None:
    p = write(tmp_path, b"".join(b"line %d\r\n" % i for i in range(1000)))
    batches = list(iter_line_batches(p, chunk_bytes=1000))
    assert len(batches) > 5
    flat = [ln for b in batches for ln in b]
    assert flat == [LogLine(i + 1, f"line {i}") for i in range(1000)]
    assert gc.isenabled()


def test_huge_line_is_truncated_in_bounded_memory(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    with p.open("wb") as fh:
        fh.write(b"before\n")
        piece = b"x" * MiB
        for _ in range(100):  # one 100 MB line without a break, written in pieces
            fh.write(piece)
        fh.write(b"\r\nafter\n")
    tracemalloc.start()
    try:
        got = [(ln.no, len(ln.text)) for ln in iter_lines(p)]  # defaults: 4 MiB chunks, 1 Mi chars
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == [(1, 6), (2, MiB), (3, 5)]
    assert peak < 30 * MiB
    tracemalloc.start()
    try:
        rev = [len(s) for s in iter_lines_reverse(p)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rev == [5, MiB, 6]
    assert peak < 30 * MiB


def test_reverse_reading_stops_early(tmp_path: Path) -> None:
    p = write(tmp_path, b"".join(b"line %d\n" % i for i in range(100_000)))
    it = iter_lines_reverse(p, block_bytes=4096)
    assert [next(it) for _ in range(3)] == ["line 99999", "line 99998", "line 99997"]
    it.close()


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.log", "missing.log: no such file"),
        (lambda d: d / "nodir" / "x.log", "x.log: no such file"),
        (lambda d: d, "is a directory"),
    ],
)
def test_unusable_paths(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path)
    for call in (sniff_text, open_log, lambda q: list(iter_lines(q)), lambda q: list(iter_lines_reverse(q))):
        with pytest.raises(InputError, match=message) as ei:
            call(path)
        assert "\n" not in str(ei.value)


def test_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="pipe: is not a regular file"):
        sniff_text(fifo)


def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path, b"x\n", "secret.log")
    if os.geteuid() == 0:  # root ignores file modes: simulate the refusal
        real_open = os.open

        def deny(path: object, *a: object, **k: object) -> int:
            if str(path).endswith("secret.log"):
                raise PermissionError(13, "Permission denied")
            return real_open(path, *a, **k)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "open", deny)
    else:
        p.chmod(0)
    with pytest.raises(InputError, match="secret.log: permission denied"):
        sniff_text(p)


def test_binary_files_are_rejected(tmp_path: Path) -> None:
    rng = random.Random(7)
    noise = write(tmp_path, bytes(rng.getrandbits(8) for _ in range(100_000)), "weights.bin")
    with pytest.raises(InputError, match=r"weights.bin: looks binary \(\d+% of its first 64 KiB"):
        sniff_text(noise)
    tensor = write(tmp_path, b"".join(i.to_bytes(4, "little") for i in range(20_000)), "t.raw")
    with pytest.raises(InputError, match="looks binary"):
        sniff_text(tensor)
    gz = write(tmp_path, b"\x1f\x8b\x08\x00" + b"log text\n" * 100, "run.log.gz")
    with pytest.raises(InputError, match="run.log.gz: gzip-compressed; decompress it first"):
        sniff_text(gz)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00" * 60_000 + b"step 1 loss 2\n",  # NUL-padded after a crash
        b"step 1\n" + b"\x00" * 30_000 + b"step 2\n" * 100,
        "训练开始 第1轮 损失 0.5\n".encode("gbk") * 2000,  # a whole log in GBK
        b"iter 1 \xa8\x54\xa8\x54\xa8\x54 ok\r\n" * 1000,  # GBK table bytes inside ASCII
        b"Epoch 1/3\n" + b"\x08" * 60 + b"\r 10/100 [==>...] - loss: 0.5" * 500,  # Keras
        b"\x1b[32m" * 5000 + b"green\n",
        "h\x00e\x00l\x00l\x00o\x00\n\x00".encode("latin-1") * 1000,  # UTF-16LE ASCII
    ],
)
def test_text_files_pass(tmp_path: Path, data: bytes) -> None:
    p = write(tmp_path, data)
    sniff_text(p)
    with open_log(p) as fh:
        assert fh.read() == data  # handed back at offset 0


def test_split_lines() -> None:
    assert split_lines("a\r\nb\rc\nd") == ["a", "b", "c", "d"]
    assert split_lines("a\n") == ["a"]
    assert split_lines("") == []


def test_bad_sizes(tmp_path: Path) -> None:
    p = write(tmp_path, b"x\n")
    with pytest.raises(ValueError):
        list(iter_lines(p, chunk_bytes=0))
    with pytest.raises(ValueError):
        list(iter_lines_reverse(p, block_bytes=0))
    with pytest.raises(ValueError):
        list(iter_lines(p, max_line_chars=0))


@pytest.mark.parametrize("seed", range(12))
def test_reverse_reading_passes_over_nul_blocks_and_holes_with_the_same_lines(
    tmp_path: Path, seed: int
) -> None:
    """Runs of NULs (a preallocated log) and sparse holes are skipped, not read as one huge
    line; the lines are exactly those of a forward read."""
    import random

    rng = random.Random(seed)
    p = tmp_path / "sparse.log"
    with p.open("wb") as fh:
        for _ in range(rng.randint(1, 6)):
            parts = [
                rng.choice([b"step 1 loss 2.0\n", b"abc", b"\r", b"\n", b"x" * rng.randint(1, 40), b"\r\n"])
            ]
            fh.write(b"".join(parts * rng.randint(1, 20)))
            gap = rng.randint(1, 5000)
            if rng.random() < 0.5:
                fh.seek(gap, 1)  # a hole
            else:
                fh.write(b"\0" * gap)
        if rng.random() < 0.5:
            fh.write(b"tail line\n")
        fh.truncate(fh.tell() + rng.choice([0, 0, 3000]))
    cut = [t.text for t in iter_lines(p, max_line_chars=50)][::-1]
    for block in (7, 64, 1024):
        assert list(iter_lines_reverse(p, block_bytes=block, max_line_chars=50)) == cut, block
    assert list(iter_lines_reverse(p)) == [t.text for t in iter_lines(p)][::-1]


def test_a_western_single_byte_log_is_not_read_as_a_cjk_encoding(tmp_path: Path) -> None:
    """(session-13 break test) Accented letters standing alone between ASCII bytes are a
    Western 8-bit encoding; GB18030 would pair each with the ASCII letter after it."""
    from schedmate.logio.encoding import detect_encoding

    text = "Époque 2/8 étape 40/300 perte=0.51 précision=0.9 Größe über „gut“\n" * 30
    assert detect_encoding(text.encode("cp1252")) == "cp1252"
    assert detect_encoding("Époque 2/8 étape 40/300 perte=0.5\n".encode("latin-1") * 30) in (
        "cp1252",
        "latin-1",
    )
    # double-byte Chinese text keeps its decoder
    zh = "训练 第 5 步 损失 0.3 学习率 0.001 完成\n" * 30
    assert detect_encoding(zh.encode("gbk")) == "gb18030"
    p = tmp_path / "fr.log"
    p.write_bytes(text.encode("cp1252"))
    from schedmate.tracker import MetricTracker

    r = MetricTracker().track_file(p)
    assert (r.step, r.total_steps) == (40, 300)

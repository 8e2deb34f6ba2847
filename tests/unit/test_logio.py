"""logio: any bytes, \\r bars, chunk edges, huge lines, reverse reading, following."""

from __future__ import annotations

import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedmate.core.errors import InputError
from schedmate.logio import (
    clean_text,
    follow_lines,
    iter_lines,
    iter_lines_reverse,
    iter_text_blocks,
    sniff_text,
    split_lines,
)

TOKENS = [b"a", b"b", b"\n", b"\r", b"\r\n", b"\x1b[31m", b"\x1b[0m", "中".encode(), b"\xff", b"\x00", b" "]


def texts(p: Path, **kw: int) -> list[str]:
    return [ln.text for ln in iter_lines(p, **kw)]


def test_breaks_and_cleaning(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_bytes(b"a\r\nb\rc\nd\x00e\n\x1b[32mgreen\x1b[0m\n\xff\xfebad\n\nlast")
    assert texts(p) == ["a", "b", "c", "de", "green", "\ufffd\ufffdbad", "", "last"]
    assert [ln.no for ln in iter_lines(p)] == list(range(1, 9))


def test_final_newline_is_not_an_extra_line(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_bytes(b"a\nb\n")
    assert texts(p) == ["a", "b"]
    assert list(iter_lines_reverse(p)) == ["b", "a"]


def test_tqdm_redraws_are_lines(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_bytes(b"  1%|   | 1/100\r  2%|   | 2/100\r  3%|   | 3/100\n")
    assert texts(p) == ["  1%|   | 1/100", "  2%|   | 2/100", "  3%|   | 3/100"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=60), st.integers(min_value=1, max_value=17))
def test_chunking_never_changes_lines(tmp_path_factory: pytest.TempPathFactory, toks: list[bytes], size: int) -> None:
    data = b"".join(toks)
    p = tmp_path_factory.mktemp("h") / "x.log"
    p.write_bytes(data)
    ref = split_lines(clean_text(data))
    assert texts(p, chunk_bytes=size) == ref
    assert list(iter_lines_reverse(p, block_bytes=size)) == ref[::-1]
    assert split_lines("".join(iter_text_blocks(p, chunk_bytes=size))) == ref


def test_huge_line_is_truncated_in_bounded_memory(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    with p.open("wb") as fh:
        fh.write(b"before\n")
        piece = b"x" * (1024 * 1024)
        for _ in range(100):  # one 100 MB line without a break
            fh.write(piece)
        fh.write(b"\nafter\n")
    tracemalloc.start()
    got = [(ln.no, len(ln.text)) for ln in iter_lines(p, max_line_chars=1000, chunk_bytes=1 << 20)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert got == [(1, 6), (2, 1000), (3, 5)]
    assert peak < 30 * 1024 * 1024
    tracemalloc.start()
    rev = list(iter_lines_reverse(p, max_line_chars=1000, block_bytes=1 << 20))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [len(s) for s in rev] == [5, 1000, 6]
    assert peak < 30 * 1024 * 1024


def test_reverse_can_stop_early(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_bytes(b"".join(b"line %d\n" % i for i in range(100_000)))
    it = iter_lines_reverse(p, block_bytes=4096)
    assert [next(it) for _ in range(3)] == ["line 99999", "line 99998", "line 99997"]


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda d: d / "missing.log", "no such file"),
        (lambda d: d, "is a directory"),
    ],
)
def test_unreadable_inputs(tmp_path: Path, make, needle: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=needle) as ei:
        sniff_text(make(tmp_path))
    assert "\n" not in str(ei.value)


def test_binary_rejected_but_nul_padded_and_legacy_text_accepted(tmp_path: Path) -> None:
    binf = tmp_path / "weights.bin"
    binf.write_bytes(bytes(range(256)) * 300)
    with pytest.raises(InputError, match="weights.bin: looks binary"):
        sniff_text(binf)
    nul = tmp_path / "nul.log"
    nul.write_bytes(b"\x00" * 50_000 + b"step 1 loss 2\n")
    sniff_text(nul)
    gbk = tmp_path / "gbk.log"
    gbk.write_bytes("训练开始 第1轮 损失 0.5\n".encode("gbk") * 200)
    sniff_text(gbk)


def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "x.log"
    p.write_text("x")

    def deny(self: Path, *a: object, **k: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", deny)  # root ignores chmod, so simulate the refusal
    with pytest.raises(InputError, match="x.log: permission denied"):
        sniff_text(p)


class Stopper:
    def __init__(self, seconds: float) -> None:
        self.until = time.monotonic() + seconds

    def __call__(self) -> bool:
        return time.monotonic() > self.until


def _follow(p: Path, seconds: float, writer) -> list[str]:  # type: ignore[no-untyped-def]
    out: list[str] = []
    t = threading.Thread(target=writer)
    t.start()
    for ln in follow_lines(p, poll_s=0.01, stop=Stopper(seconds)):
        out.append(ln.text)
    t.join()
    return out


def test_follow_appends_and_partial_lines(tmp_path: Path) -> None:
    p = tmp_path / "live.log"

    def writer() -> None:
        time.sleep(0.05)  # the file does not exist yet at first
        with p.open("ab") as fh:
            fh.write(b"step 1\nstep 2 part")
            fh.flush()
            time.sleep(0.05)
            fh.write(b"ial\n 10%|#| 1/10\r 20%|#| 2/10\r")
            fh.flush()
            time.sleep(0.05)
            fh.write(b"\nend\n")

    assert _follow(p, 0.5, writer) == ["step 1", "step 2 partial", " 10%|#| 1/10", " 20%|#| 2/10", "end"]


def test_follow_truncation_and_rotation(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"old 1\nold 2\n")

    def writer() -> None:
        time.sleep(0.05)
        p.write_bytes(b"new\n")  # truncated in place and rewritten
        time.sleep(0.05)
        rotated = tmp_path / "live.log.1"
        p.rename(rotated)
        p.write_bytes(b"rotated 1\n")

    assert _follow(p, 0.5, writer) == ["old 1", "old 2", "new", "rotated 1"]

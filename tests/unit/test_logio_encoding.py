"""UTF-16 and legacy CJK logs are decoded with their encoding (files written here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedmate.core.errors import InputError
from schedmate.core.settings import TrackerSettings
from schedmate.logio import detect_encoding, read_decoded_lines, read_decoded_tail
from schedmate.tracker import MetricTracker

TEXT = "训练开始\nstep 10 损失: 0.50\r\nstep 20 损失: 0.25\n完成\n"


@pytest.mark.parametrize(
    ("data", "enc"),
    [
        (TEXT.encode("utf-16"), "utf-16"),  # with a BOM
        (TEXT.encode("utf-16-le"), "utf-16-le"),
        (TEXT.encode("utf-16-be"), "utf-16-be"),
        (TEXT.encode("gbk"), "gb18030"),
        (TEXT.encode("utf-8"), None),
        (b"plain ascii step 1 loss 2.0\n" * 10, None),
    ],
)
def test_detect_and_decode(tmp_path: Path, data: bytes, enc: str | None) -> None:
    assert detect_encoding(data) == enc
    if enc is not None:
        p = tmp_path / "x.log"
        p.write_bytes(data)
        assert read_decoded_lines(p, enc) == ["训练开始", "step 10 损失: 0.50", "step 20 损失: 0.25", "完成"]


def test_tracker_reads_a_utf16_log_with_its_words(tmp_path: Path) -> None:
    p = tmp_path / "cn.log"
    p.write_bytes(TEXT.encode("utf-16"))
    r = MetricTracker().track_file(p, live=False)
    assert (r.step, r.loss) == (20, 0.25)
    assert r.last_progress_line == "step 20 损失: 0.25"


def test_a_too_large_decoded_log_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    p.write_bytes(TEXT.encode("utf-16") * 10)
    with pytest.raises(InputError, match="big.log"):
        read_decoded_lines(p, "utf-16", max_bytes=100)


@pytest.mark.parametrize("enc", ["utf-16", "utf-16-be", "gb18030"])
def test_tail_windows_cover_every_line_once(tmp_path: Path, enc: str) -> None:
    want = [f"第{i}步 损失: {i / 100:.2f}" for i in range(300)]
    p = tmp_path / "w.log"
    p.write_bytes("\n".join(want).encode(enc) + "\n".encode(enc)[-2 if "16" in enc else -1 :])
    got: list[str] = []
    end = None
    while True:
        lines, start = read_decoded_tail(p, enc, 1000, end=end)
        got = lines + got
        if start == 0:
            break
        assert end is None or start < end
        end = start
    assert got == want


def test_a_window_without_a_break_is_skipped(tmp_path: Path) -> None:
    p = tmp_path / "long.log"
    p.write_bytes(("训" * 2000 + "\nstep 1 损失: 0.5\n").encode("utf-16"))
    lines, start = read_decoded_tail(p, "utf-16", 1000, end=2000)
    assert lines == [] and 0 < start < 2000


def test_tracker_widens_until_progress_in_a_gbk_log(tmp_path: Path) -> None:
    p = tmp_path / "gbk.log"
    body = "step 7 损失: 0.25\n" + "数据加载中 ......\n" * 2000
    p.write_bytes(body.encode("gbk"))
    r = MetricTracker(TrackerSettings(tail_bytes=4096)).track_file(p, live=False)
    assert (r.step, r.loss) == (7, 0.25)

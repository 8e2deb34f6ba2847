"""UTF-16 and legacy CJK logs are decoded with their encoding (files written here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedmate.core.errors import InputError
from schedmate.logio import detect_encoding, read_decoded_lines
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

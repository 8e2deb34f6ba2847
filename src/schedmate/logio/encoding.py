"""Logs written in UTF-16 or a legacy CJK encoding (GBK/GB18030), decoded as such.

The byte-level readers drop NUL bytes and decode UTF-8, which keeps the ASCII of a UTF-16
log readable but garbles everything else. `detect_encoding` looks at a file's first bytes
(a byte-order mark, the NUL pattern of UTF-16 text, or bytes that are not UTF-8 but are
valid GB18030) and `read_decoded_lines` reads such a file whole, within a size cap,
decoded with its encoding and split like every other log.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from schedmate.core.errors import InputError
from schedmate.inputs import open_regular, read_bytes
from schedmate.logio.text import clean_text, split_lines

__all__ = [
    "detect_encoding",
    "utf16_encoding",
    "read_decoded_lines",
    "read_decoded_tail",
    "MAX_DECODED_BYTES",
]

MAX_DECODED_BYTES = 48 * 1024 * 1024  # read_decoded_lines: a whole file held as text
_LEGACY = ("gb18030", "big5", "shift_jis")


def utf16_encoding(head: bytes) -> str | None:
    """ "utf-16" (a byte-order mark), "utf-16-le" / "utf-16-be" (the NUL pattern of UTF-16
    text), or None when the first bytes are not UTF-16."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"  # the BOM tells the byte order
    sample = head[:4096]
    if len(sample) >= 16:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.05 * len(even):
            return "utf-16-le"
        if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.05 * len(odd):
            return "utf-16-be"
    return None


def detect_encoding(head: bytes) -> str | None:
    """The encoding of a log from its first bytes; None for UTF-8 (and plain ASCII)."""
    if head.startswith(codecs.BOM_UTF8):
        return None
    if (utf16 := utf16_encoding(head)) is not None:
        return utf16
    data = head.replace(b"\x00", b"")
    try:
        codecs.getincrementaldecoder("utf-8")("strict").decode(data, False)
        return None
    except UnicodeDecodeError:
        pass
    if _isolated_high_bytes(data):
        # a Western 8-bit log (`\xc9poque 1/10 \xe9tape 5`): the multi-byte decoders below would
        # pair each accented letter with the ASCII letter after it
        return "cp1252" if _decodes(data, "cp1252") else "latin-1"
    for enc in _LEGACY:
        try:
            codecs.getincrementaldecoder(enc)("strict").decode(data, False)
            return enc
        except UnicodeDecodeError:
            continue
    return None


_HIGH_RUN = re.compile(rb"[\x80-\xff]+")


def _isolated_high_bytes(data: bytes) -> bool:
    """Most runs of bytes above 0x7F have an odd length, as the accented letters of a
    single-byte Western encoding mostly stand alone (`\xc9poque`, `Gr\xf6\xdfe`); a
    double-byte CJK encoding writes its characters as pairs of such bytes."""
    runs = [len(m) for m in _HIGH_RUN.findall(data)]
    return bool(runs) and sum(n % 2 for n in runs) > 0.5 * len(runs)


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
        return True
    except UnicodeDecodeError:
        return False


def read_decoded_lines(path: str | Path, encoding: str, *, max_bytes: int = MAX_DECODED_BYTES) -> list[str]:
    """The lines of a whole log decoded with `encoding` (invalid bytes become U+FFFD), cleaned
    and split like `clean_text`/`split_lines`. InputError naming the file when too large."""
    raw = read_bytes(path, what="log", max_bytes=max_bytes)
    try:
        text = raw.decode(encoding, "replace")
    except LookupError:
        raise InputError(f"{path}: unknown text encoding {encoding!r}") from None
    text = text.lstrip("\ufeff")
    return split_lines(clean_text(text.encode("utf-8", "surrogatepass")))


def _first_break(raw: bytes, encoding: str) -> int:
    """Offset just after the first line break of `raw` (-1: none), on a code-unit boundary."""
    if encoding.startswith("utf-16"):
        unit = b"\n\x00" if encoding.endswith("le") else b"\x00\n"
        k = raw.find(unit)
        while k >= 0 and k % 2:
            k = raw.find(unit, k + 1)
        return -1 if k < 0 else k + 2
    k = raw.find(b"\n")  # no GB18030/Big5/Shift-JIS multi-byte sequence contains 0x0A
    return -1 if k < 0 else k + 1


def read_decoded_tail(
    path: str | Path, encoding: str, nbytes: int, *, end: int | None = None
) -> tuple[list[str], int]:
    """The lines within the `nbytes` bytes before `end` (default: the end of the file),
    decoded with `encoding`, and the offset where the first whole line starts (0: the start
    of the file), which is where the next window back should end. A line cut by the window's
    start is left to that next window; a window without any break is skipped whole."""
    with open_regular(path, what="log") as fh:
        size = fh.seek(0, 2)
        stop = size if end is None else min(end, size)
        start = max(0, stop - nbytes)
        if encoding.startswith("utf-16"):
            start += start % 2
            if encoding == "utf-16":  # the BOM decides the byte order
                fh.seek(0)
                encoding = "utf-16-be" if fh.read(2) == codecs.BOM_UTF16_BE else "utf-16-le"
        fh.seek(start)
        try:
            raw = fh.read(stop - start)
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if start > 0:
        k = _first_break(raw, encoding)
        if k < 0:
            return [], start
        raw, start = raw[k:], start + k
    try:
        text = raw.decode(encoding, "replace").lstrip("\ufeff")
    except LookupError:
        raise InputError(f"{path}: unknown text encoding {encoding!r}") from None
    return split_lines(clean_text(text.encode("utf-8", "surrogatepass"))), start

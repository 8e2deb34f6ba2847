"""follow_lines: appends, partial lines, \\r redraws, truncation, rotation, waiting, stopping.

Most tests are deterministic: the `sleep` callback performs the next scripted change to
the file, so each poll sees exactly one change and no test depends on timing.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedmate.core.errors import InputError
from schedmate.core.types import LogLine
from schedmate.logio import clean_text, follow_lines, iter_lines


class Script:
    """Run one action per poll; stop once every action ran and a poll found nothing new."""

    def __init__(self, *actions: Callable[[], object]) -> None:
        self.actions = list(actions)
        self.sleeps: list[float] = []
        self.idle_polls = 0
        self.stops = 0
        self.seen: list[tuple[int, str]] = []  # (actions done when the line came, text)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.actions:
            self.actions.pop(0)()
        else:
            self.idle_polls += 1

    def stop(self) -> bool:
        self.stops += 1
        return not self.actions and self.idle_polls >= 1

    def run(self, path: Path, **kw: object) -> list[LogLine]:
        out = []
        total = len(self.actions)
        for ln in follow_lines(path, poll_s=0.25, stop=self.stop, sleep=self.sleep, **kw):  # type: ignore[arg-type]
            out.append(ln)
            self.seen.append((total - len(self.actions), ln.text))
        return out


def append(p: Path, data: bytes) -> Callable[[], None]:
    def act() -> None:
        with p.open("ab") as fh:
            fh.write(data)

    return act


def pairs(lines: list[LogLine]) -> list[tuple[int, str]]:
    return [(ln.no, ln.text) for ln in lines]


def test_waits_for_the_file_then_follows_appends_and_partial_lines(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    s = Script(
        lambda: None,  # the file does not exist yet at the first polls
        append(p, b"step 1\nstep 2 part"),
        append(p, b"ial\n 10%|#| 1/10\r 20%|#| 2/10\r"),
        append(p, b"\nend\n"),
    )
    got = s.run(p)
    assert pairs(got) == [
        (1, "step 1"),
        (2, "step 2 partial"),
        (3, " 10%|#| 1/10"),
        (4, " 20%|#| 2/10"),
        (5, "end"),
    ]
    # a \r-terminated redraw is complete at once; the partial line waited for its break
    assert s.seen == [
        (2, "step 1"),
        (3, "step 2 partial"),
        (3, " 10%|#| 1/10"),
        (3, " 20%|#| 2/10"),
        (4, "end"),
    ]
    assert set(s.sleeps) == {0.25}


def test_breaks_and_bytes_split_across_writes(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"")
    han = "中".encode()
    s = Script(
        append(p, b"a\r"),
        append(p, b"\x1b[K"),  # erase-line between \r and \n: still one break
        append(p, b"\nb\r"),
        append(p, b"\n" + han[:1]),
        append(p, han[1:] + b"\x1b[3"),  # a UTF-8 char and a colour code cut in two
        append(p, b"2mgreen\x1b[0m\n"),
    )
    assert pairs(s.run(p)) == [(1, "a"), (2, "b"), (3, "中green")]


TOKENS = [
    b"a",
    b"\n",
    b"\r",
    b"\r\n",
    b"\x00",
    b"\x1b",
    b"\x1b[3",
    b"1m",
    b"\x1b[K",
    b"\x1b]0;t\x07",
    "中".encode(),
    b"\xe4",
    b"\xb8\xad",
    b"\xff",
    b"x" * 30,
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from(TOKENS), max_size=40).map(b"".join),
    st.lists(st.integers(0, 200), max_size=8),
    st.integers(1, 40),
)
def test_following_gives_the_lines_of_the_whole_file(
    tmp_path: Path, data: bytes, cuts: list[int], limit: int
) -> None:
    """However the writes are cut, the complete lines are those of reading the file whole."""
    p = tmp_path / "live.log"
    p.write_bytes(b"")
    edges = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    s = Script(*(append(p, data[a:b]) for a, b in zip(edges, edges[1:], strict=False)))
    got = s.run(p, max_line_chars=limit)
    whole = list(iter_lines(p, max_line_chars=limit))
    text = clean_text(data)
    tail = re.split(r"\r\n|\r|\n", text)[-1]
    if not tail:
        assert got == whole
    elif len(tail) <= limit:
        assert got == whole[:-1]  # an unfinished last line waits for its break
    else:  # ... unless it is already too long (its head may come out at once)
        assert got in (whole, whole[:-1])


def test_truncation_restarts_and_numbers_restart(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"old 1\nold 2\nheld")

    def rewrite() -> None:
        p.write_bytes(b"new\n")  # truncated in place, shorter than what was read

    s = Script(rewrite, append(p, b"more\n"))
    assert pairs(s.run(p)) == [(1, "old 1"), (2, "old 2"), (3, "held"), (1, "new"), (2, "more")]


def test_rotation_drains_the_old_file_then_reads_the_new_one(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"a 1\n")

    def rotate() -> None:
        with p.open("ab") as old:
            old.write(b"a 2\na last")  # written just before the rename: must not be lost
        p.rename(tmp_path / "live.log.1")
        p.write_bytes(b"b 1\n")

    def vanish_then_return() -> None:
        p.rename(tmp_path / "live.log.2")

    s = Script(
        rotate,
        append(p, b"b 2\n"),
        vanish_then_return,
        append(tmp_path / "live.log.2", b"b 3\n"),
        lambda: p.write_bytes(b"c 1\n"),
    )
    got = pairs(s.run(p))
    assert got == [(1, "a 1"), (2, "a 2"), (3, "a last"), (1, "b 1"), (2, "b 2"), (3, "b 3"), (1, "c 1")]


def test_from_end_skips_existing_lines_but_keeps_numbers(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"x\r\ny\npart")
    s = Script(append(p, b"ial\nz\n"))
    assert pairs(s.run(p, from_start=False)) == [(3, "partial"), (4, "z")]


def test_long_lines_are_cut(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"")
    s = Script(append(p, b"y" * 50), append(p, b"y" * 50 + b"\nok\n"))
    assert pairs(s.run(p, max_line_chars=10)) == [(1, "y" * 10), (2, "ok")]


def test_idle_polls_sleep_and_stop_is_honoured(tmp_path: Path) -> None:
    calls: list[float] = []
    n = 0

    def stop() -> bool:
        nonlocal n
        n += 1
        return n > 5

    assert list(follow_lines(tmp_path / "never.log", poll_s=0.1, stop=stop, sleep=calls.append)) == []
    assert calls == [0.1] * 5  # one sleep per poll: no busy loop


def test_stop_is_checked_while_data_keeps_coming(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_bytes(b"".join(b"line %d\n" % i for i in range(10_000)))
    got = list(follow_lines(p, stop=lambda: True, sleep=lambda s: None, read_bytes=1000))
    assert 0 < len(got) < 10_000


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="poll_s"):
        list(follow_lines(tmp_path / "x.log", poll_s=0))
    with pytest.raises(InputError, match="is a directory"):
        list(follow_lines(tmp_path, stop=lambda: True))


def test_real_writer_thread(tmp_path: Path) -> None:
    """With real time and a concurrent writer (the way it runs in production)."""
    p = tmp_path / "live.log"
    done = threading.Event()

    def writer() -> None:
        time.sleep(0.05)
        with p.open("ab") as fh:
            for i in range(20):
                fh.write(b"step %d\r" % i if i % 2 else b"step %d\n" % i)
                fh.flush()
                time.sleep(0.005)
        done.set()

    t = threading.Thread(target=writer)
    t.start()
    deadline = time.monotonic() + 10
    got = []
    for ln in follow_lines(p, poll_s=0.01, stop=lambda: done.is_set() or time.monotonic() > deadline):
        got.append(ln.text)
    got += [ln.text for ln in follow_lines(p, poll_s=0.01, stop=lambda: True)][len(got) :]
    t.join()
    assert got == [f"step {i}" for i in range(20)]

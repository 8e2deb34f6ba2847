"""MetricTracker.follow: live updates, slowdown while following, stall at idle polls."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from schedmate.core.settings import TrackerSettings
from schedmate.tracker import MetricTracker


def test_follow_reports_progress_and_slowdown(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_text("".join(f"step {i}/100 loss 1.0 time 0.50s\n" for i in range(1, 41)))
    deadline = time.monotonic() + 3.0

    def writer() -> None:
        time.sleep(0.1)
        with p.open("a") as fh:  # another job packed on the same GPUs: steps get slower
            fh.write("".join(f"step {i}/100 loss 1.0 time 0.90s\n" for i in range(41, 61)))

    t = threading.Thread(target=writer)
    t.start()
    updates = []
    for up in MetricTracker().follow(
        p,
        poll_s=0.02,
        stop=lambda: time.monotonic() > deadline or (bool(updates) and updates[-1].result.step == 60),
    ):
        updates.append(up)
    t.join()
    last = updates[-1].result
    assert (last.step, last.total_steps) == (60, 100)
    events = [e for up in updates for e in up.new_events]
    assert [e.kind for e in events] == ["slowdown"]
    assert last.eta_s is not None and last.eta_s > 40 * 0.5


def test_follow_notices_a_stall_while_idle(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_text("".join(f"step {i} loss 1.0\n" for i in range(1, 6)))
    now = [1000.0]
    seen = []
    settings = TrackerSettings(stall_factor=10, stall_min_s=60)

    def clock() -> float:
        now[0] += 1.0  # each call advances a second: lines every ~second, then silence
        return now[0]

    polls = [0]

    def stop() -> bool:
        polls[0] += 1
        now[0] += 30.0  # idle polls: time passes with no new line
        return polls[0] > 20 or bool(seen)

    for _ in MetricTracker(settings).follow(
        p, poll_s=0.001, clock=clock, stop=stop, on_idle_event=seen.append
    ):
        pass
    assert [e.kind for e in seen] == ["stall"]

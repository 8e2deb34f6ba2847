"""Whole-run ETA, the log's own ETA beside ours, slowdown hysteresis, stalls on a silent file."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from schedmate.core.settings import TrackerSettings
from schedmate.core.types import SCHEMA_VERSION, ProgressSample, TrackEvent
from schedmate.tracker import MetricTracker
from schedmate.tracker.state import EventDetector


def _s(step: int, t: float) -> ProgressSample:
    return ProgressSample(line_no=step, text="", step=step, step_time_s=t)


def test_multi_epoch_run_progress_and_eta_cover_the_whole_run() -> None:
    lines = [f"Epoch [{e}/4][{i}/50]  lr: 1e-3  time: 0.5  loss: 1.0" for e in (1, 2) for i in (10, 20, 30)]
    r = MetricTracker().track_lines(lines)
    assert (r.step, r.total_steps) == (30, 50)
    assert r.progress == pytest.approx((50 + 30) / 200)  # epoch 2 of 4, iteration 30 of 50
    assert r.eta_s == pytest.approx((200 - 80) * 0.5)


def test_epochs_counted_from_zero() -> None:
    lines = [f"ep {e}/3 it {i}/10 loss 0.5 s/it 2.0" for e in (0, 1) for i in (5, 10)]
    r = MetricTracker().track_lines(lines)
    assert r.progress == pytest.approx((10 + 10) / 30)


def test_epoch_header_then_progbar_lines() -> None:
    lines = ["Epoch 3/5", "40/100 [====>.....] - ETA: 30s - loss: 0.5 - 250ms/step"]
    r = MetricTracker().track_lines(lines)
    assert r.progress == pytest.approx((200 + 40) / 500)
    assert r.eta_s == pytest.approx(260 * 0.25)
    assert r.log_eta_s == pytest.approx(30)  # the log's own ETA (of this epoch), beside ours


def test_alternating_step_time_does_not_flap() -> None:
    det = EventDetector(factor=1.3)
    events: list[TrackEvent] = []
    for i in range(300):
        events += det.observe(_s(i, 0.5 if i % 2 else 1.5))
    assert events == []


def test_a_real_change_under_alternating_noise_is_one_state_change() -> None:
    det = EventDetector(factor=1.3)
    events: list[TrackEvent] = []
    for i in range(100):
        events += det.observe(_s(i, 0.5 if i % 2 else 1.5))
    for i in range(100, 300):
        events += det.observe(_s(i, 1.0 if i % 2 else 3.0))  # twice as slow, same noise
    assert [e.kind for e in events] == ["slowdown"]
    for i in range(300, 500):
        events += det.observe(_s(i, 0.5 if i % 2 else 1.5))
    assert [e.kind for e in events] == ["slowdown", "recovered"]


def test_stall_fires_while_the_followed_file_is_silent(tmp_path: Path) -> None:
    """Real time, real file: lines arrive, then nothing; the stall comes from the timer."""
    p = tmp_path / "live.log"
    p.write_text("")
    settings = TrackerSettings(stall_factor=2.0, stall_min_s=0.3)
    seen: list[TrackEvent] = []

    def writer() -> None:
        with p.open("a") as fh:
            for i in range(1, 8):
                fh.write(f"step {i} loss 1.0\n")
                fh.flush()
                time.sleep(0.05)
        # ... and then the job hangs: the file stays silent

    t = threading.Thread(target=writer)
    t.start()
    t0 = time.monotonic()
    for _ in MetricTracker(settings).follow(
        p, poll_s=0.02, stop=lambda: bool(seen) or time.monotonic() - t0 > 10, on_idle_event=seen.append
    ):
        pass
    t.join()
    assert [e.kind for e in seen] == ["stall"]
    assert time.monotonic() - t0 < 5  # noticed by the timer, not by a next line that never comes


def test_json_always_has_events_and_schema_version() -> None:
    for lines in (["step 1 loss 2.0"], ["no progress here"], []):
        obj = MetricTracker().track_lines(lines).to_json_dict()
        assert obj["schema_version"] == SCHEMA_VERSION
        assert obj["events"] == []
        json.loads(json.dumps(obj, allow_nan=False))


def test_events_are_in_the_json() -> None:
    lines = [f"step {i} loss 1.0 time {0.5 if i < 60 else 1.5}" for i in range(1, 90)]
    obj = MetricTracker().track_lines(lines).to_json_dict()
    assert [e["kind"] for e in obj["events"]] == ["slowdown"]
    assert set(obj["events"][0]) == {"kind", "line_no", "message", "ratio"}


def test_follow_keeps_evaluation_sections_apart(tmp_path: Path) -> None:
    p = tmp_path / "live.log"
    p.write_text("ep 1: loss 0.9\nep 2: loss 0.8\n-- testing --\nep 2: loss 1.7\n")
    polls = [0]

    def stop() -> bool:
        polls[0] += 1
        return polls[0] > 3

    last = None
    for up in MetricTracker().follow(p, poll_s=0.001, stop=stop):
        last = up.result
    assert last is not None and (last.step, last.loss) == (2, pytest.approx(0.8))

"""Line shapes met on unseen logs (issue 10, eleventh pass, session 13). Every case is a
variant written here (keys, separators, orders and values of our own), none is a line of a
data set."""

from __future__ import annotations

import pytest

from schedmate.tracker import MetricTracker


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_an_epoch_report_whose_value_went_nan_is_still_a_report() -> None:
    """`Epoch(7) train-f1: nan` after the in-loop lines of epoch 7: the epoch's report, not
    its last step (a NaN is a value, as a number would be)."""
    lines = [
        "Epoch(7) Iter(300) throughput: 51.0 samples/s train-f1: 0.41",
        "Epoch(7) Iter(320) throughput: 50.2 samples/s train-f1: 0.40",
        "Epoch(7) train-f1: nan",
    ]
    r = run(lines)
    assert r.step == 320 and r.last_progress_line == lines[1]
    r = run([*lines[:2], "Epoch(7) train-f1: 0.39"])
    assert r.step == 320  # the same report with a number


@pytest.mark.parametrize("space", ["", " "])
def test_a_counter_in_parentheses_is_the_counter(space: str) -> None:
    """`Epoch(7) Iter(300)` / `Epoch (7)`: the value in parentheses is the key's, not a
    qualifier of the key (`gpu_mem(GB) 3.2` keeps its qualifier)."""
    lines = [f"Epoch{space}(7) Iter{space}({i}) lr 1e-3 objective: {i / 1000:.2f}" for i in (300, 320)]
    r = run(lines)
    assert (r.epoch, r.step) == (7, 320)
    r = run([f"step {i} gpu_mem(GB) 3.2 loss 0.{i}" for i in (11, 12)])
    assert r.step == 12 and r.loss == 0.12


def test_an_epoch_line_restating_the_loops_keys_is_the_epochs_aggregate() -> None:
    """A loop printing one line per metric for a step, then the epoch's aggregate of each:
    the in-loop lines are the progress (the step), the epoch lines its summary."""
    lines = [
        "epoch 3 | batch 410 | rate 88.1 rows/s | train-rmse=0.52",
        "epoch 3 | batch 410 | rate 88.1 rows/s | train-mape=4.1",
        "epoch 3 | train-rmse=0.49",
        "epoch 3 | train-mape=4.0",
    ]
    r = run(lines)
    assert r.step == 410 and r.last_progress_line == lines[1]
    # an epoch line with what the loop did not print (its loss) is the epoch's own record
    r = run([*lines[:2], "epoch 3 | loss=0.31"])
    assert r.last_progress_line == "epoch 3 | loss=0.31"

"""Parser: one line -> metric candidates, across the shapes frameworks print."""

from __future__ import annotations

import math

import pytest
from linevals import vals

from schedmate.tracker.parse import parse_duration, parse_line, split_glued


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "step 120/1000 loss=2.5 time: 0.31s",
            {"step": 120, "total_steps": 1000, "loss": 2.5, "step_time": 0.31},
        ),
        ("iter 77: loss 3.1, time 250.0ms", {"step": 77, "loss": 3.1, "step_time": 0.25}),
        (
            "Epoch [3][40/50]\tlr: 1.0e-02, time: 0.5, data_time: 0.1, loss: 0.9",
            {"epoch": 3, "step": 40, "total_steps": 50, "loss": 0.9, "step_time": 0.5},
        ),
        (
            "{'loss': '1.5', 'global_step/max_steps': '10/20', 'train_speed(s/it)': '2.0'}",
            {"loss": 1.5, "step": 10, "total_steps": 20, "step_time": 2.0},
        ),
        (
            '{"current_steps": 30, "total_steps": 90, "loss": 0.7, "elapsed_time": "0:01:30"}',
            {"step": 30, "total_steps": 90, "loss": 0.7, "elapsed": 90},
        ),
        (
            "250/250 - 3s - loss: 0.12 - 12ms/step",
            {"step": 250, "total_steps": 250, "loss": 0.12, "step_time": 0.012},
        ),
        (
            "| epoch 002 | loss 4.5 | ups 4.0 | num_updates 800",
            {"epoch": 2, "loss": 4.5, "step_time": 0.25, "step": 800},
        ),
        (
            " iteration 10/ 100 | elapsed time per iteration (ms): 400.0 | lm loss: 7.0E+00 |",
            {"step": 10, "total_steps": 100, "step_time": 0.4, "loss": 7.0},
        ),
        (
            "Global Step: 500, loss = 0.3 (100.0 examples/sec, 0.5 sec/batch)",
            {"step": 500, "loss": 0.3, "step_time": 0.5},
        ),
    ],
)
def test_common_shapes(line: str, expected: dict[str, float]) -> None:
    got = vals(line)
    for k, v in expected.items():
        assert got.get(k) == pytest.approx(v), (k, got)


def test_tqdm_bar_with_postfix() -> None:
    c = parse_line("Epoch 1:  40%|####      | 4/10 [00:08<00:12,  2.00s/it, loss=1.23, v_num=1]")
    assert c.is_bar
    assert c.get("step") == 4 and c.get("total_steps") == 10
    assert c.get("step_time") == pytest.approx(2.0)
    assert c.get("loss") == pytest.approx(1.23)


def test_rate_is_inverted() -> None:
    c = parse_line(" 50%|█████     | 5/10 [00:01<00:01,  4.00it/s]")
    assert c.get("step_time") == pytest.approx(0.25)


def test_eval_bar_and_eval_loss_are_not_training() -> None:
    assert parse_line("Validation: 100%|██████████| 8/8 [00:01<00:00, 5.1it/s]").is_eval
    assert parse_line("step:100/100 val_loss:3.2 train_time:1000ms").is_eval
    assert not parse_line("loss: 0.3 - val_loss: 0.4").is_eval


def test_nan_loss_is_flagged() -> None:
    c = parse_line("Step 50/100; acc: 0.1; xent: nan; lr: 0.001")
    assert c.loss_is_nan
    assert math.isnan(c.get("loss") or 0.0)


def test_generic_time_key_needs_to_stand_alone() -> None:
    assert "step_time" not in parse_line("Average inference time: 23.43 ms, NMS time: 0.1 ms").values


def test_loss_components_are_not_the_loss() -> None:
    assert "loss" not in parse_line("box_loss: 1.0 cls_loss: 0.5 dfl_loss: 0.2").values


def test_durations() -> None:
    assert parse_duration("3:56:00") == 14160
    assert parse_duration("7h 2m 14s") == 7 * 3600 + 2 * 60 + 14
    assert parse_duration("0s") == 0
    assert parse_duration("abc") is None


def test_glued_records_are_split() -> None:
    parts = split_glued(
        "  8%|█         | 19/240 [01:00<10:00,  3.3s/it][2021-11-26 03:07:16,494] [INFO] step=20"
    )
    assert len(parts) == 2 and parts[1].startswith("[2021")


def test_throughput_units() -> None:
    c = parse_line("step 5 loss 1.0 | 812.5 samples/s")
    assert c.throughput == (812.5, "samples/s")

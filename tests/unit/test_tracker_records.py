"""Which line is the training progress, and which lines form its record (variants written here)."""

from __future__ import annotations

import pytest

from schedmate.core.types import TrackResult
from schedmate.tracker import MetricTracker


def run(lines: list[str]) -> TrackResult:
    return MetricTracker().track_lines(lines)


def test_values_of_an_earlier_step_are_not_carried_over() -> None:
    r = run(["upd:7 ~ pg_loss:0.3 ~ sec/step:12.5", "round 0, upd 8 starting"])
    assert (r.step, r.step_time_s, r.loss) == (8, None, None)


def test_indented_lines_after_a_counter_line_are_one_record() -> None:
    r = run(["== iteration 300/900 ==", "   xent = 2.75", "   seconds_per_step = 0.5", "   grad = 1.0"])
    assert (r.step, r.total_steps, r.loss, r.step_time_s) == (300, 900, 2.75, 0.5)


def test_lines_without_counter_of_their_own_are_a_record_without_step() -> None:
    r = run(["step 40 | loss 2.0 | time 0.1", "saving...", "Loss: 1.5", "Loss: 1.4", "Loss: 1.3"])
    assert (r.step, r.loss, r.step_time_s) == (None, 1.3, None)


def test_a_loss_dict_right_after_a_bar_belongs_to_it() -> None:
    r = run([" 30%|###   | 30/100 [00:30<01:10,  1.00s/it]", "{'loss': 0.9, 'epoch': 0.3}"])
    assert (r.step, r.loss, r.step_time_s) == (30, 0.9, 1.0)


def test_a_burst_of_buffered_loss_dicts_after_a_bar_has_no_step() -> None:
    bar = [" 99%|######### | 99/100 [01:39<00:01,  1.00s/it]"]
    dicts = [f"{{'loss': {1 - i / 10:.1f}, 'epoch': {0.5 + i / 10:.1f}}}" for i in range(5)]
    r = run(bar + dicts)
    assert (r.step, r.loss) == (None, pytest.approx(0.6))


def test_an_evaluation_block_ends_the_record() -> None:
    head = ["Epoch 4/9", "  >> ITER 40/40", "   | loss_a: 1.0", "EVAL:", "   | eval_loss: 3.0"]
    r = run(
        [
            *head,
            "Epoch 5/9",
            "  >> ITER 12/40",
            "   | loss_a: 1.0",
            "   | step_time: 0.7",
            *head[3:],
            "Epoch 6/9",
        ]
    )
    assert (r.step, r.total_steps, r.step_time_s) == (6, 9, None)


def test_a_final_summary_does_not_replace_the_last_in_loop_line() -> None:
    r = run(["it 500 | loss 0.21 | dt 0.3s", "Finished at it 500, best validation loss 0.3"])
    assert (r.step, r.loss, r.step_time_s) == (500, 0.21, pytest.approx(0.3))
    r = run(["round 3: epoch 3 finished, loss 0.5", "round 4: epoch 4 finished, loss 0.4"])
    assert r.step == 4  # nothing in the loop reached it: the summary is the progress


def test_an_end_of_epoch_line_after_the_loop_of_a_later_epoch_counts() -> None:
    r = run(["epoch 2 | iter 50/60 | loss 1.0", "epoch 3 done | avg loss 0.9"])
    assert r.step == 3


def test_progress_of_a_new_loop_after_the_run_report_is_not_training() -> None:
    r = run(
        [
            " 50%|#####     | 50/100 [00:50<00:50,  1.00s/it]",
            "{'loss': 0.5, 'epoch': 1.0}",
            "{'train_runtime': 100.0, 'train_loss': 0.6, 'epoch': 1.0}",
            " 100%|##########| 20/20 [00:05<00:00,  4.00it/s]",
        ]
    )
    assert (r.step, r.total_steps, r.loss) == (50, 100, 0.5)


def test_cumulative_elapsed_time_is_not_a_step_time() -> None:
    assert run(["step=900 loss=0.3 elapsed=1800s"]).step_time_s is None


def test_evaluation_sections_in_the_training_format() -> None:
    lines = []
    for ep in range(1, 4):
        lines += [f"ep {ep}: loss 0.{9 - ep}", "-- running the test split --", f"ep {ep}: loss 0.{8 - ep}5"]
        lines += ["back to training"]
    r = run(lines)
    assert (r.step, r.loss) == (3, pytest.approx(0.6))


def test_the_training_loop_moving_on_ends_an_evaluation_section() -> None:
    lines = ["Epoch 1", "  batch loss 0.9", "Evaluating...", "Epoch 2", "  batch loss 0.8"]
    r = run(lines)
    assert (r.step, r.loss) == (2, pytest.approx(0.8))


def test_an_evaluation_only_run_has_no_training_progress() -> None:
    r = run(["開始批次測試...", "Epoch 0001 : ckpt/1.bin", "  Dice = 0.61", "Epoch 0002 : ckpt/2.bin"])
    assert not r.has_progress


def test_step_less_lines_before_a_counter_line_belong_to_the_previous_record() -> None:
    r = run(["[12:00] Iter 9 finished. | loss: 1.2", "[12:00]   avg_loss: 1.3", "[12:01] Training epoch: 2"])
    assert (r.step, r.loss) == (2, None)


def test_a_line_with_only_a_step_time_is_not_progress() -> None:
    assert not run(["1990-01-01T06:00:00, dt=6.0h"]).has_progress


def test_a_time_growing_like_time_since_start_is_not_a_step_time() -> None:
    lines = [
        f"Iteration {n}/9000 ; xent {2.0 - n / 1e4:.3f} ; {n * 3.7:.0f} sec" for n in range(400, 700, 50)
    ]
    assert run(lines).step_time_s is None
    slowing = [f"Iteration {n}/9000 ; xent 2.0 ; {0.2 + n / 1e5:.4f} sec" for n in range(400, 700, 50)]
    assert run(slowing).step_time_s == pytest.approx(0.2065)


def test_a_finished_preparation_loop_does_not_hide_the_training_loop() -> None:
    prep = [
        f"Tokenizing: {p}%|#| {n}/500000 [00:01<00:01, 9000it/s]" for p, n in ((50, 250000), (100, 500000))
    ]
    prep += prep
    train = [f"Train:   0%|          | {i}/8000 [01:00<99:00:00, 60.0s/it]" for i in range(1, 6)]
    r = run(prep + train)
    assert (r.step, r.total_steps, r.step_time_s) == (5, 8000, 60.0)


def test_a_restarted_run_with_nan_values_is_the_same_loop() -> None:
    old = [f"it={i:04d} r=0.1 loss_a=0.5 loss_b=0.2 kl=0.01" for i in range(100, 160)]
    new = [f"it={i:04d} r=nan loss_a=nan loss_b=0.2 kl=nan" for i in range(0, 4)]
    assert run(old + new).step == 3


def test_an_evaluation_results_block_after_a_logger_prefix() -> None:
    lines = [f"INFO:trainer:loss = 0.{i}, step = {i * 100} (12.0 sec)" for i in range(1, 6)]
    lines += [
        "INFO:trainer:===== Running evaluation =====",
        "INFO:trainer:  global_step = 520",
        "INFO:trainer:  loss = 0.9",
    ]
    r = run(lines)
    assert (r.step, r.loss) == (500, pytest.approx(0.5))


def test_evaluation_bars_of_the_same_shape_after_the_run_report() -> None:
    bar = " {p}%|#| {i}/{n} [00:01<00:01,  2.00it/s]"
    lines = [bar.format(p=50, i=20, n=40), bar.format(p=100, i=30, n=30), bar.format(p=100, i=40, n=40)]
    lines += [f"{{'loss': {x}, 'epoch': 1.0}}" for x in (0.6, 0.5, 0.4)]  # flushed late, in a burst
    lines += ["{'train_runtime': 80.0, 'train_loss': 0.5, 'epoch': 1.0}"]
    lines += [bar.format(p=100, i=30, n=30)]
    r = run(lines)
    assert (r.step, r.loss) == (None, 0.4)


def test_training_after_an_evaluation_heading_at_start_up() -> None:
    r = run(
        [
            "Evaluating the initial checkpoint",
            "  acc 0.1",
            "step 1 loss 2.0",
            "step 2 loss 1.9",
            "step 3 loss 1.8",
        ]
    )
    assert (r.step, r.loss) == (3, pytest.approx(1.8))


def test_the_start_of_epoch_zero_is_not_progress() -> None:
    assert not run(["INFO:lib.loop:loading data", "INFO:lib.loop:Starting epoch 0"]).has_progress
    assert run(["Epoch 0 | loss 2.0"]).step == 0
    assert run(["Starting epoch 0", "Starting epoch 1"]).step == 1


def test_lines_under_an_epoch_summary_heading_are_a_summary() -> None:
    lines = ["[t] it:0040 loss_train: 0.21 time: 0.16s", "[t] it:0060 loss_train: 0.20 time: 0.16s"]
    r = run([*lines, "[t] Averages for the epoch:", "loss= 0.28 acc= 0.91", "[t] done."])
    assert (r.step, r.loss, r.step_time_s) == (60, pytest.approx(0.20), pytest.approx(0.16))


def test_a_bar_with_an_unknown_rate_borrows_none_from_the_previous_bar() -> None:
    # a new epoch's first bar update says `?it/s`: the last epoch's rate is not its step time
    r = run(
        [
            "Train 3: 100%|##########| 50/50 [00:05<00:00, 9.80it/s, loss=0.51]",
            "Train 4:   2%|          | 1/50 [00:00<?, ?it/s, loss=0.49]",
        ]
    )
    assert (r.step, r.total_steps, r.loss, r.step_time_s) == (1, 50, 0.49, None)

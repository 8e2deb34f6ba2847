"""Line and record shapes met on unseen logs (issue 10, fifth pass). Every case is a variant
written here (keys, separators, orders and values of our own), none is a line of a data set."""

from __future__ import annotations

from pathlib import Path

import pytest
from linevals import vals

from schedmate.tracker import MetricTracker


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_a_table_cell_holding_a_list_is_one_cell_without_value() -> None:
    # per-term losses printed as lists under multi-word column names: the step is the counter,
    # the lists are components (no total)
    r = run(
        [
            "Iter     Training loss          Validation loss        Extra",
            "0        [1.2e+00, 3.0e-01]     [1.1e+00, 2.9e-01]     []",
            "500      [4.1e-01 2.2e-02]      [4.4e-01 2.5e-02]      []",
        ]
    )
    assert (r.has_progress, r.step, r.loss) == (True, 500, None)


def test_a_bracketed_single_number_stays_a_counter_in_rows() -> None:
    r = run(["Using model small", "[3] 1200 0.75 0.2", "[3] 1210 0.74 0.2"])
    assert r.loss != 1210


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("7:   learn 0.5125elapsed: 3.5 sec   total: 25s   remaining: 1m 2s", {"step": 7, "loss": 0.5125}),
        ("12:    train-loss 0.4 remaining: 5m", {"step": 12, "loss": 0.4}),
    ],
)
def test_a_round_counter_before_an_aligned_gap_and_a_key_glued_to_a_value(line: str, want: dict) -> None:
    v = vals(line)
    assert {k: v.get(k) for k in want} == want


def test_a_unit_word_glued_after_a_number_is_not_split_off() -> None:
    assert "loss" not in vals("speed 17.7secs: 3")


def test_a_launcher_rank_prefix_with_one_space_is_no_counter() -> None:
    assert "step" not in vals("3: loss 0.25")


def test_time_cells_with_units_in_a_per_epoch_table() -> None:
    r = run(
        [
            " ep | trn loss | val loss | secs",
            "  1 |   0.900  |   0.950  |  31.5s",
            "  2 |   0.800  |   0.850  |  30.5s  <- best",
        ]
    )
    assert (r.step, r.loss, r.step_time_s) == (2, 0.8, 30.5)
    r = run(["step | loss | time", "10 | 0.5 | 250ms", "20 | 0.4 | 240ms"])
    assert (r.step, r.loss, r.step_time_s) == (20, 0.4, 0.24)


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("ckpt=None, Ep7, mean_loss=0.31", {"epoch": 7, "loss": 0.31}),
        ("iteration120 | loss: 2.5", {"step": 120, "loss": 2.5}),
        ("[epoch12] cost 0.8", {"epoch": 12}),
    ],
)
def test_a_counter_name_glued_to_its_number(line: str, want: dict) -> None:
    v = vals(line)
    assert {k: v.get(k) for k in want} == want


def test_a_counter_name_inside_a_path_or_name_is_no_counter() -> None:
    assert "step" not in vals("wrote runs/a/step500, size 3 MB")
    assert "step" not in vals("loaded model_iter500 weights")


@pytest.mark.parametrize(
    ("line", "loss"),
    [
        ("12:01:09 | ep 9 | training 1.875 | valid 1.9", 1.875),
        ("Epoch 4: train=0.061, test=0.07", 0.061),
    ],
)
def test_values_keyed_by_the_training_and_an_evaluation_set_are_losses(line: str, loss: float) -> None:
    assert vals(line).get("loss") == loss


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 4: train 91.5% val 88.0%",  # percentages: accuracies
        "Epoch 4: train acc 0.91, val acc 0.88",  # a named metric
        "Epoch 4: train 0.91",  # no evaluation set beside it
    ],
)
def test_set_keyed_values_that_are_not_losses(line: str) -> None:
    assert "loss" not in vals(line)


@pytest.mark.parametrize(
    ("line", "step"), [("ended 500 steps, loss 0.2", 500), ("Finish 40 updates; loss=1.5", 40)]
)
def test_units_done_words_come_from_one_lexicon_entry(line: str, step: int) -> None:
    assert vals(line).get("step") == step


def test_a_key_qualified_by_t_for_time() -> None:
    v = vals("Ep 3 [ 640/5000] loss 1.2 (1.3) data(t) 0.02 step (t) 0.31")
    assert (v.get("step"), v.get("loss"), v.get("step_time")) == (640, 1.2, 0.31)


def test_a_best_counter_is_a_summary_not_the_counter() -> None:
    assert "step" not in vals("bestIteration = 120") and "epoch" not in vals("Best epoch: 7")
    r = run(
        [f"{i}:\tlearn: 0.{9 - i}\ttotal: {i + 1}s\tremaining: {9 - i}s" for i in range(5)]
        + ["", "best iteration = 2"]
    )
    assert r.step == 4


def test_an_epoch_report_after_the_in_loop_line_of_that_epoch() -> None:
    r = run(
        [
            "Ep 4/4 - batch 90/100 - cost 0.21",
            "Ep 4/4 - batch 100/100 - cost 0.19",
            "Ep 4/4 train acc 91.2%",
            "elapsed 3.1 min",
        ]
    )
    assert (r.step, r.loss) == (100, 0.19)
    # an epoch line with a loss stays the progress; so does a bare epoch header after loop lines
    assert run(["Ep 3/4 - batch 100/100 - cost 0.2", "Ep 3/4 mean cost 0.25"]).loss == 0.25


@pytest.mark.parametrize(
    "rows",
    [
        [f"{1000 * i:6d}/ 9000: {3.0 - 0.2 * i:.4f}" for i in range(7)],  # counter of a total, colon
        [
            f"[ {i}.      {2.0 - 0.1 * i:.5f}   {2.1 - 0.1 * i:.5f}   0.{80 + i}]   " for i in range(7)
        ],  # arrays
    ],
)
def test_headerless_rows_with_a_total_or_as_printed_arrays(rows: list[str]) -> None:
    r = run(["starting", *rows])
    assert (r.step, r.loss) == (6000 if "/" in rows[0] else 6, pytest.approx(1.8 if "/" in rows[0] else 1.4))


def test_a_finished_bar_counting_samples_gives_no_step_time() -> None:
    # an old progbar counts samples: 1 s over 20,000 of them is no step time
    r = run(["Epoch 3/3", "20000/20000 [==============================] - 1s - loss: 0.0042 - acc: 0.9991"])
    assert (r.step, r.loss, r.step_time_s) == (20000, 0.0042, None)
    r = run(["Epoch 3/3", "500/500 [==============================] - 20s - loss: 0.0042"])
    assert r.step_time_s is None  # the epoch's elapsed time, not a step's (session 9)


@pytest.mark.parametrize("unit", ["1abcd", "a-", "a.", "x/", "ab1", "1e", "[1, ", " "])
def test_a_long_run_of_word_characters_is_read_in_linear_time(unit: str) -> None:
    """A key pattern tried from every start of a long word run was quadratic (a 120 KB line
    of `1abcd` took minutes); key runs are bounded now."""
    import time

    from schedmate.tracker.parse import parse_line

    line = unit * (120_000 // len(unit))
    t0 = time.perf_counter()
    parse_line(line)
    assert time.perf_counter() - t0 < 3.0


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("Selfplay:   1%|1         | 7/500 [1:10:00<82:10:00, 600.00s/round, win=0.5]", 600.0),
        ("render: 40%|####      | 4/10 [00:08<00:12,  0.50round/s]", 2.0),
    ],
)
def test_a_bar_rate_in_its_own_unit_is_the_step_time(line: str, want: float) -> None:
    assert vals(line).get("step_time") == pytest.approx(want)


def test_a_bar_rate_in_data_items_is_no_step_time() -> None:
    assert "step_time" not in vals("Gen: 40%|####  | 4/10 [00:08<00:12, 2.00s/img]")


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("12:00:01 INFO ep[12], iter[840], loss:3.5, lr:1e-4", {"epoch": 12, "step": 840, "loss": 3.5}),
        ("Round 3, iter/total_iter: 70/90, Loss:0.25", {"step": 70, "loss": 0.25}),
        ("Episodio 7: Recompensa=12, Loss=0.75", {"epoch": 7, "loss": 0.75}),
        ("== エポック 3/9, 平均損失: 0.3125", {"epoch": 3, "loss": 0.3125}),
        ("에폭 3, 평균손실: 0.3125", {"loss": 0.3125}),
    ],
)
def test_counters_and_losses_in_other_spellings(line: str, want: dict) -> None:
    v = vals(line)
    assert {k: v.get(k) for k in want} == want


def test_an_evaluation_loss_written_without_spaces_is_not_the_loss() -> None:
    assert "loss" not in vals("第3轮, 验证损失: 0.51")


def test_a_table_cell_with_one_decimal_in_brackets_is_a_list() -> None:
    r = run(
        [
            "Step      Train loss            Test loss             Test metric",
            "0         [2.1e+00, 3.0e-01]    [2.2e+00, 3.1e-01]    [9.1e-01]",
            "1000      [4.1e-01, 2.2e-02]    [4.4e-01, 2.5e-02]    [2.5e-01]",
        ]
    )
    assert (r.step, r.loss) == (1000, None)


def test_an_epoch_summary_after_a_loop_counting_global_steps() -> None:
    r = run(["Step 300, Loss: 0.61", "Step 400, Loss: 0.58", "Epoch 2 completed. Average loss: 0.6"])
    assert (r.step, r.loss) == (400, 0.58)


def test_a_final_summary_inside_the_last_report_interval() -> None:
    lines = [f"Step {s:5d}, Loss: {1 - s / 10000:.4f}" for s in range(5800, 6050, 50)]
    r = run([*lines, "Target loss of 0.3 achieved at step 6034! Final Loss: 0.38"])
    assert (r.step, r.loss) == (6000, 0.4)


def test_a_generic_time_in_an_epoch_only_record_is_the_epochs_duration() -> None:
    r = run(
        [
            "Epoch 9/9:",
            "  Train Loss: 0.0612, Train Acc: 97.1%",
            "  Val Loss: 0.9, Val Acc: 80%",
            "  Time: 412.5s, LR: 0.0001",
        ]
    )
    assert (r.step, r.loss, r.step_time_s) == (9, 0.0612, None)


def test_a_metricless_bar_of_another_total_after_training_bars() -> None:
    r = run(
        [
            "Epoch 2/2",
            "9000/9600 [==========================>...] - ETA: 4s - loss: 0.3106 - acc: 0.91",
            "9600/9600 [==============================] - 51s - loss: 0.3110 - acc: 0.91",
            "predicting",
            "1000/1207 [=======================>......] - ETA: 0s",
        ]
    )
    assert (r.step, r.loss) == (9600, 0.311)


def test_set_sizes_are_not_a_round_counter() -> None:
    assert "step" not in vals("train 161815, val 9344, test 15725")


def test_a_settings_dump_printed_as_a_dict_is_no_progress() -> None:
    dump = (
        "{'run_dir': 'out/exp7', 'data_path': '/data/corpus', 'mode': 'sft', 'resume': '', 'epochs': 3,"
        " 'mean_loss': 0, 'seed': -1, 'precision': 'bf16', 'lr': 0.0001, 'grad_ckpt': True}"
    )
    assert "loss" not in vals(dump)
    # a metrics record with one text field is still a record
    assert (
        vals("{'mode': 'train', 'epoch': 2, 'iter': 40, 'lr': 0.01, 'loss': 0.52, 'time': 0.3}").get("loss")
        == 0.52
    )


def test_headerless_rows_ending_in_a_date_and_a_count() -> None:
    rows = [
        f"{i} {2.0 - 0.2 * i:.6f} {3.0 - 0.2 * i:.4f} 0.00002000 2026-01-0{i + 1} 10:0{i}:00.5 {i}"
        for i in range(6)
    ]
    r = run(["{'run_dir': 'out/exp7', 'data': 'json', 'a': 'b', 'c': '', 'd': 1, 'e': 'x'}", *rows])
    assert (r.step, r.loss) == (5, pytest.approx(1.0))


def test_a_periodic_estimate_of_the_splits_after_in_loop_lines() -> None:
    lines = [f"it {i}: loss {3 - i / 100:.4f}, dt 120.5ms" for i in range(0, 100, 10)]
    r = run([*lines, "step 100: train loss 1.9500, val loss 2.1000"])
    assert (r.step, r.loss, r.step_time_s) == (90, 2.1, pytest.approx(0.1205))
    # a log whose every line reports both splits keeps them as its progress
    r = run([f"Epoch {e} | Train Loss: {1 / e:.3f} | Val Loss: {1.2 / e:.3f}" for e in range(1, 6)])
    assert (r.step, r.loss) == (5, 0.2)


def test_a_logger_record_glued_after_a_bar_is_its_own_record() -> None:
    r = run(
        [
            " 10%|#         | 10/100 [01:00<09:00,  6.00s/it]",
            " 11%|#         | 11/100 [01:06<08:54,  6.00s/it][WARN|trainer.py:99] 2024-01-02 10:00:00 >> ***** Running Evaluation *****",
        ]
    )
    assert (r.step, r.step_time_s) == (11, 6.0)


def test_a_description_counting_the_bars_items_yields_to_the_bar() -> None:
    v = vals("ep 2 | it 99/100 | loss 0.31: 100%|##########| 100/100 [00:10<00:00,  9.9it/s]")
    assert (v.get("step"), v.get("total_steps"), v.get("loss")) == (100, 100, 0.31)
    # a counter printed after the bar is its own (`... 3.4it/s]epoch 1 batch id 201 loss ...`)
    v = vals(" 20%|##        | 200/1000 [01:00<04:00,  3.4it/s]epoch 1 batch id 201 loss 0.5")
    assert v.get("step") == 201


def test_a_bar_rate_that_grows_is_still_per_step() -> None:
    lines = [
        f" 20%|##        | {n}/500 [10:00<40:00, {30 + (n - 100) * 0.2:.2f}s/it]" for n in range(100, 106)
    ]
    assert run(lines).step_time_s == pytest.approx(31.0)


def test_a_fractional_total_column_beside_loss_terms_is_the_loss() -> None:
    r = run(
        [
            "     Ep    mem    reg    conf    cat    total    n    size",
            "   3/99   2.1G   0.08   0.12   0.02   0.2200   14    640",
            "   4/99   2.1G   0.07   0.11   0.02   0.2000   16    640",
        ]
    )
    assert r.loss == pytest.approx(0.2)


def test_an_evaluate_bar_after_the_last_epochs_bar() -> None:
    fit = [
        line
        for e in (1, 2)
        for line in (
            f"Epoch {e}/2",
            f"50/50 ━━━━━━━━━━━━━━━━━━━━ 1s 20ms/step - acc: 0.9 - loss: 0.{5 - e}000",
        )
    ]
    r = run([*fit, "50/50 ━━━━━━━━━━━━━━━━━━━━ 0s 5ms/step - acc: 0.8 - loss: 0.7100"])
    assert (r.loss, r.step_time_s) == (0.3, pytest.approx(0.02))
    # the epoch's own closing update with validation metrics is still the epoch
    r = run([*fit, "50/50 [==============================] - 1s 20ms/step - loss: 0.3000 - val_loss: 0.3500"])
    assert r.loss == 0.3


def test_a_counter_noun_closing_a_sentence_with_a_fraction() -> None:
    v = vals("Finished training it 1200/5000 of pass 1, 30.5 ms/it, loss 0.41")
    assert (v.get("step"), v.get("total_steps"), v.get("loss")) == (1200, 5000, 0.41)
    assert vals("Finished eval it 12/50 of pass 1").get("step") != 12


@pytest.mark.parametrize(
    "line",
    [
        "$ python fit.py --data c10 --num_timesteps 4 --epochs 30",
        "OMP_NUM_THREADS=4 torchrun --nproc_per_node 8 train.py --max_steps 5000 --lr 3e-4",
        "> accelerate launch run.py --num_train_epochs 3",
    ],
)
def test_a_command_line_with_options_is_no_progress(line: str) -> None:
    assert vals(line) == {}
    assert not run([line, "Traceback (most recent call last):", "RuntimeError: NCCL error"]).has_progress


def test_keys_and_values_paired_by_slashes() -> None:
    v = vals("ep 2, it 500/900, Loss start/end/total=0.25/0.5/0.75, lr=1e-5")
    assert (v.get("step"), v.get("loss")) == (500, 0.75)


def test_an_epoch_time_report_after_in_loop_lines_without_loss() -> None:
    lines = [f"Epoch[4] Batch [{b}]\\tSpeed: 120.5 samples/sec\\tacc=0.9" for b in (100, 200, 300)]
    r = run([*lines, "Epoch[4] Time cost=80.5", "Epoch[4] Validation-acc=0.91"])
    assert r.step == 300


def test_rate_keys_are_neither_a_counter_nor_a_loss() -> None:
    v = vals("fps step: 31000.5 fps total: 12040.2 epoch: 7/500")
    assert (v.get("epoch"), v.get("loss")) == (7, None) and v.get("step") != 31000.5


def test_a_decimal_under_batch_is_the_batch_time() -> None:
    v = vals("Epoch: [2/90][40/500] Data 0.004 (0.210) Batch 1.375 (1.402) Loss 2.25 (2.31)")
    assert (v.get("step"), v.get("step_time"), v.get("loss")) == (40, 1.375, 2.25)
    assert "step_time" not in vals("update: 0.2462")  # a profile's total, not a batch meter


WIDGETS = [
    "Loading checkpoint shards: 100%",
    " 3/3 [00:41<00:00, 13.70s/it]",
    "Tokenizing dataset: 100%",
    " 500/500 [00:00<00:00, 5012.10 examples/s]",
    "Traceback (most recent call last):",
    "RuntimeError: compile failed",
]


def test_notebook_widget_bars_described_on_the_line_above(tmp_path: Path) -> None:
    assert not run(WIDGETS).has_progress
    # a training widget is progress
    r = run(["Epoch 1: 100%", " 40/40 [00:20<00:00, 2.00it/s]"])
    assert (r.step, r.step_time_s) == (40, 0.5)
    # follow mode reads the line above the same way
    import time

    p = tmp_path / "nb.log"
    p.write_text("\n".join(WIDGETS) + "\n")
    deadline = time.monotonic() + 1.0
    ups = list(MetricTracker().follow(p, poll_s=0.02, stop=lambda: time.monotonic() > deadline))
    assert all(not u.result.has_progress for u in ups)


def test_durations_in_milliseconds() -> None:
    from schedmate.tracker.values import parse_duration

    assert (parse_duration("250ms"), parse_duration("1.5MS"), parse_duration("ms")) == (0.25, 0.0015, None)

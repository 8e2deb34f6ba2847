"""Line classes met on logs the team had not seen (issue 10, second pass).

Every case is a variant written here: other keys, spacing, separators and orders than any
log of the data sets."""

from __future__ import annotations

import pytest
from linevals import vals

from schedmate.tracker import MetricTracker
from schedmate.tracker.classify import is_training_progress
from schedmate.tracker.parse import parse_line

# --- a round counter at line start, then metrics named by their data set -------------------


@pytest.mark.parametrize(
    ("line", "step", "loss"),
    [
        ("[12]\ttrain-mae:0.4521\tvalid-mae:0.5012", 12, 0.4521),
        ("[40]  training's l2: 0.31   valid_1's l2: 0.35", 40, 0.31),
        ("[7] trn-logloss:0.693 holdout-logloss:0.70", 7, 0.693),
        ("[300]\tvalid-rmse:0.9\ttrain-rmse:0.8", 300, 0.8),  # order does not matter
        ("7:\tlearn: 3.2100000\ttest: 3.5\ttotal: 2.1s\tremaining: 8.3s", 7, 3.21),
        ("120:\tlearn: 0.912\ttotal: 45ms\tremaining: 1.2s", 120, 0.912),
    ],
)
def test_round_counter_and_training_set_metric(line: str, step: int, loss: float) -> None:
    v = vals(line)
    assert (v.get("step"), v.get("loss")) == (step, loss)
    assert "step_time" not in v  # a cumulative `total` and an ETA are not a step time
    assert is_training_progress(line)


@pytest.mark.parametrize(
    "line",
    [
        "[5] validation_0-logloss:0.61",  # only an evaluation set: no training loss
        "0: loss_scale : dynamic",  # a launcher's rank prefix is not a round counter
        "12:30 learn rate 0.1",
    ],
)
def test_not_a_round_counter(line: str) -> None:
    v = vals(line)
    assert "loss" not in v or "step" not in v


def test_a_rank_prefix_is_not_a_step() -> None:
    assert vals("0: loss 2.5 lr 0.1").get("step") is None


def test_a_training_set_accuracy_is_not_a_loss() -> None:
    assert "loss" not in vals("[3] train-acc:0.91 valid-acc:0.88")


def test_boosting_rounds_tracked_end_to_end() -> None:
    lines = [
        f"[{i}]\ttrain-rmse:{1.0 / (i + 1):.4f}\teval-rmse:{1.2 / (i + 1):.4f}" for i in range(0, 60, 10)
    ]
    r = MetricTracker().track_lines(lines)
    assert (r.has_progress, r.step, r.loss) == (True, 50, pytest.approx(1.0 / 51, abs=1e-4))


# --- a bookkeeping counter line of another stream right after the richer line ---------------


def test_a_later_bookkeeping_line_does_not_hide_the_richer_record() -> None:
    lines = []
    for i in range(1, 6):
        lines.append(f" upd {i:>5} / 800 | ms per upd: 950.{i} | train nll: {3.0 - i / 10:.2f} |")
        lines.append(f"[engine] at_step={i + 1}, skipped=0, lr=[0.0001, 0.0001]")
    r = MetricTracker().track_lines(lines)
    assert (r.step, r.total_steps, r.loss) == (5, 800, pytest.approx(2.5))


# --- a global counter spelled as accumulated iterations -------------------------------------


def test_accumulated_iteration_is_the_global_step() -> None:
    v = vals("Ep 2/5 [ 40/100 ]  loss: 1.5 (1.7)  accum_iter 440  batch time: 0.3(0.31)")
    assert (v.get("step"), v.get("loss"), v.get("step_time")) == (440, 1.5, 0.3)


# --- `|`-separated segments labelled train / eval --------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Train: nll = 0.81, acc = 0.7 | Test: nll = 0.95, acc = 0.66",
        "Test: nll = 0.95, acc = 0.66 | Train: nll = 0.81, acc = 0.7",  # evaluation first
        "training: loss 0.81 | validation set: loss 0.95 | lr: 0.01",
    ],
)
def test_an_evaluation_segment_does_not_make_the_line_evaluation(line: str) -> None:
    c = parse_line(line)
    assert not c.is_eval and c.values["loss"][1] == 0.81
    assert is_training_progress(line)


def test_a_line_of_evaluation_segments_only_stays_evaluation() -> None:
    assert parse_line("Val: loss = 0.9, acc = 0.5 | Test: loss = 1.0, acc = 0.4").is_eval


@pytest.mark.parametrize(
    ("line", "step_time", "throughput"),
    [
        ("loss = 0.5 | time: 12.5 (samples/sec)", None, 12.5),
        ("loss = 0.5 | speed: 4.0 (it/s)", 0.25, None),
        ("loss = 0.5 | rate 40 (graphs/s)", None, 40.0),
    ],
)
def test_a_rate_unit_in_parentheses_is_a_rate(
    line: str, step_time: float | None, throughput: float | None
) -> None:
    c = parse_line(line)
    assert c.get("step_time") == step_time
    assert (c.throughput[0] if c.throughput else None) == throughput


# --- a finished Keras-style progbar that states only the epoch's duration ------------------


def test_finished_progbar_duration_is_the_epochs_elapsed_time_not_a_step_time() -> None:
    # session 9: three blind labellers (against one in session 3) read `- 100s -` as the epoch's
    # cumulative elapsed time, which the data's definition leaves null; `250ms/step` is stated
    v = vals("400/400 [==============================] - 100s - loss: 0.25 - val_loss: 0.3")
    assert "step_time" not in v
    assert vals("400/400 [=====] - 100s 250ms/step - loss: 0.25")["step_time"] == pytest.approx(0.25)
    assert "step_time" not in vals("120/400 [=====>.....] - ETA: 50s - loss: 0.3")


# --- tables: multi-word column names, clock durations, an epoch column as the counter -------


def test_table_with_multi_word_column_names() -> None:
    lines = [
        "  Round     Training Loss    Time Left ",
        "      1           2.5000        10.1s",
        "      2           2.2500         9.8s",
    ]
    r = MetricTracker().track_lines(lines)
    assert (r.has_progress, r.step, r.loss) == (True, 2, 2.25)


def test_table_with_an_epoch_column_and_clock_durations() -> None:
    lines = [
        "ep\ttrn_loss\tvalid_loss\tf1\twall",
        "0\t0.9100\t0.9500\t0.41\t01:02",
        "1\t0.7300\t0.8800\t0.52\t01:01",
    ]
    r = MetricTracker().track_lines(lines)
    assert (r.has_progress, r.step, r.loss, r.step_time_s) == (True, 1, 0.73, None)


# --- loss names: components named before the loss noun, compound metric names -------------


@pytest.mark.parametrize(
    ("key", "role"),
    [
        ("mean value loss", "loss_component"),
        ("policy_loss", "loss_component"),
        ("critic loss", "loss_component"),
        ("loss value", "loss"),
        ("training multi_logloss", "loss"),
        ("train-rmsle", "loss"),
        ("valid_0 binary_logloss", None),
    ],
)
def test_loss_names(key: str, role: str | None) -> None:
    from schedmate.tracker.fields import field_for_key, normalise_key

    hit = field_for_key(normalise_key(key))
    assert (hit[0] if hit else None) == role


# --- step-time spellings: `X per step`, unit in the key, namespaced keys ---------------------


@pytest.mark.parametrize(
    ("line", "step_time"),
    [
        ("step 1200 of 5000; loss 3.21; 410 ms per step", 0.41),
        ("it 90 - loss 1.1 - 0.75 seconds per iteration", 0.75),
        ("steps: 3000  loss: 1.05  step_time_ms: 250", 0.25),
        ("upd 30 | loss 1.2 | iter_time(s) 0.5", 0.5),
        ("epoch=3 step=200 train/loss=0.5 train/step_time=0.3", 0.3),
        ("upd 30 | loss 1.2 | t/step 0.3s", 0.3),
    ],
)
def test_step_time_spellings(line: str, step_time: float) -> None:
    assert vals(line)["step_time"] == pytest.approx(step_time)


def test_a_timestamp_in_milliseconds_is_not_a_step_time() -> None:
    assert "step_time" not in vals('step 5 loss 2.0 time_ms 1700000000123 "x": 1')


# --- a range of batches reported at once: the range's end is the step -----------------------


@pytest.mark.parametrize(
    ("line", "step"),
    [
        ("[Batch 150-200] train-loss=0.41 speed=120 samples/sec", 200),
        ("iters 100-200: mean loss 0.51, 0.09 s/iter", 200),
        ("3ep:trn:801-900batch: loss=0.7, iter_time=0.02", 900),
    ],
)
def test_a_range_counter_gives_its_end(line: str, step: int) -> None:
    assert vals(line)["step"] == step


def test_a_date_is_not_a_range_counter() -> None:
    assert vals("step 12 loss 0.5 on 2024-05-06").get("step") == 12


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 4 - train: nll 0.5, acc 0.8 - test: nll 0.6, acc 0.7",
        "training: nll 0.5 ; validation: nll 0.6",
        "ep 4\ttrain: nll 0.5\tdev: nll 0.6",
    ],
)
def test_evaluation_segments_with_other_separators(line: str) -> None:
    c = parse_line(line)
    assert not c.is_eval and c.values["loss"][1] == 0.5


# --- `Epoch: [e][i]` with the batch counter in the second bracket (total optional) ----------


@pytest.mark.parametrize(
    ("line", "step", "total"),
    [
        ("Epoch: [12][300]  Loss 0.31 (0.33)  Time 0.41 (0.44)", 300, None),
        ("epoch [3/90] [ 120/ 500]  loss 1.2", 120, 500),
        ("Epoch:[7][  40/1251]\tTime 0.250 (0.300)\tLoss 2.1 (2.2)", 40, 1251),
    ],
)
def test_epoch_then_batch_brackets(line: str, step: int, total: int | None) -> None:
    v = vals(line)
    assert (v.get("step"), v.get("total_steps")) == (step, total)
    assert v.get("step_time") is not None or "Time" not in line


# --- a counter line of its own after a bar over something else ------------------------------


def test_a_bar_does_not_lend_its_rate_to_an_epoch_summary_line() -> None:
    lines = []
    for ep in range(1, 4):
        lines.append(f"Round {ep:02d}: 100%|##########| 4000/4000 [00:08<00:00, 480.00it/s]")
        lines.append(f"Round {ep:02d}, Loss: {1.0 / ep:.4f}, Train Acc: 0.{ep}")
    r = MetricTracker().track_lines(lines)
    assert (r.step, r.loss, r.step_time_s) == (3, pytest.approx(0.3333), None)


def test_a_bar_still_lends_its_rate_to_its_loss_dict() -> None:
    lines = ["  50%|#####     | 50/100 [00:10<00:10,  5.00it/s]", "{'loss': 0.42, 'learning_rate': 1e-05}"]
    r = MetricTracker().track_lines(lines)
    assert (r.step, r.loss, r.step_time_s) == (50, 0.42, pytest.approx(0.2))


# --- a namespaced rate key is read by its leaf, like namespaced losses and times ------------


@pytest.mark.parametrize(
    ("key", "role"),
    [
        ("perf/steps_per_second", "step_rate"),
        ("throughput/node/batches_per_second", "step_rate"),
        ("speed/train/steps_per_second", "step_rate"),
        ("train/loss", "loss"),
    ],
)
def test_namespaced_key_leaf(key: str, role: str) -> None:
    from schedmate.tracker.fields import field_for_key

    hit = field_for_key(key)
    assert hit is not None and hit[0] == role

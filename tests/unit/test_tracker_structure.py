"""Line and record structures met on unseen logs (issue 10, third pass).

Every case is a variant written here (keys, separators, languages and orders of our own),
none is a line of a data set."""

from __future__ import annotations

from pathlib import Path

import pytest
from linevals import vals

from schedmate.core.settings import TrackerSettings
from schedmate.tracker import LineClassifier, MetricTracker
from schedmate.tracker.classify import is_training_progress
from schedmate.tracker.fields import field_for_key
from schedmate.tracker.parse import parse_line


def track(text: str, tmp_path: Path, name: str = "t.log") -> dict:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    tr = MetricTracker(TrackerSettings(use_llm=False), classifier=LineClassifier(embedder=None))
    return tr.track_file(p, live=False).to_json_dict()


# --- key/value tables: `| key | value |` rows, one record between borders ----------------------


@pytest.mark.parametrize(
    ("row", "want"),
    [
        ("|    updates_done      | 1200       |", {"step": 1200}),
        ("│ total_loss │ 0.8125 │", {"loss": 0.8125}),
        ("| train_loss   | 1.700    |", {"loss": 1.7}),
    ],
)
def test_key_value_table_rows(row: str, want: dict[str, float]) -> None:
    v = vals(row)
    assert {k: v.get(k) for k in want} == want


def test_a_key_value_table_is_one_record(tmp_path: Path) -> None:
    block = (
        "+-------------------+---------+\n"
        "| episode_reward    | {r}     |\n"
        "| env_steps_total   | {s}     |\n"
        "| policy_loss       | 0.5     |\n"
        "| loss              | {loss}  |\n"
        "+-------------------+---------+\n"
    )
    text = "".join(block.format(r=i, s=4096 * i, loss=3.0 - i / 10) for i in range(1, 4))
    r = track(text, tmp_path)
    # the record's progress line is its counter row, which states no loss (the data
    # README's definition: fields stated on the progress line)
    assert (r["step"], r["loss"]) == (3 * 4096, None)
    assert r["last_progress_line"].strip().startswith("| env_steps_total")


def test_the_best_ranked_counter_of_a_table_is_its_step(tmp_path: Path) -> None:
    text = "| rounds | 7 |\n| global_step | 3584 |\n| n_updates | 18 |\n| lr | 0.1 |\n---\n"
    assert track(text, tmp_path)["step"] == 3584


def test_a_table_without_a_counter_gives_its_values(tmp_path: Path) -> None:
    text = "step 10 loss 3.0\n| train_loss | 2.5 |\n| grad_norm | 1.0 |\n"
    assert track(text, tmp_path)["loss"] == 2.5


# --- delimited tables: a header of column names, then rows ----------------------------------


def test_comma_separated_rows_under_a_header(tmp_path: Path) -> None:
    text = "ep,trn_loss,valid_loss,acc\n" + "".join(
        f"{i},{2 / i:.3f},{2.5 / i:.3f},0.5\n" for i in range(1, 5)
    )
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (4, 0.5)


def test_pipe_bordered_header_and_rows(tmp_path: Path) -> None:
    text = "| iteration | loss | time |\n|---|---|---|\n" + "".join(
        f"| {i * 50} | {1 / i:.4f} | 0.25 |\n" for i in range(1, 4)
    )
    r = track(text, tmp_path)
    assert (r["step"], r["loss"], r["step_time_s"]) == (150, 0.3333, 0.25)


def test_a_per_epoch_table_time_column_in_clock_form(tmp_path: Path) -> None:
    text = "epoch   train_loss   valid_loss   time\n0   0.90   0.95   01:10\n1   0.70   0.80   01:05\n"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"], r["step_time_s"]) == (1, 0.7, 65.0)


# --- units, spellings and languages ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "key", "want"),
    [
        ("步数: 40, 损失: 0.9, 耗时: 250毫秒", "step_time", 0.25),
        ("ステップ 300/500 損失: 0.70", "step", 300),
        ("에폭 2 스텝 120 손실 0.33", "loss", 0.33),
        ("шаг 15 потери 1.25", "step", 15),
        ("it 8 | loss 1.9 | fwd bwd time (s): 0.77", "step_time", None),  # a phase, not the step
        ("updates 40 loss 2.2 step time (s): 0.4 examples/s: 99", "step_time", 0.4),
        ("n 3 | loss 1.0 | batches_per_sec: 4.0", "step_time", 0.25),
    ],
)
def test_units_and_spellings(line: str, key: str, want: float | None) -> None:
    assert vals(line).get(key) == pytest.approx(want) if want is not None else key not in vals(line)


def test_a_rate_key_after_a_number_is_not_its_unit() -> None:
    v = vals("iters: 12 loss: 3.1 dt (s): 0.61 tokens/sec: 4000")
    assert v.get("step_time") == pytest.approx(0.61)


@pytest.mark.parametrize(
    ("key", "role"),
    [
        ("optim/updates_per_second", "step_rate"),
        ("iters_per_sec", "step_rate"),
        ("samples_per_sec", None),
        ("step_time_(ms)", "step_time"),
    ],
)
def test_rate_and_unit_keys(key: str, role: str | None) -> None:
    hit = field_for_key(key)
    assert (hit[0] if hit else None) == role


# --- counters: a bracketed round after a log prefix; a global step wins -----------------------


@pytest.mark.parametrize(
    ("line", "step"),
    [
        ("[WARN] [worker-3] [tracker] [88]\ttrain-mae:0.31", 88),
        ("[17]:  trn's l1:0.25   holdout's l1:0.29", 17),
        ("W0311 08:01:02.500 77 loop.cc:91] [640] train/loss=1.5", 640),
    ],
)
def test_round_counter_after_a_log_prefix(line: str, step: int) -> None:
    assert vals(line).get("step") == step


def test_a_source_line_number_is_not_a_counter() -> None:
    assert vals("I0102 10:11:12.000 99 runner.py:412] loss=0.5").get("step") is None


def test_the_global_step_wins_over_the_step_in_the_epoch(tmp_path: Path) -> None:
    text = "".join(f" > BATCH: {i}/50 | GLOBAL_STEP: {9000 + i} | loss: 1.5\n" for i in range(1, 4))
    r = track(text, tmp_path)
    assert r["step"] == 9003
    assert r["total_steps"] is None  # 50 counts batches of the epoch, not global steps


# --- a loop that reports only evaluation metrics ----------------------------------------------


def test_rounds_scored_only_on_a_validation_set_are_the_progress(tmp_path: Path) -> None:
    text = "".join(f"[{i}]\tholdout-auc:0.{70 + i}\tholdout-error:0.{30 - i}\n" for i in range(12))
    r = track(text, tmp_path)
    assert (r["has_progress"], r["step"], r["loss"]) == (True, 11, None)
    assert is_training_progress("[4]\tholdout-auc:0.74")


def test_evaluation_rounds_do_not_replace_training_progress(tmp_path: Path) -> None:
    text = "".join(f"round {i} train_loss {1 / (i + 1):.3f}\n[{i}]\tholdout-auc:0.7\n" for i in range(5))
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (4, 0.2)


# --- phases of a step ------------------------------------------------------------------------


def test_a_step_time_shorter_than_a_phase_is_a_phase(tmp_path: Path) -> None:
    line = "step {i}: data_wait=2.0e-04 fwd_time=0.20 bwd_time=0.25 optim_time=0.05 loss={loss} iter_time=2.1e-04 train_time=0.52"
    v = vals(line.format(i=1, loss=2.0))
    assert v.get("step_time") == pytest.approx(0.52)


def test_a_step_time_longer_than_its_phases_stays() -> None:
    v = vals("iter 30 | loss 0.9 | time 0.61 | data_time 0.02 | forward_time 0.3")
    assert v.get("step_time") == pytest.approx(0.61)


# --- lines that are not training steps -------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "2024-02-02 10:00:00 - INFO - Step 3: exporting the model to onnx",
        "Stage 2: 데이터 전처리 완료",
    ],
)
def test_a_numbered_stage_is_not_progress(line: str) -> None:
    assert not is_training_progress(line)


def test_a_numbered_stage_with_metrics_is_progress() -> None:
    assert is_training_progress("Step 3: loss 0.52 lr 1e-4")


# --- a last line that was cut while being written --------------------------------------------


def test_a_cut_last_line_yields_to_a_complete_line_of_its_step(tmp_path: Path) -> None:
    text = "worker=1 it=90 loss=0.81250 speed=12.5\nworker=0 it=90 loss=0.81197 speed=12.4\nworker=2 it=90 loss=0.8"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (90, 0.81197)


def test_a_cut_last_line_with_a_new_step_counts(tmp_path: Path) -> None:
    text = "it=90 loss=0.81 speed=12.5\nit=91 loss=0.80 spe"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (91, 0.8)


def test_a_terminated_last_line_is_complete(tmp_path: Path) -> None:
    text = "worker=1 it=90 loss=0.81250 speed=12.5\nworker=2 it=90 loss=0.8\n"
    r = track(text, tmp_path)
    assert r["loss"] == 0.8


# --- keys read by their words ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "key", "want"),
    [
        ("it 5 | loss 2.0 | batch_timing in ms: 310", "step_time", 0.31),
        ("iteration 9/20 | update_latency: 0.42 | loss 1.1", "step_time", 0.42),
        ("iter 9 | loss 1.1 | optimizer_step_time: 0.02 | time: 0.5", "step_time", 0.5),
        ("(worker pid=7) Maximum training steps: 900", "total_steps", 900),
    ],
)
def test_keys_read_by_their_words(line: str, key: str, want: float) -> None:
    assert vals(line).get(key) == pytest.approx(want)


def test_a_total_is_not_a_step() -> None:
    assert "step" not in vals("(worker pid=7) Total optimisation steps: 900")


def test_an_error_rate_metric_is_not_an_error_line() -> None:
    from schedmate.core.types import LineKind
    from schedmate.tracker.classify import rule_kind

    assert rule_kind("[30]\ttrain-error:0.0412\theldout-error:0.0533") is LineKind.PROGRESS
    assert rule_kind("error: could not open /data/x.bin") is LineKind.ERROR


def test_a_trial_table_with_name_cells(tmp_path: Path) -> None:
    text = (
        "| trial      | state   | host         | iter | total time (s) | loss  |\n"
        "|------------+---------+--------------+------+----------------+-------|\n"
        "| run_a_0001 | RUNNING | 10.1.2.3:400 |   41 |          812.5 | 0.731 |\n"
        "| run_a_0001 | RUNNING | 10.1.2.3:400 |   42 |          830.1 | 0.725 |\n"
    )
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (42, 0.725)


def test_a_bar_without_total_keeps_its_rate(tmp_path: Path) -> None:
    v = vals("cost 0.42: : 37batch [00:20,  1.85batch/s]")
    assert v.get("step") == 37
    assert v.get("step_time") == pytest.approx(1 / 1.85)


def test_a_cut_number_at_the_end_of_an_unterminated_log_is_not_a_value(tmp_path: Path) -> None:
    text = "upd 10 | lr 1e-4 | loss: 2.48113\nupd 11 | lr 1e-4 | loss: 2"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (11, None)


def test_a_progress_line_under_an_error_logger_level() -> None:
    from schedmate.core.types import LineKind
    from schedmate.tracker.classify import rule_kind

    line = "21/03/04 05:06:07 ERROR Relay: 2021-03-04 05:06:07,100 INFO [8]\ttrn-rmse:0.52\tholdout-rmse:0.61"
    assert rule_kind(line) is LineKind.PROGRESS
    assert vals(line) == {"step": 8, "loss": 0.52}


@pytest.mark.parametrize(
    "bar",
    [
        "Generating answers: 40%|####      | 4/10 [00:04<00:06,  1.0it/s]",
        "Tokenizing corpus (num_proc=4):  50%|#####     | 500/1000 [00:01<00:01, 480.0 examples/s]",
        "Computing scores: 100%|##########| 40/40 [00:05<00:00,  7.5it/s]",
        "Extracting features:  12%|#         | 12/100 [00:03<00:22,  4.0it/s]",
    ],
)
def test_bars_over_other_work_are_not_training(bar: str) -> None:
    assert parse_line(bar).is_eval


def test_a_log_of_generation_bars_only_has_no_progress(tmp_path: Path) -> None:
    text = "".join(
        f"Sampling images: {i * 10}%|##  | {i}/10 [00:0{i}<00:05, 1.2it/s]\n" for i in range(1, 10)
    )
    assert track(text, tmp_path)["has_progress"] is False


def test_a_training_bar_with_a_description_is_training() -> None:
    c = parse_line("Training epoch 2:  30%|###       | 30/100 [00:10<00:23, 3.0it/s, loss=0.41]")
    assert not c.is_eval and c.values["step"][1] == 30


# --- batch-4 classes: rates in updates, run names, bars without a total, record kinds --------


def test_updates_per_second_is_a_step_rate() -> None:
    v = vals("Epoch[2] Batch [800]\tSpeed: 40.0 samples/sec 2.5 updates/sec\tppl=31.2")
    assert v.get("step_time") == pytest.approx(0.4)


def test_a_run_name_containing_an_evaluation_word_is_not_an_evaluation_label() -> None:
    assert not parse_line("INFO: my_test_run: Step: 5000. Time Elapsed: 21.5 s Mean Reward: 1.0.").is_eval
    assert parse_line("test: Step: 5000. acc: 0.9").is_eval


def test_a_global_counter_in_the_postfix_of_a_bar_without_total() -> None:
    v = vals("Epoch #3: 9001it [00:12, 750.2it/s, env_step=27000, loss=0.051, rew=12.5]")
    assert (v.get("step"), v.get("loss")) == (27000, 0.051)


def test_a_record_with_a_learning_rate_is_not_the_run_summary() -> None:
    per_step = parse_line("{'loss': '3.1', 'learning_rate': '2e-4', 'epoch': '0.1', 'train_runtime': '40.5'}")
    assert not per_step.is_summary and per_step.values["loss"][1] == 3.1
    assert parse_line("{'train_runtime': 400.1, 'train_loss': 1.9, 'epoch': 3.0}").is_summary


def test_a_json_record_gives_its_generic_time_as_the_step_time() -> None:
    v = vals('{"mode": "train", "iter": 400, "data_time": 0.01, "loss": 0.5, "time": 0.82}')
    assert v.get("step_time") == pytest.approx(0.82)


def test_a_tab_separated_table_with_free_cells(tmp_path: Path) -> None:
    text = "updates\tepisodes\tpeak\tnote\n" + "".join(
        f"{i * 1000}\t{i}\t3.5\t[ 0.1 ]\n" for i in range(1, 4)
    )
    assert track(text, tmp_path)["step"] == 3000


# --- batch-3 classes: sentences, abbreviated counts, unit-suffixed step nouns ------------------


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("Average loss at step  4000 :  3.91", {"step": 4000, "loss": 3.91}),
        ("mean loss after iteration 12 = 0.75", {"step": 12, "loss": 0.75}),
        ("Score at iteration 900 is 0.42", {"step": 900}),
    ],
)
def test_a_metric_named_in_a_sentence(line: str, want: dict[str, float]) -> None:
    v = vals(line)
    assert {k: v.get(k) for k in want} == want
    assert is_training_progress(line)


@pytest.mark.parametrize(
    "line",
    [
        "INFO 2024-03-03 10:00:00 run.py:12 Saving the model weights after step 12000",
        "Writing a checkpoint at iteration 400",
    ],
)
def test_a_sentence_about_a_counter_is_not_progress(line: str) -> None:
    assert not is_training_progress(line)


def test_a_header_naming_its_epoch_stays_progress() -> None:
    assert is_training_progress("[01.02.24|10:11:12] Training epoch: 4")


def test_abbreviated_counts_and_step_seconds() -> None:
    v = vals("step:12K smpl:1M loss:0.041 lr:2e-5 updt_s:0.310 data_s:0.020")
    assert (v.get("step"), v.get("loss"), v.get("step_time")) == (12000, 0.041, pytest.approx(0.31))


def test_a_frame_counter_is_the_global_step() -> None:
    assert vals("Episode 40\tFrame 9120\tAvg Score: 11.5").get("step") == 9120


def test_a_leading_round_before_loss_components() -> None:
    v = vals("I0505 01:02:03.000 9 writer.py:48] [2500] split=train seq_ce_loss=2.41, learning_rate=0.01")
    assert (v.get("step"), v.get("loss")) == (2500, 2.41)


def test_a_leading_number_before_settings_is_not_a_round() -> None:
    assert "step" not in vals("[0] lr=0.1 momentum=0.9")


# --- batch-5/6 classes ---------------------------------------------------------------------------


def test_a_finished_epoch_line_without_a_bar_states_no_step_time() -> None:
    v = vals("40/40 - 10s - loss: 0.31 - acc: 0.90")  # `10s`: the epoch's elapsed time (see generalise)
    assert (v.get("step"), v.get("step_time")) == (40, None)
    assert vals("40/40 - 10s - loss: 0.31 - 10s/epoch - 250ms/step").get("step_time") == pytest.approx(0.25)


def test_a_per_epoch_record_counts_its_epoch() -> None:
    assert vals('{"lr": 0.001, "train_loss": 2.5, "epoch": 12}').get("step") == 12
    assert "step" not in vals("{'loss': 2.5, 'learning_rate': 1e-4, 'epoch': 1.0}")  # a position


def test_a_metric_in_an_epoch_sentence() -> None:
    assert vals("Mean loss in epoch 7 = 0.123") == {"epoch": 7, "step": 7, "loss": 0.123}


@pytest.mark.parametrize(
    ("line", "key", "want"),
    [
        ("iter 5 | trainLoss 0.44 | lrRate 0.1", "loss", 0.44),
        ("Epoch: [1][20/300]  loss:0.5  (MeanTime 0.9)", "step_time", 0.9),
        ("Epoch: [0]  [100/500]  lr: 0.01  dloss: 0.70 (0.75)  time: 0.3", "loss", 0.70),
    ],
)
def test_camel_case_and_glued_keys(line: str, key: str, want: float) -> None:
    assert vals(line).get(key) == pytest.approx(want)


def test_two_kind_named_terms_are_components() -> None:
    v = vals("iteration 30 | lm loss: 9.1 | nsp loss: 0.7 | loss scale: 1.0")
    assert "loss" not in v
    assert vals("iteration 30 | lm loss: 9.1 | loss scale: 1.0").get("loss") == 9.1


def test_an_evaluation_segment_with_a_parenthesised_note() -> None:
    v = vals("epoch 8 : train (41.0 sec): loss=0.91, acc=0.7 | dev (1.1 sec): loss=1.2, acc=0.5")
    assert v.get("loss") == 0.91
    assert not parse_line("epoch 8 : train (41.0 sec): loss=0.91 | dev (1.1 sec): loss=1.2").is_eval


def test_a_bare_zero_fraction_is_not_a_step_without_a_loss() -> None:
    assert "step" not in vals("[timer] 0/500, SamplesPerSec=12.5")
    assert vals("Train Epoch: 2 [0/50000 (0%)]\tLoss: 1.9").get("step") == 0


# --- batch-7 classes -----------------------------------------------------------------------------


def test_full_width_punctuation() -> None:
    assert vals("训练步数：300，损失：0.52") == {"step": 300, "loss": 0.52}


def test_a_bare_counter_as_the_first_segment() -> None:
    v = vals("7200 | loss 2.91 | lr 1e-4 | 512.5ms | mfu 30%")
    assert (v.get("step"), v.get("loss"), v.get("step_time")) == (7200, 2.91, pytest.approx(0.5125))


def test_a_key_value_table_flattened_onto_one_line() -> None:
    v = vals(
        "| time/ | | | iterations | 3 | | global_step | 96 | | train/ | | | loss | 0.7 | | n_updates | 30 |"
    )
    assert (v.get("step"), v.get("loss")) == (96, 0.7)


def test_cross_validation_lines_are_evaluation() -> None:
    assert parse_line("2024-05-05 10:00:00,000 DEBUG CV Batch 3/20 loss 12.5 acc 0.4").is_eval


def test_a_bare_item_count_bar_is_not_training() -> None:
    assert not is_training_progress("31250it [12:00, 43.40it/s]")
    assert is_training_progress("Loss: 0.61: : 40it [00:12,  3.2it/s]")
    assert is_training_progress("train: 9001it [00:12, 750.2it/s, loss=0.05]")


# --- batch-8 classes -----------------------------------------------------------------------------


def test_a_value_stated_in_a_sentence_with_is() -> None:
    assert vals("epoch: 12 step: 40, loss is 0.875") == {"epoch": 12, "step": 40, "loss": 0.875}


def test_keys_joined_to_values_by_a_dash() -> None:
    v = vals("[Train][ 2][5/30]   NLL-1.25   ACC-0.500   LOSS-1.250   TIME-0.75")
    assert (v.get("step"), v.get("loss"), v.get("step_time")) == (5, 1.25, 0.75)
    assert "step" not in vals("top-5 accuracy 0.91")


def test_a_paired_key_takes_its_first_value() -> None:
    assert vals("[iter:   900] [time (data): 0.812 (0.101)] l_pix: 0.02").get("step_time") == pytest.approx(
        0.812
    )


def test_a_timestamp_is_not_a_step_time() -> None:
    assert "step_time" not in vals("it: 3 loss: 1.1 batch time: 1573037651.13")


def test_a_timing_report_after_the_counter_line_is_not_the_progress_line(tmp_path: Path) -> None:
    text = "epoch: 4 step: 50, loss is 0.9\nepoch time: 9000.0 ms, per step time: 180.0 ms\n"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"], r["step_time_s"]) == (50, 0.9, None)


def test_a_metrics_report_after_training_is_a_summary(tmp_path: Path) -> None:
    text = (
        "{'loss': 0.41, 'learning_rate': 1e-4, 'epoch': 0.9}\n"
        "{'loss': 0.40, 'learning_rate': 1e-4, 'epoch': 1.0}\n"
        "***** train metrics *****\n  epoch      =   1.0\n  train_loss =   0.47\n"
    )
    assert track(text, tmp_path)["loss"] == 0.40


def test_a_count_column_is_the_tables_counter(tmp_path: Path) -> None:
    text = "NumSteps,Seconds,LearningRate,ce_loss\n1000.0,50.1,0.01,2.5\n2000.0,99.8,0.01,2.25\n"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (2000, 2.25)


def test_a_leading_global_fraction_before_a_colon() -> None:
    v = vals("3.  12000/50000: episode: 40, duration: 1.2s, steps per second: 200, loss: 0.5")
    assert (v.get("step"), v.get("total_steps"), v.get("loss")) == (12000, 50000, 0.5)


def test_a_ctime_timestamp_is_not_a_number_of_the_line() -> None:
    assert vals("Tue Mar  5 10:11:12 2024 iter: 30 loss: 0.25") == {"step": 30, "loss": 0.25}


# --- batch-10 classes ----------------------------------------------------------------------------


def test_an_earlier_line_of_another_format_at_the_same_step_is_not_merged(tmp_path: Path) -> None:
    # (session 13: the step's learning-rate line after its loss line is that step's schedule,
    # so the loss line is the latest report, as three of four labellers of unseen logs read it;
    # the earlier line of step 700 is still not merged into step 800)
    text = "Iter 700, loss = 3.5\nIter 700, lr = 0.01\nIter 800, loss = 3.25\nIter 800, lr = 0.01\n"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"], r["last_progress_line"]) == (800, 3.25, "Iter 800, loss = 3.25")
    text = "Iter 700, loss = 3.5\nIter 800, lr = 0.01\n"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (800, None)


def test_a_training_qualified_generic_counter() -> None:
    assert vals("[Pass 2, train batch 40]   loss 1.25, batch_cost 0.5 sec").get("step") == 40


def test_microseconds_per_step() -> None:
    assert vals("900/900 [====] - 1s 845us/step - loss: 0.12").get("step_time") == pytest.approx(0.000845)


def test_the_time_of_a_finished_epoch_is_not_a_step_time() -> None:
    v = vals("Epoch 12 (global_step 60000) finished, time: 1800.5 sec.")
    assert (v.get("step"), "step_time" in v) == (60000, False)


def test_a_cut_key_at_the_end_of_an_unterminated_log(tmp_path: Path) -> None:
    text = "Epoch: 4 \tTraining Loss: 0.2 \tValidation Loss: 0.3\nEpoch: 5 \tTraining Loss: 0.1 \tValidation"
    assert track(text, tmp_path)["step"] == 5


def test_a_cut_number_with_its_keys_precision_is_complete(tmp_path: Path) -> None:
    text = "iter: 90 train_loss: 1.8463 val_loss: 2.1\niter: 100 train_loss: 1.7650"
    assert track(text, tmp_path)["loss"] == 1.765


def test_a_counter_then_a_current_and_average_pair() -> None:
    v = vals(" 812: 2.104400, 2.250100 avg loss, 0.000500 rate, 0.910000 seconds, 51968 images")
    assert (v.get("step"), v.get("loss"), v.get("step_time")) == (812, 2.1044, pytest.approx(0.91))
    assert "loss" not in vals("12: 0.5, 0.6 min, 3 items")  # no running average named


# --- batch-11 classes ----------------------------------------------------------------------------


def test_keys_in_brackets() -> None:
    assert vals("INFO - [ep]: 3, [iteration]: 1200, [loss]: 2.5") == {"epoch": 3, "step": 1200, "loss": 2.5}


def test_an_ordinal_counter() -> None:
    assert vals("current step: 4021st step").get("step") == 4021


def test_the_current_value_wins_over_its_average() -> None:
    v = vals("batch 12, running average nll: 1.9, current batch nll: 1.6")
    assert v.get("loss") == 1.6


def test_a_new_sentence_starts_a_key() -> None:
    assert vals("Round 2 over. Steps: 300. lr 0.1").get("step") == 300


def test_an_abbreviated_batch_time_with_its_unit() -> None:
    v = vals("epoch: 3 | lr: 0.1 | bch(ms): 410.5 | fwd(ms): 150.0 | bwd(ms): 250.0")
    assert v.get("step_time") == pytest.approx(0.4105)


# --- batch-12 classes ----------------------------------------------------------------------------


def test_an_epoch_header_after_a_bar_does_not_replace_it(tmp_path: Path) -> None:
    text = (
        "Epoch 3/10\n120/120 [==============================] - 30s 250ms/step - loss: 0.61\n"
        "Epoch 4/10\n120/120 [==============================] - 30s 250ms/step - loss: 0.55\nEpoch 5/10\n"
    )
    r = track(text, tmp_path)
    assert (r["step"], r["loss"], r["step_time_s"]) == (120, 0.55, 0.25)


def test_an_epoch_header_after_loop_lines_is_the_progress(tmp_path: Path) -> None:
    text = "Training epoch: 3\n\tIter 40 done | loss: 1.5\nTraining epoch: 4\n"
    assert track(text, tmp_path)["step"] == 4


def test_an_inferencing_bar_is_not_training() -> None:
    assert parse_line(
        "Inferencing model on the train split: 100%|#####| 11/11 [00:01<00:00,  9.4it/s]"
    ).is_eval


# --- batch-13 classes ----------------------------------------------------------------------------


def test_a_counter_noun_holding_a_duration_is_its_time() -> None:
    v = vals("(12/40) LR: 0.01 | Batch: 0.420s | Loss: 0.9")
    assert (v.get("step"), v.get("step_time")) == (12, pytest.approx(0.42))


def test_a_table_time_column_in_milliseconds(tmp_path: Path) -> None:
    text = "epoch,iter,train_loss,iter_time_ms\n1,10,0.5,250.0\n1,20,0.4,260.0\n"
    r = track(text, tmp_path)
    assert (r["step"], r["step_time_s"]) == (20, 0.26)


def test_a_time_unit_after_a_space() -> None:
    assert vals("it 40 | loss 1.2 | iter time: 512.5 ms (step)").get("step_time") == pytest.approx(0.5125)
    assert vals("step 7 loss 0.9 duration 1.5 sec").get("step_time") == pytest.approx(1.5)
    assert vals("step 7 loss 0.9 time 2 min: 3").get("step_time") == pytest.approx(2)  # `min:` is a key


# --- session 6: cut last lines, clock-style step durations, bars too fast to be training ---------


def test_a_cut_record_keeps_its_complete_pairs(tmp_path: Path) -> None:
    rows = "".join(
        f'{{"lr_now": 0.001, "avg_loss": {2 - i / 10}, "epoch": {i}, "params": 123}}\n' for i in range(1, 5)
    )
    text = rows + '{"lr_now": 0.001, "avg_loss": 1.45, "epoch": 5, "par'
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (5, 1.45)


def test_a_key_cut_before_its_value_does_not_make_an_evaluation_line(tmp_path: Path) -> None:
    rows = "".join(f"[it {i}] loss (train) {i / 10}, test loss avg: 2.5 | secs/it 3.0\n" for i in range(1, 5))
    r = track(rows + "[it 5] loss (train) 0.7, test loss avg:", tmp_path)
    assert (r["step"], r["loss"]) == (5, 0.7)


def test_a_cut_line_that_lost_the_runs_counter_is_not_progress(tmp_path: Path) -> None:
    bar = "[epoch 2] train_loss 0.{c} {p}%|####      | {n}/500 [00:10<00:20,  9.50it/s]\n"
    text = (
        "".join(bar.format(c=90 - i, p=i * 10 // 5, n=100 + i) for i in range(5))
        + "[epoch 2] train_loss 0.7 2"
    )
    r = track(text, tmp_path)
    assert (r["step"], r["total_steps"]) == (104, 500)


def test_a_clock_duration_under_a_step_time_key() -> None:
    assert vals("iters: 12 | loss 0.5 | iter_time 00:01:05")["step_time"] == 65.0
    assert "step_time" not in vals("iteration 12 loss 0.5 time: 17:42:09")  # a clock, not a duration


def test_a_bar_faster_than_any_training_step_is_other_work(tmp_path: Path) -> None:
    fast = "100%|##########| 640/640 [00:00<00:00, 51234.50it/s]\n"
    assert parse_line(fast).is_eval
    slow = "100%|##########| 640/640 [01:20<00:00,  8.00it/s]\n"
    assert not parse_line(slow).is_eval


def test_a_numbered_table_with_a_rule_under_its_header(tmp_path: Path) -> None:
    text = (
        "Ep   #      LOSS ENCODER  LOSS PARSER  UAS    SCORE\n"
        "---  -----  ------------  -----------  -----  -----\n"
        "  0      0          0.00        51.20  18.43   0.18\n"
        "  0    250         12.50       410.11  80.20   0.80\n"
        "  1    500         20.06       290.65  88.74   0.89\n"
    )
    r = track(text, tmp_path)
    # two loss terms and no total: the row's counter is `#`, its loss is not stated
    assert (r["step"], r["loss"]) == (500, None)


def test_a_record_printed_as_a_block_of_lines(tmp_path: Path) -> None:
    block = "round {i}\nxent: {c}\nheld-out accuracy: {a}%\n"
    text = "".join(block.format(i=i, c=round(2 - i / 10, 2), a=50 + i) for i in range(1, 6))
    r = track(text, tmp_path)
    # the counter line heads its block: its step, and the loss from the block's next line
    assert (r["step"], r["loss"]) == (5, 1.5)


def test_a_lone_counterless_line_after_the_loop_is_not_its_record(tmp_path: Path) -> None:
    loop = "".join(f"round {i}\n" for i in range(1, 4))
    r = track(loop + "xent: 0.25\n", tmp_path)
    assert (r["step"], r["loss"]) == (None, 0.25)  # no block repeats: the loss line stands alone


def test_a_key_written_as_a_sentence() -> None:
    v = vals("Round 4 fitted with loss: 0.0031. The wall time was 20.5")
    assert v["loss"] == 0.0031
    assert parse_line("Round 4 validated with loss: 0.0042").values.get("loss") is None


def test_a_key_holding_a_list_is_a_setting() -> None:
    assert "step" not in vals("    ITERS: [8000, 12000]")
    assert "step" not in vals("warmup_epochs=[1, 3] mean=[0.5, 0.4]")
    assert vals("Epoch: [3][120/400] loss: 0.7")["step"] == 120  # a bracketed counter is no list


def test_comma_separated_name_value_pairs(tmp_path: Path) -> None:
    text = "".join(f"updates,{i},nll,{3 - i / 10},top1,0.{i}\n" for i in range(1, 6))
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (5, 2.5)


def test_an_in_epoch_counter_moves_on_with_its_epoch_after_an_evaluation(tmp_path: Path) -> None:
    text = (
        "ep 1 | it 100/300 | loss 0.50 | 0.3 s/it\n"
        "ep 1 | it 200/300 | loss 0.40 | 0.3 s/it\n"
        "Evaluating...\n"
        "ep 2 | it 100/300 | loss 0.30 | 0.3 s/it\n"
    )
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (100, 0.3)


@pytest.mark.parametrize(
    ("line", "step"),
    [
        ("[ (12) xent: 0.41, acc_train: 0.88 ]", 12),
        ("Training 7 | loss 0.25 | top1 0.9", 7),
        ("train 15: nll=1.25, lr=0.01", 15),
    ],
)
def test_a_round_number_opening_the_line(line: str, step: int) -> None:
    assert vals(line)["step"] == step


def test_a_number_opening_a_line_without_metrics_is_no_counter() -> None:
    assert "step" not in vals("(3) workers started")
    assert "step" not in vals("Test 9, loss: 0.5")


def test_the_total_under_a_losses_heading_is_the_loss() -> None:
    v = vals("it 40/900 | Losses: recon 0.75, kl 0.25, sum 1.0, psnr: 21.5 | lr 0.001")
    assert (v["step"], v["loss"]) == (40, 1.0)


def test_bare_counter_value_rows_without_a_header(tmp_path: Path) -> None:
    rows = "".join(f"{i};{1.5 / (i + 1):.5f}\n" for i in range(8))
    r = track("model ready\n" + rows + "saved\n", tmp_path)
    assert (r["has_progress"], r["step"], r["loss"]) == (True, 7, 0.1875)
    rising = "".join(f"{i} {0.5 + i / 100:.3f}\n" for i in range(8))
    assert track(rising, tmp_path, "b.log")["loss"] is None  # a rising column is no loss
    assert track("".join(f"{i} 0.5\n" for i in (3, 1, 2, 5, 4)), tmp_path, "c.log")["has_progress"] is False


def test_bare_rows_with_a_prefix_and_other_lines_between(tmp_path: Path) -> None:
    rows = "".join(f"[w0 {i:02d}:00] {i * 10} {4 - i / 4:.4f}\n  pos 0.6 neg 0.2\n" for i in range(6))
    r = track(rows + "[w0 06:00] all batches consumed\n", tmp_path)
    assert (r["step"], r["loss"]) == (50, 2.75)


def test_a_time_since_start_across_epochs_is_no_step_time(tmp_path: Path) -> None:
    rows = [
        f"EPOCH [{e}/50][{i}/3] | time {10.0 * (e * 3 + i) + 7:.3f} | nll 0.5\n"
        for e in range(3)
        for i in range(3)
    ]
    r = track("".join(rows), tmp_path)
    assert (r["step"], r["step_time_s"]) == (2, None)


def test_an_evaluation_key_without_a_value_is_no_evaluation_context() -> None:
    c = parse_line("epoch 2 | it 30 | train nll 1.25, val: n/a | 12.5 ms/it")
    assert not c.is_eval and c.values["loss"][1] == 1.25


def test_the_optimizer_step_outranks_the_micro_batch_iteration() -> None:
    assert vals("iter 96 step 12 | loss 0.75")["step"] == 12


def test_a_pipe_table_without_borders(tmp_path: Path) -> None:
    text = (
        "Epoch | Train Loss | Dev Loss | F1\n"
        "--- | --- | --- | ---\n"
        "1 | 0.912000 | 0.950000 | 0.61\n"
        "2 | 0.701500 | 0.802000 | 0.70\n"
    )
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (2, 0.7015)


def test_carriage_returns_pasted_as_caret_m(tmp_path: Path) -> None:
    bar = "^M 10%|#         | {n}/400 [00:{n:02d}<01:00,  2.50it/s]"
    line = bar.format(n=40) + bar.format(n=41) + "^M{'loss': 0.875, 'epoch': 0.1}\n"
    r = track(line, tmp_path)
    assert (r["step"], r["loss"], r["step_time_s"]) == (41, 0.875, 0.4)


def test_a_loop_announced_but_never_reported_is_no_progress(tmp_path: Path) -> None:
    text = "loading shards\n--- starting round 1 ---\nTraceback (most recent call last):\nValueError: bad shape\n"
    assert track(text, tmp_path)["has_progress"] is False
    text = "--- starting round 1 ---\n--- starting round 2 ---\n"
    assert track(text, tmp_path, "b.log")["step"] == 2  # it moved: the first round ended


def test_units_done_so_far() -> None:
    assert vals("Completed 12 epochs")["step"] == 12
    assert vals("finished 3000 iterations, loss 0.5")["step"] == 3000


def test_cost_is_a_loss_unless_it_is_a_time() -> None:
    assert vals("Iter 400, cost = 0.25")["loss"] == 0.25
    v = vals("round: 3, mb: 0, AUC: 0.9, avg_loader_cost: 0.0004 sec, avg_step_cost: 0.0021 sec")
    assert "loss" not in v


def test_an_evaluation_label_after_the_training_values() -> None:
    c = parse_line("W1203 10:00:00.1 99 Trainer.cc:42]  Pass=3 Batch=200 CurCost=4.125 Test: top1_err=0.31")
    assert not c.is_eval and c.values["loss"][1] == 4.125
    assert parse_line("Test: [ 3/50] xent: 4.5 top1: 0.2").is_eval  # a label before them: evaluation


def test_a_bracketed_n_of_m_counter() -> None:
    v = vals("Done Round[7 of 40]: [train] nll = 3.25 * 64, acc = 12.5% * 64")
    assert (v["step"], v["loss"]) == (7, 3.25)


def test_a_kind_named_loss_beside_a_regulariser_is_the_loss() -> None:
    line = " it 9/500 | ce loss: 2.125 | aux_balance_loss: 0.0100 | grad norm: 0.3 |"
    assert vals(line)["loss"] == 2.125
    assert "loss" not in vals(" it 9/500 | ce loss: 2.125 | kl loss: 0.5 |")  # two co-equal terms


def test_an_all_reduced_loss_outranks_a_bar_display_loss() -> None:
    line = "Epoch 1:  3%|3         | 30/1000 [00:30<16:10,  1.00it/s, loss=2.5, reduced_train_loss=2.468]"
    assert vals(line)["loss"] == 2.468


def test_a_bar_at_thousands_of_items_per_second_is_other_work() -> None:
    assert parse_line("reading sizes: 100%|##########| 900/900 [00:00<00:00, 6500.00it/s]").is_eval


def test_an_epoch_header_after_a_finished_verbose_epoch_line(tmp_path: Path) -> None:
    text = "Epoch 4/50\n120/120 - 6s - loss: 0.3125 - acc: 0.91\nSearch trial 7 done\nEpoch 1/50\n"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (120, 0.3125)


def test_an_evaluation_loop_named_on_its_counter(tmp_path: Path) -> None:
    text = (
        "ep:[ 3/9 ] train iter:40  xent: 0.40 lr: 0.01 batch_cost: 1.5 sec\n"
        "End ep:3  train xent_avg: 0.45 batch_cost_sum: 60.0 sec\n"
        "ep:[ 3/9 ] test iter:0  xent: 2.50 batch_cost: 3.0 sec\n"
    )
    r = track(text.replace("ep:", "epoch:"), tmp_path)
    assert (r["step"], r["loss"], r["step_time_s"]) == (40, 0.4, 1.5)


def test_bare_rows_named_by_their_kind(tmp_path: Path) -> None:
    rows = "".join(
        f"{i} trn {5 - i / 10:.4f}\n" + (f"{i} dev {6 - i / 20:.4f}\n" if i % 3 == 0 else "")
        for i in range(9)
    )
    r = track(rows, tmp_path)
    assert (r["step"], r["loss"]) == (8, 4.2)


def test_records_glued_after_a_lost_carriage_return(tmp_path: Path) -> None:
    line = "".join(f"Episode {g}  Frame {g * 37}  AvgReturn: {g / 10:.2f}" for g in range(301, 305)) + "\n"
    r = track(line, tmp_path)
    assert (r["step"], r["last_progress_line"]) == (304 * 37, "Episode 304  Frame 11248  AvgReturn: 30.40")


def test_bracketed_keys_in_pipe_cells() -> None:
    v = vals("12:00:01 | rank0 | ep 3 it[ 9/ 20] | [NLL] 2.25 | [gstep]  960 | [lr] 0.01 |")
    assert v["loss"] == 2.25


def test_an_epoch_and_step_pair_written_as_a_fraction(tmp_path: Path) -> None:
    rows = [
        f"Training Batch 7/{s} nll {2 - s / 100000:.4f} gpu {r}\n"
        for s in (51000, 51100, 51200)
        for r in (1, 0)
    ]
    r = track("".join(rows), tmp_path)
    assert (r["step"], r["total_steps"]) == (51200, None)  # the right side grows: it is the step


def test_a_log_level_word_does_not_hide_a_counter_key() -> None:
    assert vals("DEBUG TRAIN Batch 12 loss 0.5 lr 0.01")["step"] == 12


def test_a_fractional_total_is_the_summed_loss() -> None:
    v = vals("12:00:01 | ep=1 it=40 lr=0.01 total=1.625 rec=1.25 reg=0.375")
    assert (v["step"], v["loss"]) == (40, 1.625)
    assert vals("it 40 | total 900 | nll 0.5")["total_steps"] == 900  # a whole total is a count


def test_a_fraction_with_padding_and_its_noun() -> None:
    v = vals("| ep   2 |    40/  300 batches | nll 3.5 |")
    assert (v["step"], v["total_steps"]) == (40, 300)


def test_a_single_table_row_is_a_report_not_an_announcement(tmp_path: Path) -> None:
    text = "Scores:\n\tRound     Fit       Holdout\n\t1         0.412     0.377    \n"
    assert track(text, tmp_path)["step"] == 1


def test_a_time_cost_is_not_a_loss() -> None:
    assert "loss" not in vals("Round[4] Time cost=98.5")


def test_a_note_after_a_table_rows_last_cell(tmp_path: Path) -> None:
    text = " Epoch | DevAcc | Train Loss\n  1 | 51.0% |  0.9000\n  2 | 55.0% |  0.7500  <- saved\n"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (2, 0.75)


def test_values_written_before_their_names() -> None:
    v = vals("Round 12 | 10:05 : 1.375 NLL Loss, 71.25% Top1")
    assert (v["step"], v["loss"]) == (12, 1.375)
    assert "loss" not in vals("Round 12, 3 workers, 2 shards")  # no loss among them: left alone


def test_seconds_per_batch_abbreviated() -> None:
    assert vals("Iters : 5120, G Loss : 3.5, s/b : 0.875")["step_time"] == 0.875


def test_a_commented_table_header(tmp_path: Path) -> None:
    text = "#  iter    mae_dev    mae_train    lr\n     10    0.90    0.80    1e-3\n     20    0.70    0.60    1e-3\n"
    r = track(text, tmp_path)
    assert (r["step"], r["loss"]) == (20, 0.6)  # the training-set error after its metric name


def test_a_key_ending_in_the_leading_key_is_no_glued_record() -> None:
    from schedmate.tracker.parse import split_glued

    line = "\txent: 2.5000, mt_xent: 2.2500, aux_xent: 0.2500, acc: 0.51"
    assert split_glued(line) == [line]


def test_a_table_header_naming_evaluation_columns_opens_no_section(tmp_path: Path) -> None:
    text = "Scores:\n  Epoch   Fit     Eval    Test\n  1       0.40    0.55    0.51\n  2       0.45    0.58    0.52\n"
    assert track(text, tmp_path)["step"] == 2


def test_an_unclosed_list_value_is_read_in_linear_time() -> None:
    import time

    line = "MILESTONES: [" + "7, " * 40_000  # no closing bracket: no backtracking over the list
    t0 = time.perf_counter()
    parse_line(line)
    assert time.perf_counter() - t0 < 2.0

"""Line and record shapes met on unseen logs (issue 10, sixth pass). Every case is a variant
written here (keys, separators, orders, languages and values of our own), none is a line of a
data set."""

from __future__ import annotations

from schedmate.tracker import MetricTracker
from schedmate.tracker.parse import split_glued


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_name_value_pairs_with_a_comma_closing_the_row() -> None:
    r = run(
        [
            f"Iter, {i}, Cost, 0.{9 - i}5, Acc, 0.{i}1, SecsPerIter, 1.2{i}, WallTime, {i}0.5,"
            for i in range(1, 4)
        ]
    )
    assert (r.step, r.loss, r.step_time_s) == (3, 0.65, 1.23)


def test_early_stopping_after_the_last_epoch_is_not_the_progress_line() -> None:
    for stop in (
        "Early stopping at epoch 7 (patience 3 exhausted)",
        "EarlyStopping: early stopping at epoch 7",
    ):
        r = run(["Epoch [6/50] Loss: 0.31 | Val: 0.40", "Epoch [7/50] Loss: 0.29 | Val: 0.41", "", stop])
        assert (r.last_progress_line, r.step, r.loss) == ("Epoch [7/50] Loss: 0.29 | Val: 0.41", 7, 0.29)


def test_a_time_unit_written_in_another_language_is_a_time_not_a_loss() -> None:
    for unit in ("segundos", "secondes", "Sekunden", "minutos"):
        r = run(
            [
                "epoch 4 train_loss=0.52 val_loss=0.61",
                "epoch 5 train_loss=0.48 val_loss=0.60",
                f"Total: 81.5 {unit}",
            ]
        )
        assert (r.step, r.loss) == (5, 0.48)


def test_set_values_stay_losses_beside_an_accuracy_with_its_own_value() -> None:
    r = run(
        ["Ep [2/9] Train: 0.41 | Val: 0.52 | acc: 81.0%", "Ep [3/9] Train: 0.37 | Val: 0.50 | acc: 83.5%"]
    )
    assert (r.step, r.loss) == (3, 0.37)
    # with the accuracy unnamed by a value, the set values may be accuracies: no loss
    r = run(["Ep 2 train 0.91 val 0.88 (acc)", "Ep 3 train 0.92 val 0.89 (acc)"])
    assert r.loss is None


def test_a_counter_of_data_work_is_not_training_progress() -> None:
    for work in ("Reading batch: 500 / 500", "Loading shard 8/8", "Parsing file 12 / 12"):
        r = run([work, "", "done iteration 40/80 of epoch 1, 95.0 ms/it, loss 0.61"])
        assert (r.step, r.total_steps, r.loss) == (40, 80, 0.61)
        assert not run([work, work]).has_progress


def test_a_loss_name_before_a_whole_number_and_a_decimal_is_step_then_loss() -> None:
    r = run(["Training cost 1207 0.8811 grad 1.2 2.10s/it", "Training cost 1208 0.8790 grad 1.1 2.05s/it"])
    assert (r.step, r.loss, r.step_time_s) == (1208, 0.879, 2.05)


def test_a_leading_fraction_outranks_a_smaller_weak_counter_without_total() -> None:
    r = run(
        [
            "[02000/30000] part A | loss 0.51 | 4.0 it/s | batch 32",
            "[02500/30000] part B | loss 0.49 | 4.0 it/s | batch 32",
        ]
    )
    assert (r.step, r.total_steps, r.loss) == (2500, 30000, 0.49)
    # an epoch fraction before a larger in-epoch batch counter leaves the batch the step
    r = run(["[2/10] batch 300 loss 0.4", "[2/10] batch 310 loss 0.39"])
    assert r.step == 310


def test_rows_under_a_header_of_other_names_are_not_bare_progress_rows() -> None:
    report = ["            prec      rec      f1     n", ""]
    report += [f"       {k}    0.9{k}    0.8{k}    0.8{k}   {100 * k}" for k in range(1, 7)]
    assert not run(report).has_progress
    # the same rows without a header are bare `counter value` progress rows
    assert run(report[2:]).has_progress


def test_the_error_that_ended_a_job_glued_after_a_bar() -> None:
    bar = " 40%|####      | {n}/10 [10:00<15:00, 150.00s/it]"
    end = "srun: error: *** STEP 77.0 ON n3 CANCELLED AT 2024-01-01T00:00:00 ***"
    r = run([bar.format(n=3), bar.format(n=4) + end])
    assert (r.step, r.total_steps, r.step_time_s) == (4, 10, 150.0)
    assert split_glued(bar.format(n=4) + "Traceback (most recent call last):") == [bar.format(n=4)]


def test_an_evaluation_record_repeating_the_run_counters_is_not_training() -> None:
    rec = '{{"loss": {l}, "lr": 1e-05, "global_step": {n}, "max_steps": 200, "elapsed": "{t}s", "speed(it/s)": 0.5}}'
    lines = [rec.format(l=0.9 - n / 1000, n=n, t=2 * n) for n in (150, 160, 170)]
    lines.append(
        '{"eval_loss": 0.71, "eval_acc": 0.8, "global_step": 200, "max_steps": 200, "elapsed": "420s", "train_it/s": 0.48}'
    )
    r = run(lines)
    assert (r.step, r.loss) == (170, 0.73)


def test_a_record_with_elapsed_and_remaining_time_gives_the_mean_step_time() -> None:
    rec = '{{"cur_step": {n}, "max_steps": 400, "loss": 1.5, "elapsed": "0:{m:02d}:00", "remaining": "0:{r:02d}:00"}}'
    r = run([rec.format(n=n, m=n // 20, r=(400 - n) // 20) for n in (100, 200, 300)])
    assert (r.step, r.step_time_s) == (300, 3.0)
    # an elapsed time alone is cumulative: no step time from it
    r = run([f"step={n} loss=1.5 elapsed={3 * n}s" for n in (100, 200, 300)])
    assert r.step_time_s is None


def test_a_closing_record_without_the_loss_every_record_had() -> None:
    rec = '{{"step": {n}, "of": 60, "loss": {l}, "lr": 1e-4}}'
    lines = [rec.format(n=n, l=round(2 - n / 100, 2)) for n in (20, 30, 40, 50)]
    r = run([*lines, '{"step": 60, "of": 60, "epoch": 2.0}'])
    assert (r.step, r.loss) == (50, 1.5)
    # a run whose records never carried a loss keeps its last record
    r = run([f'{{"step": {n}, "of": 60, "epoch": {n / 30}}}' for n in (20, 30, 40, 50, 60)])
    assert r.step == 60


def test_a_nan_formatted_with_one_decimal_is_a_nan_loss() -> None:
    bar = "Epoch 1: 10%|#    | {n}/5000 [10:00<1:30:00, train_loss={l}, step={n}.0, step_time_s=0.50, val_loss=3.1]"
    r = run([bar.format(n=400, l="3.2"), bar.format(n=500, l="nan.0")])
    assert (r.has_progress, r.step, r.loss, r.loss_is_nan, r.step_time_s) == (True, 500, None, True, 0.5)


def test_a_bar_over_prompts_is_generation_not_training() -> None:
    r = run(
        [
            "Rollout [1/3]: 100%|##########| 8/8 [02:00<00:00, 15.00s/it]",
            "Answering prompts:  50%|#####     | 32/64 [00:10<00:10,  3.20it/s]",
        ]
    )
    assert (r.step, r.total_steps, r.step_time_s) == (8, 8, 15.0)


def test_a_timing_report_of_a_test_pass_is_not_a_section_heading() -> None:
    # `Eval time 41.2` ends each epoch; the next epoch's lines restart their counter and are training
    lines: list[str] = []
    for _epoch in range(3):
        lines += [f"iter [{k}] , loss is {k / 100:.2f}" for k in (100, 200, 300)]
        lines += ["Train Time 700.5", "Eval time 41.2"]
    lines += ["iter [100] , loss is 9.50", "iter [200] , loss is 9.40"]
    r = run(lines)
    assert (r.step, r.loss) == (200, 9.4)


def test_an_indented_report_under_a_logger_prefix_is_a_summary() -> None:
    lines = [
        "[2024-02-02 10:00:01,000] [ INFO] - loss: 0.90, global_step: 10, epoch: 5.0",
        "[2024-02-02 10:00:09,000] [ INFO] - loss: 0.70, global_step: 20, epoch: 10.0",
        "[2024-02-02 10:00:10,000] [ INFO] - ***** train metrics *****",
        "[2024-02-02 10:00:10,000] [ INFO] -   epoch          =       10.0",
        "[2024-02-02 10:00:10,000] [ INFO] -   train_loss     =     0.8123",
    ]
    r = run(lines)
    assert (r.step, r.loss) == (20, 0.7)


def test_a_whole_number_before_a_singular_counter_noun_is_that_counter() -> None:
    r = run(["(train) 41 episode. reward -3.5, loss: 0.71", "(train) 42 episode. reward -3.1, loss: 0.69"])
    assert (r.step, r.loss) == (42, 0.69)
    # a count before a plural noun, or a clock before a key, is not an ordinal
    assert run(["eta: 0:01:33  iter: 120  loss: 0.5", "eta: 0:01:30  iter: 140  loss: 0.4"]).step == 140


def test_the_members_of_a_pretty_printed_json_object_are_one_record() -> None:
    obj = [
        "    {",
        '        "tr/cost": {c},',
        '        "ep": {e},',
        '        "iter": {i},',
        '        "wall": {w}',
        "    }",
    ]
    lines = ["["]
    for e, c in ((1, 3.5), (2, 2.5)):
        lines += [
            x.replace("{c}", str(c)).replace("{e}", str(e)).replace("{i}", str(500 * e)).replace("{w}", "9.5")
            for x in obj
        ]
    r = run([*lines, "]"])
    assert (r.last_progress_line, r.step, r.loss) == ('        "iter": 1000,', 1000, 2.5)


def test_ticks_and_their_seconds_per_tick() -> None:
    r = run([f"tick {k}  kimg {6 * k}.0  time {11 * k}m 05s  sec/tick 66{k}.5  gpumem 4.0" for k in (4, 5)])
    assert (r.step, r.step_time_s) == (5, 665.5)


def test_dt_abbreviates_a_duration_in_a_step_time_key() -> None:
    r = run([f"batch {k}: loss 1.{9 - k} | batch_dt {400 + k}ms" for k in (6, 7)])
    assert (r.step, r.loss, r.step_time_s) == (7, 1.2, 0.407)


def test_a_bare_epoch_batch_pair_opening_a_line() -> None:
    r = run(["[4,   250] loss: 0.612", "[4,   500] loss: 0.598"])
    assert (r.step, r.epoch, r.loss) == (500, 4, 0.598)
    assert run(["[0.5, 0.25] loss: 0.3"]).step is None  # a pair of decimals is a value list


def test_a_total_counter_written_as_a_fraction_is_done_of_total() -> None:
    r = run([f"Run A: rounds {k}/900, total num timesteps {k * 400}/360000, FPS 512." for k in (10, 11)])
    assert (r.step, r.total_steps) == (4400, 360000)


def test_one_loss_under_two_model_prefixes_is_two_components() -> None:
    r = run([f'{{"enc/loss": 1.{k}, "dec/loss": 0.{k}, "iteration": {k}00}}' for k in (3, 4)])
    assert (r.step, r.loss) == (400, None)
    # under the training set's or a neutral prefix it is the loss
    r = run([f'{{"train/loss": 1.{k}, "val/loss": 0.{k}, "iteration": {k}00}}' for k in (3, 4)])
    assert (r.step, r.loss) == (400, 1.4)


def test_a_logger_prefix_then_a_long_run_of_spaces_is_read_in_linear_time() -> None:
    import time

    from schedmate.tracker.state import _indented

    for line in ("[a]" + " " * 200_000, "INFO" + " " * 200_000, "[x] -" + " " * 200_000 + "k = 1"):
        t0 = time.perf_counter()
        _indented(line)
        assert time.perf_counter() - t0 < 1.0


def test_a_bar_without_total_that_never_moved_is_no_progress() -> None:
    r = run(["Sanity check done", "Fitting: 0it [00:00, ?it/s]", "ValueError: shapes do not match"])
    assert not r.has_progress
    r = run(["Fitting: 0it [00:00, ?it/s]", "Fitting: 7it [00:07, 1.00it/s, loss=0.41]"])
    assert (r.step, r.loss) == (7, 0.41)

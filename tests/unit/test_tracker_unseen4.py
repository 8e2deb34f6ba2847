"""Line and record shapes met on unseen logs (issue 10, eighth pass). Every case is a variant
written here (keys, separators, orders, languages and values of our own), none is a line of a
data set."""

from __future__ import annotations

from schedmate.tracker import MetricTracker


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_a_zero_counter_beside_loss_components_is_step_zero() -> None:
    # a GAN loop reporting the first batch of every epoch: only the parts of its loss
    lines = [f"({e}/40)({0}/250)  disc_loss: 0.{e}1  gen_loss: 3.{e}" for e in range(1, 4)]
    r = run(lines)
    assert (r.has_progress, r.step, r.total_steps, r.loss) == (True, 0, 250, None)
    lines = [f"[{e}/40][0/250]\tD_loss: 0.{e}1\tG_loss: 3.{e}" for e in range(1, 4)]
    assert run(lines).step == 0
    assert run(["[0/250] warming up", "[0/250] warming up"]).step is None  # no value: nothing done


def test_a_bar_cut_at_the_terminal_width_keeps_its_counter() -> None:
    line = "steps:  41%|####1     | 410/1000 [02:03<02:57,  3.33it/s, grad_norm=tensor(0.51, dev"
    r = run([line])
    assert (r.step, r.total_steps) == (410, 1000)
    assert abs(r.step_time_s - 1 / 3.33) < 1e-9


def test_a_heading_with_details_in_parentheses_opens_an_evaluation_section() -> None:
    lines = [
        "2030-01-02 03:04:05 [INFO]\t[TRAIN] epoch: 3, iter: 700/5000, loss: 0.41, batch_time: 0.52",
        "2030-01-02 03:04:55 [INFO]\t[TRAIN] epoch: 3, iter: 800/5000, loss: 0.40, batch_time: 0.51",
        "2030-01-02 03:04:55 [INFO]\tNow evaluating (samples: 64, batches: 8) ...",
        "8/8 [==============================] - 2s 150ms/step - batch_time: 0.15",
    ]
    r = run(lines)
    assert r.last_progress_line == lines[1]
    assert (r.step, r.loss, r.step_time_s) == (800, 0.40, 0.51)
    # a value in parentheses after a key is a value, not a heading's details
    cfg = ["DATASETS:", '  VAL: ("set_a",)', *lines[:2]]
    assert run(cfg).step == 800


def test_a_new_bar_format_after_an_evaluation_heading_without_a_loss_stays_evaluation() -> None:
    lines = [
        "{'loss': 0.93, 'learning_rate': 4e-05, 'epoch': 0.5}",
        "{'loss': 0.88, 'learning_rate': 3e-05, 'epoch': 1.0}",
        "=== Running Evaluation ===",
        "  Examples = 300",
        "100%|##########| 38/38 [00:04<00:00,  9.1it/s]",
    ]
    r = run(lines)
    assert r.last_progress_line == lines[1]
    assert r.loss == 0.88
    # a new format that states a training loss is training again
    back = [*lines, "  3%|3         | 30/1000 [00:10<05:30,  2.9it/s, loss=0.85]"]
    assert run(back).step == 30


def test_each_reports_own_time_equal_to_its_own_interval_is_the_intervals_time() -> None:
    # a report every 500 updates whose `time` is the seconds since the previous report, the
    # intervals uneven (2,000 s, then 1,210 s, then 905 s)
    stamps = ["10:00:00", "10:33:20", "10:53:30", "11:08:35"]
    secs = [1500.2, 2000.1, 1210.3, 905.2]
    lines = [
        f"[2030-02-01 {t}] epoch 2 | upd {1000 + 500 * i} | cost 4.{i} | time {s}s"
        for i, (t, s) in enumerate(zip(stamps, secs, strict=True))
    ]
    r = run(lines)
    assert (r.step, r.loss, r.step_time_s) == (2500, 4.3, None)
    # a per-step time beside the same timestamps stays the step time
    per_step = [ln.replace(f"time {s}s", "time 1.8s") for ln, s in zip(lines, secs, strict=True)]
    assert run(per_step).step_time_s == 1.8


def test_a_counter_with_its_total_outranks_an_equal_one_without() -> None:
    r = run(["round:2 | it:1200/9000 | loss:0.73", "round:2 | it:1300/9000 | loss:0.71"])
    assert (r.step, r.total_steps) == (1300, 9000)
    r = run(["step:2, iteration:1200/9000, ce:0.73", "step:2, iteration:1300/9000, ce:0.71"])
    assert (r.step, r.total_steps, r.loss) == (1300, 9000, 0.71)
    # a larger counter without a total is not displaced by a smaller one with it
    assert run(["step:5000 iter:30/100 loss:1.0"]).step == 5000


def test_pairs_joined_by_slashes_are_separate_pairs() -> None:
    lines = [f"[engine] ep=1/local_step={k}/global_step={k * 4}, samples/sec=2.5" for k in (10, 20)]
    r = run(lines)
    assert r.step == 80
    assert run(["lr=3e-4/2 loss=1.5 step=7"]).step == 7  # (a value with a slash is left alone)


def test_a_loggers_name_and_level_before_a_positional_value_list() -> None:
    lines = [f"2031-05-06 07:08:0{k},111\tvoc_run\tINFO\t[1.2{k}, 0.7, 44.1, {k}00, 2e-4]" for k in (1, 2, 3)]
    r = run(lines)
    assert (r.step, r.loss) == (300, None)
    r = run([f"INFO - [0.{k}5, 2.25, {k}200]" for k in (1, 2)])
    assert r.step == 2200


def test_a_line_naming_training_in_its_first_words_ends_an_evaluation_section() -> None:
    lines = [
        "Prepared test split...",  # (read as a heading of evaluation)
        "Done training batch 200/7000 of pass 1, -1 ms/batch, loss 0.58",
    ]
    r = run(lines)
    assert (r.step, r.total_steps, r.loss) == (200, 7000, 0.58)
    # a line naming both is the evaluation of the training split
    r = run([*lines, "Testing training accuracy 300/300, acc 0.91"])
    assert r.step == 200


def test_a_line_that_is_only_a_splits_name_opens_its_section() -> None:
    head = "#  ep  batch   loss    mae"
    lines = [
        "train",
        head,
        "   7     40   0.52   0.11",
        "   7     41   0.50   0.10",
        "dev",
        head,
        "   7      3   0.71   0.19",
    ]
    r = run(lines)
    assert (r.step, r.loss) == (41, 0.50)
    assert run([*lines, "train", head, "   8      1   0.49   0.10"]).step == 1


def test_a_table_whose_columns_are_named_in_words_and_whose_cells_carry_units() -> None:
    head = "Iteration (% of run)    Loss (train)    Batch Time (ms)    Remaining (time)      run.py:88"
    rows = [
        "900 (9.00%)             0.8123          212.5 ms           35 m, 10 s            run.py:91",
        "1000 (10.00%)           0.8011          209.1 ms           34 m, 50 s            run.py:91",
    ]
    r = run([head, rows[0], head, rows[1]])
    assert (r.step, r.loss) == (1000, 0.8011)
    assert abs(r.step_time_s - 0.2091) < 1e-9
    # words with two spaces between them and no row under them are not a table
    assert run(["Loss   curve saved", "Step   one   done"]).has_progress is False


def test_a_bar_with_si_prefixed_counts() -> None:
    bar = "fit {p}%|##        | {n}/25.0k [02:{s}<09:00, 31.5it/s, loss={l}]"
    r = run([bar.format(p=18, n="4.50k", s=10, l=1.2), bar.format(p=20, n="5.00k", s=26, l=1.1)])
    assert (r.step, r.total_steps, r.loss) == (5000, 25000, 1.1)
    r = run(["tokens: 50%|#####     | 2M/4M [00:30<00:30, 66.7kit/s]"])
    assert (r.step, r.total_steps) == (2_000_000, 4_000_000)


def test_a_rate_of_steps_printed_just_after_the_counter_line_is_that_steps_rate() -> None:
    lines = []
    for k in (1, 2):
        lines += [
            f"I0101 12:00:0{k}.250000 77 loop.py:12] xent = 3.{k}, update = {k}00 (250.0 sec)",
            f"I0101 12:00:0{k}.251000 77 hooks.py:7] {4 - k}.0 updates/sec",
        ]
    r = run(lines)
    assert (r.step, r.loss) == (200, 3.2)
    assert abs(r.step_time_s - 0.5) < 1e-9
    # printed twice by two loggers
    r = run([*lines, "WARN rate: noisy", lines[-1]])
    assert abs(r.step_time_s - 0.5) < 1e-9
    # a rate printed before the counter line belongs to the interval before it (not taken)
    r = run([lines[1], lines[2]])
    assert r.step_time_s is None


def test_a_training_word_before_a_bracketed_fraction_is_the_loops_counter() -> None:
    line = "Training  [ {k}/40000]  eta: 2 days, 3:04:05  lr: 0.001 (0.001)  loss: 2.{k} (2.9)  time: 0.84 (0.86)"
    r = run([line.format(k=k) for k in (510, 520)])
    assert (r.step, r.total_steps, r.loss, r.step_time_s) == (520, 40000, 2.52, 0.84)
    assert r.log_eta_s == 2 * 86400 + 3 * 3600 + 4 * 60 + 5  # a timedelta's days
    assert run(["Train: 12/64 | cost 0.5"]).step == 12
    assert run(["GPU 3/8 ready", "GPU 4/8 ready"]).has_progress is False  # (not a training word)


def test_a_time_difference_key_is_the_steps_time() -> None:
    rec = '{{"_type": "train_iter", "epoch": "2", "iter": "{i}", "loss": 0.5{i}, "time_diff": 1.25}}'
    r = run([rec.format(i=i) for i in (10, 20)])
    assert (r.step, r.step_time_s) == (20, 1.25)


def test_the_rest_of_a_record_split_after_a_key_continues_it() -> None:
    first = "(worker pid=77) iter:{k} - reward/mean:0.25 - actor/grad_norm:0.5 - seqlen/max"
    rest = ":812.000 - timing_s/gen:40.1 - timing_s/step:{t} - perf/tokens:91.0"
    lines = [first.format(k=1), rest.format(t="60.5"), first.format(k=2), rest.format(t="61.5")]
    r = run(lines)
    assert (r.step, r.step_time_s) == (2, 61.5)


def test_an_mpi_launchers_rank_tag_is_not_part_of_the_line() -> None:
    lines = []
    for e in (7, 8):
        lines += [f"[1,0]<stdout>:Epoch {e}/90", f"[1,0]<stdout>:250/250 - 31s - loss: 0.{e}12 - acc: 0.8"]
    lines += ["[1,0]<stdout>:Epoch 9/90", "[1,3]<stderr>:+ hostname"]
    r = run(lines)
    assert r.last_progress_line == lines[3]
    assert (r.step, r.total_steps, r.loss) == (250, 250, 0.812)
    r = run(["[2]<stderr>: 40%|####      | 40/100 [00:10<00:15,  4.00it/s]"])
    assert (r.step, r.total_steps) == (40, 100)


def test_a_number_sign_before_a_count() -> None:
    r = run(["Update #120   Loss: 0.51", "Update #130   Loss: 0.49"])
    assert (r.step, r.loss) == (130, 0.49)
    # a native stack trace's frames are not counters
    assert (
        run(["frame #3: worker + 0x1f (0x7f00 in /lib/libx.so)", "frame #4: start + 0x2"]).has_progress
        is False
    )


def test_a_batch_time_abbreviation_with_its_unit_in_parentheses() -> None:
    r = run(
        [
            "[ep: 1] iter: 40; loss: 2.5; btime(ms): 212; eta: 0:03:00;",
            "[ep: 1] iter: 50; loss: 2.4; btime(ms): 208;",
        ]
    )
    assert (r.step, r.loss, r.step_time_s) == (50, 2.4, 0.208)


def test_a_counter_in_scientific_notation_yields_to_an_exact_one() -> None:
    bar = "Epoch 1:  40%|####      | {n}/50125 [1:00:00<1:30:00, 2.78it/s, loss=1.9, global_step={g}]"
    r = run([bar.format(n=20040, g="2e+4"), bar.format(n=20050, g="2.01e+4")])
    assert (r.step, r.total_steps) == (20050, 50125)
    assert run(["global_step=2.01e+4 loss=2.5"]).step == 20100  # alone, it is the counter


def test_a_counter_lines_own_loss_wins_over_the_sub_reports_printed_after_it() -> None:
    sub = "head {h} avg (iou: 0.5), count: 9, part_loss = 3.5, total_loss = {v}"
    lines = []
    for k in (7, 8):
        lines += [
            sub.format(h=1, v="40.5"),
            sub.format(h=2, v="41.5"),
            f" {k}: 90.{k}, 95.0 avg loss, 0.001 rate, 3.5 seconds",
        ]
    lines += [sub.format(h=1, v="39.5"), sub.format(h=2, v="38.5")]
    r = run(lines)
    assert (r.step, r.loss, r.step_time_s) == (8, 90.8, 3.5)


def test_a_number_sign_closing_a_key() -> None:
    r = run(["step#: 100  lr: 0.01  average loss: 1.5", "step#: 200  lr: 0.01  average loss: 1.4"])
    assert (r.step, r.loss) == (200, 1.4)


def test_a_counter_noun_with_an_index_suffix_is_the_counter() -> None:
    r = run(["[RUN] iter_idx: 400, objective loss: 2.5", "[RUN] iter_idx: 500, objective loss: 2.4"])
    assert (r.step, r.loss) == (500, 2.4)
    assert run(["step_index=7 loss=1.0", "step_index=8 loss=0.9"]).step == 8


def test_a_loss_qualified_in_words_and_an_initial_loss() -> None:
    line = (
        "Start loss: 900.5; Mean loss (over 50 steps): {v}: {p}%|###       | {n}/4000 [00:10<00:40, 80.0it/s]"
    )
    lines = [line.format(v=v, p=p, n=n) for v, p, n in (("35.5", 20, 800), ("31.25", 25, 1000))]
    r = run(lines)
    assert (r.step, r.loss) == (1000, 31.25)
    r = run(["Init loss: 99.0 | step 10 | loss: 3.5", "Init loss: 99.0 | step 20 | loss: 3.25"])
    assert r.loss == 3.25
    # a qualifier naming an evaluation set is an evaluation value
    r = run(
        ["epoch 3  Loss (train): 0.52  Loss (val): 0.71", "epoch 4  Loss (train): 0.50  Loss (val): 0.70"]
    )
    assert (r.step, r.loss) == (4, 0.50)


def test_a_line_from_an_evaluator_component_is_evaluation() -> None:
    lines = [
        "[2031-01-02 10:00:01.5][INFO](engine.TrainerLoop) - Epoch: 4/20, Iter: 8/8 -- loss: 0.93",
        "[2031-01-02 10:00:02.5][INFO](engine.ModelEvaluator) - run resuming from iteration 0, epoch 3 until 4 epochs",
    ]
    r = run(lines)
    assert (r.step, r.total_steps, r.loss) == (8, 8, 0.93)
    r = run(
        [
            "[Learner] Steps = 12 | Loss = 0.7",
            "[Evaluator] Steps = 3 | Episode Return = 4.0",
        ]
    )
    assert (r.step, r.loss) == (12, 0.7)


def test_an_epoch_column_is_the_counter_when_the_bar_after_the_row_was_cut() -> None:
    head = "      Round      mem    p_loss    q_loss  Objects   Size"
    rows = [f"      {e}/40      2.0G      0.{e}1      1.{e}2       7    640: 100%|#" for e in (11, 12)]
    r = run([head, rows[0], head, rows[1]])
    assert (r.step, r.total_steps, r.loss) == (12, 40, None)
    # with the bar's count still there, it is the counter
    whole = rows[1].replace("100%|#", "100%|##########| 50/50 [00:20<00:00,  2.5it/s]")
    assert (run([head, whole]).step, run([head, whole]).total_steps) == (50, 50)

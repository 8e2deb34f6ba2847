"""Line and record shapes met on unseen logs (issue 10, seventh pass). Every case is a variant
written here (keys, separators, orders, languages and values of our own), none is a line of a
data set."""

from __future__ import annotations

from schedmate.tracker import MetricTracker


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_python_loggings_default_prefix_is_not_part_of_the_line() -> None:
    # `LEVEL:logger:message`, logging's default format, before a bare [epoch, batch] pair
    lines = [f"INFO:trainer:[3, {i:4d}] loss: -{i}1.5" for i in range(10, 13)]
    r = run(["WARNING:py.warnings:a deprecation notice", *lines])
    assert (r.step, r.loss) == (12, -121.5)


def test_a_fraction_with_thousands_separators_is_one_counter() -> None:
    bar = " {p}% ━━━━━━━━━━━━ {n:,}/120,000  [ 0:0{p}:00 < 0:00:00 , 640 it/s ]"
    r = run([bar.format(p=p, n=n) for p, n in ((3, 40_960), (7, 81_920))])
    assert (r.step, r.total_steps, r.step_time_s) == (81_920, 120_000, 1 / 640)
    r = run(["iter 1,900/2,000 | loss 0.31", "iter 2,000/2,000 | loss 0.30"])
    assert (r.step, r.total_steps, r.loss) == (2000, 2000, 0.30)
    # a finished bar overshooting its total by the last chunk of work
    r = run([bar.format(p=p, n=n) for p, n in ((7, 81_920), (100, 122_880))])
    assert r.step == 122_880  # (its total, exceeded, is not reported: progress stays <= 1)
    assert run(["[2,400/2,000] loss 0.30"]).step is None  # not a finished bar: not a counter


def test_the_only_whole_number_of_a_positional_value_list_is_the_counter() -> None:
    lines = []
    for k in range(1, 4):
        lines += [
            f"INFO:vocoder:Train Epoch: 12 [{k * 30}%]",
            f"INFO:vocoder:[2.4{k}, 1.9, nan, {k}400, 3.1e-4]",
        ]
    r = run(lines)
    assert (r.last_progress_line, r.step, r.loss) == (lines[-1], 3400, None)
    assert run(["[0.25, 0.5, 1.0]", "[0.5, 0.75, 1.0]"]).step is None  # a vector of values: no counter
    assert run(["[4, 7]", "[5, 8]"]).step is None  # two whole numbers: which is the counter is unknown


def test_a_list_of_names_then_the_list_of_their_values() -> None:
    r = run([f"Ep {e} [Mean. Loss, Loss, lr] = [0.5{e}, 0.4{e}, 1e-3]" for e in (3, 4)])
    assert (r.step, r.loss) == (4, 0.44)
    r = run([f"step {s} [train loss, val loss]: [0.{s}1, 0.{s}9]" for s in (5, 6)])
    assert (r.step, r.loss) == (6, 0.61)


def test_a_range_of_minibatches_reports_its_end() -> None:
    lines = [
        f"Epoch[2 of 5]-Minibatch[ {a}- {a + 9}, {a + 9}.0%]: loss = 0.3{a}; time = 0.05s" for a in (31, 41)
    ]
    r = run(lines)
    assert (r.step, r.total_steps, r.loss, r.step_time_s) == (50, None, 0.341, 0.05)


def test_a_line_naming_itself_training_ends_an_evaluation_section() -> None:
    def run_lines(first: int, loss: str) -> list[str]:
        return [
            f"Epoch {first}/9",
            f"Training: 100%|##########| 50/50 [00:20<00:00,  2.50it/s, loss={loss}]",
            "Validating: 100%|##########| 10/10 [00:02<00:00,  5.00it/s]",
        ]

    lines = [*run_lines(9, "0.41"), "Testing in evaluation mode", "mIoU 0.52", *run_lines(1, "1.93")]
    r = run(lines)
    assert (r.last_progress_line, r.loss) == (lines[-2], 1.93)  # the second run, appended


def test_ce_is_a_loss_named_by_its_kind() -> None:
    r = run([f"Train | ep {e} | lr=2.0E-04 | ce={e}.25 | ppl=9.5" for e in (1, 2)])
    assert (r.step, r.loss) == (2, 2.25)
    r = run([f"step {s} loss 3.{s} ce 2.{s} aux 0.5" for s in (1, 2)])
    assert r.loss == 3.2  # beside a loss, ce is one of its terms


def test_json_values_in_one_element_lists() -> None:
    lines = [f'{{"round": [{n}], "train_policy_losses": ["0.{n}1"], "val_return": ["7.5"]}}' for n in (7, 8)]
    r = run(lines)
    assert (r.step, r.loss) == (8, None)  # only a component loss: no total
    r = run([f'{{"epoch": [{n}], "train_loss": ["0.{n}3"]}}' for n in (7, 8)])
    assert (r.step, r.loss) == (8, 0.83)


def test_a_counterless_average_loss_after_the_loop_is_its_summary() -> None:
    loop = [f"Ep 1 [{n}/300]  loss= 0.{n // 10}5" for n in (100, 200, 300)]
    for summary in ("Train result: Mean loss: 0.21", "avg loss 0.21"):
        r = run([*loop, summary, "Val result: Mean loss: 0.30"])
        assert (r.last_progress_line, r.step, r.loss) == (loop[-1], 300, 0.305)
    # after a counter line that printed no loss, the average is the record's own loss
    r = run(["Ep 1", "avg loss 0.21", "Ep 2", "avg loss 0.19"])
    assert r.loss == 0.19


def test_a_bar_described_as_validate_is_evaluation() -> None:
    lines = [
        "Train Ep #4: 100% 800/800 [10:00<00:00,  1.33it/s, loss=0.52]",
        "Validate Ep #4: 100% 40/40 [00:20<00:00,  2.00it/s, loss=0.61]",
    ]
    r = run(lines)
    assert (r.last_progress_line, r.step, r.loss) == (lines[0], 800, 0.52)


def test_up_dot_abbreviates_updates() -> None:
    lines = [f"Ep. 3 : Up. {u} : Sen. {u * 4} : Cost {9 - u / 1000:.2f} : L.r. 1.0e-04" for u in (4000, 5000)]
    r = run(lines)
    assert (r.step, r.loss) == (5000, 4.0)


def test_time_since_the_epoch_began_is_not_a_step_time() -> None:
    lines = ["Epoch 7/9"]
    lines += [f"  it {n}/120 | Loss: 0.{n % 10}1 | Time: {n * 0.45:.1f}s" for n in range(20, 121, 20)]
    lines += ["Epoch 8/9", "  it 20/120 | Loss: 0.31 | Time: 9.2s", "  it 40/120 | Loss: 0.29 | Time: 18.1s"]
    r = run(lines)
    assert (r.step, r.loss, r.step_time_s) == (40, 0.29, None)
    # the same field, steady from line to line, is a step's time
    r = run([f"  it {n}/120 | Loss: 0.30 | Time: 0.45s" for n in range(20, 121, 20)])
    assert r.step_time_s == 0.45


def test_a_table_whose_loss_named_column_holds_words_does_not_crash() -> None:
    # a data frame's dtypes (`reg-loss  float32`) read as a header, then a row of percent labels
    r = run(["reg-loss       float32", "      25%       50%        max"])
    assert r.error is None and r.loss is None


def test_a_progbar_counting_samples_gives_each_samples_time() -> None:
    lines = [
        "Epoch 3/3",
        " 2048/12000 [====>.........................] - ETA: 9s - loss: 0.47",
        "12000/12000 [==============================] - 11s 910us/sample - loss: 0.41",
    ]
    r = run(lines)
    assert (r.step, r.loss, r.step_time_s) == (12000, 0.41, 0.00091)


def test_evaluate_and_predict_bars_after_the_last_epoch_are_not_training() -> None:
    bar = "━━━━━━━━━━━━━━━━━━━━"
    lines = [
        "Epoch 4/30",
        f"211/212 {bar} 0s 40ms/step - acc: 0.97 - loss: 0.081",
        f"212/212 {bar} 9s 41ms/step - acc: 0.97 - loss: 0.080 - val_acc: 0.91 - val_loss: 0.33",
        "Epoch 4: early stopping",
        f"63/63 {bar} 1s 15ms/step - acc: 0.88 - loss: 0.412",
        f"63/63 {bar} 1s 14ms/step",
    ]
    r = run(lines)
    assert (r.last_progress_line, r.step, r.loss, r.step_time_s) == (lines[2], 212, 0.080, 0.041)


def test_a_time_as_long_as_the_reporting_interval_is_not_a_step_time() -> None:
    # reports every 200 updates, 61 s apart: `time 60.8s` is the interval's
    lines = [
        f"[2024-03-02 10:{m:02d}:{s:02d}] upd {u} | cost 3.{u // 100} | time 60.8s"
        for m, s, u in ((1, 0, 800), (2, 1, 1000), (3, 2, 1200))
    ]
    r = run(lines)
    assert (r.step, r.step_time_s) == (1200, None)
    # reports every 20 iterations, 6 s apart: `time: 0.30` is one iteration's
    lines = [
        f"[2024-03-02 10:01:{s:02d}] iter {i} loss 0.5 time: 0.30" for s, i in ((0, 20), (6, 40), (12, 60))
    ]
    assert run(lines).step_time_s == 0.30


def test_a_bars_final_refresh_after_the_run_report_is_the_training_bar() -> None:
    # the bar never reported before the report (it was at 0): nothing says it is another loop
    lines = [
        "  0%|          | 0/2 [00:00<?, ?it/s]",
        "{'train_runtime': 30.5, 'train_steps_per_second': 0.066, 'train_loss': 1.92, 'epoch': 1.0}",
        "100%|██████████| 2/2 [00:30<00:00, 15.20s/it]",
    ]
    r = run(lines)
    assert (r.has_progress, r.step, r.step_time_s) == (True, 2, 15.2)
    # a whole loop running after the report, with none before it, is not the training loop
    later = [f"{n * 10:3d}%|#         | {n}/10 [00:0{n}<00:10,  1.00s/it]" for n in range(1, 11)]
    assert not run([*lines[1:2], *later]).has_progress


def test_a_checkpoint_notice_is_not_the_loops_latest_report() -> None:
    loop = [f"ep={e} it={e * 40} ret=12.5 eps=0.1 loss=0.{e}4" for e in (1, 2)]
    for notice in (
        "saved=/tmp/run/q.pt it=100 steps_per_s=4.2",
        "Saving checkpoint to /tmp/run at it 100 (4.2 it/s)",
    ):
        r = run([*loop, notice])
        assert (r.step, r.loss, r.step_time_s) == (80, 0.24, None)
    # a line that saves and reports its loss is still a report
    assert run([*loop, "checkpoint it=100 loss=0.19"]).loss == 0.19


def test_a_loop_that_reports_only_its_rate_of_steps() -> None:
    lines = [
        "W1101 08:00:00.1 trainer.py:90] starting",
        "I1101 08:01:40.0 hooks.py:21] global_step/sec: 3.125",
    ]
    r = run(lines)
    assert (r.has_progress, r.step, r.step_time_s) == (True, None, 0.32)
    # beside a loss line, the loss line still reports the step
    r = run(["global_step/sec: 3.125", "loss = 0.71, step = 900 (32.0 sec)"])
    assert (r.step, r.loss) == (900, 0.71)


def test_early_stopping_written_as_one_identifier_is_a_summary() -> None:
    loop = [f"it:{i}/900 trn_loss:1.{i // 100} t:{i * 90}ms avg:90.0ms" for i in (200, 300)]
    for stop in ("stopping_early: time budget it:330/900", "Stopping early (patience): it 330/900"):
        r = run([*loop, stop])
        assert (r.step, r.loss) == (300, 1.3)


def test_an_unclosed_list_of_numbers_is_read_in_linear_time() -> None:
    """Items that could be read as one grouped number (`123,456`) or two made the list pattern
    backtrack exponentially on a list that never closes (14 items: 12 s)."""
    import time

    from schedmate.tracker.parse import parse_line

    for n in (24, 4000):
        t = time.perf_counter()
        parse_line("[" + ",".join(["123"] * n) + " x]")
        assert time.perf_counter() - t < 0.5


def test_long_digit_runs_in_values_are_read_in_linear_time() -> None:
    """A number pattern that could split its digits two ways (`\\d+\\.?\\d*`) made a value
    pair of long digit runs cubic (two 400-digit runs: 9 s); it is unambiguous now."""
    import time

    from schedmate.tracker.parse import parse_line

    d = "7" * 3000
    for line in (f"loss: {d}/{d}x", f"a/b/c/d/e/f: {'/'.join([d] * 6)}x", f"[a, b, c]: [{d}, {d}, {d} x"):
        t = time.perf_counter()
        parse_line(line)
        assert time.perf_counter() - t < 0.5

"""Line and record shapes met on unseen logs (issue 10, ninth pass). Every case is a variant
written here (keys, separators, orders, languages and values of our own), none is a line of a
data set."""

from __future__ import annotations

from schedmate.tracker import MetricTracker


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_a_global_step_beside_a_count_within_the_epoch_is_the_step_without_that_total() -> None:
    # the within-epoch fraction's total cannot bound a step far beyond it
    line = "step=90412 | ep 31/90 | iter 17/50 | loss 0.412"
    r = run([line, line.replace("90412", "90413").replace("17/50", "18/50")])
    assert (r.step, r.total_steps, r.loss) == (90413, None, 0.412)
    # the same with a bar whose description counts the within-epoch items
    bar = "global step: 90412; epoch: 31/90; iteration: 17/50; loss: 0.41:  34%|###4   | 17/50 [00:08<00:16,  2.05it/s]"
    r = run([bar])
    assert (r.step, r.total_steps) == (90412, None)
    assert abs(r.step_time_s - 1 / 2.05) < 1e-9
    # a step within its total keeps it
    assert run(["step 40 of epoch 3, iteration 40/50, loss 0.5"]).total_steps == 50


def test_a_counter_noun_holding_a_duration_with_its_unit_apart_is_the_step_time() -> None:
    lines = [
        f" [{'=' * i}>{'.' * (30 - i)}]  Step: {180 + i} ms | Tot: {2 * i}s | Loss: 1.{i} " for i in (3, 4)
    ]
    r = run(lines)
    assert (r.step, r.loss) == (None, 1.4)
    assert abs(r.step_time_s - 0.184) < 1e-9
    r = run(["iter 20 | batch: 0.9 s | loss 2.5"])
    assert (r.step, r.step_time_s) == (20, 0.9)


def test_an_epoch_line_after_its_finished_bar_is_the_epochs_report() -> None:
    lines = []
    for e in (1, 2):
        lines += [
            f"train: 100%|##########| 64/64 [01:00<00:00,  1.07it/s, loss_tr=0.{9 - e}]",
            "valid: 100%|##########| 20/20 [00:09<00:00,  2.20it/s]",
            f"trainer - epoch {e}, lr 3.0e-04 - train loss 0.{9 - e} - dev loss 1.{e}, dev WER 21.{e}",
        ]
    r = run(lines)
    assert r.last_progress_line == lines[-3]
    assert (r.step, r.total_steps, r.loss) == (64, 64, 0.7)
    assert abs(r.step_time_s - 1 / 1.07) < 1e-9


def test_a_bar_without_the_loss_of_the_training_bars_is_another_loop() -> None:
    lines = [
        "ep3: 100%|#####| 300/300 [02:00<00:00,  2.50it/s, loss=0.33]",
        "100%|#####| 40/40 [00:10<00:00,  4.00it/s]",
    ]
    r = run(lines)
    assert r.last_progress_line == lines[0]
    assert (r.step, r.loss) == (300, 0.33)
    # training bars that print no loss: a later bar counting to another total stays the latest
    lines = [
        "ep3: 100%|#####| 300/300 [02:00<00:00,  2.50it/s]",
        "ep4:  10%|#    | 30/300 [00:12<01:48,  2.50it/s]",
    ]
    assert run(lines).step == 30


def test_a_number_sign_counter_before_a_colon_counts_unless_a_stack_frame_follows() -> None:
    lines = [
        f"12:00:0{i} - trainer - INFO - Update #{40 + i}: lr 0.01, acc 51.0%, loss 1.{i}" for i in (1, 2)
    ]
    r = run(lines)
    assert (r.step, r.loss) == (42, 1.2)
    assert not run(
        ["frame #7: run_loop + 0x2a (0x55aa in /opt/app/bin)", "frame #8: main + 0x10"]
    ).has_progress


def test_cross_entropy_is_the_loss_unless_other_loss_functions_stand_beside_it() -> None:
    r = run([f"Step {s}: lr 0.001, accuracy 60.0%, Cross Entropy {2 - s / 100}" for s in (10, 20)])
    assert (r.step, r.loss) == (20, 1.8)
    # a cross-entropy beside a smooth-L1 term: terms of a total the line does not print
    r = run([f"[ep 3 | it {b}] cross-entropy: {b / 1000}; smooth_l1: 0.0{b}" for b in (20, 30)])
    assert (r.step, r.loss) == (30, None)
    r = run([f"iter {b}: focal 0.{b} giou 0.{b + 1}" for b in (20, 30)])
    assert (r.step, r.loss) == (30, None)


def test_a_rate_unit_written_as_the_key_before_its_value_names_that_value() -> None:
    r = run([f"step {s} loss 2.{s} tok/s 98000 lr 3e-4" for s in (1, 2)])
    assert (r.step, r.loss) == (2, 2.2)
    assert r.throughput is not None and r.throughput.value == 98000
    # a value with its rate unit after it, then the next value with its own, stays a rate
    r = run([f"step {s} 1500 samples/s 2.5 it/s loss 0.{s}" for s in (1, 2)])
    assert (r.step, r.loss, r.step_time_s) == (2, 0.2, 0.4)


def test_units_done_in_the_passive_count_and_name_their_record() -> None:
    lines = []
    for e in (7, 8):
        lines += [f"{e} epochs have been completed", f"mean train loss: {1 / e:.4f}", f"Dev loss {2 / e:.4f}"]
        lines += ["Model written to ./ckpt/best.pt", ""]
    r = run(lines[:-3])
    assert (r.step, r.loss, r.last_progress_line) == (8, 0.125, "8 epochs have been completed")
    # a report of the whole run in the same words is not a count of the loop
    r = run(["iter 40 loss 0.5", "iter 50 loss 0.4", "50 iterations completed in 0.3 hours."])
    assert (r.step, r.last_progress_line) == (50, "iter 50 loss 0.4")


def test_a_single_digit_counter_before_words_is_not_a_stage_when_it_counts_units_done() -> None:
    r = run(["2 steps have finished", "running loss = 0.85", "3 steps have finished", "running loss = 0.75"])
    assert (r.step, r.loss) == (3, 0.75)
    assert run(["Step 3: load the data", "Step 4: build the model"]).has_progress is False
    assert run(["Step 13: load the data", "Step 14: build the model"]).has_progress is False


def test_a_global_count_outranks_a_stage_count_of_the_same_noun() -> None:
    lines = [
        f"cycle 2 | inner iteration: {u - 500} | global iterations: {u} | sum_loss 0.0{u // 100}"
        for u in (600, 650)
    ]
    assert run(lines).step == 650


def test_a_line_cut_inside_its_last_number_is_named_as_the_file_has_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "run.log"
    log.write_text("warming up\n 40/900 [=>....] - ETA: 3:00 - acc: 0.5 - loss: 0.0371")  # no line end yet
    r = MetricTracker().track_file(log)
    assert (r.step, r.loss) == (40, None)  # the last number may still be growing
    assert r.last_progress_line == " 40/900 [=>....] - ETA: 3:00 - acc: 0.5 - loss: 0.0371"


def test_repeated_lines_without_progress_change_nothing_and_cost_little(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # a heading repeated keeps its section; a table header repeated keeps its table
    lines = ["it 10 loss 0.5 time 0.2s", "it 20 loss 0.4 time 0.2s"]
    lines += ["Running evaluation ..."] * 3 + ["it 5 loss 0.9 time 0.1s"]
    r = run(lines)
    assert (r.step, r.loss) == (20, 0.4)
    r = run(["epoch  loss  acc", "epoch  loss  acc", "1  0.50  0.7", "2  0.40  0.8"])
    assert (r.step, r.loss) == (2, 0.4)
    # a log of a million short lines after its progress: every window of them is read
    log = tmp_path / "run.log"
    log.write_text("step 7 | loss 0.25 | 0.5 s/it\n" + "ok\n" * 600_000 + "\r" * 600_000)
    r = MetricTracker().track_file(log)
    assert (r.step, r.loss, r.step_time_s) == (7, 0.25, 0.5)


def test_the_next_report_in_another_format_is_not_taken_for_the_line_before() -> None:
    r = run(["iter 1/10 | loss 2.0 | 0.5 s/it", "iter 2: loss=1.5"])
    assert (r.step, r.loss, r.last_progress_line) == (2, 1.5, "iter 2: loss=1.5")
    # a bare counter line beside a richer one of the same moment still takes the richer one
    r = run([" 50%|#####     | 41/82 [00:41<00:41,  1.00it/s]", "step=42, skipped=0"])
    assert (r.step, r.total_steps) == (41, 82)


def test_follow_catches_up_on_a_long_log_at_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import time

    log = tmp_path / "run.log"
    log.write_text("".join(f"step {i}/60000 loss {1 + 1 / i:.5f} time 0.01s\n" for i in range(1, 60_001)))
    t0 = time.perf_counter()
    ups = []
    for up in MetricTracker().follow(
        log, poll_s=0.01, stop=lambda: bool(ups) and ups[-1].result.step == 60_000
    ):
        ups.append(up)
    took = time.perf_counter() - t0
    # one update per read (of a megabyte), not one per line (that took minutes)
    assert ups[-1].result.step == 60_000 and ups[-1].result.total_steps == 60_000
    assert len(ups) <= 5 and took < 20

"""Line shapes met on unseen logs (issue 10, tenth pass). Every case is a variant written
here (keys, separators, orders and values of our own), none is a line of a data set."""

from __future__ import annotations

from schedmate.tracker import MetricTracker


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_a_rate_key_naming_inference_does_not_make_the_line_evaluation() -> None:
    """`fps ... inference: N` times the rollout's inference; the line is the training loop's."""
    lines = [
        f"sps total: 812 sps env and actor inference: 790 update: {u}/400 loss {1.0 / u:.3f}" for u in (7, 8)
    ]
    r = run(lines)
    assert r.has_progress and (r.step, r.total_steps, r.loss) == (8, 400, 0.125)
    lines = [f"fps step and policy inference: 2210 fps total: 2100 epoch: {e}/900" for e in (41, 42)]
    r = run(lines)
    assert r.has_progress and r.epoch == 42


def test_a_thousands_suffix_on_a_time_is_thousands_of_the_keys_unit() -> None:
    lines = [
        f"it {i} / 9000 | tokens: 1.2M | time_per_step_ms: 2.4K | tok_per_sec: 51.0K | loss: 2.{i}"
        for i in (5, 6)
    ]
    r = run(lines)
    assert (r.step, r.total_steps) == (6, 9000)
    assert abs(r.step_time_s - 2.4) < 1e-9
    r = run([f"step {i} | iter time (ms): 1.5k | loss 0.{i}" for i in (1, 2)])
    assert abs(r.step_time_s - 1.5) < 1e-9


def test_a_step_count_that_stays_while_the_epoch_advances_is_a_size() -> None:
    """`Steps: 812` printed with every epoch is how many steps an epoch has; the epoch counts."""
    lines = [f"Ep: {e}, Iters: 812 | Train Loss: {0.9 - e / 100:.2f} Dev Loss: 1.1" for e in (3, 4, 5)]
    r = run(lines)
    assert (r.step, r.loss) == (5, 0.85)
    # a real step that advances with the epoch stays the step
    lines = [f"ep {e} | step: {e * 812} | train loss 0.5" for e in (3, 4)]
    assert run(lines).step == 4 * 812
    # a finished per-epoch bar (`812/812` every epoch) keeps its count
    lines = [f"epoch {e}/30 gpu 3.1G loss 0.4: 100%|#####| 812/812 [00:09<00:00, 88.0it/s]" for e in (3, 4)]
    assert run(lines).step == 812


def test_a_boosting_round_scoring_a_set_named_by_the_user_is_evaluation() -> None:
    lines = [f"[{i}]\tmyset's l1: 0.{90 - i}\tmyset's auc: 0.{60 + i}" for i in (10, 11, 12)]
    r = run(lines)
    assert r.has_progress and r.step == 12 and r.loss is None
    # the training set's own metric stays the training loss
    lines = [f"[{i}]\ttraining's l2: 0.{90 - i}\tholdout's l2: 0.{95 - i}" for i in (10, 11)]
    r = run(lines)
    assert r.step == 11 and r.loss == 0.79


def test_a_bar_under_an_epoch_heading_reports_that_epoch() -> None:
    lines = [
        "Epoch 1/8",
        "300/300 [==============================] - 7s 22ms/step - loss: 0.70",
        "Epoch 2/8",
        "90/300 [========>.....................] - ETA: 4s - loss: 0.61\r100/300 [=========>....................] - ETA: 4s - loss: 0.60",
    ]
    r = run(lines)
    assert (r.epoch, r.step, r.total_steps) == (2, 100, 300)
    assert abs(r.progress - 400 / 2400) < 1e-3
    # a line that states its own epoch keeps it
    assert run(["Epoch 3/8", "epoch 5 iter 10/300 loss 0.5"]).epoch == 5


def test_the_eta_comes_from_the_timestamps_when_no_line_states_a_step_time() -> None:
    lines = [
        f"[2025-03-02 08:{m:02d}:00] it {i}/2000 | train loss {3.0 - i / 1000:.3f}"
        for m, i in ((0, 400), (2, 500), (4, 600))
    ]
    r = run(lines)
    assert r.step_time_s is None  # the field says what the lines say
    assert r.eta_s is not None and abs(r.eta_s - 1400 * 1.2) < 1e-6  # 120 s per 100 steps
    # a stated step time still decides
    r = run([ln + " | 0.5 s/it" for ln in lines])
    assert r.step_time_s == 0.5 and abs(r.eta_s - 1400 * 0.5) < 1e-6

"""Line shapes met on unseen logs (issue 10, eleventh pass, session 13). Every case is a
variant written here (keys, separators, orders and values of our own), none is a line of a
data set."""

from __future__ import annotations

import pytest

from schedmate.tracker import MetricTracker


def run(lines: list[str]):  # type: ignore[no-untyped-def]
    return MetricTracker().track_lines(lines)


def test_an_epoch_report_whose_value_went_nan_is_still_a_report() -> None:
    """`Epoch(7) train-f1: nan` after the in-loop lines of epoch 7: the epoch's report, not
    its last step (a NaN is a value, as a number would be)."""
    lines = [
        "Epoch(7) Iter(300) throughput: 51.0 samples/s train-f1: 0.41",
        "Epoch(7) Iter(320) throughput: 50.2 samples/s train-f1: 0.40",
        "Epoch(7) train-f1: nan",
    ]
    r = run(lines)
    assert r.step == 320 and r.last_progress_line == lines[1]
    r = run([*lines[:2], "Epoch(7) train-f1: 0.39"])
    assert r.step == 320  # the same report with a number


@pytest.mark.parametrize("space", ["", " "])
def test_a_counter_in_parentheses_is_the_counter(space: str) -> None:
    """`Epoch(7) Iter(300)` / `Epoch (7)`: the value in parentheses is the key's, not a
    qualifier of the key (`gpu_mem(GB) 3.2` keeps its qualifier)."""
    lines = [f"Epoch{space}(7) Iter{space}({i}) lr 1e-3 objective: {i / 1000:.2f}" for i in (300, 320)]
    r = run(lines)
    assert (r.epoch, r.step) == (7, 320)
    r = run([f"step {i} gpu_mem(GB) 3.2 loss 0.{i}" for i in (11, 12)])
    assert r.step == 12 and r.loss == 0.12


def test_an_epoch_line_restating_the_loops_keys_is_the_epochs_aggregate() -> None:
    """A loop printing one line per metric for a step, then the epoch's aggregate of each:
    the in-loop lines are the progress (the step), the epoch lines its summary."""
    lines = [
        "epoch 3 | batch 410 | rate 88.1 rows/s | train-rmse=0.52",
        "epoch 3 | batch 410 | rate 88.1 rows/s | train-mape=4.1",
        "epoch 3 | train-rmse=0.49",
        "epoch 3 | train-mape=4.0",
    ]
    r = run(lines)
    assert r.step == 410 and r.last_progress_line == lines[1]
    # after in-loop lines without a loss, an epoch line with one is where the loop's loss is printed
    acc = [t.replace("train-rmse=0.52", "train-acc=0.52") for t in lines[:1]]
    r = run([*acc, "epoch 3 | loss=0.31"])
    assert r.last_progress_line == "epoch 3 | loss=0.31"


def test_a_double_colon_separates_a_key_from_its_value() -> None:
    lines = [f"ep {e}: train loss :: {1.5 - e / 10:.3f}, train f1 :: 0.4" for e in (1, 2)]
    r = run(lines)
    assert r.has_progress and r.step == 2 and abs(r.loss - 1.3) < 1e-9


def test_a_leading_pair_separated_by_a_colon_is_epoch_and_step() -> None:
    """`[3 :  41000] gen loss : 2.1 ...`: the leading bracket is (epoch, step)."""
    lines = [f"[3 :  {i}] gen loss : 2.1 critic loss : -1.{i % 7}" for i in (41000, 42000)]
    r = run(lines)
    assert r.has_progress and r.step == 42000


@pytest.mark.parametrize("opening", ["[", "{", " {"])
def test_a_config_block_named_like_a_split_opens_no_evaluation_section(opening: str) -> None:
    """A config dump's `valid:{` block is a setting, not an evaluation heading: the training
    lines after the dump are training."""
    lines = [
        "config:{",
        f"  valid:{opening}",
        "    freq: 500.0",
        "    keep: False",
        "  }",
        "}",
        *(
            f"[epoch: {e:3d}, iter: {i:6d}] time (data): 0.8 (0.1) l_pix: 1.0e-03"
            for e, i in ((1, 90), (2, 180))
        ),
    ]
    r = run(lines)
    assert r.has_progress and r.step == 180


def test_an_epoch_that_ended_is_a_summary_of_its_loop() -> None:
    lines = [
        "Epoch 12: 1999it [03:01, 11.0it/s, lr=1e-4, l1=0.02, step=9998]",
        "Epoch 12: 2000it [03:01, 11.0it/s, lr=1e-4, l1=0.02, step=9999]",
        "Epoch 11 ended. Steps: 9999. {'total_loss': 0.05}",
    ]
    r = run(lines)
    assert r.step == 9999 and r.last_progress_line == lines[1]


def test_a_schedule_line_after_the_steps_report_is_not_the_report() -> None:
    """`It 300, lr = 0.009` after `It 300 (5.1 it/s), objective = 0.41` and its continuation
    line: the step's learning-rate line; the report with the loss is the progress line."""
    lines = []
    for i in (200, 300):
        lines += [
            f"I1231 10:00:{i // 100:02d}.5 77 runner.cc:90] It {i} (5.1 it/s, 19.6s/100 its), loss = 0.{i}",
            f"I1231 10:00:{i // 100:02d}.6 77 runner.cc:95]     Head output #0: loss = 0.{i} (* 1 = 0.{i} loss)",
            f"I1231 10:00:{i // 100:02d}.7 77 opt.cc:12] It {i}, lr = 0.00{9 - i // 100}",
        ]
    r = run(lines)
    assert (r.step, r.loss) == (300, 0.3) and r.last_progress_line == lines[3]
    # a line that only restates the learning rate of another step stays the latest
    r = run([*lines[:2], "I1231 10:00:02.7 77 opt.cc:12] It 250, lr = 0.008"])
    assert r.step == 250


def test_a_model_summary_row_is_not_progress() -> None:
    """A layer table's row: `norm_4 (Batch (None, 64)   256`: the parenthesised shape is no
    qualifier of a `Batch` key, and 256 is a parameter count, not a step."""
    lines = [
        "conv_3 (Conv2D)              (None, 14, 14, 64)        36928",
        "norm_4 (Batch (None, 64)                  256",
        "norm_5 (Batch (None, 128)                 512",
        "Total params: 37,696",
    ]
    r = run(lines)
    assert not r.has_progress


def test_the_cheap_heading_test_never_skips_a_line_that_says_something_about_sections() -> None:
    """(session-13 break test: 1M distinct numbered lines took 22 s, each read as a possible
    section heading) The cheap pre-test must be exact: whatever it skips, the full reading
    would have found nothing in."""
    import random

    from schedmate.tracker.fields import lexicon
    from schedmate.tracker.state import _heading, _may_be_heading

    lex = lexicon()
    vocab = [
        *sorted(lex.eval_headings),
        *sorted(lex.train_words),
        *sorted(lex.summary_words),
        "metrics",
        "results",
    ]
    vocab += ["worker", "ready", "pid", "loading", "INFO", "epoch", "host", "=", "|", "-", "(x)", "[a]"]
    rng = random.Random(13)
    for _ in range(20000):
        parts = [
            rng.choice(vocab) if rng.random() < 0.7 else str(rng.randint(0, 99999))
            for _ in range(rng.randint(1, 7))
        ]
        text = " ".join(parts)
        if rng.random() < 0.3:
            text = "2031-01-02 03:04:05,678 " + text
        if rng.random() < 0.3:
            text += rng.choice(
                [":", ": 2031-01-02 03:04:05", ": 2031-01-02_03:04:05 ", " (n=3):", ":  ", " 12:00:01"]
            )
        if not _may_be_heading(text):
            assert _heading(text) == (None, None, None), text


@pytest.mark.parametrize("word", ["No.", "Nr.", "number", "no"])
def test_a_counter_key_with_a_number_word_is_the_counter(word: str) -> None:
    """`Iteration No. 40`, `Epoch number: 3`: the word says the value is the unit's number."""
    r = run([f"Iteration {word} {i}, objective = 0.{i}" for i in (40, 41)])
    assert r.step == 41
    r = run([f"Epoch {word}: {e} loss {e / 10}" for e in (3, 4)])
    assert r.epoch == 4

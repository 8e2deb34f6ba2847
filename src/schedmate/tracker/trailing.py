"""Which trailing lines are not the latest progress line, and when a log's counter lines
never reported a step: end-of-epoch summaries after the in-loop line that reached their
counter, an epoch header after a bar, an epoch report after an in-loop line of its epoch,
metricless bars of another loop, an `evaluate()` bar after the last epoch's, a timing report
after a counter line, a trainer's closing record without the loss its records carried, a loop
that was announced but never moved. Used by `state.summarize`
(see docs/tracker.md, "Which line counts")."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from schedmate.core.types import ProgressSample
from schedmate.tracker.fields import done_words
from schedmate.tracker.parse import strip_timestamps

__all__ = [
    "CONTINUATION",
    "drop_bars_of_another_loop",
    "drop_closing_record",
    "drop_epoch_reports",
    "drop_evaluate_after_fit",
    "drop_headers_after_a_bar",
    "drop_schedule_lines",
    "drop_trailing_summaries",
    "drop_trailing_timings",
    "never_moved",
]


def never_moved(train: Sequence[tuple[ProgressSample, bool]]) -> bool:
    """Only counter lines that never moved and state nothing else (`Epoch 1 started!`, a
    launcher's `Running step 1`, then a crash): the loop was announced, no step was reported."""
    if any(
        bar or s.has_metrics_besides_counters() or _reported().search(s.text) or _numbers(s.text) > 2
        for s, bar in train
    ):
        return False  # a bar, a metric, a table row, a unit done (`Finish 1 epoch`), other values: a report
    return len({s.step for s, _ in train}) == 1 and len({s.epoch for s, _ in train}) <= 1


def _numbers(text: str) -> int:
    return len(_NUMBER.findall(_CLOCK.sub(" ", strip_timestamps(text))))


_CLOCK = re.compile(r"\d+:\d\d(?::\d\d)?(?:[.,\-]\d+)?")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d+)?|(?i:nan|inf)\b)")  # a value gone NaN is a value


@lru_cache(maxsize=1)
def _reported() -> re.Pattern[str]:
    """A table row, or a line saying a unit has ended: a report, not a trailing timing."""
    return re.compile(rf"^\s*[|│]|\b(?:{done_words()})\b", re.I)


def drop_trailing_summaries(
    train: list[tuple[ProgressSample, bool]],
) -> list[tuple[ProgressSample, bool]]:
    """End-of-epoch / end-of-run summaries are not taken over the last in-loop line that
    already reached their counter (`Training complete at step 400` after `step=400 ...`)."""
    end = len(train)
    while end > 1 and train[end - 1][0].summary:
        s = train[end - 1][0]
        loop = [x for x, _ in train[: end - 1] if not x.summary]
        if not loop:
            break
        if s.step is None:
            # a counterless loss after loop lines that printed none is the record's own (`Epoch 3`
            # then `avg loss: 0.5`), not a summary of them
            reached = s.loss is None or loop[-1].loss is not None
        elif s.epoch is not None and s.step == s.epoch:  # an epoch summary: compare epochs
            # (a loop counting only global steps reached the epoch it just summarised)
            reached = all(x.epoch is None for x in loop[-50:]) or any(
                x.epoch is not None and x.epoch >= s.epoch for x in loop[-50:]
            )
        else:
            # reached, or stopped before the loop's next report (`Target reached at step 6034`
            # after reports every 50 steps up to 6000): the summary closes that loop
            steps = [x.step for x in loop[-50:] if x.step is not None]
            gap = steps[-1] - steps[-2] if len(steps) > 1 and steps[-1] > steps[-2] else 0
            reached = bool(steps) and max(steps) + gap >= s.step
        if not reached:
            break
        end -= 1
    return train[:end]


_PROGBAR = re.compile(r"\d+/\d+ \[[=>.]+\]|^\s*(\d+)/\1 - \d")  # a Keras bar, also its verbose=2 final line


def _drop_trailing(
    train: list[tuple[ProgressSample, bool]],
    in_run: Callable[[ProgressSample, bool], bool],
    yields_to: Callable[[ProgressSample, bool], bool],
) -> list[tuple[ProgressSample, bool]]:
    """Drop the trailing run of samples `in_run` accepts when the sample just before the run
    is one it `yields_to` (that sample is then the latest progress line)."""
    end = len(train)
    while end > 1 and in_run(*train[end - 1]):
        end -= 1
    if end < len(train) and yields_to(*train[end - 1]):
        return train[:end]
    return train


def _bare_epoch_header(s: ProgressSample, bar: bool) -> bool:
    return not bar and s.step is not None and s.step == s.epoch and not s.has_metrics_besides_counters()


def drop_headers_after_a_bar(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """`Epoch 8/10` alone after a progress bar announces the next bar: until that bar moves,
    the last bar state is the progress (as a bar at 0 is not progress yet). After loop lines
    that are not bars the header is the latest progress line."""
    return _drop_trailing(train, _bare_epoch_header, _is_bar)


def _epoch_report(s: ProgressSample, bar: bool) -> bool:
    # an epoch-only line with a value besides its counters, but no loss or time (`Epoch 3/10
    # train accuracy: 97.8%`): a pass over a data set after the loop, not a training step
    return (
        not bar
        and s.step is not None
        and s.step == s.epoch
        and s.loss is None
        and not s.loss_is_nan
        and s.step_time_s is None
        and _numbers(s.text) > (2 if s.total_steps or s.total_epochs else 1)
    )


def drop_epoch_reports(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """Epoch reports after an in-loop line of the same epoch (one with a step inside the epoch)
    are not the latest progress line; that in-loop line is."""
    last_epoch = train[-1][0].epoch if train else None

    def in_loop(s: ProgressSample, bar: bool) -> bool:
        return s.epoch == last_epoch and s.step is not None and s.step != s.epoch

    # (a loop may print one line per metric for the same step)
    loop_keys = set().union(*(_keys(s.text) for s, bar in train[-8:] if in_loop(s, bar)))

    def report(s: ProgressSample, bar: bool) -> bool:
        # also an epoch-only line that only restates keys of the epoch's in-loop line
        # (`Epoch[4] Train-F1=0.6` after `Epoch[4] Batch [300] ... Train-F1=0.5`): its aggregate
        if _epoch_report(s, bar):
            return True
        keys = _keys(s.text)
        return not bar and s.step is not None and s.step == s.epoch and bool(keys) and keys <= loop_keys

    train = _drop_trailing(train, report, in_loop)
    # `64/64 [01:00<00:00, loss_tr=0.7]` then `epoch 2, lr 3e-4 - train loss 0.7 - dev loss
    # 1.2`: an epoch's line after the bar of its loop finished with a loss reports the epoch
    # (after a bar without one, the epoch's line is where the loop's loss is printed)
    # (an evaluation bar without a loss may come between: another loop, dropped below)
    end = len(train)
    while end > 1 and _epoch_line(*train[end - 1]):
        end -= 1
    before = end
    while before > 1 and _is_bar(*train[before - 1]) and train[before - 1][0].loss is None:
        before -= 1
    if end < len(train) and _finished_lossful_bar(*train[before - 1]):
        return train[:end]
    return train


_KEY = re.compile(r"([^\W\d][\w\-./]*)\s*[=:]\s*[-+]?(?:\.?\d|nan\b|inf\b)", re.I)


def _keys(text: str) -> set[str]:
    """The keys of a line's `key=value` / `key: value` pairs, lower case."""
    return {k.lower() for k in _KEY.findall(strip_timestamps(text))}


def _epoch_line(s: ProgressSample, bar: bool) -> bool:
    return not bar and s.step is not None and s.step == s.epoch and s.has_metrics_besides_counters()


def _finished_lossful_bar(s: ProgressSample, bar: bool) -> bool:
    return (
        _is_bar(s, bar)
        and s.step is not None
        and s.step == s.total_steps
        and (s.loss is not None or s.loss_is_nan)
    )


def _is_bar(s: ProgressSample, bar: bool) -> bool:
    return bar or bool(_PROGBAR.search(strip_timestamps(s.text)))  # (after a logger's or launcher's prefix)


def drop_bars_of_another_loop(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """Bars without a loss after the training bars that print one, counting to another total
    (`20000/22124 [====>..] - ETA: 0s` after `88493/88493 [...] - loss: 0.28`): a prediction
    or evaluation pass after training, not its progress."""
    total = train[-1][0].total_steps if train else None

    def metricless(s: ProgressSample, bar: bool) -> bool:
        # (a rate is any bar's own: a bar without the loss the training bars print is not theirs)
        return (
            _is_bar(s, bar)
            and s.total_steps == total
            and s.loss is None
            and s.lr is None
            and not s.loss_is_nan
        )

    def lossful_bar(s: ProgressSample, bar: bool) -> bool:
        return _is_bar(s, bar) and (s.loss is not None or s.loss_is_nan) and s.total_steps != total

    return _drop_trailing(train, metricless, lossful_bar) if total is not None else train


_FINISHED_PROGBAR = re.compile(r"^\s*(\d+)/\1 (?:\[[=>.]+\]|[━─]+)")


def drop_evaluate_after_fit(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """A finished Keras-style bar right after the finished bar of the last epoch, with no
    `Epoch k/M` header between and other values (no `val_` metrics, which the epoch's own
    closing update adds): an `evaluate()` pass after `fit()`, not another epoch."""
    end = len(train)
    while (
        end > 1 and len(train) - end < 2 and _FINISHED_PROGBAR.match(strip_timestamps(train[end - 1][0].text))
    ):
        if "val_" in train[end - 1][0].text or _bare_epoch_header(train[end - 2][0], False):
            break  # an epoch's own closing update
        end -= 1  # an `evaluate()` bar, and a `predict()` bar after it
    first = end  # the first of those bars
    while end > 1 and train[end - 1][0].summary:
        end -= 1  # `Epoch 4: early stopping` between the last epoch and the evaluation
    if first == len(train) or end < 2:
        return train
    done = train[end - 1][0]
    if not _FINISHED_PROGBAR.match(strip_timestamps(done.text)):
        return train
    # the last epoch's closing update: it states the `val_` metrics, or follows its epoch header
    if "val_" not in done.text and not _bare_epoch_header(train[end - 2][0], False):
        return train
    after = [s for s, _ in train[first:]]
    if after[0].loss is None or any(s.loss == done.loss for s in after):
        return train
    return train[:end]


def _timing_report(s: ProgressSample, bar: bool) -> bool:
    # neither a counter nor a loss, only a time; an indented line continues its record instead
    return (
        not bar
        and s.step is None
        and s.loss is None
        and not s.loss_is_nan
        and s.step_time_s is not None
        and not CONTINUATION.match(s.text)
    )


def drop_trailing_timings(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """A timing report after a counter line (`Train epoch time: 11617 ms, per step time: 187
    ms`) states neither a counter nor a loss: it is not the latest progress line; the counter
    line before it is (with its own fields)."""
    return _drop_trailing(train, _timing_report, lambda s, _bar: s.step is not None)


def drop_schedule_lines(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """A line that repeats the step of the line before it and states only the learning rate
    (`Iteration 100, lr = 0.0099` after `Iteration 100 (...), loss = 0.22`) is that step's
    schedule; the line before it, with the loss, is the step's report."""
    if len(train) < 2 or train[-1][1]:
        return train
    s = train[-1][0]
    if s.lr is None or s.loss is not None or s.loss_is_nan or s.step_time_s is not None or s.throughput:
        return train
    # the step's counter line, and the continuation lines printed after it (`Train net output: loss`)
    at = next(
        (k for k in range(len(train) - 2, max(-1, len(train) - 5), -1) if train[k][0].step is not None), None
    )
    if at is None or train[at][0].step != s.step or all(x.loss is None for x, _ in train[at:-1]):
        return train
    return train[: at + 1]


def drop_closing_record(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """A last record without the loss every record before it carried (`{"step": 60, "of": 60,
    "epoch": 2.0}` after records with `"loss"`) is the record a trainer writes when it closes,
    not a report of a step: the record before it is the latest progress line."""
    if len(train) < 4 or train[-1][1] or not _is_record(train[-1][0]) or train[-1][0].loss is not None:
        return train
    if all(_is_record(s) and (s.loss is not None or s.loss_is_nan) for s, _ in train[-4:-1]):
        return train[:-1]
    return train


def _is_record(s: ProgressSample) -> bool:
    return s.text.lstrip()[:1] == "{" and s.step is not None


CONTINUATION = re.compile(
    r"^(?:\s|\||[:;,]\S)"
)  # indented, a table row, or the rest of a line split after a key

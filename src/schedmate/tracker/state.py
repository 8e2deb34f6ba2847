"""From progress lines to the tracker's answer: samples, their merge, ETA and events.

Frameworks spread one step's metrics over several lines (a tqdm bar plus a loss dict, a
header line plus indented `key=value` lines, a metrics line plus a bar). The merge rule:
the step comes from the latest training sample that states one; every other field is the
latest value stated, except that at the anchor's step a full metrics line wins over a
progress bar (bars print smoothed rates). Evaluation lines never feed training fields.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from schedmate.core.types import ProgressSample, Throughput, TrackEvent, TrackResult
from schedmate.tracker.classify import rate_of_steps_alone
from schedmate.tracker.events import EventDetector
from schedmate.tracker.fields import lexicon
from schedmate.tracker.parse import EVAL_WORDS, strip_timestamps
from schedmate.tracker.samples import KeyValueTable, TableReader, parse_timestamp, sample_from_line
from schedmate.tracker.templates import mask_line
from schedmate.tracker.trailing import (
    CONTINUATION,
    drop_bars_of_another_loop,
    drop_closing_record,
    drop_epoch_reports,
    drop_evaluate_after_fit,
    drop_headers_after_a_bar,
    drop_schedule_lines,
    drop_trailing_summaries,
    drop_trailing_timings,
    never_moved,
)

__all__ = [
    "sample_from_line",
    "TableReader",
    "KeyValueTable",
    "Sections",
    "summarize",
    "EventDetector",
    "parse_timestamp",
]

_WORD = re.compile(r"[^\W\d_]+")
_LOG_PREFIX = re.compile(r"^\s*(?:[A-Z]+:[\w.]+:|(?:\[[^\]]*\]\s*)+|[A-Z]+\s+[-|:]\s*)")
# settings, paths, prose, key: value, a config block's opening (`val: {`)
_NOT_HEADING = re.compile(r"\w\s*=\s*[\w'\"]|[/\\_',]|:\s*\w|[:=]\s*[\[{(]\s*$")


def _indented(text: str) -> bool:
    """The line's text is indented, after a logger's timestamp and prefix (`[INFO] -   epoch = 3`)."""
    if text[:1].isspace():
        return True
    body = strip_timestamps(text).lstrip()
    prefix = _RECORD_PREFIX.match(body)
    if prefix is None:
        return False
    rest = body[prefix.end() :]
    rest = rest[1:] if rest[:1] in ("-", "|", ":") else rest
    stripped = rest.lstrip()
    return bool(stripped) and len(rest) - len(stripped) >= 2


# a logger's bracketed fields or level word, each with at most one space after it (written
# without nested optional spaces: a long run of spaces is read once)
_RECORD_PREFIX = re.compile(r"^(?:(?:\[[^\]]*\] ?)+|[A-Z]+ )")
_ENDS_IN_DECIMAL = re.compile(r"\d\.\d+\s*$")
_MAY_END_IN_COLON = re.compile(r"[:)][\d\s:.,_/+\-TZ]*$")
_ASIDE = re.compile(r"(?<=\w)\s*\([^()]{0,80}\)")  # (not a value: `TEST: ("val",)`)


class Sections:
    """Evaluation sections announced by a line without metrics (`Evaluating...`,
    `***** Eval results *****`, `testing in eval mode`), ended by one announcing training
    (`continue training`) or by the training loop's own line moving past its last step.
    Progress inside such a section is evaluation, even in the training loop's format."""

    max_words = 8

    def __init__(self) -> None:
        self.in_eval = False
        # training stream -> its latest (epoch, step): a step counted within the epoch moves on
        # when the epoch does (`Epoch 31[16/500]` is after `Epoch 30[480/500]`)
        self.last_pos: dict[str, tuple[float, float] | None] = {}
        self.fresh_seen: dict[str, int] = {}  # new line formats seen in the current section
        self.summary_block = False  # under a `this epoch:` heading

    def announce(self, line_no: int, text: str) -> ProgressSample | None:
        """Feed a line that gave no sample; an evaluation marker sample when it opens a section."""
        if len(text) > 160:
            return None
        if not _may_be_heading(text):
            return None
        summary, in_eval, heading = _heading(text)
        if summary is not None:
            self.summary_block = summary
        if in_eval is not None:
            self.in_eval = in_eval
        if heading is None:
            return None
        self.fresh_seen.clear()
        return ProgressSample(line_no=line_no, text=heading, is_eval=True)

    def mark(self, s: ProgressSample) -> ProgressSample:
        """The sample as training or evaluation, given the section it is in."""
        if self.summary_block and _indented(s.text) and not s.is_eval:
            return replace(s, summary=True)  # an indented line of the report (`  epoch = 1.0`)
        if s.step is not None:
            self.summary_block = False
        elif self.summary_block and not s.is_eval:
            return replace(s, summary=True)
        if s.is_eval:
            return s
        key = _stream(s)
        pos = _position(s)
        if self.in_eval and _says_training(s.text):
            self.in_eval = False  # `Training: 100%|...|`: the line names itself training
        if self.in_eval:
            last = self.last_pos.get(key)
            fresh = key not in self.last_pos
            if fresh:  # a new line format: training when it states training metrics or moves on
                last = max((v for v in self.last_pos.values() if v is not None), default=None)
            moved = not fresh and pos is not None and last is not None and pos > last
            if fresh:
                self.fresh_seen[key] = self.fresh_seen.get(key, 0) + 1
            # a new format is training with a step time, or a loss printed again and again
            # (an evaluation report prints its loss once per block)
            repeated = self.fresh_seen.get(key, 0) >= 2 and s.loss is not None
            if not (moved or (fresh and ((s.step_time_s is not None and s.loss is not None) or repeated))):
                return replace(s, is_eval=True)
            self.in_eval = False
        if pos is not None or key not in self.last_pos:
            self.last_pos[key] = pos
        return s


def _may_be_heading(text: str) -> bool:
    """A cheap test, exact for what `_heading` can say: only a line that ends in a colon (also
    before a timestamp or an aside), has non-ASCII text, or has a word of a section heading may
    open or close a section (the millions of distinct numbered lines of a log are none of these)."""
    if _MAY_END_IN_COLON.search(text) or not text.isascii():
        return True
    return not _heading_words().isdisjoint(_WORD.findall(text.lower()))


@lru_cache(maxsize=1)
def _heading_words() -> frozenset[str]:
    lex = lexicon()
    return frozenset((*lex.eval_headings, *lex.eval_words, *lex.train_words, "metrics", "results"))


@lru_cache(maxsize=4096)
def _heading(text: str) -> tuple[bool | None, bool | None, str | None]:
    """What a line without a sample says about sections, from its text alone (a log repeats
    such lines by the million): (summary block starts or not, evaluation section opens or
    closes, the evaluation heading's text); None where it says nothing."""
    text = _LOG_PREFIX.sub("", strip_timestamps(text))
    text = _ASIDE.sub("", text)  # `Evaluating (samples: 200, batches: 25)...`: the heading's details
    if _NOT_HEADING.search(text) or _ENDS_IN_DECIMAL.search(text):
        return None, None, None  # settings, paths, `key: value` and `Eval time 41.2` lines are not headings
    low = text.lower()
    words = _WORD.findall(low)
    if not words or len(words) > Sections.max_words:
        return None, None, None
    lex = lexicon()
    summary = None
    if text.rstrip().endswith(":") and not any(c.isdigit() for c in text):
        # `this epoch:` / `Averaged stats:`: the step-less lines under it summarise
        summary = "epoch" in words or any(w in lex.summary_words for w in words)
    elif not any(c.isdigit() for c in text) and ("metrics" in words or "results" in words):
        summary = True  # `***** train metrics *****`: a report follows
    eval_cjk, train_cjk = _non_ascii_words()
    if (
        any(w in lex.eval_headings for w in words[:3])
        or any(w in low for w in eval_cjk)
        or (len(words) == 1 and words[0] in lex.eval_words)  # a split's name alone: `valid`, `== Dev ==`
    ):
        return summary, True, text
    if any(w in lex.train_words for w in words[:3]) or any(w in low for w in train_cjk):
        return summary, False, None
    return summary, None, None


@lru_cache(maxsize=1)
def _non_ascii_words() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Heading and training words of scripts without spaces between words (found anywhere)."""
    lex = lexicon()
    return (
        tuple(w for w in lex.eval_headings if not w.isascii()),
        tuple(w for w in lex.train_words if not w.isascii()),
    )


def _says_training(text: str) -> bool:
    """The line opens with a word of training (`Training: 45%|...`, `训练 epoch 3`, `Done
    training it 40/900`) and no word of evaluation."""
    words = _WORD.findall(_LOG_PREFIX.sub("", strip_timestamps(text[:80])).lower())[:3]
    lex = lexicon()
    return any(w in lex.train_words for w in words) and not any(w in lex.eval_words for w in words)


def _position(s: ProgressSample) -> tuple[float, float] | None:
    if s.step is None:
        return None if s.epoch is None else (s.epoch, 0.0)
    return (s.epoch if s.epoch is not None else 0.0, float(s.step))


@dataclass(slots=True)
class _Merged:
    anchor: ProgressSample | None = None
    last: ProgressSample | None = None


_FIELDS = ("loss", "step_time_s", "epoch", "lr", "throughput", "elapsed_s", "remaining_s")


def summarize(
    file: str,
    samples: Sequence[tuple[ProgressSample, bool]],
    *,
    config_total: int | None = None,
    batch_size: float | None = None,
    events: Iterable[TrackEvent] = (),
    eta_window: int = 20,
) -> TrackResult:
    """Merge samples (in log order, evaluation ones included) into the answer for one file.

    The answer describes the latest training record: the last training line with its
    counter, merged with the lines of the same record (continuation lines printed after a
    counter line, the metrics line printed beside a bar for the same step). Values of an
    earlier record (another step, or before an evaluation block) are not carried over.
    """
    samples = _rounds_without_training(_after_run_end(samples))
    train = [(s, bar) for s, bar in samples if not s.is_eval and not _not_started(s)]
    train = _size_beside_epoch(_epoch_step_pairs(train))
    train = drop_trailing_summaries(train)
    timed = drop_trailing_timings(train)
    late = train[len(timed) :]
    # a rate of steps printed just after the counter line (`update = 200, xent = 3.2`, then
    # `250.0 steps/sec`) is that step's rate; other timing reports keep their own
    # (each line may be printed twice, by two loggers)
    late_rate = late[0][0].step_time_s if late and all(rate_of_steps_alone(s.text) for s, _ in late) else None
    train = timed
    train = drop_closing_record(train)
    train = drop_schedule_lines(train)
    train = drop_headers_after_a_bar(train)
    train = drop_epoch_reports(train)
    train = drop_bars_of_another_loop(train)
    train = drop_evaluate_after_fit(train)
    train = _drop_split_estimates(train)
    if not train or never_moved([(s, bar) for s, bar in samples if not s.is_eval]):
        return TrackResult(file=file, events=tuple(events))
    last = train[-1][0]
    anchor, skipped = _choose_anchor(train)
    if skipped:
        train = [(s, bar) for s, bar in train if _stream(s) not in skipped]
    record, anchor = _record(samples, train, anchor)
    step = anchor.step if anchor else None
    if anchor is not None and last.step is None and any(s is anchor for s, _ in record):
        last = anchor  # lines continuing a record after its counter line: the counter line names it

    values: dict[str, object] = {}
    sources: dict[str, ProgressSample] = {}
    # a complete line of its own states its own fields: an earlier non-bar line of another
    # format at the same step (`Iteration 500, loss = 4.0` before `Iteration 500, lr = 1e-4`)
    # is another progress line, not part of this one
    at = next((i for i, (s, _) in enumerate(record) if s is anchor), -1)
    if anchor is not None and at > 0 and not record[at][1]:
        record = [
            (s, bar)
            for i, (s, bar) in enumerate(record)
            if i >= at or bar or s.step != step or _same_format(s, anchor)
        ]
    # pass 1: non-bar samples of the record at the anchor's step (bars print smoothed rates);
    # when the lines after the counter line are sub-reports printed around every step (their
    # block came after the previous counter line too), the counter line's own values first
    k = next((i for i, (s, _) in enumerate(train) if s is anchor), -1)
    if 0 <= k < len(train) - 1 and not _continues(train[k], train[k + 1 :]) and _repeats(train, k):
        _take(values, train[k][0], sources)
    for s, bar in reversed(record):
        if bar or (s.step is not None and s.step != step):
            continue
        _take(values, s, sources)
    # pass 2: the rest of the record, newest first; a bar counting something else (another
    # step) does not lend its values to a counter line of its own (`Epoch 2, loss ...` after
    # it), nor to a bar at another step (one that says `?it/s` has no known rate)
    for s, bar in reversed(record):
        if bar and step is not None and s.step is not None and s.step != step:
            continue
        _take(values, s, sources)

    total = anchor.total_steps if anchor else None
    if total is None and step is not None:
        total = next((s.total_steps for s, _ in reversed(train) if s.step == step and s.total_steps), None)
    if total is None and config_total and step is not None and step <= config_total:
        total = config_total
    if total is None and step is None:
        total = next((s.total_steps for s, _ in reversed(train) if s.total_steps), None)

    step_time = values.get("step_time_s")
    if step_time is None and late_rate is not None and anchor is not None and anchor is train[-1][0]:
        step_time = late_rate
    if anchor is not None and _cumulative(train):
        step_time = None
    by = sources.get("step_time_s")
    if (
        isinstance(step_time, float)
        and by is not None
        and by.step_time_generic
        and _interval_time(train, step_time)
    ):
        step_time = None
    epoch_only = anchor is not None and anchor.step == anchor.epoch
    if epoch_only and by is not None and by is not anchor and by.step_time_generic and by.step is None:
        step_time = None  # `Epoch 5:` / `Loss: ..` / `Time: 503s`: the epoch's duration
    if (
        step_time is None
        and step
        and anchor is not None
        and anchor.elapsed_s is not None
        and anchor.remaining_s is not None
        and not any(b for _, b in record)
    ):
        # a record stating the run's elapsed and remaining time at this step (a trainer's own
        # progress record, not a bar): its steps took elapsed / step each on average
        step_time = anchor.elapsed_s / step
    thr = values.get("throughput")
    if (
        step_time is None
        and isinstance(thr, Throughput)
        and batch_size
        and thr.value > 0
        and re.match(r"(samples?|examples?|sequences?|seqs?|images?|imgs?)\b", thr.unit, re.I)
    ):
        step_time = batch_size / thr.value

    epoch = values.get("epoch")
    if epoch is None and anchor is not None:
        epoch = _heading_epoch(train, anchor)
    loss = values.get("loss")
    progress = eta = None
    rem = values.get("remaining_s")
    log_eta = rem if isinstance(rem, float) else None
    if step is not None and total and anchor is not None:
        done, whole = _run_position(train, anchor, step, total)
        progress = min(max(done / whole, 0.0), 1.0)
        rate = _recent_step_time(train, eta_window) or step_time or _timestamp_rate(train, eta_window)
        if isinstance(rate, float) and rate > 0:
            eta = max(whole - done, 0) * rate
    if eta is None:
        eta = log_eta

    return TrackResult(
        file=file,
        has_progress=True,
        last_progress_line=last.text,
        last_progress_line_no=last.line_no if last.line_no > 0 else None,
        step=step,
        total_steps=total,
        epoch=epoch,  # type: ignore[arg-type]
        loss=loss if isinstance(loss, float) and not math.isnan(loss) else None,
        loss_is_nan=isinstance(loss, float) and math.isnan(loss),
        step_time_s=step_time if isinstance(step_time, float) and step_time > 0 else None,
        throughput=thr if isinstance(thr, Throughput) else None,
        lr=values.get("lr"),  # type: ignore[arg-type]
        progress=progress,
        eta_s=eta,
        events=tuple(events),
        log_eta_s=log_eta,
    )


def _drop_split_estimates(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """A closing line of another format that reports an evaluation set beside its training
    loss (`step 250: train loss 1.54, val loss 1.72` after `iter 240: loss 1.65, time ...`):
    a periodic estimate over the data splits, not a training step; the in-loop line that
    precedes it is the progress (as an end-of-epoch summary yields to it)."""
    if len(train) < 3:
        return train
    last, prev = train[-1][0], train[-2][0]
    if (
        last.loss is None
        or prev.loss is None
        or last.step is None
        or prev.step is None
        or prev.step > last.step
        or _same_format(last, prev)
        or _stream(train[-3][0]) != _stream(prev)
        or not EVAL_WORDS.search(last.text)
    ):
        return train
    return train[:-1]


def _same_format(a: ProgressSample, b: ProgressSample) -> bool:
    """One line format (a line cut while written has a prefix of its format)."""
    sa, sb = _stream(a), _stream(b)
    return sa.startswith(sb) or sb.startswith(sa)


def _rounds_without_training(
    samples: list[tuple[ProgressSample, bool]],
) -> list[tuple[ProgressSample, bool]]:
    """A loop whose counter lines carry only evaluation metrics (boosting rounds scored on a
    validation set, `Epoch 7 | Val loss ...`) is the training progress of a log that has no
    other: its rounds count, with no training loss."""
    if any(not s.is_eval and s.step is not None for s, _ in samples):
        return samples
    rounds = [s.step for s, _ in samples if s.eval_metrics_only and s.step is not None]
    if len(rounds) < 2 or rounds[-1] <= rounds[0]:
        return samples
    return [(replace(s, is_eval=False) if s.eval_metrics_only else s, bar) for s, bar in samples]


def _cumulative(train: Sequence[tuple[ProgressSample, bool]]) -> bool:
    """A "step time" that grows with the step like time since the start is a cumulative
    elapsed time (`... 21477 sec` each line), not seconds per step. (A bar's rate is per item
    by definition, even when it grows step after step: a job slowing down.)"""
    pts = [
        (_global_step(s), s.step_time_s)
        for s, bar in train[-200:]
        if not bar and s.step is not None and s.step_time_s
    ][-8:]
    runs: list[list[tuple[float, float]]] = [pts[:1]]
    for a, b in zip(pts, pts[1:], strict=False):
        if b[0] > a[0] and b[1] > a[1]:
            runs[-1].append(b)
        elif b[0] < a[0] and b[1] < a[1]:
            runs.append([b])  # a new epoch: the counter and the time since the epoch began restart
        else:
            runs = [[b]]  # not growing together: only what follows can tell
    if len(runs) == 1:
        growing = runs[0][-4:] if len(runs[0]) >= 4 else []
    else:  # time since each epoch's start: the epochs before the last show the growth
        growing = max(runs[:-1], key=len) if len(runs[-1]) < 3 else runs[-1]
        growing = growing if len(growing) >= 3 else []
    if not growing:
        return False
    (s0, t0), (s1, t1) = growing[-2], growing[-1]
    rate = (t1 - t0) / (s1 - s0)
    return 0.5 <= rate * s1 / t1 <= 2.0


def _epoch_step_pairs(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """`Batch 4/203700`, `Batch 4/203800`, ...: a fraction whose left side stays while its right
    side grows is (epoch, step), not step of total (a total does not grow line by line)."""
    by_stream = _reports_by_stream(train, lambda s: s.step is not None and bool(s.total_steps))
    pairs = set()
    for key, seen in by_stream.items():
        last = seen[-8:]
        if len(last) >= 3 and len({s.step for s in last}) == 1:
            totals = [s.total_steps or 0 for s in last]  # several ranks may print each step
            if all(b >= a for a, b in zip(totals, totals[1:], strict=False)) and len(set(totals)) >= 2:
                pairs.add(key)
    if not pairs:
        return train
    return [
        (replace(s, epoch=float(s.step), step=s.total_steps, total_steps=None), bar)
        if not bar and s.step is not None and s.total_steps and _stream(s) in pairs
        else (s, bar)
        for s, bar in train
    ]


def _reports_by_stream(
    train: Sequence[tuple[ProgressSample, bool]], keep: Callable[[ProgressSample], bool]
) -> dict[str, list[ProgressSample]]:
    """The recent non-bar reports that `keep` accepts, by line format (stream)."""
    by_stream: dict[str, list[ProgressSample]] = {}
    for s, bar in train[-400:]:
        if not bar and keep(s):
            by_stream.setdefault(_stream(s), []).append(s)
    return by_stream


def _size_beside_epoch(train: list[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """`Epoch: 3, Steps: 281 | ...`, `Epoch: 4, Steps: 281 | ...`: a "step" that stays the same
    while the epoch advances report after report counts nothing (the size of every epoch);
    the epoch is the line's counter. (A count with its total, `16/16` each epoch, is a
    finished bar and keeps it.)"""

    def sized(s: ProgressSample) -> bool:
        return s.step is not None and s.epoch is not None and s.total_steps is None

    sizes = set()
    for key, seen in _reports_by_stream(train, sized).items():
        last = seen[-6:]
        epochs = [float(s.epoch or 0) for s in last]
        if (
            len(last) >= 2
            and len({s.step for s in last}) == 1
            and all(b > a for a, b in zip(epochs, epochs[1:], strict=False))
            and all(e.is_integer() for e in epochs)
        ):
            sizes.add(key)
    if not sizes:
        return train
    return [
        (replace(s, step=int(s.epoch or 0), total_steps=s.total_epochs), bar)
        if not bar and sized(s) and _stream(s) in sizes
        else (s, bar)
        for s, bar in train
    ]


def _interval_time(train: Sequence[tuple[ProgressSample, bool]], t: float) -> bool:
    """A generic `time 60.8s` as long as the gap between the timestamps of consecutive reports,
    while the counter moves several steps between them, is the time of the reporting interval
    (`upd 1000 ... time 60.8s` every 200 updates), not of one step. Each report's own time is
    compared with the gap before it (intervals may differ: 2,000 s, then 905 s)."""
    pts = [
        (s.timestamp, _global_step(s), s.step_time_s if s.step_time_generic else None)
        for s, bar in train[-12:]
        if not bar and s.timestamp and s.step is not None
    ]
    gaps = [(b[0] - a[0], b[1] - a[1], b[2]) for a, b in zip(pts, pts[1:], strict=False) if b[1] > a[1]]
    if len(gaps) < 2 or statistics.median(k for _, k, _ in gaps) < 2:
        return False
    own = [abs(u - g) / g for g, _, u in gaps if u is not None and g > 0]
    if len(own) >= 2:
        return statistics.median(own) <= 0.25
    dt = statistics.median(g for g, _, _ in gaps)
    return dt > 0 and abs(t - dt) <= 0.25 * dt


def _heading_epoch(train: Sequence[tuple[ProgressSample, bool]], anchor: ProgressSample) -> float | None:
    """The epoch a bar runs in when only a heading before it names it (`Epoch 2/10`, then
    `130/500 [===>...]`): the latest epoch-only line before the anchor."""
    at = next((k for k in range(len(train) - 1, -1, -1) if train[k][0] is anchor), 0)
    for s, _ in reversed(train[:at]):
        if s.epoch is not None:
            return s.epoch if s.step is None or s.step == s.epoch else None
    return None


def _global_step(s: ProgressSample) -> float:
    """Steps since the start: an in-epoch counter `i/n` of epoch `e` is `e * n + i`."""
    step = float(s.step or 0)
    if s.epoch is not None and s.total_steps and s.epoch.is_integer():
        return s.epoch * s.total_steps + step
    return step


def _run_position(
    train: Sequence[tuple[ProgressSample, bool]], anchor: ProgressSample, step: int, total: int
) -> tuple[float, float]:
    """(steps done, steps in the whole run). With epoch x of N and i of `total` iterations
    per epoch, the run is N * total steps and ((x - 1) * total + i) are done (x when the log
    counts epochs from 0); otherwise the step and total as printed."""
    if anchor.epoch is not None and anchor.step == anchor.epoch:
        return float(step), float(total)  # the epoch is the counter already
    src = anchor
    if src.epoch is None or src.total_epochs is None:
        src = next((s for s, _ in reversed(train) if s.epoch is not None and s.total_epochs), anchor)
    if src.epoch is None or not src.total_epochs or src.epoch > src.total_epochs or step > total:
        return float(step), float(total)
    zero_based = any(s.epoch == 0 for s, _ in train)
    epochs_done = src.epoch if zero_based else src.epoch - 1
    return epochs_done * total + step, float(src.total_epochs * total)


def _not_started(s: ProgressSample) -> bool:
    """`Beginning epoch 0` and nothing else: a start marker, no work done yet."""
    return s.epoch == 0 and s.step == 0 and not s.has_metrics_besides_counters()


def _take(values: dict[str, object], s: ProgressSample, sources: dict[str, ProgressSample]) -> None:
    for f in _FIELDS:
        val = getattr(s, f)
        if val is not None and f not in values:
            values[f] = val
            sources[f] = s
    if s.loss_is_nan and "loss" not in values:
        values["loss"] = float("nan")


def _after_run_end(samples: Sequence[tuple[ProgressSample, bool]]) -> list[tuple[ProgressSample, bool]]:
    """After an end-of-run report (`train_runtime`...), progress of any loop but the one that
    reported last before it (a final evaluation or generation bar) is not training."""
    out = list(samples)
    end = next((i for i in range(len(out) - 1, -1, -1) if out[i][0].is_eval and out[i][0].summary), None)
    if end is None:
        return out
    last = next((s for s, _ in reversed(out[:end]) if not s.is_eval and s.step is not None), None)
    if last is None and sum(1 for s, _ in out[end + 1 :] if not s.is_eval and s.step is not None) <= 2:
        return out  # no loop reported before: one or two states after it are the bar's final refresh
    before = {(_stream(last), last.total_steps)} if last is not None else set()
    for i in range(end + 1, len(out)):
        s, bar = out[i]
        if not s.is_eval and s.step is not None and (_stream(s), s.total_steps) not in before:
            out[i] = (replace(s, is_eval=True), bar)
    return out


def _continues(head: tuple[ProgressSample, bool], tail: list[tuple[ProgressSample, bool]]) -> bool:
    """Step-less lines continue a counter line's record: indented or table lines after a
    metrics line, or one or two metrics lines right after a bar (a bar and its loss dict);
    a longer burst after a bar is buffered output of earlier steps."""
    if head[1]:
        return len(tail) <= 2
    return all(CONTINUATION.match(s.text) for s, _ in tail)


def _repeats(train: Sequence[tuple[ProgressSample, bool]], head: int) -> bool:
    """The lines after a counter line repeat the block its previous line of the same format
    had (`epoch 12` / `loss: 0.8`, block after block): one record printed over several lines."""
    if train[head][1]:
        return False
    fmt = _stream(train[head][0])
    tail = [_stream(s) for s, _ in train[head + 1 :]]
    for j in range(head - 1, max(head - 200, 0) - 1, -1):
        s = train[j][0]
        if s.step is not None and _stream(s) == fmt:
            block = train[j + 1 : j + 1 + len(tail)]
            return all(b.step is None for b, _ in block) and [_stream(b) for b, _ in block] == tail
    return False


def _record(
    samples: Sequence[tuple[ProgressSample, bool]],
    train: list[tuple[ProgressSample, bool]],
    anchor: ProgressSample | None,
) -> tuple[list[tuple[ProgressSample, bool]], ProgressSample | None]:
    """The samples of the latest training record, and its counter line (None: no counter).

    A record is the latest counter line and what follows it; bars and step-less lines
    before it at the same step belong to it (a bar and its metrics line), a non-bar line
    with another step or an evaluation block in between ends it. When the latest lines
    carry no counter, they belong to the previous counter line only if they continue it
    (indented or table rows right after it); otherwise the record has no counter.
    """
    if not train:
        return [], None
    pos = {id(s): i for i, (s, _) in enumerate(samples)}
    evals = [i for i, (s, _) in enumerate(samples) if s.is_eval and not s.summary]

    def eval_between(a: ProgressSample, b: ProgressSample) -> bool:
        ia, ib = pos.get(id(a), -1), pos.get(id(b), -1)
        return any(ia < e < ib for e in evals)

    last = train[-1][0]
    if last.step is None:
        head = len(train) - 1
        while head >= 0 and train[head][0].step is None:
            head -= 1
        tail = train[head + 1 :]
        if head >= 0 and (_continues(train[head], tail) or _repeats(train, head)):
            return train[head:], train[head][0]
        if head >= 0 and anchor is not None and len(tail) <= 2 and anchor is not train[head][0]:
            # the counter line is the same moment as a richer bar just before it (+-1 step)
            k = next((i for i, (s, _) in enumerate(train) if s is anchor), -1)
            if k >= 0 and train[k][1] and _continues(train[k], tail):
                return train[k:], anchor
        # step-less lines of their own: fields from them only
        return tail, None
    if anchor is None:
        return train[-1:], None
    if _JSON_MEMBER.match(anchor.text):
        return _json_object(train, anchor), anchor
    out: list[tuple[ProgressSample, bool]] = []
    newer = None
    anchor_bar = any(bar for s, bar in train if s is anchor)
    seen_anchor = False
    # the anchor may be a richer line of another stream just before the latest counter line
    moved = next((s for s, _ in reversed(train) if s.step is not None), None) is not anchor
    for s, bar in reversed(train):
        if newer is not None and eval_between(s, newer):
            break
        if s.step is not None and s.step != anchor.step and not bar:
            if moved and not seen_anchor:
                continue  # that later bookkeeping line (`step=35, lr=[...]`) is not the record
            break
        if seen_anchor and not anchor_bar and s.step is None and not bar:
            break  # step-less lines before a metrics line belong to the previous record
        out.append((s, bar))
        newer = s
        seen_anchor = seen_anchor or s is anchor
    return out[::-1], anchor


_JSON_MEMBER = re.compile(r'^\s+"[^"]{1,80}":\s*[^\s{\[][^{\[]*$')


def _json_object(
    train: list[tuple[ProgressSample, bool]], anchor: ProgressSample
) -> list[tuple[ProgressSample, bool]]:
    """The member lines of the pretty-printed JSON object the anchor's line is a member of
    (`"main/loss": 18.4,` / `"epoch": 20,` / `"iteration": 15625,`): one record."""
    at = next(i for i, (s, _) in enumerate(train) if s is anchor)
    lo = hi = at
    while (
        lo > 0
        and _JSON_MEMBER.match(train[lo - 1][0].text)
        and train[lo][0].line_no - train[lo - 1][0].line_no <= 3
    ):
        lo -= 1
    while (
        hi + 1 < len(train)
        and _JSON_MEMBER.match(train[hi + 1][0].text)
        and train[hi + 1][0].line_no - train[hi][0].line_no <= 3
    ):
        hi += 1
    # read as the one object it is (two losses side by side are components, as on one line)
    body = "{" + ", ".join(s.text.strip().rstrip(",") for s, _ in train[lo : hi + 1]) + "}"
    whole = sample_from_line(anchor.line_no, body)
    if len(whole) != 1 or whole[0][0].step != anchor.step:
        return [(anchor, False)]
    return [(replace(whole[0][0], text=anchor.text), False)]


_NAN_INF = re.compile(r"\b(?:nan|inf)\b", re.I)
_SPACES = re.compile(r"\s+")


def _stream(s: ProgressSample) -> str:
    """Which kind of progress line a sample came from (its template's head; NaN is a number
    and column padding does not matter)."""
    return _stream_of(s.text)


@lru_cache(maxsize=4096)
def _stream_of(text: str) -> str:
    return _SPACES.sub(" ", _NAN_INF.sub("<*>", mask_line(text)))[:48]


def _choose_anchor(
    train: Sequence[tuple[ProgressSample, bool]],
) -> tuple[ProgressSample | None, set[str]]:
    """The sample whose step is the job's step, and the streams that must not feed fields.

    The main loop is the stepped stream that reports a loss most often (else the largest
    stream seen at least 3 times). A short inner loop printed after the main loop (an evaluation bar without a label,
    test-time training, a per-batch sub-loop) has a far smaller scale than the main loop:
    it does not replace the main loop's progress. When the latest step is bare (no total)
    and another stream states the same moment (+-1 step) with a total, that richer line
    is the anchor, as it makes progress and ETA computable.
    """
    stepped = [s for s, _ in train if s.step is not None]
    if not stepped:
        return None, set()
    counts: Counter[str] = Counter()
    scale: dict[str, int] = {}
    top: dict[str, int] = {}
    for s in stepped:
        k = _stream(s)
        counts[k] += 1
        scale[k] = max(scale.get(k, 0), s.total_steps or s.step or 0)
        top[k] = max(top.get(k, 0), s.step or 0)
    with_loss = Counter(_stream(s) for s in stepped if s.loss is not None or s.loss_is_nan)
    if with_loss:  # the training loop is the stream that reports the loss most often
        main: str | None = with_loss.most_common(1)[0][0]
    else:
        mains = [k for k, n in counts.items() if n >= 3]
        main = max(mains, key=lambda k: scale[k]) if mains else None
    skipped: set[str] = set()
    last_main = next((s for s in reversed(stepped) if _stream(s) == main), None)
    if last_main is not None and last_main.total_steps and (last_main.step or 0) >= last_main.total_steps:
        main = None  # the main loop ran to its end: what follows is a new phase, not an inner loop
    if main is not None:
        main_step = top[main]
        skipped = {
            k for k in scale if k != main and scale[k] < 0.1 * scale[main] and top[k] < 0.1 * main_step
        }
    skipped -= {_stream(s) for s in stepped if s.epoch is not None and s.step == s.epoch}
    candidates = [s for s in stepped if _stream(s) not in skipped] or stepped
    anchor = candidates[-1]
    if anchor.total_steps is None:
        for s in reversed(candidates[-6:-1]):
            if (
                s.total_steps
                and s.step is not None
                and abs(s.step - (anchor.step or 0)) <= 1
                and _stream(s) != _stream(anchor)
                # a line one step apart with a loss of its own is the next report, not the same
                # moment (`step 1/10 loss 2.0` then `step 2 loss 1.5`: step 2)
                and (s.step == anchor.step or (anchor.loss is None and not anchor.loss_is_nan))
            ):
                anchor = s
                break
    return anchor, skipped


def _recent_step_time(train: Sequence[tuple[ProgressSample, bool]], window: int) -> float | None:
    """Median of the recent stated step times (robust to one slow logging step)."""
    times = [s.step_time_s for s, _ in train[-window:] if s.step_time_s]
    return statistics.median(times) if times else None


def _timestamp_rate(train: Sequence[tuple[ProgressSample, bool]], window: int) -> float | None:
    """Seconds per step from the timestamps of the recent reports when no line states a step
    time (for the ETA only: the step time field stays what the lines say). The median over
    consecutive reports whose step and time both advanced."""
    pts = [
        (s.timestamp, _global_step(s))
        for s, bar in train[-window:]
        if not bar and s.timestamp and s.step is not None
    ]
    rates = [
        (t1 - t0) / (g1 - g0)
        for (t0, g0), (t1, g1) in zip(pts, pts[1:], strict=False)
        if g1 > g0 and t1 >= t0
    ]
    rate = statistics.median(rates) if rates else 0.0
    return rate if rate > 0 else None


def with_events(result: TrackResult, events: Iterable[TrackEvent]) -> TrackResult:
    return replace(result, events=tuple(events))

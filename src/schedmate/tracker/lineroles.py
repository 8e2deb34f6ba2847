"""Line-level semantics, once every number on a line has a role: what the line as a whole
is (an evaluation line, an end-of-run report, a stage label, a per-epoch record) and the
roles that follow from it (the only loss printed is the loss, an epoch as the only counter,
a step time made of its phases). See docs/tracker.md, "Field semantics"."""

from __future__ import annotations

import re
from functools import lru_cache

from schedmate.tracker.fields import done_words, is_eval_key, lexicon, normalise_key
from schedmate.tracker.values import RATE_KEY_WORDS, Candidates, seconds

__all__ = ["WORDS", "finish_line"]

# a Keras-style progbar counting samples states each one's time: `12000/12000 [====] - 11s 910us/sample`
_PER_SAMPLE = re.compile(r"^\s*\d+/\d+ \[[=>.]+\] - \S+ (?P<v>\d+(?:\.\d+)?)(?P<u>us|µs|ms|s)/sample\b")
WORDS = re.compile(r"[^\W\d_]+")
_CAMEL_WORD = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")  # `SupervisedEvaluator`: two words
_IDENTIFIERS = re.compile(r"[^\W\d_]+(?:_[^\W\d_]+)*")  # `gpu_test` (a run's name) is one word


def _epoch_end(c: Candidates, body: str) -> bool:
    """`Epoch 96 (global_step 955000) finished, time: 3074 sec`: the time of a finished epoch."""
    return "epoch" in c.values and bool(_done().search(body))


@lru_cache(maxsize=1)
def _done() -> re.Pattern[str]:
    return re.compile(rf"\b(?:{done_words()})\b", re.I)


def _whole_step_time(c: Candidates) -> None:
    """A step lasts at least as long as each of its phases (forward, backward, data...): a
    "step time" shorter than one of them is a phase itself (a data-iterator wait), and the
    time that covers the phases together (a per-iteration `train_time`) is the step time."""
    phases = c.phase_times
    cur = c.get("step_time")
    if cur is not None and cur >= 0.99 * max(phases):
        return
    total = sum(phases)
    whole = [t for t in (c.get("elapsed"), c.generic_time and c.generic_time[1]) if t]
    fits = [t for t in whole if 0.9 * total <= t <= 5 * total]
    if cur is not None:
        del c.values["step_time"]
    if fits:
        c.put("step_time", 5, min(fits))


_BARE_DURATION = re.compile(
    r"(?:^|[|,;])\s*(?P<v>\d+(?:\.\d+)?)\s?(?P<u>ms|s|sec|secs|seconds)\s*(?:$|[|,;])"
)
_KEY_BEFORE_RECORD = re.compile(r"([^\W\d][\w./\-]{0,60})['\"]?\s*[:=]\s*[\[{]")
_FIRST_VALUE = re.compile(r"\d+(?:\.\d+)?")  # (the whole number: `12 epochs` leaves no digit behind)
_AVERAGE_RANK = 4  # the lexicon ranks a loss named as an average (`avg_loss`, `mean_loss`) 4
_KEY_WITHOUT_VALUE = re.compile(r"\w:\s*$")
_STANDALONE_NUMBER = re.compile(r"(?<!\w)\d")  # not the digit of a name (`gpt2`, `v2`)


def finish_line(c: Candidates, body: str) -> None:
    """Line-level semantics once every number has a role (see docs/tracker.md)."""
    lex = lexicon()
    # an end-of-run report (`train_runtime`, `train_samples_per_second`...), unless the record
    # also states per-step state (a learning rate: loggers that add the runtime to every record)
    c.is_summary = c.is_summary or (c.summary_keys > 0 and "lr" not in c.values)
    m = _FIRST_VALUE.search(body)
    prefix = body[: m.start()] if m else body
    words = {w.lower() for w in _IDENTIFIERS.findall(_CAMEL_WORD.sub(" ", prefix))}
    if words & lex.eval_words and not words & RATE_KEY_WORDS:  # (not a rate's key: `fps ... inference`)
        c.is_eval = c.eval_context = True  # `Test Pass 3, loss ...`, `dev step: 10 - ...`
    v = c.values
    # evaluation keys whose value is a record: `eval_acc: {"epoch": 1, ...}` is an evaluation record
    rec_eval = any(is_eval_key(normalise_key(k)) for k in _KEY_BEFORE_RECORD.findall(body))
    only_eval = (c.n_eval_keys and not c.n_other_keys) or rec_eval
    if only_eval and "loss" not in v and "step_time" not in v:
        c.is_eval = True  # only evaluation metrics besides the counter: `s:90 eval:0.3`
    if c.kind_loss is not None and len(c.components) > c.aux_components and v.get("loss") == c.kind_loss:
        del v["loss"]  # `lm loss` beside `sop loss`: two terms of a total the line does not print
        c.components.append(c.kind_loss[1])
    many = c.n_metrics + c.n_other_keys >= 3
    sole = len(c.components) == 1 and ("step" in v or "epoch" in v or many)
    if sole and "loss" not in v and not c.loss_is_nan:
        c.put("loss", 8, c.components[0])  # the only loss printed is the loss (`loss_G`)
    epoch = c.get("epoch")
    if (
        "step" not in v
        and epoch is not None
        and epoch.is_integer()
        and (c.first_role == "epoch" or c.epoch_whole)
    ):
        c.outer_counter = True  # an epoch (round, episode) is the only counter the line has
        c.put("step", 6, epoch)
        if c.total_epochs:
            c.put("total_steps", 6, float(c.total_epochs))
    if "step_time" not in v and "step" in v and "/sample" in body and (each := _PER_SAMPLE.match(body)):
        c.put("step_time", 2, seconds(float(each["v"]), each["u"]))  # the bar counts samples: its item's time
    if "step_time" not in v and "step" in v and not c.outer_counter:
        bare = _BARE_DURATION.search(c.rest)
        if bare is not None:  # `step 9 | loss 2.0 | 0.25s`: a lone duration field beside the counter
            c.generic_time = c.generic_time or (7, seconds(float(bare["v"]), bare["u"]))
    if "step_time" not in v:
        if c.outer_counter and c.outer_time is not None:
            c.put("step_time", c.outer_time[0] + 2, c.outer_time[1])
        elif not c.outer_counter and c.generic_time is not None and not _epoch_end(c, body):
            c.put("step_time", c.generic_time[0], c.generic_time[1])
    if c.phase_times:
        _whole_step_time(c)
    if (
        not c.is_bar
        and set(v) <= {"step", "epoch"}
        and not c.total_epochs
        and not c.n_other_keys
        and not c.units_done
    ):
        first = _FIRST_VALUE.search(c.rest)
        after = c.rest[first.end() :] if first is not None else c.rest
        c.stage_label = c.prose or (
            len(WORDS.findall(after)) >= 2
            and not _STANDALONE_NUMBER.search(after)
            and "=" not in after
            and not _KEY_WITHOUT_VALUE.search(after)  # `train_loss:` whose value was cut off
        )
    low = body.lower()
    words = set(WORDS.findall(low))
    spaced = low.replace("_", " ").replace("-", " ") if "_" in low or "-" in low else low  # `stopping_early`
    c.is_summary_line = any((" " in w and w in spaced) or w in words for w in lex.summary_words) or (
        # `Train result: Mean loss: 0.21` with no counter: the average of a loop's reports
        "step" not in v and "epoch" not in v and v.get("loss", (0, 0.0))[0] >= _AVERAGE_RANK
    )

"""Rewrites of a line into the `key: value` shape the parser reads, before any key is
looked up: a key glued to the value before it, a counter name glued to its number (`EP36`,
`iter[8299]`), paired keys and values (`step/total_step: 50/60`), values keyed by data sets
only (`train 2.5 | val 2.7`), comma-separated `name,value` pairs, a step between a loss's name
and its value (`loss 1207 0.88`), values written before their names, an ordinal before its
counter noun (`41 episode.`), time units written in other languages (`81.5 segundos`), a
`total` under a `Losses:` heading, a bracketed `N of M` counter, and list values (settings,
blanked). Each is cheap to test for and leaves other lines untouched (see
docs/tracker.md)."""

from __future__ import annotations

import re
from functools import lru_cache

from schedmate.tracker.fields import lexicon

__all__ = ["rewrite_shapes"]


def rewrite_shapes(body: str, *, value_first: bool = True) -> str:
    """The line with the shapes above rewritten (positions of other text may move)."""
    if not body.isascii() or _unit_word_hint().search(body):
        body = _time_unit_words().sub(lambda m: f"{m[1]} {lexicon().time_unit_words[m[2].lower()]}", body)
    if _GLUED_KEY.search(body) is not None:
        body = _GLUED_KEY.sub(" ", body)  # `learn 0.29passed: 17 sec`: a key glued to the value before it
    if _glued_counter().search(body) is not None:
        # `EP36,`, `iter500 loss`, `epoch[319], iter[8299]`: a counter name glued to its number
        body = _glued_counter().sub(lambda m: f"{m[1]} {m[2] or m[3]}", body)
    if "/" in body and (pair := _PAIRED_VALUES.search(body)) is not None:
        # `step/total_step: 50/60`, `Loss span/answer/total=0.53/0.11/0.63`: keys and their values
        keys, values = pair["k"].split("/"), re.split(r"\s*/\s*", pair["v"])
        if len(keys) == len(values):
            paired = ", ".join(f"{k}: {v}" for k, v in zip(keys, values, strict=True))
            body = body[: pair.start()] + paired + body[pair.end() :]
    if "]" in body and (lists := _LISTED_PAIRS.search(body)) is not None:
        # `[Mean. Loss, Loss]: [0.52, 0.49]`: a list of names, then the list of their values
        keys, values = lists["k"].split(","), lists["v"].split(",")
        if len(keys) == len(values):
            paired = ", ".join(
                f"{' '.join(k.replace('.', ' ').split())}: {v.strip()}"
                for k, v in zip(keys, values, strict=True)
            )
            body = body[: lists.start()] + paired + body[lists.end() :]
    if (sets := _bare_set_values(body)) is not None:
        body = sets
    if "," in body and (pairs := _alternating_pairs(body)) is not None:
        body = pairs
    if (m := _loss_counter_value().search(body)) is not None:
        # `Training cost 1207 0.8811`: a whole number then a decimal after a loss's name: the step
        # the loss was measured at, then the loss (a loss is not printed as a bare integer)
        body = body[: m.start()] + f"step {m['n']} {m['k']} {m['v']}" + body[m.end() :]
    if "osses" in body and (g := _LOSS_GROUP.search(body)) is not None:
        body = body[: g.start("t")] + "total_loss" + body[g.end("t") :]  # `Losses: a 1, b 2, total 3`
    if (m := _NUMBER_THEN_UNIT.search(body)) is not None:
        body = body[: m.start()] + f"{m[2]} {m[1]}" + body[m.end() :]  # `41 episode. loss: x` is episode 41
    if " of " in body and "[" in body:
        body = _BRACKET_OF.sub(r"\1 \2 of \3 ", body)  # `Epoch[17 of 30]` is `Epoch 17 of 30`
    if value_first and "," in body and (flipped := _value_first(body)) is not None:
        body = flipped
    if "[" in body and "," in body:
        body = _LIST_VALUE.sub(lambda m: " " * len(m[0]), body)  # `STEPS: [40, 70]` is a setting
    return body


# a number, then a word of 4+ letters (not a unit) with a colon and a number: a lost separator
_GLUED_KEY = re.compile(
    r"(?<=\d)(?=(?!(?:secs?|mins?|hours?|msecs?|samples|tokens|steps|iters|epochs|batch(?:es)?)\b)"
    r"[^\W\d_]{4,}:\s*[-+]?\.?\d)",
    re.I,
)


@lru_cache(maxsize=1)
def _glued_counter() -> re.Pattern[str]:
    """The lexicon's strong counter names (step and epoch keys of rank <= 1, 2+ letters) glued
    to a number, as a word of its own (not inside a path or a name: `ckpt_step500`)."""
    names = {
        k
        for role, table in lexicon().tables
        if role in ("step", "epoch")
        for k, rank in table.items()
        if k.isascii() and k.isalpha() and len(k) >= 2 and rank <= 1
    }
    alternatives = "|".join(sorted(names, key=len, reverse=True))
    return re.compile(
        rf"(?:^|(?<=[\s,|\[(:]))({alternatives})(?:\[\s*(\d+)\s*\]|(\d+))(?=[\s,:;|\])]|$)", re.I
    )


@lru_cache(maxsize=1)
def _loss_counter_value() -> re.Pattern[str]:
    heads = "|".join(sorted((w for w in lexicon().loss_heads if w.isascii()), key=len, reverse=True))
    return re.compile(
        rf"(?<![\w/])(?P<k>(?:{heads}))\s+(?P<n>\d+)\s+(?P<v>[-+]?\d*\.\d+(?:[eE][-+]?\d+)?)(?![\w.])", re.I
    )


@lru_cache(maxsize=1)
def _unit_word_hint() -> re.Pattern[str]:
    """A cheap test for `_time_unit_words`: a digit, then the first letters of an ASCII entry."""
    heads = {w[:3] for w in lexicon().time_unit_words if w.isascii()}
    return re.compile(rf"\d\s*(?:{'|'.join(sorted(map(re.escape, heads)))})", re.I)


@lru_cache(maxsize=1)
def _time_unit_words() -> re.Pattern[str]:
    """A number with a time unit written as a word of another language (`81.5 segundos`)."""
    words = "|".join(sorted(map(re.escape, lexicon().time_unit_words), key=len, reverse=True))
    return re.compile(rf"(\d)\s*({words})(?!\w)", re.I)


# a whole number before a singular counter noun closed by punctuation: the ordinal written first
_NUMBER_THEN_UNIT = re.compile(
    r"(?<![\w.,/:])(\d+)\s+(epoch|step|iteration|iter|episode)(?=[.,;]\s|[.,;]?$)", re.I
)


# atomic: a number's digits split two ways would make a run of values backtrack polynomially
# in their length, to the power of their count
_PAIR_NUM = r"(?>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
_PAIRED_VALUES = re.compile(
    r"(?<![\w/])(?P<k>[^\W\d][\w ]{0,30}(?:/[^\W\d]\w{0,30}){1,5})\s*[:=]\s*"
    rf"(?P<v>{_PAIR_NUM}(?:\s*/\s*{_PAIR_NUM}){{1,5}})(?![\w./])"
)

_LISTED_PAIRS = re.compile(
    r"\[(?P<k>\s*[^\W\d][\w. ]{0,30}(?:,\s*[^\W\d][\w. ]{0,30}){1,7})\]\s*[:=]\s*"
    rf"\[(?P<v>\s*{_PAIR_NUM}(?:\s*,\s*{_PAIR_NUM}){{1,7}})\s*\]"
)


@lru_cache(maxsize=1)
def _set_value() -> re.Pattern[str]:
    """A data set's name alone as the key of a plain decimal (`train 2.53`, `val: 2.66`)."""
    words = {w for w in lexicon().training_set_words | lexicon().eval_words if w.isascii() and w.isalpha()}
    alternatives = "|".join(sorted(words, key=len, reverse=True))
    return re.compile(
        rf"(?<![\w/.-])(?P<k>{alternatives})(?P<sep>\s*[:=]?\s*)(?=[-+]?\d*\.\d+(?:[eE][-+]?\d+)?(?![\w%.]))",
        re.I,
    )


def _bare_set_values(body: str) -> str | None:
    """`Epoch 5 | train 2.53 | val 2.66`: a line naming no metric, whose values are keyed by the
    training set and an evaluation set only, reports their losses (`train_loss`, `val_loss`)."""
    low = body.lower()
    if "loss" in low or ("acc" in low and not _KEYED_ACCURACY.search(low)):
        return None  # (an accuracy named with its own value, `Acc: 89.5%`, leaves the sets' values losses)
    found = list(_set_value().finditer(body))
    train = lexicon().training_set_words
    if not any(m["k"].lower() in train for m in found) or all(m["k"].lower() in train for m in found):
        return None
    return _set_value().sub(lambda m: f"{m['k']}_loss{m['sep'] or ' '}", body)


_KEYED_ACCURACY = re.compile(r"acc\S{0,20}\s*[:=]\s*[-+]?\.?\d")
_NAME_FIELD = re.compile(r"^[^\W\d][\w./\- ]{0,40}$")
_NUMBER_FIELD = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$|^nan$", re.I)


def _alternating_pairs(body: str) -> str | None:
    """`iteration,5,train_loss,2.29,acc,0.15`: comma-separated name,value pairs as `name: value`
    (a comma closing the row, as a CSV writer may print, ends no pair)."""
    cells = [x.strip() for x in body.strip().removesuffix(",").split(",")]
    if len(cells) < 4 or len(cells) % 2:
        return None
    names, values = cells[::2], cells[1::2]
    if all(_NAME_FIELD.match(n) for n in names) and all(_NUMBER_FIELD.match(v) for v in values):
        return ", ".join(f"{n}: {v}" for n, v in zip(names, values, strict=True))
    return None


_VALUE_FIRST = re.compile(
    r"(?<=[,:|;])(?P<sp>\s*)(?P<v>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?P<u>%|\s?(?:ms|s|sec)\b)?"
    r"\s+(?P<k>[^\W\d][\w.]*(?: [^\W\d][\w.]*){0,2})\s*(?=[,|;]|$)"
)


def _value_first(body: str) -> str | None:
    """`Epoch 46 : 0.9484 C.E. Loss, 98.49% Accuracy`: values written before their names, as
    `name: value` (at least two such fields, one of them a loss)."""
    found = list(_VALUE_FIRST.finditer(body))
    if len(found) < 2 or not any("loss" in m["k"].lower() for m in found):
        return None
    return _VALUE_FIRST.sub(lambda m: f"{m['sp']}{m['k']}: {m['v']}{(m['u'] or '').strip()}", body)


# the terms under a `Losses:` heading are losses: its `total` is the total loss
_LOSS_GROUP = re.compile(
    r"\blosses\s*[:=]?\s*[^\]|]*?\b(?P<t>total|sum|overall)\b(?=\s*[:=]?\s*[-+]?\.?\d)", re.I
)
_BRACKET_OF = re.compile(r"([^\W\d])\[\s*(\d+)\s+of\s+(\d+)\s*\]")
# a key holding a list of numbers (`MILESTONES: [30, 60]`, `mean=[0.48, 0.45]`): a setting, not a value
_LIST_VALUE = re.compile(r"(?<=[:=])\s*\[\s*[-+]?\.?\d[^\]\[,]*,[^\]\[]*\]")

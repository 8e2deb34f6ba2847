"""Fast rule-based parsing of one log line into metric candidates.

Covers the shapes most frameworks print: `key=value`, `key: value`, `key value`, Python
dicts / JSON lines, tqdm bars (with postfix), fractions `N/M`, unit rates (`3.2 it/s`,
`512ms/step`, `0.21 sec/batch`, `615 examples/sec`), durations (`3:56:00`, `7h 2m 14s`),
`| key | value |` rows, and the line-level semantics once every number has a role. What one key
and its value mean is `values.py`; tables and records across lines are `samples.py`/`state.py`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from schedmate.tracker.fields import (
    RATE_UNITS,
    THROUGHPUT_WORDS,
    done_words,
    field_for_key,
    is_eval_key,
    key_words,
    lexicon,
    normalise_key,
)
from schedmate.tracker.lineroles import WORDS as _WORDS
from schedmate.tracker.lineroles import finish_line
from schedmate.tracker.rewrites import rewrite_shapes
from schedmate.tracker.values import (
    COUNT_SUFFIX,
    Candidates,
    apply_kv,
    apply_rate,
    parse_duration,
    resolve_key,
    to_float,
)

__all__ = [
    "Candidates",
    "parse_line",
    "parse_kv_row",
    "split_glued",
    "parse_duration",
    "strip_timestamps",
    "EVAL_WORDS",
]

NUM = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?![\d])|\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b"
_DUR_COLON = r"(?:\d+ days?, )?\d+:\d{2}(?::\d{2})?(?:\.\d+)?"  # (`3 days, 4:05:06`: a timedelta)
_DUR_HMS = r"(?:\d+(?:\.\d+)?d\s*)?(?:\d+(?:\.\d+)?h\s*)?(?:\d+(?:\.\d+)?m(?!s)\s*)?\d+(?:\.\d+)?s\b"
_UNIT = r"(?:ms|us|µs|s|sec|secs|seconds|min|h|毫秒|秒|分钟|%|[KMGT]i?B|[KMGT]b|[kKMGT](?![a-z]))?"

_TIMESTAMP = re.compile(
    r"\[?\d{4}[-/]\d{2}[-/]\d{2}[ T_]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"|\[\d{1,2}/\d{1,2} \d{2}:\d{2}:\d{2}\]"  # detectron2 [11/18 18:10:05]
    r"|\b[IWEF]\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?"  # glog W0425 13:14:45.25
    r"|\[[A-Z]\d{3,4} \d{2}:\d{2}:\d{2}\.\d+\]"
    r"|(?<![\d:])\d{2}:\d{2}:\d{2}(?:[.,]\d{3,9})(?![\d])"  # bare 12:44:11.139
    r"|\b\d{2}/\d{2}/\d{2,4}[ T]\d{2}:\d{2}:\d{2}\b"  # log4j's yy/MM/dd HH:mm:ss
)
# ctime `Mon Nov 16 01:53:58 2020` (its own pattern: tried only on lines with a clock time)
_CTIME = re.compile(
    r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} "
    r"\d{2}:\d{2}:\d{2} \d{4}\b"
)
# a line that carries another log record glued to its end (tqdm without newline)
# a record glued before a timestamp, or a logger's record written right after a tqdm bar's
# closing bracket (`12.21s/it][INFO|trainer.py:3158] ...`): one write each
_ENDING_ERROR = r"(?:[A-Za-z][\w.\-]{0,30}: )?(?:error|ERROR|Error|Traceback|Killed|\*\*\*)"
_GLUE = re.compile(
    r"(?<=[^\s\[])(?=\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})|(?<=(?:it/s|s/it)\])(?=\[[A-Za-z])"
    # the error that ended the job, glued after the bar's last state (`...s/it]slurmstepd: error:`)
    r"|(?<=(?:it/s|s/it)\])(?=" + _ENDING_ERROR + ")"
)

_BAR = re.compile(
    r"(?P<pct>\d{1,3})%\s*(?:\|[^|]*\||\s)\s*(?P<n>\d+(?:\.\d+[kMG]|[kMG])?)/(?P<total>\d+(?:\.\d+[kMG]|[kMG])?)\s*"
    r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+)?,\s*(?P<rate>" + NUM + r"|\?)\s*(?P<unit>[A-Za-z/]+)"
    r"(?:,\s*(?P<postfix>[^\]]*))?(?:\]|$)"  # (a line cut at the terminal's width ends inside it)
)


def _scaled_count(text: str) -> float:
    """`1230` -> 1230.0; `1.23k` -> 1230.0 (a bar's count with an SI prefix)."""
    scale = COUNT_SUFFIX.get(text[-1:], 1.0)
    return float(round(float(text[:-1] if scale != 1.0 else text) * scale))


_BAR_UNIT_RATE = re.compile(r"s/(?P<a>[A-Za-z]{1,12})|(?P<b>[A-Za-z]{1,12})/s")
_BAR_NOTOTAL_HINT = re.compile(r"\d[a-z]+ \[[\d:]+,")  # `11it [00:06, 1.6it/s]`: a bar with no total
_BAR_NOTOTAL = re.compile(
    r"(?P<n>\d+)(?P<unit>it|[a-z]+) \[(?P<elapsed>[\d:]+),\s*(?P<rate>"
    + NUM
    + r"|\?)\s*(?P<runit>[A-Za-z]+/s)(?:,\s*(?P<postfix>[^\]]*))?"
)

# (repetitions are bounded: a key is a few words, and an unbounded run tried from every start
# of a long word-character run is quadratic)
_KEY = (
    r"[^\W\d][\w./\-]{0,60}(?:\s?\((?!\d+\))[^)\s]{1,10}\))?(?:[ ][^\W\d_][\w./\-]{0,60}(?:\s?\((?!\d+\))[^)\s]{1,10}\))?){0,5}"
    r"(?:\s\((?!None\b|\d+,)[^()\n]{1,24}\))?"  # (`Mean loss (over 50 steps)`: a qualifier in words, not a shape)
)
_VALUE = (
    r"(?P<v>" + _DUR_COLON + r"|" + _DUR_HMS + r"|(?:" + NUM + r")(?:\s*/\s*(?:" + NUM + r"))?)"
    # a time unit after a space (`743.31 ms`), unless it is the next key (`ms: 3`)
    r"(?P<u>\s(?:ms|us|µs|sec|secs|seconds|min)(?![\w:=/])|" + _UNIT + r"(?:/[A-Za-z]+)?)"
)
_KV = re.compile(
    r"(?P<q>['\"])(?P<qk>[^'\"\n]{1,80})(?P=q)\s*:\s*(?P<qq>['\"]?)"
    + _VALUE.replace("?P<v>", "?P<qv>").replace("?P<u>", "?P<qu>")
    + r"(?P=qq)"
    r"|(?<![\w./%])(?P<k>"
    + _KEY
    + r")(?:#?\s*(?:=|::?|\s)\s*(?:\[\s*|(?P<hash>#))?|\s?\((?=\d+\)))"  # (`Update #130`: a number sign before the count; `Iter(30)`)
    + _VALUE
    + r"(?:st|nd|rd|th)?(?!\w|\.[\w.]|[-/]\d)(?(hash)(?!:.*0x[0-9a-fA-F]))"  # (not a stack frame's `frame #3: f + 0x1f`)
)
_RATE = re.compile(
    r"(?P<v>"
    + NUM
    + r")\s*(?P<u>(?:us|µs|ms|s|sec|min|it|step|steps|iters?|batch|batches|updates?)/(?:it|s|sec|step|batch|iter|epoch)"
    r"|(?:samples?|examples?|tokens?|tok|words?|images?|imgs?|sequences?|seqs?|sents?|frames?|task)/(?:s|sec|second))\b"
    r"(?!\s*[:=])"  # `samples/sec: 125` is a key, not the unit of the number before it
)
# the unit part alone: a cheap test before the (slow, number-first) rate pattern
_RATE_UNIT = re.compile(r"[a-z]/(?:it|s|sec|step|batch|iter|epoch|second)\b")
_FRACTION = re.compile(r"(?<![\w.:/\-])(?P<n>\d+)\s?/\s{0,4}(?P<d>\d+)(?![\w./%]|:\d)")  # `40336/50000: ...`
# a fraction written with thousands separators (`12,500/100,000`), not a list (`3,100,0.5`)
_GROUPED = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
_GROUPED_FRACTION = re.compile(
    rf"(?<![\w.,])(?=[\d,]*,\d{{3}}\s*/|\d+\s*/\s*\d{{1,3}},\d{{3}}){_GROUPED}\s*/\s*{_GROUPED}(?![\w.]|,\d)"
)
# a list of plain numbers; each item atomic (a grouped `1,234` would make item bounds ambiguous,
# and ambiguous items backtrack exponentially on a list that does not close)
_LIST_NUM = r"(?>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b)"
_NUMBER_LIST = re.compile(rf"\s*\[(?P<items>\s*{_LIST_NUM}(?:\s*,\s*{_LIST_NUM})+)\s*\]\s*", re.I)
_FULL_PERCENT = re.compile(r"(?<![\d.])100(?:\.0+)?\s*%")
_LEADING_PAIR = re.compile(
    r"^\s*\[\s*(?P<e>\d+)(?:\s*,\s*|\s+:\s*|\s*:\s+)(?P<n>\d+)\s*\](?=\s+[^\W\d][\w ]*[:=]\s*[-+]?\.?\d)"
)
_EPOCH_BRACKET = re.compile(
    r"\bepoch:?\s*\[\s*(?P<e>\d+)(?:\s*/\s*(?P<te>\d+))?\s*\]\s*\[\s*(?P<n>\d+)(?:\s*/\s*(?P<d>\d+))?\s*\]",
    re.I,
)
# `[N]` (or `[N]:`) then a space, after any bracketed log prefix (`[INFO] [thread] [N]`), or
# `N:` then a tab or an aligned gap (`0: ` with one space is a launcher's rank prefix)
_LEADING_COUNTER = re.compile(
    r"^[^\d\[]*(?:(?:\[(?=[^\]]*[^\d\]])[^\]]*\][^\d\[]*)*\[(?P<n>\d+)\]:?\s|(?P<m>\d+)(?::\t|:\s{2,}|\s+\|\s))"
)
# `( 4 ) Loss: ...`, `[ (4) loss: ...`: a parenthesised number opening the line; `Train 79, loss:
# ...`: a number right after the line's training word
_LEADING_ROUND = re.compile(r"^[\s\[]*\(\s*(?P<n>\d+)\s*\)|^\s*(?:train|training)\s+(?P<m>\d+)\s*[,:|]", re.I)
_POSSESSIVE = re.compile(r"(?<=\w)'s\s+(?=[^\W\d])")
_OWNED_METRIC = re.compile(r"(?<![\w'])(?P<owner>[^\W\d][\w.-]{0,40})'s\s+(?=[^\W\d])")


def _owned_metric(m: re.Match[str]) -> str:
    owner = m["owner"]
    if set(key_words(normalise_key(owner))) & lexicon().train_words or is_eval_key(normalise_key(owner)):
        return m[0]
    return f"eval_{owner}'s "


# `| Val: loss = 1.7, acc = 0.5 |`: a segment labelled by an evaluation word
_SEGMENT_SEP = re.compile(r"\||;|\t| - ")
_SEGMENT_LABEL = re.compile(r"^\s*([^\W\d][\w ]{0,24}?)\s*(?:\([^)]{0,24}\))?\s*:")  # `valid (2.1 sec):`
# `loss 2.1 tok/s 120000`: a key's value, then a rate unit that names the next value
_NUMBER_NEXT = re.compile(r"\s+[-+]?\.?\d")
_KEY_BEFORE = re.compile(r"(?<![\w.])[^\W\d][\w./-]*\s+$")
# `16.8 (graph/s)`: a value with its rate unit in parentheses
_PAREN_RATE = re.compile(r"(?P<v>\d+(?:\.\d+)?)\s*\((?P<u>[A-Za-z]+/(?:s|sec))\)")
_PER = re.compile(
    r"\b(ms|s|sec|secs|seconds|it|steps|iters|batches|samples|examples|tokens|images)\s+per\s+"
    r"(step|iter|iteration|it|batch|update|second|sec|s)\b",
    re.I,
)
_PER_DENOM = {"iteration": "iter", "update": "step", "second": "s"}
# a range of batches or iterations reported at once: `batch 150-200`, `[iters 10-20]`, `5251-5625batch`,
# `Minibatch[ 41- 50]`
_RANGE = re.compile(
    r"\b(?:(?:mini-?)?batch(?:es)?|iters?|iterations?|steps?)\s*\[?\s*(?P<a>\d+)\s*-\s*(?P<b>\d+)\b(?!\s*[:.]\d)"
    r"|(?<![\w.-])(?P<a2>\d+)-(?P<b2>\d+)\s?(?:batch|iter|step)s?\b",
    re.I,
)
_PER_NUM = {"seconds": "s", "secs": "s"}


# `Average loss at step 2000: 4.51`, `score after iteration 30 is 0.9`: a metric named in a sentence
_PROSE_METRIC = re.compile(
    r"(?P<m>[^\W\d][\w\-]{0,60}(?: [^\W\d][\w\-]{0,60}){0,3})\s+(?:at|after|in)\s+(?P<c>[^\W\d]{1,40})\s*#?(?P<n>\d+)\s*"
    r"(?:is|was|=|:)\s*(?P<v>" + NUM + r")(?![\w.])"
)


def _prose_metric(c: Candidates, m: re.Match[str]) -> str:
    if field_for_key(normalise_key(m["c"])) is None:
        return m[0]
    if apply_kv(c, m["c"], m["n"], ""):
        c.n_metrics += 1
    if apply_kv(c, m["m"], m["v"], ""):
        c.n_metrics += 1
    return " " * len(m[0])


_BRACKET_KEY = re.compile(r"\[([^\W\d][\w ]{0,30})\]\s?(?=:)")
# a bracketed key opening a `|` cell, its value after spaces
_BRACKET_KEY_CELL = re.compile(r"(?<=\|)\s*\[([^\W\d][\w ]{0,30})\]\s+(?=[-+]?\.?\d|nan\b|inf\b)", re.I)
_PROSE_HINT = re.compile(r" (?:at|after|in)\s+[^\W\d]+\s*#?\d")
_DASH_HINT = re.compile(r"[A-Za-z]-\d")
_IS_VALUE = re.compile(r"(?<=[^\W\d]) (?:is|was) (?=[-+]?\.?\d)")
# `LOSS-36.105   TIME-2.03`: a key and its value joined by a dash (only keys with a role)
_DASH_VALUE = re.compile(
    r"(?<![\w\-])(?P<k>[A-Za-z][A-Za-z_]{1,15})-(?P<v>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.\-])"
)


def _dash_value(c: Candidates, m: re.Match[str]) -> str:
    key, hit = resolve_key(c, m["k"])
    if hit is None or hit[0] in ("total_if_step",):
        return m[0]
    if apply_kv(c, m["k"], m["v"], ""):
        c.n_metrics += 1
    return " " * len(m[0])


def _per_unit(m: re.Match[str]) -> str:
    unit = _PER_NUM.get(m[1].lower(), m[1]) + "/" + _PER_DENOM.get(m[2].lower(), m[2])
    return unit.ljust(len(m[0]))


# no optimizer step (forward, backward, update) runs in under 0.2 ms: a bar that fast counts
# items of other work (reading, tokenising, caching)
_FASTEST_STEP_S = 2e-4
_LEADING_FRACTION = re.compile(r"^\s*(?:\[\s*)?(?P<n>\d+)\s?/\s?(?P<d>\d+)\b")
# a bar over work that is not training: generation, data preparation, downloads, scoring
_NOT_TRAINING_BAR = re.compile(
    r"(?<![\w/])(?:generat|prompt|sampl(?:ing|e)\b|decod|extract|encod|embedd|inferenc|preprocess|pre-process|tokeniz|"
    r"download|upload|convert|augment|index|caching|resolv|fetch|comput|scor|map\b|filter\b|"
    r"loading checkpoint)",
    re.I,
)
_DIGIT = re.compile(r"\d")
_NAN_POINT = re.compile(r"(?<![\w.])(nan|inf)\.0(?![\w.])", re.I)
_DATA_WORK = re.compile(r"^\W*(?:read|load|writ|sav|copy|copi|pars|unpack|shuffl|split)", re.I)
EVAL_WORDS = re.compile(
    r"(?<![\w/])(?:val|valid|validation|validate|validating|validated|eval|evaluating|evaluation|evaluated?|test|testing|"
    r"inference|predict|predicting|mAP\d*|Epoch\(val\))(?![\w/])",
    re.I,
)


def not_training_bar(description: str) -> bool:
    """A bar described as work other than training (loading, mapping, generating, evaluating)."""
    return bool(_NOT_TRAINING_BAR.search(description) or EVAL_WORDS.search(description))


# a logger's source location `package.module:function:123` is not `function: 123`
# and a source file's line (`train.py:123]`, glog's `140 solver.cpp:228]`) is not a counter either
_SOURCE_LOCATION = re.compile(r"\b[A-Za-z_][\w.]{0,200}:[A-Za-z_<][\w.<>]{0,200}:\d+\b")
_SOURCE_FILE_LINE = re.compile(
    r"(?:\b\d+\s+)?(?<![\w.\-/])[\w.\-/]+\.(?:py|pyx|cc|cpp|cu|c|h|hpp|java|scala|rs|go|lua|jl):\d+\b\]?"
)
_SOURCE_FILE_HINT = re.compile(r"\.(?:py|pyx|cc|cpp|cu|c|h|hpp|java|scala|rs|go|lua|jl):\d")


# Python logging's default format, `LEVEL:logger:message` (`INFO:trainer:[3,  40] loss: 1.2`)
_SLASHED_PAIRS = re.compile(r"(?<=\d)/(?=[^\W\d]\w{0,40}=\s*\d)")
# a logger's name and level before the message (`run1<TAB>INFO<TAB>`, `INFO - `, `trainer | WARN |`)
_LEVEL_PREFIX = re.compile(
    r"^\s*(?:[\w.\-]{1,40}[\s|:\-]+)?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b[\s|:\-]*"
)
_LOGGING_DEFAULT = re.compile(r"^\s*(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL):[\w.\-]*:")


def strip_timestamps(text: str) -> str:
    """The line without timestamps, logger source locations and Python logging's default prefix."""
    out = _LOGGING_DEFAULT.sub(" ", text, count=1) if text[:12].lstrip()[:1].isupper() else text
    out = _TIMESTAMP.sub(" ", out)
    if ":" in out and _CLOCK.search(out):
        out = _CTIME.sub(" ", out)
    out = _SOURCE_LOCATION.sub(" ", out)
    if "<std" in out:
        out = _RANK_TAG.sub(" ", out)
    if _SOURCE_FILE_HINT.search(out):
        out = _SOURCE_FILE_LINE.sub(" ", out)
    return out


_CLOCK = re.compile(r"\d:\d\d:\d\d \d{4}")
_RANK_TAG = re.compile(r"\[\d+(?:,\d+)?\]<std(?:out|err)>:")  # an MPI launcher's tag (`[1,0]<stdout>:`)


_LEAD_KEY = re.compile(r"^\s*([^\W\d_]{3,})[\s:=]+\d")


def split_glued(text: str) -> list[str]:
    """Split a record glued after a tqdm bar (`...3.33s/it][2021-11-26 03:07:16] ...`) and the
    bar states of a line whose carriage returns were pasted as `^M`."""
    if len(text) < 30:
        return [text]
    if "^M" in text:  # a paste that shows carriage returns as `^M` (`cat -v`): one state each
        return [p for part in text.split("^M") for p in split_glued(part) if p.strip()] or [text]
    parts = _GLUE.split(text)
    if len(parts) == 1 and (lead := _LEAD_KEY.match(text)) is not None and text.count(lead[1]) > 1:
        # `Episode 7 Score: 2.1Episode 8 Score: 2.5`: records written with `\r` that lost it
        parts = re.split(r"(?<=\d)(?=" + re.escape(lead[1]) + r"\b)", text)  # glued to a value
    return [p for p in parts if p.strip() and not (len(parts) > 1 and _GLUED_ERROR.match(p))] or [text]


_GLUED_ERROR = re.compile(_ENDING_ERROR)


def _parse_bar(c: Candidates, text: str) -> str:
    m = _BAR.search(text)
    if m is None:
        m2 = _BAR_NOTOTAL.search(text)
        if m2 is None:
            return text
        c.is_bar = True
        # `29810it [25:39, 1.56it/s]` alone counts items of any work (data preparation...)
        c.bare_count = not _WORDS.search(text[: m2.start()]) and not m2["postfix"]
        if m2["n"] == "0" and m2["rate"] == "?":  # `Training: 0it [00:00, ?it/s]`: nothing ran yet
            return text[: m2.start()] + " " * (m2.end() - m2.start()) + text[m2.end() :]
        c.put("step", 3, float(m2["n"]))
        if (bare_rate := to_float(m2["rate"])) is not None:
            apply_rate(c, bare_rate, m2["runit"], 3)
        if m2["postfix"]:
            _parse_kvs(c, m2["postfix"])
        return text[: m2.start()] + " " * (m2.end() - m2.start()) + text[m2.end() :]
    c.is_bar = True
    desc = text[: m.start()]
    if not_training_bar(desc):
        c.is_eval = c.eval_context = True
    if m["n"] == "0" and m["rate"] == "?":  # a bar that has not moved: nothing ran yet
        return desc + " " * (m.end() - m.start()) + text[m.end() :]
    n, total = _scaled_count(m["n"]), _scaled_count(m["total"])  # (`1.23k/10.0k`: tqdm's unit_scale)
    c.put("step", 3, n)
    c.put("total_steps", 3, total)
    if re.search(r"\d\s*/\s*" + m["total"] + r"\b", desc):  # the description counts the bar's items too
        c.bar_count = (n, total)
    rate = m["rate"]
    if rate != "?":
        val = to_float(rate)
        if val is not None:
            apply_rate(c, val, m["unit"], 3)
            own = _BAR_UNIT_RATE.fullmatch(m["unit"]) if "step_time" not in c.values else None
            if own is not None and not THROUGHPUT_WORDS.match(own["a"] or own["b"]):
                # a bar's own unit (`unit="ep"`: `666.74s/ep`, `3.1ep/s`) is what it counts
                c.put("step_time", 3, val if own["a"] else 1.0 / val)
            if (t := c.get("step_time")) is not None and t < _FASTEST_STEP_S:
                c.is_eval = c.eval_context = True  # 200,000 it/s: items of other work, not steps
    el = parse_duration(m["elapsed"])
    if el is not None:
        c.put("elapsed", 5, el)
    if m["remaining"] and m["remaining"] != "?":
        rem = parse_duration(m["remaining"])
        if rem is not None:
            c.put("remaining", 3, rem)
    if m["postfix"]:
        _parse_kvs(c, m["postfix"])
    return desc + " " * (m.end() - m.start()) + text[m.end() :]


def _parse_kvs(c: Candidates, text: str) -> str:
    """Apply every key/value pair; return the text with used spans blanked."""
    spans = []
    for m in _KV.finditer(text):
        if m["qk"] is not None:
            ok = apply_kv(c, m["qk"], m["qv"], m["qu"] or "")
        else:
            ok = apply_kv(c, m["k"], m["v"], m["u"] or "")
        if ok:
            c.n_metrics += 1
        spans.append((m.start(), m.end()))
    return _blank(text, spans)


def _drop_eval_segments(c: Candidates, body: str) -> str:
    """Blank segments (`|`, `;`, tab, ` - `) labelled by an evaluation word, when others remain."""
    segs = _SEGMENT_SEP.split(body)
    seps = _SEGMENT_SEP.findall(body)
    ev = set()
    for i, seg in enumerate(segs):
        m = _SEGMENT_LABEL.match(seg)
        if m is not None and is_eval_key(normalise_key(m[1])) and _HAS_NUMBER.search(seg):
            ev.add(i)
    if not ev or len(ev) == len(segs):
        return body
    if (
        0 in ev
        and not any(  # an evaluation line's prefix (`dev step: 4 - loss`) unless a train segment follows
            (m := _SEGMENT_LABEL.match(seg)) is not None and set(key_words(m[1])) & lexicon().train_words
            for seg in segs
        )
    ):
        return body
    c.n_eval_keys += len(ev)
    out = [" " * len(seg) if i in ev else seg for i, seg in enumerate(segs)]
    return "".join(part + (seps[i] if i < len(seps) else "") for i, part in enumerate(out))


def _paren_rate(c: Candidates, m: re.Match[str]) -> str:
    val = to_float(m["v"])
    if val is not None:
        apply_rate(c, val, m["u"], 1)
        if c.throughput is None and m["u"].lower() not in RATE_UNITS:
            c.throughput = (val, m["u"])
    return " " * len(m[0])


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    out, pos = [], 0
    for a, b in spans:
        out.append(text[pos:a])
        out.append(" " * (b - a))
        pos = b
    out.append(text[pos:])
    return "".join(out)


_HAS_NUMBER = re.compile(r"\d|nan|inf", re.I)
# a shell command with options: a prompt, or a launcher or interpreter, then `--option`s
_COMMAND_LINE = re.compile(
    r"^\s*(?:[$>%#]\s+|(?:\w+=\S+\s+)*(?:python[\d.]*|torchrun|deepspeed|accelerate|srun|mpirun|horovodrun)\s)"
    r"(?=.*\s--?[A-Za-z][\w-]*(?:[=\s]|$))"
)
_QUOTED_KV = re.compile(r"""['"]([^'"\n]{1,80})['"]\s*:\s*['"]?([^,'"}\]\n]*)['"]?""")
_VALUE_UNIT = re.compile(_VALUE + r"\s*$")


def _parse_mapping(c: Candidates, text: str) -> bool:
    """Fast path for dict / JSON lines (`{'loss': 1.2, ...}`): no generic key search."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        return False
    pairs: list[tuple[str, str]]
    try:
        obj = json.loads(t)
        pairs = (
            # a value in a one-element list (`"epoch": [12]`, a frame's row written as a dict) is the value
            [(str(k), str(x)) for k, v in obj.items() if isinstance(x := _sole(v), (int, float, str))]
            if isinstance(obj, dict)
            else []
        )
    except RecursionError:
        return False  # nested thousands deep: not a metrics record
    except ValueError:
        pairs = _QUOTED_KV.findall(t)
    if not pairs:
        return False
    texts = sum(1 for _, v in pairs if _VALUE_UNIT.match(v.strip()) is None)
    if len(pairs) >= 6 and texts >= 0.3 * len(pairs):
        return True  # a settings dump (`{'proj_dir': 'out/x', 'data_file': 'json', 'avg_loss': 0, ...}`)
    parts = _namespaced_losses(pairs)
    for k, v in pairs:
        if k in parts:  # `gen/loss`, `dis/loss`: the losses of two models, components of no total
            if (val := to_float(v)) is not None:
                c.components.append(val)
            continue
        if normalise_key(k) == "epoch" and v.strip().isdigit():
            c.epoch_whole = True  # a per-epoch record; fractional epochs (`0.45`) are positions
        m = _VALUE_UNIT.match(v.strip())
        if m is None:
            if k.strip().lower() in ("loss", "train_loss") and v.strip().lower() == "nan":
                c.loss_is_nan = True
            continue
        if apply_kv(c, k, m["v"], m["u"] or ""):
            c.n_metrics += 1
    return True


def _sole(v: object) -> object:
    return v[0] if isinstance(v, list) and len(v) == 1 else v


def _namespaced_losses(pairs: list[tuple[str, str]]) -> set[str]:
    """Keys naming the same loss under two or more model prefixes (`gen/loss`, `dis/loss`)
    when no prefix names the training set or a total (`train/loss`, `main/loss` stay the loss)."""
    lex = lexicon()
    by: dict[str, str] = {}
    for k, _ in pairs:
        head, _, leaf = k.lower().rpartition("/")
        if head and leaf in lex.loss_heads:
            by[k] = head
    neutral = lex.training_set_words | lex.total_loss_modifiers | {"main", "metrics", "loss"}
    if len(set(by.values())) < 2 or any(h in neutral for h in by.values()):
        return set()
    return set(by)


# a two-cell table row `| key | value |` (box-drawing borders too): the key names the value
_KV_ROW = re.compile(r"^\s*[|│┃]\s*(?P<k>[^|│┃\d\s][^|│┃]*?)\s*[|│┃]\s*(?P<v>[^|│┃\s]*)\s*[|│┃]\s*$")


def parse_kv_row(c: Candidates, text: str) -> bool:
    """Apply a `| key | value |` row to `c` (rows of one table accumulate); False if not a row."""
    row = _KV_ROW.match(text)
    if row is None:
        return False
    m = _VALUE_UNIT.match(row["v"]) if row["v"] else None  # an empty value: a section row (`train/`)
    if m is not None and apply_kv(c, row["k"], m["v"], m["u"] or ""):
        c.n_metrics += 1
    return True


_FULLWIDTH = str.maketrans({"：": ":", "，": ",", "；": ";", "（": "(", "）": ")", "｜": "|", "＝": "="})


def _flat_kv_rows(c: Candidates, text: str) -> bool:
    """A `| key | value |` table pasted onto one line (`| fps | 9 | | loss | 1.8 | ...`)."""
    if text.count("|") < 6 or not text.lstrip().startswith(("|", "│")):
        return False
    cells = [x.strip() for x in _BORDERS.split(text)]
    pairs = [
        (k, v)
        for k, v in zip(cells, cells[1:], strict=False)
        if k and v and _KEY_CELL.match(k) and _VALUE_UNIT.match(v)
    ]
    if len(pairs) < 2:
        return False
    for k, v in pairs:
        m = _VALUE_UNIT.match(v)
        if m is not None and apply_kv(c, k, m["v"], m["u"] or ""):
            c.n_metrics += 1
    finish_line(c, "")
    return True


_NOT_AVAILABLE = re.compile(r"[^\W\d][\w./\-]{0,60}\s*[:=]\s*(?:n/a|na|none|null|--?)(?=[\s,;|]|$)", re.I)


@lru_cache(maxsize=1)
def _units_done() -> re.Pattern[str]:
    """`Finished 3 epochs`, `completed 500 steps`, `8 epochs have been completed`: units done
    so far (not a report's `50 iterations completed in 0.3 hours`)."""
    units = r"(?P<u>epochs?|steps?|iterations?|iters?|updates?)"
    return re.compile(
        rf"\b(?:{done_words()})\s+(?P<n>\d+)\s+{units}\b"
        rf"|^\W*(?P<n2>\d+)\s+{units.replace('?P<u>', '?P<u2>')}\s+(?:have|has)\s+(?:been\s+)?(?:{done_words()})\b",
        re.I,
    )


_BORDERS = re.compile(r"[|│]")
_KEY_CELL = re.compile(r"^[^\W\d][\w./\- ]*$")


def parse_line(text: str) -> Candidates:
    """Everything metric-like on one line (no cross-line context)."""
    c = Candidates()
    if not _HAS_NUMBER.search(text):
        return c
    if not text.isascii():
        text = text.translate(_FULLWIDTH)  # `训练次数：1500，Loss：1.28`
    if ".0" in text and _NAN_POINT.search(text):
        text = _NAN_POINT.sub(r"\1", text)  # `loss=nan.0`: a NaN formatted as a float with one decimal
    if _COMMAND_LINE.match(text):
        return c  # `$ python train.py --num_timesteps 4 ...`: a command's settings, not metrics
    if text.lstrip().startswith("{") and _parse_mapping(c, text):
        finish_line(c, "")
        if c.eval_metric and "loss" not in c.values:
            c.is_eval = True  # an evaluation record, whatever run counters it repeats (`global_step`)
        return c
    if parse_kv_row(c, text) or _flat_kv_rows(c, text):
        return c
    body = strip_timestamps(text)
    if "," in body and "/" in body and _GROUPED_FRACTION.search(body):
        body = _GROUPED_FRACTION.sub(lambda m: m[0].replace(",", ""), body)  # `12,500/100,000`
    if "=" in body and "/" in body:
        body = _SLASHED_PAIRS.sub(", ", body)  # `epoch=0/micro_step=40/global_step=40`: three pairs
    body = rewrite_shapes(body, value_first=not _COUNTER_CURRENT_AVG.match(body))
    if ("%" in body and "/" in body) or _BAR_NOTOTAL_HINT.search(body):
        body = _parse_bar(c, body)
    if "[" in body and (vec := _NUMBER_LIST.fullmatch(_LEVEL_PREFIX.sub("", body, count=1))) is not None:
        # `[0.41, 2.7, nan, 5200, 2e-4]`: a positional list of values; its only whole number,
        # among decimals, is the run's counter (the values around it are unnamed: no loss)
        whole = [v for v in vec["items"].split(",") if v.strip().isdigit()]
        if len(whole) == 1 and vec["items"].count(",") >= 1:
            c.put("step", 4, float(whole[0]))
            c.n_metrics += vec["items"].count(",")  # the unnamed values
            return c
    if body.lstrip().startswith("[") and (pair := _LEADING_PAIR.match(body)) is not None:
        # `[3,  2000] loss: 1.85`: a bare [epoch, batch] pair opening a line with a metric
        c.put("epoch", 2, float(pair["e"]))
        c.put("step", 2, float(pair["n"]))
        body = _blank(body, [pair.span()])
    m = _EPOCH_BRACKET.search(body)
    if m:
        c.put("epoch", 1, float(m["e"]))
        if m["te"]:
            c.total_epochs = int(m["te"])
        c.put("step", 1, float(m["n"]))
        if m["d"]:
            c.put("total_steps", 1, float(m["d"]))
        body = _blank(body, [(m.start(), m.end())])
    if (" at " in body or " after " in body or " in " in body) and _PROSE_HINT.search(body):
        body = _PROSE_METRIC.sub(lambda m: _prose_metric(c, m), body)
    if "]:" in body or "] :" in body:
        body = _BRACKET_KEY.sub(r" \1", body)  # `[epoch]: 199, [loss]: 4.85`: keys in brackets
    if "] " in body and "|" in body:
        body = _BRACKET_KEY_CELL.sub(r" \1: ", body)  # `| [step]  1634 | [Loss] nan |`
    if " is " in body or " was " in body:
        body = _IS_VALUE.sub(": ", body)  # `loss is 1.34`: a value stated in a sentence
    if "-" in body and _DASH_HINT.search(body):
        body = _DASH_VALUE.sub(lambda m: _dash_value(c, m), body)
    if " per " in body:  # `410 ms per step` is `410 ms/step`
        body = _PER.sub(_per_unit, body)
    r_ = _RANGE.search(body)
    if r_ is not None and int(r_["a"] or r_["a2"]) <= int(r_["b"] or r_["b2"]):
        c.put("step", 2, float(r_["b"] or r_["b2"]))  # `batch 150-200`, `5251-5625batch`: the range's end
        body = _blank(body, [r_.span()])
    spans = []
    for r in _RATE.finditer(body) if _RATE_UNIT.search(body) else ():
        if _NUMBER_NEXT.match(body, r.end()) and _KEY_BEFORE.search(body, 0, r.start()):
            continue  # `loss 2.1 tok/s 120000`: a key's value, then a rate unit naming the next key
        val = to_float(r["v"])
        if val is not None:
            apply_rate(c, val, r["u"], 1)
            c.n_metrics += 1
        spans.append((r.start(), r.end()))
    if _SEGMENT_SEP.search(body):
        body = _drop_eval_segments(c, body)
    if "(" in body and "/" in body:
        body = _PAREN_RATE.sub(lambda m: _paren_rate(c, m), body)
    if "'s " in body:
        if _LEADING_COUNTER.match(body):
            # a boosting round scores named sets (`[40]  holdout's auc: x`): a set that is not
            # the training set is an evaluation set, whatever the user called it
            body = _OWNED_METRIC.sub(_owned_metric, body)
        body = _POSSESSIVE.sub("_", body)  # `training's rmse: x` is the key `training_rmse`
    rest = _parse_kvs(c, _blank(body, spans))
    c.rest = rest
    if not c.is_bar and (ev := EVAL_WORDS.search(_NOT_AVAILABLE.sub("", rest))) is not None:
        # `... loss=2.3 Eval: acc=0.9`: a label after the training values opens the line's
        # evaluation part, not an evaluation line (`val: n/a` states no evaluation yet)
        trailing = "loss" in c.values and rest[ev.end() : ev.end() + 2].lstrip().startswith(":")
        if not (trailing and any(ch.isdigit() for ch in body[: ev.start()])):
            c.is_eval = c.eval_context = True
    fracs = list(_FRACTION.finditer(rest))
    if fracs:
        step = c.get("step")
        if step is None:
            f = fracs[-1]
            n, d = float(f["n"]), float(f["d"])
            # `0/2000` with no loss: nothing done yet (like a bar at 0); `[0/60000]  Loss: 2.3` (or
            # only loss components, `[0/60] D: 0.7 G: 2.1`) is step 0
            # a finished bar may overshoot its total by the last chunk (`100% ... 50,176/50,000`)
            over = n > d and n <= 1.1 * d and _FULL_PERCENT.search(body) is not None
            if d > 0 and (n <= d or over) and (n > 0 or "loss" in c.values or c.components):
                c.put("step", 4, n)
                c.put("total_steps", 4, d)
        elif (
            "total_steps" not in c.values
            and c.values["step"][0] >= 2
            and (lead := _LEADING_FRACTION.match(body)) is not None
            and step < float(lead["n"]) <= float(lead["d"])
        ):
            # `[02500/30000] loss 0.49 | batch 32`: the line's leading fraction is its counter;
            # a smaller number under a weak counter name without a total (`batch 16`) is a size
            c.values["step"] = (1, float(lead["n"]))
            c.put("total_steps", 1, float(lead["d"]))
        elif "total_steps" not in c.values:
            # `[25/288], global_step: 25` -> the unkeyed fraction gives the total
            for f in fracs:
                if float(f["n"]) == step and float(f["d"]) >= step:
                    c.put("total_steps", 4, float(f["d"]))
    if (
        "step" not in c.values
        and "epoch" not in c.values
        and ("loss" in c.values or c.n_eval_keys or c.components)
    ):
        lead = _LEADING_COUNTER.match(body)
        if lead is None and ("loss" in c.values or c.components):  # (`train 1618159, val 93443`: sizes)
            lead = _LEADING_ROUND.match(body)
        if lead is not None:  # `[250]  train-rmse: x`, `24:  learn: x  total: 9ms`: a bare round counter
            c.put("step", 6, float(lead["n"] or lead["m"]))
    if (
        "step" not in c.values
        and "epoch" not in c.values
        and (done := _units_done().search(body)) is not None
    ):
        n = float(done["n"] or done["n2"])  # `Finished 3 epochs`, `completed 500 steps`: units done so far
        role = "epoch" if (done["u"] or done["u2"]).lower().startswith("epoch") else "step"
        c.put(role, 6, n)
        c.first_role = c.first_role or role
        c.n_metrics += 1
        c.units_done = True
    if "step" not in c.values and "loss" not in c.values and (pair := _COUNTER_CURRENT_AVG.match(body)):
        # `50: 595.3, 600.6 avg, ...`: a counter, then a value and its running average (the
        # `current (average)` pair written as `current, average avg`): the current loss
        c.put("step", 6, float(pair["n"]))
        c.put("loss", 5, float(pair["cur"]))
        c.n_metrics += 1
    if c.eval_metric and "loss" not in c.values:
        c.is_eval = True
    if not c.is_bar and "step" in c.values and set(c.values) <= {"step", "total_steps", "epoch"}:
        words = body[: first.start()] if (first := _DIGIT.search(body)) is not None else body
        if _DATA_WORK.search(words) or not_training_bar(words):
            # `Reading batch: 500 / 500`, `Downloading shard 8/8`: a counter of other work
            c.is_eval = c.eval_context = True
    step, total = c.get("step"), c.get("total_steps")
    if step is not None and total is not None and step > 1.1 * total:
        # `step=90412 | ep 31/90 | iter 17/50`: a global step beside a count within
        # the epoch; the epoch's total does not bound it (when both are printed, the global step)
        del c.values["total_steps"]
    elif c.bar_count is not None and total == c.bar_count[1] and step != c.bar_count[0]:
        # `Batch 468/469 ...: 100%| 469/469`: a description counting the bar's own items (one
        # behind, 0-based) is the bar's counter
        c.values["step"] = (c.values["step"][0], c.bar_count[0])
    finish_line(c, body)
    return c


_COUNTER_CURRENT_AVG = re.compile(
    r"^\s*(?P<n>\d+):\s+(?P<cur>\d+\.\d+),\s+\d+\.\d+\s+avg(?:\s+loss)?\s*(?:,|$)", re.I
)

"""Samples from lines: one progress line (or a table row, or a `| key | value |` table) becomes
a `ProgressSample` with the roles its numbers were given (`parse.py`)."""

from __future__ import annotations

import math
import re
from datetime import datetime
from functools import lru_cache

from schedmate.core.types import ProgressSample, Throughput
from schedmate.tracker.fields import field_for_key, lexicon, normalise_key, split_camel
from schedmate.tracker.parse import (
    Candidates,
    parse_duration,
    parse_kv_row,
    parse_line,
    split_glued,
    strip_timestamps,
)

__all__ = [
    "sample_from_line",
    "sample_of",
    "TableReader",
    "KeyValueTable",
    "parse_timestamp",
    "headerless_rows",
]

_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?")


def parse_timestamp(text: str) -> float | None:
    """Seconds since the epoch of an ISO-like timestamp near the start of a line."""
    m = _ISO.search(text, 0, 80)
    if not m:
        return None
    try:
        y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        frac = float("0." + m.group(7)) if m.group(7) else 0.0
        return datetime(y, mo, d, h, mi, s).timestamp() + frac
    except ValueError:
        return None


def sample_of(line_no: int, text: str, c: Candidates) -> ProgressSample | None:
    v = c.values
    if not v and c.throughput is None:
        return None

    def g(name: str) -> float | None:
        x = v.get(name)
        return None if x is None else x[1]

    step, total = g("step"), g("total_steps")
    loss = g("loss")
    thr = Throughput(c.throughput[0], c.throughput[1]) if c.throughput else None
    s = ProgressSample(
        line_no=line_no,
        text=text,
        step=int(step) if step is not None and math.isfinite(step) else None,
        # a total smaller than the step counts something else (`STEP: 49/377 -- GLOBAL_STEP: 370050`)
        total_steps=(
            int(total)
            if total is not None and math.isfinite(total) and total > 0 and (step is None or total >= step)
            else None
        ),
        epoch=g("epoch"),
        total_epochs=c.total_epochs,
        loss=None if loss is None or math.isnan(loss) else loss,
        loss_is_nan=c.loss_is_nan,
        step_time_s=g("step_time"),
        step_time_generic=c.generic_time is not None and v.get("step_time") == c.generic_time,
        throughput=thr,
        lr=g("lr"),
        elapsed_s=g("elapsed"),
        remaining_s=g("remaining"),
        timestamp=parse_timestamp(text),
        is_eval=c.is_eval or c.is_summary,
        eval_metrics_only=c.is_eval and not (c.eval_context or c.is_summary) and step is not None,
        summary=c.is_summary or (c.is_summary_line and not c.is_eval),
    )
    return s


def sample_from_line(line_no: int, text: str) -> list[tuple[ProgressSample, bool, float | None]]:
    """Samples of one line (several when records are glued): (sample, is_bar, batch_size)."""
    out = []
    for seg in split_glued(text):
        c = parse_line(seg)
        s = sample_of(line_no, seg, c)
        if s is not None:
            out.append((s, c.is_bar, c.get("batch_size")))
    return out


_HEADER_TOKEN = re.compile(r"^(?:[A-Za-z_][\w/().%-]*|#)$")  # `#`: the column of row numbers
_ROW_TOKEN = re.compile(
    r"^[-+]?\d[\d.,]*(?:[eE][-+]?\d+)?(?:/\d+)?[A-Za-z%]{0,3}:?$|^nan$|^\d+:\d{2}(?::\d{2})?(?:\.\d+)?$", re.I
)
_COLUMN_GAP = re.compile(r"\s{2,}|\t")
_LIST_CELL = re.compile(r"\[([^\[\]]{0,400})\]")  # `[0.1, 0.2]`, `[0.1 0.2]`, `[]`


def _row_tokens(text: str) -> list[str]:
    """A whitespace-aligned row's cells; a bracketed list of numbers is one cell `[]`, with no
    value (the per-term parts of a loss are not its total)."""
    if "[" not in text:
        return text.split()

    def cell(m: re.Match[str]) -> str:  # (`[19]`, one whole number, is a bracketed counter)
        items = [x for x in re.split(r"[,\s]+", m[1].strip()) if x]
        one_count = len(items) == 1 and items[0].isdigit()
        return "[]" if not one_count and all(_ROW_TOKEN.match(x) for x in items) else m[0]

    return _LIST_CELL.sub(cell, text).split()


class KeyValueTable:
    """A table of `| key | value |` rows is one record (a logger's dump per interval), read
    when a line that is not a row ends it. Its progress line is the row of its best-ranked
    counter (the global step: `total_timesteps` over `iterations` or `n_updates`), and like
    any progress line that row states its own fields only; a table without a counter gives
    its values as one step-less record."""

    def __init__(self) -> None:
        self.best: tuple[int, int, str, Candidates] | None = None  # rank, line, text, values
        self.rows: list[str] = []  # the rows of the current table
        self.last: tuple[int, str] = (0, "")  # the last row that held a value

    def offer(self, line_no: int, text: str) -> bool:
        """Take a row (True), or refuse a line that is not one (False: the caller flushes)."""
        if "|" not in text and "│" not in text and "┃" not in text:
            return False
        row = Candidates()
        if not parse_kv_row(row, text):
            return False
        self.rows.append(text)
        step = row.values.get("step")
        if step is not None and (self.best is None or step[0] < self.best[0]):
            self.best = (step[0], line_no, text, row)
        if row.values:
            self.last = (line_no, text)
        return True

    def flush(self) -> ProgressSample | None:
        best, rows, (line_no, text) = self.best, self.rows, self.last
        self.best, self.rows, self.last = None, [], (0, "")
        if best is not None:
            return sample_of(best[1], best[2], best[3])
        if not text:
            return None
        merged = Candidates()  # a table without a counter: its rows' values as one record
        for row_text in rows:
            parse_kv_row(merged, row_text)
        return sample_of(line_no, text, merged)


_GAPS = "gaps"  # a whitespace-aligned table read by its column gaps
_DIGIT = re.compile(r"\d")
_TRAILING_SOURCE = re.compile(r"\S+\.\w+:\d+\s*$")  # a rich logger's `train.py:566` after the message
_LEADING_NUMBER = re.compile(r"^([-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)(\s?(?:ms|us|µs|s|sec|min|h)\b)?")
_ASIDE = re.compile(r"\s*\([^()]*\)")


def _gap_cells(text: str) -> list[str]:
    """A line's cells split at runs of two or more spaces, without a logger's timestamp or its
    trailing source location (`train.py:566`)."""
    return [c for c in _COLUMN_GAP.split(strip_timestamps(text).strip()) if c]


def _gap_key(name: str) -> str:
    """A column's key: its name, or its name without the parenthesised quantity when only that
    has a role (`Iteration (% of run)` is the step; `Iter (time)` keeps its time)."""
    key = normalise_key(split_camel(name))
    if field_for_key(key) is None and (bare := _ASIDE.sub("", name)) != name:
        key = normalise_key(split_camel(bare))
    return key


_BORDER = re.compile(r"[|│┃]")
_CELL_NAME = re.compile(r"^[^\W\d][\w/().%\- ]{0,40}$")


def _cells(text: str) -> tuple[str, list[str]] | None:
    """A delimited table line's cells: `| a | b |` (pipes or box-drawing), `a | b | c`, `a,b,c`, `a;b;c`;
    None for a whitespace-aligned line."""
    t = text.strip()
    if t[:1] in "|│┃" and t[-1:] in "|│┃" and len(t) > 2:
        return "|", [c.strip() for c in _BORDER.split(t[1:-1])]
    if t.count(" | ") >= 2 and "||" not in t:  # `Step | Training Loss | ...`: a table without borders
        return "|", [c.strip() for c in t.split("|")]
    if "\t" in t and t.count("\t") >= 2:
        return "\t", [c.strip() for c in t.split("\t")]
    for d in (",", ";"):
        if t.count(d) >= 1 and " " not in t.replace(d + " ", d).strip():
            return d, [c.strip() for c in t.split(d)]
    return None


_ROW_NOTE = re.compile(r"^(\S+)\s+[^\w\s\d]*\s*[^\W\d][\w ]{0,20}\W*$")


@lru_cache(maxsize=4096)
def _header_of(text: str) -> tuple[tuple[str, ...], tuple[str, ...] | None, str | None] | None:
    """A table header's keys, its column names split at gaps (when they differ from the keys)
    and its delimiter (None: whitespace-aligned); None when the line is no header. From the
    text alone, so a line repeated a million times is read once."""
    cells = _cells(text)
    if cells is not None:
        delim, names = cells
        if 2 <= len(names) <= 30 and all(_CELL_NAME.match(n) for n in names):
            keys = [normalise_key(split_camel(n)) for n in names]  # `NumIters` is `num iters`
            if any(field_for_key(k) is not None for k in keys):
                return tuple(keys), None, delim
        return None
    toks = text.split()
    if 2 <= len(toks) <= 20 and all(_HEADER_TOKEN.match(t) for t in toks):
        keys = [normalise_key(t) for t in toks]
        cols = [normalise_key(t) for t in _COLUMN_GAP.split(text.strip())]
        if any(field_for_key(k) is not None for k in keys + cols):
            return tuple(keys), (tuple(cols) if len(cols) != len(keys) else None), None
    names = (
        _gap_cells(text) if "  " in text.strip() and not _DIGIT.search(_TRAILING_SOURCE.sub("", text)) else []
    )
    if 2 <= len(names) <= 20 and all(_CELL_NAME.match(n) for n in names):
        # columns named in words, with a quantity or unit in parentheses (`Iteration (% of run)`,
        # `Iter Time (ms)`), their rows' cells numbers with units (`41.3 ms`): the gaps align them
        keys = [_gap_key(n) for n in names]
        if any(field_for_key(k) is not None for k in keys):
            return tuple(keys), None, _GAPS
    return None


class TableReader:
    """Tables printed as a header line followed by numeric rows: whitespace-aligned (TSV
    logs, YOLO tables), pipe-bordered (`| epoch | loss |`) or comma/semicolon-separated."""

    def __init__(self) -> None:
        self.header: list[str] | None = None
        self.columns: list[str] | None = None  # multi-word column names (`Train Loss`), by gaps
        self.delim: str | None = None  # None: whitespace-aligned
        self.header_text: str | None = None  # the line taken as the header last (not a heading)

    def offer_header(self, text: str) -> bool:
        got = _header_of(text)
        if got is None:
            return False
        keys, columns, self.delim = got
        self.header, self.columns = list(keys), None if columns is None else list(columns)
        return True

    def row(self, line_no: int, text: str) -> ProgressSample | None:
        if self.header is None:
            return None
        n = len(self.header)
        toks: list[str]
        if self.delim == _GAPS:
            gaps = _gap_cells(text)
            if len(gaps) != n:
                return None
            toks, header = [], self.header
            for key, cell in zip(header, gaps, strict=True):
                lead = _LEADING_NUMBER.match(cell)
                if field_for_key(key) is not None and lead is None:
                    return None
                toks.append("" if lead is None else lead[1] + (lead[2] or "").strip())
            if not any(toks):
                return None
            c = Candidates()
        elif self.delim is not None:
            cells = _cells(text)
            if cells is None or cells[0] != self.delim or len(cells[1]) != n:
                return None
            toks, header = cells[1], self.header
            if toks and (note := _ROW_NOTE.match(toks[-1])) is not None:
                toks = [*toks[:-1], note[1]]  # `42.5s  <- best`: a note after the last cell
            # cells of the columns with a role must be numbers; others may be names (a trial
            # table's `name | status | host` beside its `iter | loss`)
            roles = [field_for_key(k) is not None for k in header]
            if not all(_ROW_TOKEN.match(t) or not t or not r for t, r in zip(toks, roles, strict=True)):
                return None
            if not any(t and r for t, r in zip(toks, roles, strict=True)):
                return None
            c = Candidates()
        else:
            toks = _row_tokens(text)
            if self.columns is not None and len(toks) == len(self.columns) < n:
                header, n = self.columns, len(self.columns)
            elif self.header[0] == "#" and len(toks) == n - 1:
                header, n = self.header[1:], n - 1  # `#  step  loss`: a commented header line
            else:
                header = self.header
            if len(toks) < n or not all(t == "[]" or _ROW_TOKEN.match(t) for t in toks[:n]):
                return None
            if all(t == "[]" for t in toks[:n]):
                return None
            c = (
                parse_line(text[text.find(toks[n - 1]) + len(toks[n - 1]) :])
                if len(toks) > n
                else Candidates()
            )
        components = 0
        for key, tok in zip(header, toks[:n], strict=True):
            hit = _column_role(key)
            if hit is None or not tok:
                continue
            name, rank = hit
            tok = tok.rstrip(":")
            try:
                if "/" in tok and name in ("epoch", "step"):
                    a, b = tok.split("/")
                    c.put(name, rank, float(a))
                    if name == "step":
                        c.put("total_steps", rank, float(b))
                    else:
                        c.total_epochs = int(b)
                elif name == "total_if_step" and "." in tok and "/" not in tok:
                    c.put("loss", 5, float(tok))  # a fractional `total` column: the summed loss
                elif name in ("step", "loss", "epoch", "lr", "total_steps"):
                    c.put(name, rank, float(tok.replace(",", "")))
                    if name == "loss" and math.isnan(float(tok)):
                        c.loss_is_nan = True
                elif name in ("step_time", "outer_time"):
                    _table_time(c, name, rank, tok, ms=key.endswith(("_ms", "(ms)")))
                elif name == "loss_component":
                    c.components.append(float(tok))  # counted once it is a number
                    components += 1
            except ValueError:
                continue
        if components == 1 and "loss" not in c.values:
            c.put("loss", 8, c.components[0])  # the table's only loss column is its loss
        epoch = c.get("epoch")
        if "step" not in c.values and epoch is not None and (len(toks) == n or not c.is_bar):
            # an epoch column is a plain table's only counter (also when the bar after the row
            # was cut before its count: `16/30 ... 576: 100%|#`)
            c.put("step", 6, epoch)
            if c.total_epochs and "total_steps" not in c.values:
                c.put("total_steps", 6, float(c.total_epochs))
            if (t := c.generic_time or c.outer_time) is not None and "step_time" not in c.values:
                c.put("step_time", t[0] + 2, t[1])  # a per-epoch table's time column
        elif c.generic_time is not None and "step_time" not in c.values:
            c.put("step_time", c.generic_time[0], c.generic_time[1])
        return sample_of(line_no, text, c)


def _column_role(key: str) -> tuple[str, int] | None:
    """A column's role: as a key, and a count column that changes row by row (`NumIters`,
    `total_steps`) is the table's counter, never a run total."""
    if key == "#":
        return "step", 3  # a numbered table's `#` column counts its rows' steps
    hit = field_for_key(key)
    if hit is not None and hit[0] == "total_steps":
        return "step", hit[1] + 2
    if hit is None:
        words = key.split("_")
        if (
            len(words) == 2
            and words[0] in ("num", "n", "total", "nb")
            and words[1] in lexicon().counter_nouns
        ):
            return "step", 3
    return hit


def _table_time(c: Candidates, name: str, rank: int, tok: str, *, ms: bool = False) -> None:
    """A time cell: seconds (milliseconds under a `_ms` column), a clock duration (`00:44`), or
    a number with its unit (`19.6s`, `250ms`)."""
    with_unit = ":" in tok or tok[-1:].isalpha()
    secs = parse_duration(tok) if with_unit else float(tok) / (1000.0 if ms else 1.0)
    if secs is None or not secs > 0:
        return
    if name == "outer_time":
        c.outer_time = (rank, secs)
    else:
        c.generic_time = (rank, secs)


_BARE_NUM = r"[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?"
# `36 0.0562`, `[12:01:05] 1016 5.2992`, `94 train 7.32`, `1900/ 2000: 2.17` (a counter of a
# total), `[ 13.  0.155  0.162  0.94 ]` (an array printed per epoch: the counter, then values),
# `4 0.17 1.19 2025-05-30 18:13:28.73 4` (then a date, a time, a count)
_BARE_ROW = re.compile(
    r"^\s*(?:\[[^\]]{1,40}\]\s*)?(?P<open>\[\s*)?(?P<n>\d+)\.?(?:\s*/\s*\d+)?:?[\s,;]+"
    r"(?:(?P<w>[^\W\d]\w{0,15})[\s,;]+)?"
    rf"(?P<v>{_BARE_NUM})(?:[\s,;]+{_BARE_NUM}){{0,6}}(?:[\s,;]+[\d:.\-+]{{1,30}}){{0,4}}\s*(?(open)\]|)\s*$"
)


def _named_columns(lines: list[str], first: int) -> bool:
    """The rows sit under a header naming their columns (`precision  recall  f1-score  support`,
    the rows' first cell a row label): a table whose columns are named, none of them a training
    field (else the table reader had them)."""
    i = first - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    toks = lines[i].split() if i >= 0 else []
    cells = len(re.split(r"[\s,;|]+", lines[first].strip()))
    return len(toks) >= 3 and cells - 1 <= len(toks) <= cells and all(_HEADER_NAME.match(t) for t in toks)


_HEADER_NAME = re.compile(r"^[^\W\d][\w\-./%()]*$")


def headerless_rows(lines: list[str], first_line_no: int) -> list[tuple[ProgressSample, bool]]:
    """The rows of a log whose progress is bare `counter value...` lines with no header (`36
    0.0562`, `[12:01:05] 1016 5.2992`, `94 train 7.32` beside `94 val 7.5`), asked for only
    when no rule found progress: at least five such rows (other lines may sit between them)
    whose whole-number counter rises row by row. The counter is the step; the (first) value is
    the loss when it falls over the rows (a rising or flat column is some other metric)."""
    run: list[tuple[int, int, float]] = []
    for i in range(len(lines) - 1, max(len(lines) - 5000, 0) - 1, -1):
        m = _BARE_ROW.match(lines[i])
        if m is not None and m["w"] and m["w"].lower() not in lexicon().training_set_words:
            continue  # `0 val 10.93`: a row of another kind between the training rows
        if m is not None:
            if run and int(m["n"]) >= run[-1][1]:
                break  # the counter went back: an earlier run
            run.append((i, int(m["n"]), float(m["v"])))
    run.reverse()
    if len(run) < 5 or _named_columns(lines, run[0][0]):
        return []
    falls = run[-1][2] < run[0][2]
    return [
        (
            ProgressSample(
                line_no=first_line_no + i if first_line_no else 0,
                text=lines[i],
                step=n,
                loss=v if falls and math.isfinite(v) else None,
            ),
            False,
        )
        for i, n, v in run
    ]

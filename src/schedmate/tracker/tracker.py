"""MetricTracker: the facade that turns a log file into progress, ETA and events."""

from __future__ import annotations

import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from schedmate.core.settings import TrackerSettings
from schedmate.core.types import LineKind, ProgressSample, TrackEvent, TrackResult
from schedmate.logio import (
    detect_encoding,
    follow_batches,
    iter_line_batches,
    iter_lines_reverse,
    iter_text_blocks,
    open_log,
    read_decoded_tail,
    sniff_text,
)
from schedmate.tracker.classify import LineClassifier
from schedmate.tracker.mapper import FieldMapper
from schedmate.tracker.parse import not_training_bar, parse_line
from schedmate.tracker.samples import headerless_rows
from schedmate.tracker.state import (
    EventDetector,
    KeyValueTable,
    Sections,
    TableReader,
    sample_from_line,
    summarize,
)
from schedmate.tracker.templates import mask_line

__all__ = ["MetricTracker", "TrackUpdate"]

_CONFIG_TOTAL = re.compile(
    r"max_iter|max_steps|num_iterations|total_steps|train_iters|num_training_steps", re.I
)


# a window of short lines holds far more of them than its bytes suggest (a Python string and
# its entries in the tracker's lists cost ~150 bytes a line): a window ends at this many lines too
_WINDOW_LINES = 200_000


def _unterminated(path: Path) -> bool:
    """The log's last line has no line break yet (a line being written, or a cut paste)."""
    try:
        with open_log(path) as fh:
            fh.seek(0, 2)
            if fh.tell() == 0:
                return False
            fh.seek(-1, 2)
            return fh.read(1) not in (b"\n", b"\r")
    except (OSError, ValueError):
        return False


_TRAILING_NUMBER = re.compile(r"[-+]?\d[\d.,]*(?:[eE][-+]?\d*)?$")


def _without_cut_value(line: str, before: Sequence[str]) -> str:
    """An unterminated last line may be cut inside its last number (`lm loss: 2` of `lm loss:
    2.4774`): that number is not a value unless it shows the precision the same key showed on
    an earlier line (`train_loss: 1.7650` after `train_loss: 1.8463`); the rest of the line
    still counts."""
    t = line.strip()
    if t.startswith("{") and not t.endswith("}") and (comma := line.rfind(",")) > 0:
        return line[:comma] + "}"  # a JSON record cut mid-way: its complete pairs count
    m = _TRAILING_NUMBER.search(line)
    if m is None:
        return _TRAILING_WORD.sub("", line)  # `...\tValidation`, `val_loss:`: a key cut before its value
    key = _KEY_BEFORE.search(line, 0, m.start())
    if key is not None:
        decimals = len(m[0].partition(".")[2])
        for prev in reversed(before[-50:]):
            if (p := re.search(re.escape(key[1]) + r"\s*[:=]?\s*[-+]?\d*\.(\d+)", prev)) is not None:
                if decimals >= len(p[1]):
                    return line
                break
    return line[: m.start()]


_TRAILING_WORD = re.compile(r"(?<=[\t|,;])\s*[^\W\d][\w ./\-]*[:=]?\s*$")


def _lost_counter(cut: str, kept: str, before: Sequence[str]) -> bool:
    """A cut last line that is a prefix of an earlier line's format but lost the counter
    that format carries (`epoch:1 loss:1.08:  6` of `epoch:1 loss:1.1:  60%|... | 235/391`)
    is not a progress record yet: the epoch left on it is not the run's step."""
    tpl = mask_line(cut)
    if not tpl:
        return False
    for prev in reversed(before[-50:]):
        if len(prev) > len(cut) and mask_line(prev).startswith(tpl):
            full = parse_line(prev).values.get("step")
            now = parse_line(kept).values.get("step")
            return full is not None and (now is None or now[0] > full[0])
    return False


_KEY_BEFORE = re.compile(r"([^\W\d][\w./\-]*)\s*[:=]?\s*$")


def _config_total_of(text: str) -> int | None:
    """A total step count stated by a config line (`MAX_ITER: 111000`, `max_steps=500`)."""
    if not _CONFIG_TOTAL.search(text):
        return None
    t = parse_line(text).get("total_steps")
    return int(t) if t and t > 0 else None


_WIDGET_COUNT = re.compile(r"^\s*\d+/\d+ \[")  # a bar's counter with no description before it
_WIDGET_DESC = re.compile(r"\d{1,3}%\s*$")  # a widget bar's description line, ending in its percentage


@dataclass(frozen=True, slots=True)
class TrackUpdate:
    """One step of `follow`: the current answer plus events raised since the last update."""

    result: TrackResult
    new_events: tuple[TrackEvent, ...]


class MetricTracker:
    """Classify lines, parse progress, merge samples; rules first, embedder/LLM when needed."""

    def __init__(
        self,
        settings: TrackerSettings | None = None,
        classifier: LineClassifier | None = None,
        mapper: FieldMapper | None = None,
    ) -> None:
        self.settings = settings or TrackerSettings()
        self.classifier = classifier or LineClassifier(embedder=None)
        self.mapper = mapper or FieldMapper(None)

    # -- one-shot ----------------------------------------------------------------------
    def track_file(self, path: str | Path, *, now: float | None = None, live: bool = True) -> TrackResult:
        """Track a (possibly huge) log: read backwards from the end until progress is found.

        `live=True` treats the log as a running job's: an old last write is a stall.
        """
        p = Path(path)
        sniff_text(p)
        enc = self._encoding(p)
        if enc is not None:  # UTF-16 / GBK: the tail decoded with its encoding, widened as needed
            result = self._track_decoded(p, enc)
            stall = self._stall_event(p, result, now) if live else None
            return result if stall is None else replace(result, events=result.events + (stall,))
        cfg = self.settings
        window: list[str] = []  # newest line first
        size = 0
        result = TrackResult(file=str(path))
        cut = _unterminated(p)
        reached_start = True
        dropped = False
        for text in iter_lines_reverse(p, max_line_chars=cfg.max_line_bytes):
            window.append(text)
            size += len(text) + 1
            if size >= cfg.tail_bytes or len(window) >= _WINDOW_LINES:
                result = self._track_window(str(path), window[::-1], whole=False, cut_last=cut)
                if result.has_progress:
                    reached_start = False
                    break
                # no progress in this stretch: it holds nothing the answer needs, so memory
                # stays bounded by tail_bytes however far back the progress (if any) is
                window, size, dropped = [], 0, True
        if reached_start:
            result = self._track_window(
                str(path), window[::-1], whole=not dropped, cut_last=cut and not dropped
            )
        if result.has_progress and result.total_steps is None and not reached_start:
            total = self._config_total(p)
            if total and result.step is not None and result.step <= total:
                result = replace(
                    result,
                    total_steps=total,
                    progress=result.step / total,
                    eta_s=result.eta_s
                    if result.eta_s is not None
                    else (total - result.step) * result.step_time_s
                    if result.step_time_s
                    else None,
                )
        stall = self._stall_event(p, result, now) if live else None
        if stall is not None:
            result = replace(result, events=result.events + (stall,))
        return result

    @staticmethod
    def _encoding(path: Path) -> str | None:
        """The log's text encoding when it is not UTF-8 (UTF-16, GB18030...)."""
        with open_log(path) as fh:
            return detect_encoding(fh.read(64 * 1024))

    def _track_decoded(self, path: Path, encoding: str) -> TrackResult:
        """Like the byte reader: windows of `tail_bytes` from the end backwards until one
        holds progress (memory bounded by one window)."""
        end: int | None = None
        while True:
            lines, start = read_decoded_tail(path, encoding, self.settings.tail_bytes, end=end)
            result = self._track_window(str(path), lines, whole=start == 0 and end is None)
            if result.has_progress or start == 0:
                return result
            end = start

    def track_lines(self, lines: Sequence[str], *, file: str = "<lines>") -> TrackResult:
        """Track an in-memory log (tests, the REST service)."""
        return self._track_window(file, list(lines), whole=True)

    def _detector(self) -> EventDetector:
        s = self.settings
        return EventDetector(factor=s.slowdown_factor, stall_factor=s.stall_factor, stall_min_s=s.stall_min_s)

    def _use_llm(self) -> bool:
        """The LLM mapping (and so the embedder's opinion on unparsed lines) is usable."""
        return self.settings.use_llm and self.mapper.llm is not None

    def _line_samples(
        self,
        table: TableReader,
        no: int,
        text: str,
        kind: LineKind,
        *,
        llm: bool = False,
        prev: str = "",
    ) -> list[tuple[ProgressSample, bool, float | None]]:
        """Samples of one line: a table row, a parsed progress line, or (with `llm`, once per
        template) an LLM-mapped one; other lines may be a table header. (sample, is_bar,
        batch_size). `prev` is the line before (a notebook widget bar's description)."""
        row = table.row(no, text)
        if row is not None:
            return [(row, False, None)]
        if kind is not LineKind.PROGRESS:
            if table.offer_header(text):
                table.header_text = text
            return []
        got = sample_from_line(no, text)
        if (
            got
            and prev
            and _WIDGET_COUNT.match(text)
            and _WIDGET_DESC.search(prev)
            and not_training_bar(prev)
        ):
            # a notebook widget copied as text: `Loading checkpoint shards: 100%` on one line,
            # ` 4/4 [01:02<00:00, 12.78s/it]` on the next; the description says what it counts
            got = [(replace(s, is_eval=True), bar, bs) for s, bar, bs in got]
        if not got and llm:
            mapping = self.mapper.mapping_for(mask_line(text), text)
            s = mapping.apply(no, text) if mapping is not None else None
            if s is not None:
                got = [(s, False, None)]
        return got

    def _track_window(
        self, file: str, lines: list[str], *, whole: bool, cut_last: bool = False
    ) -> TrackResult:
        whole_last = None
        if cut_last and lines:
            kept = _without_cut_value(lines[-1], lines[:-1])
            if kept != lines[-1] and not _lost_counter(lines[-1], kept, lines[:-1]):
                whole_last = (kept, lines[-1])
            lines = lines[:-1] if _lost_counter(lines[-1], kept, lines[:-1]) else [*lines[:-1], kept]
        first_no = 1 if whole else 0
        samples, batch_size, config_total = self._samples(lines, first_line_no=first_no, llm=False)
        if self._use_llm() and not any(not s.is_eval for s, _ in samples):
            # the long tail: the rules found no training progress, so the model's verdict on
            # unparsed lines and the LLM's field mappings are asked (once per template). Where
            # the rules do find progress the LLM is not asked: a small model's guesses about
            # a line must not displace what the rules read (measured: docs/tracker.md)
            samples, batch_size, config_total = self._samples(lines, first_line_no=first_no, llm=True)
        if not any(not s.is_eval for s, _ in samples):
            samples = headerless_rows(lines, first_no) or samples  # bare `counter value` rows

        det = self._detector()
        events: list[TrackEvent] = []
        for s, _ in samples:
            if not s.is_eval:
                events.extend(det.observe(s))
        result = summarize(
            file,
            samples,
            config_total=config_total,
            batch_size=batch_size,
            events=events,
            eta_window=self.settings.eta_window,
        )
        if whole_last is not None and result.last_progress_line == whole_last[0]:
            # the values of a line that may be cut are read without its last number, but the
            # line is named as the file has it
            result = replace(result, last_progress_line=whole_last[1])
        return result

    def _samples(
        self, lines: list[str], first_line_no: int, *, llm: bool
    ) -> tuple[list[tuple[ProgressSample, bool]], float | None, int | None]:
        # the model's verdict only matters here for progress lines no rule can parse, and
        # those are only usable when an LLM can map them: otherwise skip the model
        kinds = self.classifier.classify_batch(lines, embed=llm)
        table = TableReader()
        # only the most recent progress lines matter: parse at most `max_samples` of them
        first = 0
        seen = 0
        for i in range(len(kinds) - 1, -1, -1):
            if kinds[i] is LineKind.PROGRESS:
                seen += 1
                if seen >= self.settings.max_samples:
                    first = i
                    break
        for text in lines[max(0, first - 10_000) : first]:
            table.offer_header(text)  # a table header may sit above the cut
        samples: list[tuple[ProgressSample, bool]] = []
        batch_size: float | None = None
        config_total: int | None = None
        sections = Sections()
        kv = KeyValueTable()
        quiet = None  # the last line, when it was no progress and gave nothing
        for i in range(first, len(lines)):
            text, kind = lines[i], kinds[i]
            if text == quiet:
                continue  # the same line again says nothing new (logs repeat lines by the million)
            no = first_line_no + i if first_line_no else 0
            if kv.offer(no, text):
                quiet = None
                continue
            if (done := kv.flush()) is not None:
                samples.append((sections.mark(done), False))
            got = self._line_samples(table, no, text, kind, llm=llm, prev=lines[i - 1] if i else "")
            quiet = text if not got and kind is not LineKind.PROGRESS else None
            for s, bar, bs in got:
                samples.append((sections.mark(s), bar))
                batch_size = bs or batch_size
            if not got and kind is not LineKind.PROGRESS and table.header_text is not text:
                marker = sections.announce(no, text)  # (a table's header names columns, not a section)
                if marker is not None:
                    samples.append((marker, False))
            if not got and kind is LineKind.INFO:
                config_total = _config_total_of(text) or config_total
        if (done := kv.flush()) is not None:
            samples.append((sections.mark(done), False))
        return samples, batch_size, config_total

    def _config_total(self, path: Path) -> int | None:
        """A total step count from the head of the log (config dumps: MAX_ITER, max_steps...)."""
        total = None
        for batch in iter_line_batches(path, max_line_chars=self.settings.max_line_bytes):
            for line in batch:
                total = _config_total_of(line.text) or total
            break  # only the first batch (the head)
        return total

    def _stall_event(self, path: Path, result: TrackResult, now: float | None) -> TrackEvent | None:
        """A static log whose last write is far older than its usual step time is stalled."""
        if (
            not result.has_progress
            or not result.step_time_s
            or result.step_time_s <= 0
            or result.progress == 1.0
        ):
            return None
        try:
            age = (now or time.time()) - path.stat().st_mtime
        except OSError:
            return None
        limit = max(self.settings.stall_min_s, self.settings.stall_factor * result.step_time_s)
        if age > limit:
            return TrackEvent(
                "stall",
                result.last_progress_line_no or 0,
                f"log not written for {age:.0f}s (limit {limit:.0f}s)",
                age / result.step_time_s,
            )
        return None

    # -- streaming -----------------------------------------------------------------------
    def classify_file(
        self, path: str | Path, progress: Callable[[int], None] | None = None
    ) -> Counter[LineKind]:
        """Classify every line of a file in bounded memory; returns counts per kind."""
        p = Path(path)
        sniff_text(p)
        counts: Counter[LineKind] = Counter()
        for block in iter_text_blocks(p, max_line_chars=self.settings.max_line_bytes):
            got = self.classifier.count_block(block)
            counts.update(got)
            if progress is not None:
                progress(sum(got.values()))
        return counts

    def follow(
        self,
        path: str | Path,
        *,
        stop: Callable[[], bool] | None = None,
        poll_s: float = 0.5,
        clock: Callable[[], float] = time.time,
        history: int = 2000,
        on_idle_event: Callable[[TrackEvent], None] | None = None,
    ) -> Iterator[TrackUpdate]:
        """Follow a growing log; yield an update after each progress line or event.

        Stalls are noticed while no line arrives: at each poll the detector compares the
        silence with the usual gap; such an event goes to `on_idle_event` at once (a live
        display) and is also attached to the next update.
        """
        det = self._detector()
        recent: deque[tuple[ProgressSample, bool]] = deque(maxlen=history)
        events: deque[TrackEvent] = deque(maxlen=100)
        idle: list[TrackEvent] = []
        table = TableReader()
        kv = KeyValueTable()
        sections = Sections()
        embed = self._use_llm()
        rules_read = False

        def _poll() -> bool:
            ev = det.check_stall(clock())
            if ev is not None:
                idle.append(ev)
                if on_idle_event is not None:
                    on_idle_event(ev)
            return bool(stop and stop())

        prev_text = ""
        # one update per batch of lines read at once: a log written faster than it is read
        # is summarised once per read, not once per line (the summary costs O(history))
        for batch in follow_batches(Path(path), poll_s=poll_s, stop=_poll):
            new: list[TrackEvent] = idle[:]
            idle.clear()
            changed = bool(new)
            ask = embed and not rules_read
            kinds = self.classifier.classify_batch([line.text for line in batch], embed=ask)
            # a burst longer than the history kept (a log caught up on, a fast writer): only its
            # last `history` progress lines can reach the answer, as in a one-off read
            first, seen = 0, 0
            for i in range(len(kinds) - 1, -1, -1):
                if kinds[i] is LineKind.PROGRESS:
                    seen += 1
                    if seen > history:
                        first = i + 1
                        break
            for line, kind in zip(batch[first:], kinds[first:], strict=True):
                if kv.offer(line.no, line.text):
                    continue  # a key/value table counts when it ends
                done = kv.flush()
                # the LLM path only while the rules have read no training progress (the long tail)
                ask = embed and not rules_read
                got = [(sections.mark(done), False)] if done is not None else []
                ruled = self._line_samples(table, line.no, line.text, kind, prev=prev_text)
                rules_read = rules_read or any(not s.is_eval for s, _, _ in ruled)
                if not ruled and ask:
                    ruled = self._line_samples(table, line.no, line.text, kind, llm=True, prev=prev_text)
                prev_text = line.text
                got += [(sections.mark(s), bar) for s, bar, _ in ruled]
                if not got and kind is not LineKind.PROGRESS and table.header_text is not line.text:
                    marker = sections.announce(line.no, line.text)
                    if marker is not None:
                        recent.append((marker, False))
                now = clock()
                for s, bar in got:
                    recent.append((s, bar))
                    if not s.is_eval:
                        new.extend(det.observe(s, now=now))
                changed = changed or bool(got)
            if changed:
                events.extend(new)
                result = summarize(
                    str(path), list(recent), events=events, eta_window=self.settings.eta_window
                )
                yield TrackUpdate(result, tuple(new))

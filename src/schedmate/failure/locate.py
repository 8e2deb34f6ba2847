"""Find the first line that shows why a job failed.

Small logs are read whole. Large ones are binary-searched over byte offsets: a probe reads
one window, the line classifier says whether it holds failure lines, and the search narrows
to the first window that does, so a log of many GB costs O(log n) classifier calls and
bounded memory. Inside the chosen region the rules pick the root cause:

- the region starts at the last training-progress line (before it, training was healthy);
- candidates are error lines and lines matching a specific failure signature (so an NCCL
  `WARN` that names the fault counts, a generic `UserWarning` does not);
- a `Traceback` header resolves to its exception line; traceback frames are never causes;
- the earliest candidate wins: cascades (every rank's watchdog, torchrun's ChildFailedError
  summary) come after the rank's first error;
- a user's own print of the error (`Error running job: <message>`, a localised prefix)
  states the cause first: the later exception line repeating its message does not win;
- native fatal lines (glog `F0101 ...`, `Check failed: ...`, a TensorFlow kernel's
  `OP_REQUIRES failed at ...`) are causes, the `Aborted`
  after them is not; boxed (rich) tracebacks and rank-prefixed frames are frames;
- a symptom signature (`defer_to` in the knowledge base) yields to a line shortly after it
  that names the real fault (a socket error, then the GPU fault that killed the peer);
- the scheduler's verdict on a job that was still running (time limit, memory-limit kill,
  preemption, node failure) outranks an earlier error the job went on after; an exception
  that ended a traceback, a native fatal line and a platform fault keep their place;
- what a line only quotes (`saw "NCCL WARN ..."` in a user's print) is not said by it, nor
  what it negates (`no CUDA out of memory errors detected`); Python's `Exception ignored in:`
  reports (a finaliser at exit) are not fatal;
- an error glued after a progress bar's last redraw (`...it/s]panic: ...`) is a cause.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedmate.core.settings import FailureSettings
from schedmate.core.types import LineKind
from schedmate.failure.kb import KnowledgeBase, Signature
from schedmate.logio import (
    MAX_DECODED_BYTES,
    clean_text,
    detect_encoding,
    iter_line_batches,
    open_log,
    read_decoded_lines,
)
from schedmate.tracker.classify import LineClassifier
from schedmate.tracker.templates import mask_batch

__all__ = ["FailureLocator", "Located", "count_line_breaks"]

_BREAK = re.compile(r"\r\n|\r|\n")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
# `[rank3]:` / `[1,0]<stderr>:` / `3: ` prefixes that launchers put before every line of a rank
_RANK_PREFIX = re.compile(r"^(?:\[(?:rank\s*)?\d+(?:[,/]\d+)?\](?:<std(?:out|err)>)?:?|\d{1,4}: )", re.I)
_FRAME_BODY = re.compile(r"^\s+(File \"|at |\^+$|~+$)|^\s{2,}\S|^\s*[│┃║╭╮╰╯┏┓┗┛╔╗╚╝]")
# a user's or a library's own error print: an error word (several languages) then a colon
_ERROR_WORD = re.compile(
    r"^\W{0,3}(?:\[[^\]]{0,60}\]\s*|\d[\d:.,/TZ+-]*\s+)*(?:[\w.-]+:?\s+){0,3}"
    r"(?:error|erro|fehler|erreur|errore|ошибка|помилка|błąd|chyba|hiba|hata|fout|virhe)\b[^:：]{0,40}[:：]\s*\S"
    r"|^.{0,24}?(?:错误|錯誤|出错|出錯|失败|失敗|异常|異常|エラー|例外|오류|에러)\s*[:：]\s*\S",
    re.I,
)
# native fatal lines: glog's `F1124 10:00:00.123 ...`, CHECK macros, `FATAL ... file.cc:12]`
_NATIVE_FATAL = re.compile(
    r"^\s*F\d{4} \d\d:\d\d:\d\d|\bCheck failed:|\bFATAL\b.{0,80}\.(?:cc|cpp|cu|h):\d+\]"
    r"|\b\w*(?:Check|CHECK)[ _](?:FAIL|FAILED)\b"  # a check macro's report: `cudaCheck FAIL file=...`
    r"|(?:^|[\]\s])panic: \S"  # a Go runtime's panic (a logger's or a launcher's service)
    # a TensorFlow kernel's failure, logged as a warning (not the routine OUT_OF_RANGE of a
    # finished iterator, nor CANCELLED)
    r"|\bOP_REQUIRES failed at \S+ : (?:INVALID_ARGUMENT|RESOURCE_EXHAUSTED|FAILED_PRECONDITION|INTERNAL"
    r"|DATA_LOSS|UNIMPLEMENTED): "
)
# an error written after a progress bar's last redraw, with no line break between (`...it/s]panic: ...`)
_GLUED_AFTER_BAR = re.compile(r"\]\s*(?:panic: |terminate called|fatal error:|[\w.]*(?:Error|Exception): )")
_METRIC = re.compile(r"\d\.\d")
# inside a traceback: an ASCII-boxed frame (`| /path/x.py:12 in f |`, `+----+`)
_ASCII_BOX = re.compile(r"^\s*(?:\|\s|\+[-=+]{3,})")
# C++ exceptions: `terminate called after throwing ...` then `  what():  <message>`
_WHAT = re.compile(r"^\s*what\(\):\s+\S")
# c10's location note after a what(): never the cause
_RAISED_FROM = re.compile(r"^\s*Exception raised from \S+ at .{0,200}\(most recent call first\)")
_FILE_FRAME = re.compile(r'^\s*(?:\[[^\]]*\]:?\s*)?File "[^"]+", line \d+')
_SOURCE_FRAME = re.compile(r'^\s*(?:File "|at \S+\(|frame #\d+:|#\d+ 0x)')
_EXC_MESSAGE = re.compile(r"^.*?\b[\w.]*(?:Error|Exception|Failure)\w*:\s*")
_EXC_LINE = re.compile(
    r"^\s*(?:\[[^\]]*\]:?\s*)*(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Failure|Warning)\b"
)
# a traceback frame glued into a line: output of several processes interleaved mid-line
_GLUED_FRAME = re.compile(r"\S.*\bFile \"[^\"]+\", line \d+")
_EMPTY_EXC = re.compile(r"^\s*[\w.]*(?:Error|Exception)\s*:?\s*$")  # an exception's name, its message below
_QUOTED = re.compile(r"\"[^\"]{4,}\"|'[^']{4,}'")  # a quotation of at least a few characters
_QUOTE_SCAN = 4096
# a field of a structured record (`"message": "User program failed with ..."`): its quoted value
# is what the record says, not a quotation
_JSON_FIELD = re.compile(r'^\s*"[\w .-]{1,40}"\s*:\s*"')
_CHAIN = re.compile(r"During handling of the above exception|The above exception was the direct cause")
# the scheduler ended a job that was alive: what it says outranks an earlier error the job survived
_VERDICT_KINDS = frozenset(
    {"time_limit", "memory_limit", "host_oom_killed", "preemption", "node_failure", "kube_evicted"}
)
_VERDICT_HINT = re.compile(  # a cheap filter before the signatures
    r"limit|oom|memory|preempt|node|evict|TERM_|walltime|killed|timeout|deadline|terminat|spot|heartbeat"
    r"|connection failure|pressure",
    re.I,
)
_NEGATION = re.compile(r"\b(?:no|without|zero|never|not any)\s+(?:[\w-]+\s+){0,2}$", re.I)
_IGNORED = re.compile(r"^\s*(?:\[[^\]]*\]:?\s*)?Exception ignored in\b")
_CONTEXT_AFTER = 40
_CONTEXT_BEFORE = 5
_BEFORE_KEPT = 5000  # lines before the root kept for the checkpoint search
_STRONG = 0.7  # a signature this sure marks a line as a cause anywhere (binary-search probes too)
# inside the failure region, any specific signature does: platform and scheduler messages
# (LSF TERM_OWNER, a SIGKILL, a host OOM kill) are causes although no exception follows
_REGION_FLOOR = 0.6
_LOOKAHEAD = 200
_DEFER_LOOKAHEAD = 30
_BEHIND_PROGRESS = 50
# consequences of another rank's failure: never the cause when a definite one is near
_CASCADE = re.compile(
    r"Watchdog caught|collective operation timeout|WorkNCCL\(.{0,300}\)\s*ran for|communicator was aborted"
    r"|ChildFailedError|remote process exited|Some NCCL operations have failed or timed out",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Located:
    """Where the failure shows first. `context` = lines around it for the classifier/LLM,
    the root at `context[root_at]`; `before` = what was read before it (checkpoint search)."""

    line_no: int | None
    text: str | None
    signature: Signature | None
    context: tuple[str, ...]
    probes: int
    failed: bool
    root_at: int = 0
    before: tuple[str, ...] = ()

    @property
    def after(self) -> tuple[str, ...]:
        """The root-cause line and the lines that follow it."""
        return self.context[self.root_at :]


def _quoted_only(sig: Signature, text: str) -> bool:
    """The signature matches only inside quotes of a line that is no exception (a user's own
    print quoting an NCCL or scheduler message): a quotation, not the fault happening."""
    if "'" not in text and '"' not in text or _EXC_LINE.match(text) or _JSON_FIELD.match(text):
        return False
    spans = [m.span() for m in _QUOTED.finditer(text[:_QUOTE_SCAN])]
    if not spans:
        return False
    found = False
    for m in sig.regex.finditer(text[:_QUOTE_SCAN]):
        found = True
        if not any(a < m.start() and m.end() < b for a, b in spans):
            return False
    return found


def _negated(sig: Signature, text: str) -> bool:
    """The line says the fault did not happen (`no CUDA out of memory errors detected`,
    `finished without NCCL timeouts`): a negation word just before the signature's match."""
    if _EXC_LINE.match(text):
        return False
    m = sig.regex.search(text[:_QUOTE_SCAN])
    return m is not None and _NEGATION.search(text[max(0, m.start() - 40) : m.start()]) is not None


def _is_frame(text: str) -> bool:
    """A traceback frame, also behind a rank prefix or inside a rich box."""
    return bool(_FRAME_BODY.match(_RANK_PREFIX.sub("", text, count=1)))


def _repeats(earlier: str, exc_line: str) -> bool:
    """Does `earlier` already state the message of the exception line `exc_line`?"""
    msg = _EXC_MESSAGE.sub("", _RANK_PREFIX.sub("", exc_line, count=1), count=1).strip().strip("'\"")
    return len(msg) >= 8 and msg[:80].lower() in earlier.lower()


def count_line_breaks(path: Path, end: int, chunk: int = 8 * 1024 * 1024) -> int:
    """Line breaks before byte `end`, counting `\r\n` once (as logio splits).

    One reused buffer; `\n` is counted with numpy's SIMD compare (3x `bytes.count`, which
    matters for a cause near the end of a GB log); the two-byte `\r\n` search only runs on
    chunks that hold a `\r`.
    """
    n = 0
    prev_cr = False
    buf = bytearray(chunk)
    view = memoryview(buf)
    arr = np.frombuffer(buf, np.uint8)
    eq = np.empty(chunk, dtype=bool)
    with path.open("rb", buffering=0) as fh:
        left = end
        while left > 0:
            got = fh.readinto(view[: min(chunk, left)])
            if not got:
                break
            left -= got
            b = view[:got]
            np.equal(arr[:got], 10, out=eq[:got])
            n += int(np.count_nonzero(eq[:got]))
            if buf.find(b"\r", 0, got) >= 0:  # find is memchr-fast; most chunks have no \r
                n += buf.count(b"\r", 0, got) - buf.count(b"\r\n", 0, got)
            if prev_cr and b[0] == 0x0A:
                n -= 1
            prev_cr = b[got - 1] == 0x0D
    return n


class FailureLocator:
    """Binary search guided by the line classifier, then rule-based refinement."""

    def __init__(
        self, classifier: LineClassifier, kb: KnowledgeBase, settings: FailureSettings | None = None
    ) -> None:
        self.classifier = classifier
        self.kb = kb
        self.settings = settings or FailureSettings()
        self.calls = 0
        self._size = 0

    # -- candidate rules -----------------------------------------------------------------
    def _strong(self, text: str, floor: float = _STRONG) -> Signature | None:
        """A specific signature sure enough to mark a line as a cause on its own."""
        sig = self.kb.match(text, include_generic=False)
        if sig is None or sig.confidence < floor:
            return None
        return None if _quoted_only(sig, text) or _negated(sig, text) else sig

    def _candidate(self, text: str, kind: LineKind, floor: float = _STRONG) -> Signature | bool:
        if _GLUED_FRAME.match(text):
            return False  # interleaved garbage: the clean line of the same error follows
        sig = self._strong(text, floor)
        if sig is not None:
            return sig
        if _is_frame(text):
            return False
        quoted = (
            ("'" in text or '"' in text)
            and not _JSON_FIELD.match(text)
            and _QUOTED.search(text[:_QUOTE_SCAN]) is not None
        )
        if quoted:  # what a quotation says is not said by the line (a print quoting an error)
            text = _QUOTED.sub(lambda m: " " * len(m[0]), text[:_QUOTE_SCAN])
            if kind is LineKind.ERROR:
                kind = self.classifier.classify_batch([text])[0]
        if kind is LineKind.ERROR:
            return True
        stated = bool(_NATIVE_FATAL.search(text) or _ERROR_WORD.match(text))
        # a progress line's metrics (`val error: 0.31`) are not an error print
        if kind is LineKind.PROGRESS and _METRIC.search(text):
            return _GLUED_AFTER_BAR.search(text) is not None
        return stated

    def pick(
        self, lines: Sequence[str], kinds: Sequence[LineKind] | None = None
    ) -> tuple[int | None, Signature | None]:
        """Index of the root-cause line among `lines` (None when nothing failed)."""
        if kinds is None:
            self.calls += 1
            kinds = self.classifier.classify_batch(list(lines))
        last_progress = next((i for i in range(len(lines) - 1, -1, -1) if kinds[i] is LineKind.PROGRESS), 0)
        found = self._first_candidate(lines, kinds, last_progress)
        if found is None and last_progress > 0:  # the crash was printed before a last bar redraw
            found = self._first_candidate(lines, kinds, 0)
        if found is None:
            return None, None
        i, sig = found
        i, sig = self._refine(lines, kinds, i, sig)
        verdict = self._later_verdict(lines, i, sig)
        if verdict is not None:
            return verdict
        if _CASCADE.search(lines[i]) and 0 < last_progress <= i:
            earlier = self._cause_behind_progress(lines, last_progress)
            if earlier is not None:
                return earlier
        return i, sig

    def _later_verdict(
        self, lines: Sequence[str], i: int, sig: Signature | None
    ) -> tuple[int, Signature] | None:
        """The scheduler ended a job that was still running (its time limit, a memory limit's
        kill, a preemption, a node failure): an earlier error the job went on after (a shell's
        `conda activate` complaint, a library's warning) did not end it. Exceptions that end
        a traceback, native fatal lines and platform faults (a hang's cause) keep their place."""
        text = lines[i]
        if sig is not None and sig.category == "infrastructure" and not sig.generic:
            return None
        if _NATIVE_FATAL.search(text) or _WHAT.match(text) or sig is not None and sig.kind in _VERDICT_KINDS:
            return None
        if any(_TRACEBACK.search(t) for t in lines[max(0, i - 500) : i]):
            return None
        for j in range(i + 1, min(len(lines), i + 5000)):
            if not _VERDICT_HINT.search(lines[j]):
                continue
            s2 = self._strong(lines[j], _REGION_FLOOR)
            if s2 is not None and s2.kind in _VERDICT_KINDS and not _is_frame(lines[j]):
                return j, s2
        return None

    def _cause_behind_progress(
        self, lines: Sequence[str], last_progress: int
    ) -> tuple[int, Signature] | None:
        """Ranks print out of order: when the region only holds a cascade (a collective
        timeout, an aborted communicator), a definite cause printed by another rank just
        before the last progress line is the root."""
        for j in range(max(0, last_progress - _BEHIND_PROGRESS), last_progress):
            sig = self._strong(lines[j])
            if (
                sig is not None
                and sig.defer_to is None
                and not _CASCADE.search(lines[j])
                and not _is_frame(lines[j])
            ):
                return j, sig
        return None

    def _first_candidate(
        self, lines: Sequence[str], kinds: Sequence[LineKind], start: int
    ) -> tuple[int, Signature | None] | None:
        i, n = start, len(lines)
        while i < n:
            text = lines[i]
            if _IGNORED.match(text):
                i = self._after_ignored(lines, i)
                continue
            if _TRACEBACK.search(text):
                exc = self._exception_of(lines, i + 1)
                if exc is not None:
                    return exc
                i += 1
                continue
            cand = self._candidate(text, kinds[i], _REGION_FLOOR)
            if cand and i > 0 and text[:1].isspace() and _FILE_FRAME.match(lines[i - 1]):
                cand = False  # the source text of a frame (`raise X(`), even without its header
            if cand:
                return i, cand if isinstance(cand, Signature) else self.kb.match(text)
            i += 1
        return None

    def _after_ignored(self, lines: Sequence[str], i: int) -> int:
        """Python's `Exception ignored in: ...` reports an exception it could not raise (a
        finaliser at exit): not fatal. The line after its exception line."""
        j = i + 1
        if j < len(lines) and _TRACEBACK.search(lines[j]):
            found = self._exception_of(lines, j + 1)
            return found[0] + 1 if found is not None else j + 1
        if j < len(lines) and _EXC_LINE.match(lines[j]):
            return j + 1
        return j

    def _refine(
        self, lines: Sequence[str], kinds: Sequence[LineKind], i: int, sig: Signature | None
    ) -> tuple[int, Signature | None]:
        """Prefer the line that names the cause over one that only reports a failure:
        a bare error message (`main failed`) yields to the next specific signature or
        exception line."""
        if _EMPTY_EXC.match(lines[i]):
            # `ResourceExhaustedError:` with its message a few lines below (Paddle's boxed report)
            for j in range(i + 1, min(len(lines), i + 6)):
                s2 = self._strong(lines[j])
                if s2 is not None and not s2.generic:
                    return self._defer(lines, j, s2)
        specific = sig is not None and not sig.generic
        # an error print without a strong signature (`Error executing job with overrides:
        # [...]`) is only a report until a later exception line shows it stated the cause
        printed = _ERROR_WORD.match(lines[i]) is not None and self._strong(lines[i]) is None
        bare = not specific and not _EXC_LINE.match(lines[i])
        if (bare or printed) and not _NATIVE_FATAL.search(lines[i]):
            for j in range(i + 1, min(len(lines), i + _LOOKAHEAD)):
                if _RAISED_FROM.match(lines[j]):
                    continue
                s2 = self._strong(lines[j])
                if s2 is not None or _EXC_LINE.match(lines[j]) or _WHAT.match(lines[j]):
                    if _repeats(lines[i], lines[j]):
                        # the user's own print already stated this cause: it stays first
                        sig = s2 or self.kb.match(lines[j]) or sig
                    else:
                        i, sig = j, s2 or self.kb.match(lines[j])
                    break
        elif sig is not None and sig.confidence < _STRONG and kinds[i] is not LineKind.ERROR:
            # a weak platform/network line (found only by the region floor, e.g. a retried
            # 'Connection refused') yields to a definite cause shortly after it; symptoms
            # (signatures with defer_to, e.g. NCCL 'remote process exited') never win this way
            for j in range(i + 1, min(len(lines), i + _DEFER_LOOKAHEAD)):
                s2 = self._strong(lines[j])
                if s2 is not None and s2.defer_to is None and not _is_frame(lines[j]):
                    return j, s2
        return self._defer(lines, i, sig)

    def _defer(self, lines: Sequence[str], i: int, sig: Signature | None) -> tuple[int, Signature | None]:
        """A symptom yields to a line shortly after it that names the fault (`defer_to`)."""
        if sig is None or sig.defer_to is None or sig.defer_to.search(lines[i]):
            return i, sig
        for j in range(i + 1, min(len(lines), i + sig.defer_within)):
            if sig.defer_to.search(lines[j]) and not _SOURCE_FRAME.match(lines[j]):
                return j, self.kb.match(lines[j]) or sig
        return i, sig

    def _exception_of(self, lines: Sequence[str], j: int) -> tuple[int, Signature | None] | None:
        """The exception line ending a traceback that starts at line j (frames skipped)."""
        end = min(len(lines), j + 500)
        while j < end:
            text = lines[j]
            if _is_frame(text) or _ASCII_BOX.match(text) or not text.strip():
                j += 1
                continue
            if _EXC_LINE.match(text) or ":" in text:
                if (k := self._frames_resume(lines, j)) is not None and k < end:
                    j = k  # a wrapper re-raising a remote error (Ray, Tune): its traceback goes on
                    continue
                return j, self.kb.match(text)
            j += 1
        return None

    @staticmethod
    def _frames_resume(lines: Sequence[str], j: int) -> int | None:
        """Where frames of the same process continue right after the exception line j (within
        two lines: a remote task's header), else None."""
        own = m[0] if (m := _RANK_PREFIX.match(lines[j])) else ""
        for k in range(j + 1, min(len(lines), j + 4)):
            t = lines[k]
            if _FILE_FRAME.match(t):
                other = m2[0] if (m2 := _RANK_PREFIX.match(t)) else ""
                return k if other == own else None
            if not t.strip() or _TRACEBACK.search(t) or _CHAIN.search(t) or _EXC_LINE.match(t):
                return None
        return None

    # -- files ------------------------------------------------------------------------------
    def locate(self, path: str | Path) -> Located:
        p = Path(path)
        with open_log(p) as fh:  # refuses what is no text log; the head tells the encoding
            encoding = detect_encoding(fh.read(64 * 1024))
            size = os.fstat(fh.fileno()).st_size
        self.calls = 0
        if (
            encoding is not None and size <= MAX_DECODED_BYTES
        ):  # UTF-16 or a legacy CJK encoding: decoded whole (capped)
            lines = read_decoded_lines(p, encoding)
            idx, sig = self.pick(lines)
            return self._located(lines, idx, sig, first_no=1, probes=self.calls)
        if size <= self.settings.full_scan_bytes:
            lines = [ln.text for batch in iter_line_batches(p) for ln in batch]
            idx, sig = self.pick(lines)
            return self._located(lines, idx, sig, first_no=1, probes=self.calls)
        return self._locate_large(p, size)

    def locate_lines(self, lines: Sequence[str]) -> Located:
        self.calls = 0
        idx, sig = self.pick(lines)
        return self._located(lines, idx, sig, first_no=1, probes=self.calls)

    def _located(
        self, lines: Sequence[str], idx: int | None, sig: Signature | None, *, first_no: int, probes: int
    ) -> Located:
        if idx is None:
            return Located(None, None, None, (), probes, False)
        start = max(0, idx - _CONTEXT_BEFORE)
        return Located(
            first_no + idx,
            lines[idx],
            sig,
            tuple(lines[start : idx + _CONTEXT_AFTER]),
            probes,
            True,
            root_at=idx - start,
            before=tuple(lines[max(0, idx - _BEFORE_KEPT) : idx]),
        )

    def _window(self, fh, offset: int, size: int) -> tuple[int, list[str]]:  # type: ignore[no-untyped-def]
        """Whole lines of the window [offset, offset+size): starts after the first break
        (unless at 0), ends at the last break (unless at EOF). Returns (start offset, lines)."""
        fh.seek(offset)
        raw = fh.read(size)
        at_eof = offset + len(raw) >= self._size
        if offset > 0:
            m = re.search(rb"\r\n|\r|\n", raw)
            if m is None:
                return offset + len(raw), []
            raw = raw[m.end() :]
            offset += m.end()
        if not at_eof:
            last = max(raw.rfind(b"\n"), raw.rfind(b"\r"))
            raw = raw[: last + 1] if last >= 0 else b""
        lines = _BREAK.split(clean_text(raw))
        if lines and lines[-1] == "":
            lines.pop()
        return offset, lines

    def _has_failure(self, lines: list[str]) -> bool:
        """One probe: does this window hold a failure line? Decided once per template
        (signature matching every line of a healthy window would dominate the search)."""
        self.calls += 1
        kinds = self.classifier.classify_batch(lines)
        seen: dict[str, bool] = {}
        for t, text, kind in zip(mask_batch(lines), lines, kinds, strict=True):
            hit = seen.get(t)
            if hit is None:
                hit = seen[t] = bool(self._candidate(text, kind) or _TRACEBACK.search(text))
            if hit:
                return True
        return False

    def _locate_large(self, p: Path, size: int) -> Located:
        w = self.settings.window_bytes
        self.calls = 0
        self._size = size
        with p.open("rb") as fh:
            # 1. the end of the failure region: scan back from EOF to the last failing window
            hi = size
            found_tail = False
            probe = max(0, size - w)
            while self.calls < self.settings.max_probes // 2:
                _, lines = self._window(fh, probe, w)
                if self._has_failure(lines):
                    hi = min(size, probe + w)
                    found_tail = True
                    break
                if probe == 0:
                    break
                probe = max(0, probe - w)
            if not found_tail:
                return Located(None, None, None, (), self.calls, False)
            # 2. binary search for the first failing window in [0, hi)
            lo = 0
            first_fail = max(0, hi - w)
            while hi - lo > w and self.calls < self.settings.max_probes - 4:
                mid = (lo + hi) // 2
                _, lines = self._window(fh, mid, w)
                if lines and self._has_failure(lines):
                    hi = mid
                    first_fail = mid
                else:
                    lo = mid
            # 3. refine: the region from one window before to two after, read whole
            start = max(0, min(lo, first_fail) - w)
            off, lines = self._window(fh, start, (first_fail - start) + 3 * w)
            self.calls += 1
            kinds = self.classifier.classify_batch(lines)
            idx, sig = self.pick(lines, kinds)
            if idx is None:
                return Located(None, None, None, (), self.calls, False)
            first_no = count_line_breaks(p, off) + 1
            return self._located(lines, idx, sig, first_no=first_no, probes=self.calls)

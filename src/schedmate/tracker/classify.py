"""Line classifier: progress / error / warning / info, decided once per template.

A new template is decided by, in order: strong error rules (exception names, tracebacks,
ERROR/FATAL levels), the metric parser (does the line carry training progress?), warning
rules, then the embedding model (k-nearest labelled exemplars, `data/line_exemplars.jsonl`)
for the phrasings no rule covers. Every later line of that template reuses the decision,
so the embedding model is consulted once per pattern, not per line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from schedmate.core.errors import BackendError, InputError
from schedmate.core.types import LineKind
from schedmate.tracker.fields import field_for_key, lexicon, normalise_key
from schedmate.tracker.lineroles import WORDS
from schedmate.tracker.parse import parse_line, strip_timestamps
from schedmate.tracker.templates import _MASK, MAX_TEMPLATE_CHARS, mask_batch

if TYPE_CHECKING:
    import numpy as np

    from schedmate.backends.embedder import Embedder

__all__ = ["LineClassifier", "rule_kind", "is_training_progress", "load_exemplars", "Exemplar"]

_ERROR = re.compile(
    r"Traceback \(most recent call last\)"
    r"|^\s*(?:\[[^\]]*\]\s*)*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b(?::|$)"
    r"|\b(?:ERROR|FATAL|CRITICAL|PANIC)\b|Fatal error|Segmentation fault|core dumped|\bBus error\b"
    r"|\bKilled\b|oom-kill|(?<![-_./'])\berror:(?!\s*[-+.\d])|^\s*\[E[\s\d]|^\s*E\d{4} |\bterminate called\b"
    r"|Uncorrectable ECC|\bXid\b",
)
_WARNING = re.compile(
    r"\b(?:WARNING|WARN)\b|\bWarning:|\b[A-Z]\w*Warning\b|\bwarnings\.warn\(|^\s*\[W[\s\d]|^\s*W\d{4} "
    r"|\bdeprecated\b",
    re.I,
)
_LETTERS = re.compile(r"[A-Za-z]{3,}")
_KEY_AND_NUMBER = re.compile(r"([^\W\d][\w/ ]{0,40}?)\s*[:=]\s*[\d.]+\s*$")


@dataclass(frozen=True, slots=True)
class Exemplar:
    label: LineKind
    text: str


def load_exemplars(path: Path | None = None) -> list[Exemplar]:
    """Labelled exemplar lines (JSONL: label, text); the bundled set by default."""
    if path is None:
        raw = resources.files("schedmate.data").joinpath("line_exemplars.jsonl").read_text("utf-8")
        where = "schedmate/data/line_exemplars.jsonl"
    else:
        try:
            raw = Path(path).read_text("utf-8")
        except OSError as exc:
            raise InputError(f"{path}: cannot read exemplars: {exc.strerror}") from None
        where = str(path)
    out: list[Exemplar] = []
    for no, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out.append(Exemplar(LineKind(obj["label"]), str(obj["text"])))
        except (ValueError, KeyError, TypeError):
            raise InputError(
                f'{where}:{no}: expected {{"label": progress|error|warning|info, "text": ...}}'
            ) from None
    return out


def is_training_progress(text: str) -> bool:
    """True when the parser finds a step counter, a loss or a step time on the line."""
    c = parse_line(text)
    v = c.values
    if c.stage_label or (c.bare_count and "loss" not in v):
        return False
    if "loss" not in v and _saved_notice(text):
        return False  # `saved=/run/q.pt it=100`: a checkpoint notice, not a report of the loop
    return (
        ("step" in v and (len(v) > 2 or c.is_bar))
        or "loss" in v
        # a step time alone is progress on a record's continuation line, not on a line of its own
        or ("step_time" in v and (len(v) > 1 or c.n_metrics + c.n_other_keys > 1 or text[:1].isspace()))
        # `global_step/sec: 3.1`: a loop that reports only its rate of steps
        or (set(v) == {"step_time"} and rate_of_steps_alone(text))
        or ("step" in v and c.n_metrics >= 1)
        # a counter with only evaluation metrics (`[12] valid-auc:0.81`): kept as an
        # evaluation sample; it is the progress of a loop that reports nothing else
        or ("step" in v and c.n_eval_keys >= 1 and not c.eval_context)
    )


def rate_of_steps_alone(text: str) -> bool:
    """The line is only a rate of steps named by the lexicon (`global_step/sec: 3.1`,
    `250.0 steps/sec`)."""
    body = strip_timestamps(text)
    if (m := _KEY_AND_NUMBER.search(body)) is not None:
        key = m[1].split()[-1]
    elif (m := _NUMBER_AND_RATE.match(body)) is not None:
        key = m[1]
    else:
        return False
    return (hit := field_for_key(normalise_key(key))) is not None and hit[0] == "step_rate"


_NUMBER_AND_RATE = re.compile(r"^\s*[\d.]+\s*([^\W\d]\w{0,20}/(?:s|sec|second))\s*$")


def _saved_notice(text: str) -> bool:
    """The line opens by saying a checkpoint or model is being saved (in its first three words)."""
    words = WORDS.findall(strip_timestamps(text[:120]).lower())[:3]
    return any(w in lexicon().save_words for w in words)


def rule_kind(text: str) -> LineKind | None:
    """The rules' verdict, or None when they have no opinion (the embedder decides)."""
    if (err := _ERROR.search(text)) is not None:
        # a logger's level is not the line's meaning: a counter with a training loss is
        # progress whatever level a (misconfigured) logger gave it
        v = parse_line(text).values
        if "step" in v and "loss" in v:
            return LineKind.PROGRESS
        # a bar's last state with the error that ended the job glued after it (no newline
        # between them: `4/10 [10:00, 150.00s/it]srun: error: ...`) is the bar's
        before = parse_line(text[: err.start()]) if err.start() > 20 else None
        return (
            LineKind.PROGRESS
            if before is not None and before.is_bar and "step" in before.values
            else LineKind.ERROR
        )
    if is_training_progress(text):
        return LineKind.PROGRESS
    if _WARNING.search(text):
        return LineKind.WARNING
    return None


class LineClassifier:
    """Facade: classify lines in bulk; each template is decided once and remembered."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        exemplars: Sequence[Exemplar] | None = None,
        *,
        k: int = 3,
        min_similarity: float = 0.45,
    ) -> None:
        self.embedder = embedder
        self.exemplars = list(exemplars) if exemplars is not None else load_exemplars()
        self.k = k
        self.min_similarity = min_similarity
        self.decisions: dict[str, LineKind] = {}
        # the model's verdicts, the only ones worth keeping between runs: a rule's verdict is
        # cheap to recompute and may change with the rules (a kept one would hide a new rule)
        self.model_decisions: dict[str, LineKind] = {}
        self.n_embedded = 0
        self.embed_failures = 0
        self._ex_matrix: np.ndarray | None = None

    # -- persistence (Drain3-style: the decisions are the state) --------------------
    def save_state(self) -> dict[str, str]:
        return {t: k.value for t, k in self.model_decisions.items()}

    def load_state(self, state: dict[str, str]) -> None:
        """Remember the model's earlier verdicts; the rules still decide first each run."""
        for t, k in state.items():
            try:
                self.model_decisions[t] = LineKind(k)
            except ValueError:
                continue

    # -- classification ---------------------------------------------------------------
    def classify(self, text: str) -> LineKind:
        return self.classify_batch([text])[0]

    def classify_batch(self, lines: Sequence[str], *, embed: bool = True) -> list[LineKind]:
        """Kinds of many lines; new templates are decided (and embedded) in one batch.

        With `embed=False` the templates no rule decides are answered `info` for now but
        left undecided, so a later call that needs the model's opinion still asks it (the
        tracker does this when no LLM could use an embedding-found progress template).
        """
        templates = mask_batch(list(lines))
        decisions = self.decisions
        out: list[LineKind | None] = [decisions.get(t) for t in templates]
        pending: dict[str, str] = {}
        for i, kind in enumerate(out):
            if kind is None and templates[i] not in pending:
                pending[templates[i]] = lines[i]
        if pending:
            self._decide(pending, embed)
            out = [decisions.get(t, LineKind.INFO) for t in templates]
        return out  # type: ignore[return-value]

    def _decide(self, pending: dict[str, str], embed: bool = True) -> None:
        to_embed: list[tuple[str, str]] = []
        for template, sample in pending.items():
            kind = rule_kind(sample)
            if kind is None and template in self.model_decisions:
                kind = self.model_decisions[template]
            if kind is None:
                if self.embedder is not None and _LETTERS.search(template):
                    if embed:
                        to_embed.append((template, sample))
                    continue
                kind = LineKind.INFO
            self.decisions[template] = kind
        if to_embed:
            failures = self.embed_failures
            kinds = self._nearest([t for t, _ in to_embed])
            for (template, _), kind in zip(to_embed, kinds, strict=True):
                self.decisions[template] = kind
                if self.embed_failures == failures:  # (a failed call's `info` is not a verdict)
                    self.model_decisions[template] = kind

    def _nearest(self, texts: list[str]) -> list[LineKind]:
        """kNN vote among exemplars; INFO when nothing is similar enough or the model fails."""
        import numpy as np

        if self.embedder is None:
            return [LineKind.INFO] * len(texts)
        try:
            if self._ex_matrix is None:
                self._ex_matrix = self.embedder.embed([e.text for e in self.exemplars])
            vecs = self.embedder.embed(texts)
        except BackendError:
            self.embed_failures += 1
            return [LineKind.INFO] * len(texts)
        self.n_embedded += len(texts)
        sims = vecs @ self._ex_matrix.T
        k = min(self.k, sims.shape[1])
        top = np.argsort(-sims, axis=1)[:, :k]
        kinds: list[LineKind] = []
        for row, idx in zip(sims, top, strict=True):
            if row[idx[0]] < self.min_similarity:
                kinds.append(LineKind.INFO)
                continue
            votes: dict[LineKind, float] = {}
            for j in idx:
                votes[self.exemplars[j].label] = votes.get(self.exemplars[j].label, 0.0) + float(row[j])
            kinds.append(max(votes.items(), key=lambda kv: kv[1])[0])
        return kinds

    def count_block(self, block: str) -> Counter[LineKind]:
        """Kinds of every line of a cleaned text block, counted (bulk classification).

        The block is masked in one pass and its lines counted by template, so the Python
        work is per distinct template, not per line.
        """
        if "\r" in block:
            block = block.replace("\r\n", "\n").replace("\r", "\n")
        if block.endswith("\n"):
            block = block[:-1]
        if not block:
            return Counter()
        masked_lines = _MASK.sub("<*>", block).split("\n")
        per_masked = Counter(masked_lines)
        decisions = self.decisions
        out: Counter[LineKind] = Counter()
        pending: dict[str, str] = {}
        keys: list[tuple[str, int]] = []
        raw: list[str] | None = None
        for m, n in per_masked.items():
            key = m[:MAX_TEMPLATE_CHARS].strip()
            keys.append((key, n))
            if key not in decisions and key not in pending:
                if raw is None:  # split the original text only when a new template needs a sample
                    raw = block.split("\n")
                pending[key] = raw[masked_lines.index(m)]
        if pending:
            self._decide(pending)
        for key, n in keys:
            out[decisions.get(key, LineKind.INFO)] += n
        return out

    def known_templates(self) -> Iterable[tuple[str, LineKind]]:
        return self.decisions.items()

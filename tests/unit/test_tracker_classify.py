"""Line classifier: rules, template reuse, embedding fallback (with a fake embedder)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from schedmate.core.errors import BackendError
from schedmate.core.types import LineKind
from schedmate.tracker.classify import Exemplar, LineClassifier, load_exemplars, rule_kind
from schedmate.tracker.templates import mask_batch, mask_line


class KeywordEmbedder:
    """A fake embedder: one dimension per keyword, counts embed calls."""

    dim = 3
    name = "keyword"

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        out = np.zeros((len(texts), 3), dtype=np.float32)
        for i, t in enumerate(texts):
            low = t.lower()
            out[i] = [("crash" in low) + 0.01, ("slow" in low) + 0.01, ("hello" in low) + 0.01]
        return out / np.linalg.norm(out, axis=1, keepdims=True)


EXEMPLARS = [
    Exemplar(LineKind.ERROR, "crash"),
    Exemplar(LineKind.WARNING, "slow"),
    Exemplar(LineKind.INFO, "hello"),
]


def test_rules() -> None:
    assert rule_kind("Traceback (most recent call last):") is LineKind.ERROR
    assert rule_kind("ValueError: bad shape") is LineKind.ERROR
    assert rule_kind("2024-01-01 10:00:00 - train - ERROR - boom") is LineKind.ERROR
    assert rule_kind("step 10/100 loss 2.0") is LineKind.PROGRESS
    assert rule_kind("UserWarning: something old") is LineKind.WARNING
    assert rule_kind("Loading checkpoint shards") is None


def test_templates_mask_numbers_in_bulk() -> None:
    lines = ["step 1 loss 2.5", "step 200 loss 0.125", "hello world"]
    t = mask_batch(lines)
    assert t[0] == t[1] != t[2]
    assert [mask_line(s) for s in lines] == t


def test_each_template_is_embedded_once() -> None:
    emb = KeywordEmbedder()
    clf = LineClassifier(embedder=emb, exemplars=EXEMPLARS, min_similarity=0.5)
    kinds = clf.classify_batch(["node 3 crash detected", "node 4 crash detected", "things are slow today"])
    assert kinds == [LineKind.ERROR, LineKind.ERROR, LineKind.WARNING]
    n = len(emb.texts)
    assert clf.classify_batch(["node 9 crash detected"]) == [LineKind.ERROR]
    assert len(emb.texts) == n  # known template: no new embedding


def test_unknown_phrasing_below_similarity_is_info() -> None:
    clf = LineClassifier(embedder=KeywordEmbedder(), exemplars=EXEMPLARS, min_similarity=0.99)
    assert clf.classify("zzz qqq") is LineKind.INFO


def test_embedder_failure_degrades_to_info() -> None:
    class Broken(KeywordEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            raise BackendError("embedding server down")

    clf = LineClassifier(embedder=Broken(), exemplars=EXEMPLARS)
    assert clf.classify("node crash") is LineKind.INFO
    assert clf.embed_failures == 1


def test_state_keeps_the_models_verdicts_only() -> None:
    clf = LineClassifier(embedder=KeywordEmbedder(), exemplars=EXEMPLARS)
    clf.classify_batch(["step 1 loss 2", "ValueError: x", "node crash happened"])
    state = clf.save_state()
    # the rules decide the first two again in every run; only the model's verdict is kept
    assert set(state) == {mask_line("node crash happened")}
    other = LineClassifier(embedder=None)
    other.load_state(state)
    assert other.classify("node crash happened") is clf.classify("node crash happened")


def test_a_remembered_verdict_yields_to_a_rule() -> None:
    # a cache written by an earlier version said `info` for a template a rule now reads
    clf = LineClassifier(embedder=None)
    clf.load_state({mask_line("step 7 loss 0.5"): LineKind.INFO.value})
    assert clf.classify("step 7 loss 0.5") is LineKind.PROGRESS


def test_bundled_exemplars_cover_every_kind() -> None:
    ex = load_exemplars()
    assert {e.label for e in ex} == set(LineKind)


def test_a_failed_embedding_call_is_not_remembered_but_a_later_one_is() -> None:
    class Flaky(KeywordEmbedder):
        calls = 0

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            Flaky.calls += 1
            if Flaky.calls == 2:  # the first call embeds the exemplars; the second fails
                raise BackendError("embedding server down")
            return super().embed(texts)

    clf = LineClassifier(embedder=Flaky(), exemplars=EXEMPLARS)
    clf._ex_matrix = clf.embedder.embed([e.text for e in clf.exemplars])  # type: ignore[union-attr]
    assert clf.classify("node crash happened") is LineKind.INFO  # the failed call answers `info`
    assert clf.classify("gpu node crash seen") is not LineKind.INFO
    assert set(clf.save_state()) == {mask_line("gpu node crash seen")}

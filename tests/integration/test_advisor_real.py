"""The Advisor with the real MiniLM embedder and the real SQLite + usearch store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from two_programs import two_programs

from schedmate.advisor import Advisor, SqliteHistoryStore
from schedmate.backends.embedder import MiniLMEmbedder

pytestmark = pytest.mark.integration


def test_similar_program_found_and_scaled_with_real_embeddings(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    hist, q = two_programs(tmp_path)
    store = SqliteHistoryStore(tmp_path / "h.db", embedder_name=minilm.name, exact_below=0)  # HNSW path
    adv = Advisor(store, minilm)
    assert adv.import_jobs(hist).imported == 7
    adv.advise(q)  # first call pays one-time imports (usearch) and index loading
    t0 = time.perf_counter()
    a = adv.advise(q)
    assert time.perf_counter() - t0 < 1.0
    assert a.method == "knn-scaled" and a.error is None
    assert a.p50_s is not None and abs(a.p50_s - 15.0) < 1.5
    assert a.p10_s is not None and a.p90_s is not None and a.p10_s < 15.0 < a.p90_s
    sims = dict((j, s) for j, s, _ in a.neighbors)
    assert all(j.startswith("lm") for j in sims) and min(sims.values()) > 0.95
    # the other program is far below the similarity threshold
    far = store.search(minilm.embed([adv.text_of(adv.extract(hist[-1]).metadata, hist[-1])])[0], 7)
    lm_sims = [n.similarity for n in far if n.record.job_id.startswith("lm")]
    assert lm_sims and max(lm_sims) < 0.8

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


def test_minilm_configured_is_minilm_used_through_the_sdk_and_cli(
    tmp_path: Path, minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--embedder minilm` must embed with MiniLM: an empty CachedEmbedder is falsy and
    `embedder_of(settings) or HashEmbedder()` silently ran every command on hashing."""
    import json

    from typer.testing import CliRunner

    from schedmate.cli import app
    from schedmate.core.settings import Settings
    from schedmate.sdk.advising import build_advisor, history_stats, import_history

    hist, q = two_programs(tmp_path)
    settings = Settings(cache_dir=str(tmp_path / "cache"), embedder={"backend": "minilm"})
    adv = build_advisor(settings, tmp_path / "h.db")
    assert adv.embedder.name == "minilm" and adv.embedder.dim == 384
    adv.store.close()
    jsonl = tmp_path / "hist.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps(
                {
                    "job_id": r.job_id,
                    "duration_s": r.duration_s,
                    "code_dir": r.code_dir,
                    "command": r.command,
                    "user": r.user,
                }
            )
            + "\n"
            for r in hist
        )
    )
    rep = import_history(settings, jsonl, store=tmp_path / "h.db")
    assert rep.imported == 7 and rep.error_count == 0
    assert history_stats(settings, tmp_path / "h.db").embedder == "minilm"
    monkeypatch.setenv("SCHEDMATE_CACHE_DIR", str(tmp_path / "cache"))
    r = CliRunner().invoke(
        app, ["--embedder", "minilm", "history", "stats", "--json", "--store", str(tmp_path / "h.db")]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["embedder"] == "minilm"
    # a store embedded with MiniLM cannot silently be read with hashing
    r = CliRunner().invoke(
        app, ["--embedder", "hash", "advise", "--store", str(tmp_path / "h.db"), "--code", str(q.code_dir)]
    )
    assert r.exit_code == 2 and "minilm" in r.stderr

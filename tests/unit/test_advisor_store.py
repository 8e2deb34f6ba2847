"""History stores: SQLite + usearch against the in-memory fake, upserts, bad files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedmate.advisor.history import InMemoryHistoryStore, JobRecord, SqliteHistoryStore
from schedmate.advisor.metadata import WorkloadMetadata
from schedmate.core.errors import ConfigError, InputError


def recs(n: int, dim: int = 16, seed: int = 0) -> tuple[list[JobRecord], np.ndarray]:
    rng = np.random.default_rng(seed)
    records = [
        JobRecord(
            job_id=f"j{i}",
            duration_s=float(i + 1),
            user=f"u{i % 3}",
            n_gpus=1 + i % 4,
            metadata=WorkloadMetadata(max_steps=i + 1),
            size={"width": 8.0},
            text=f"job {i}",
        )
        for i in range(n)
    ]
    return records, rng.normal(size=(n, dim)).astype(np.float32)


def test_sqlite_roundtrip_and_exact_search_match_the_fake(tmp_path: Path) -> None:
    records, vecs = recs(200)
    db = SqliteHistoryStore(tmp_path / "h.db", embedder_name="hash")
    mem = InMemoryHistoryStore()
    assert db.add(records, vecs) == 200 and mem.add(records, vecs) == 200
    q = vecs[17] + 0.01
    a = [(n.record.job_id, round(n.similarity, 4)) for n in db.search(q, 5)]
    b = [(n.record.job_id, round(n.similarity, 4)) for n in mem.search(q, 5)]
    assert a == b and a[0][0] == "j17"
    got = db.get("j17")
    assert got is not None and got.metadata == records[17].metadata and got.size == {"width": 8.0}
    assert [r.job_id for r in db.by_user("u1")] == [r.job_id for r in mem.by_user("u1")]
    assert sorted(db.durations()) == sorted(mem.durations())


def test_hnsw_index_is_rebuilt_from_sqlite_when_missing_or_stale(tmp_path: Path) -> None:
    records, vecs = recs(500, dim=32)
    path = tmp_path / "h.db"
    db = SqliteHistoryStore(path, exact_below=0)
    db.add(records, vecs)
    assert db.search(vecs[42], 1)[0].record.job_id == "j42"
    assert db.index_path.exists()
    db.close()
    db = SqliteHistoryStore(path, exact_below=0)
    assert db.search(vecs[7], 1)[0].record.job_id == "j7"  # loaded from the cache file
    more, mvecs = recs(10, dim=32, seed=1)
    more = [JobRecord(job_id=f"new{i}", duration_s=1.0) for i in range(10)]
    index = db._index
    db.add(more, mvecs)
    assert db._index is index  # updated in place, not rebuilt
    assert db.search(mvecs[3], 1)[0].record.job_id == "new3"
    db.add([JobRecord(job_id="new3", duration_s=2.0)], vecs[100:101])  # a replaced vector moves
    assert db.search(vecs[100], 2)[0].record.job_id in ("new3", "j100")
    assert db.search(mvecs[3], 1)[0].record.job_id != "new3"
    db.close()
    db = SqliteHistoryStore(path, exact_below=0)
    db.search(vecs[1], 1)
    assert db._index is not None and len(db._index) == 510  # the saved update loads
    db.index_path.write_bytes(b"garbage")
    db.close()
    db = SqliteHistoryStore(path, exact_below=0)
    assert db.search(vecs[9], 1)[0].record.job_id == "j9" and db.count() == 510


def test_upsert_keeps_one_row_per_job(tmp_path: Path) -> None:
    records, vecs = recs(3)
    db = SqliteHistoryStore(tmp_path / "h.db")
    db.add(records, vecs)
    db.add([JobRecord(job_id="j1", duration_s=99.0)], vecs[:1])
    assert db.count() == 3
    got = db.get("j1")
    assert got is not None and got.duration_s == 99.0


def test_mismatched_embedder_or_dimension_is_a_config_error(tmp_path: Path) -> None:
    records, vecs = recs(3)
    db = SqliteHistoryStore(tmp_path / "h.db", embedder_name="minilm")
    db.add(records, vecs)
    with pytest.raises(ConfigError, match="dim"):
        db.add(records, np.ones((3, 8), dtype=np.float32))
    db.close()
    with pytest.raises(ConfigError, match="minilm"):
        SqliteHistoryStore(tmp_path / "h.db", embedder_name="hash")


def test_a_file_that_is_not_a_store_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match="bad.db"):
        SqliteHistoryStore(bad)


def test_extraction_cache_table(tmp_path: Path) -> None:
    db = SqliteHistoryStore(tmp_path / "h.db")
    assert db.get_extraction("k") is None
    db.put_extraction("k", "{}")
    assert db.get_extraction("k") == "{}"


def test_vectors_are_read_in_chunks_that_cover_every_row_once(tmp_path: Path) -> None:
    records, vecs = recs(23, dim=8)
    db = SqliteHistoryStore(tmp_path / "h.db")
    db.add(records, vecs)
    db.add([JobRecord(job_id="j5", duration_s=9.0)], vecs[6:7])  # a replaced row moves to the end
    chunks = list(db._vector_chunks(5))
    assert [len(k) for k, _ in chunks] == [5, 5, 5, 5, 3]
    keys = np.concatenate([k for k, _ in chunks])
    assert len(set(keys.tolist())) == 23 and list(keys) == sorted(keys)
    all_keys, all_vecs = db._vectors()
    assert np.array_equal(all_keys, keys) and all_vecs.shape == (23, 8)
    db.close()
    empty = SqliteHistoryStore(tmp_path / "e.db")
    assert list(empty._vector_chunks(5)) == [] and empty._vectors()[0].shape == (0,)

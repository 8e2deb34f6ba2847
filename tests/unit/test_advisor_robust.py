"""Advisor and store hardening: locked, damaged, full and read-only stores; per-job error
boundary; stale code; failed jobs and ties; only successful agent answers cached; the
configured embedder actually used."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from schedmate.advisor import Advisor, InMemoryHistoryStore, JobRecord, SqliteHistoryStore
from schedmate.advisor.agent import MetadataAgent
from schedmate.advisor.history.base import Neighbor, ended_normally, ranked
from schedmate.backends.embedder import CachedEmbedder, HashEmbedder
from schedmate.backends.llm import ScriptedLLMBackend
from schedmate.core.errors import BackendError, BackendUnavailable, InputError
from schedmate.core.settings import Settings

TRAIN = (
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=1)\n"
    "p.add_argument('--num-samples', type=int, default=1000)\n"
)


def code(tmp_path: Path, text: str = TRAIN, name: str = "job") -> Path:
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    (d / "train.py").write_text(text)
    return d


def filled_store(path: Path, n: int = 5) -> SqliteHistoryStore:
    s = SqliteHistoryStore(path)
    recs = [JobRecord(job_id=f"j{i}", duration_s=10.0 + i, user="ann") for i in range(n)]
    s.add(recs, HashEmbedder().embed([f"job {i}" for i in range(n)]))
    return s


# -- SQLite failures: one line, nothing lost ------------------------------------------------------
def test_another_writer_holding_the_lock_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    filled_store(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing for a long time
    try:
        s = SqliteHistoryStore(path, busy_timeout_s=0.2)
        t0 = time.monotonic()
        with pytest.raises(BackendError, match="locked by another writer"):
            s.add([JobRecord(job_id="new", duration_s=1.0)], HashEmbedder().embed(["x"]))
        assert time.monotonic() - t0 < 5
        assert s.count() == 5  # readers are not blocked by a writer in WAL mode
        s.close()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert SqliteHistoryStore(path).count() == 5


def test_a_damaged_store_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    filled_store(path, 300).close()
    data = bytearray(path.read_bytes())
    assert len(data) > 8192
    data[4096:8192] = b"\xde\xad\xbe\xef" * 1024  # a corrupted page
    path.write_bytes(bytes(data))
    with pytest.raises((InputError, BackendError), match=r"h\.db"):
        s = SqliteHistoryStore(path)
        s.count()
        list(s.records())


def test_a_full_disk_is_one_clear_error_and_the_store_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    s = filled_store(path)
    pages = s._db.execute("PRAGMA page_count").fetchone()[0]
    s._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk full" (SQLITE_FULL)
    big = [JobRecord(job_id=f"b{i}", duration_s=1.0, text="x" * 4000) for i in range(50)]
    with pytest.raises(BackendError, match="disk full"):
        s.add(big, HashEmbedder().embed([r.text for r in big]))
    assert s.count() == 5 and s.get("b0") is None
    s.close()


def test_read_only_store_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    filled_store(path).close()
    before = path.read_bytes()
    ro = SqliteHistoryStore(path, read_only=True)
    assert ro.count() == 5 and len(ro.search(HashEmbedder().embed(["job 1"])[0], 3)) == 3
    with pytest.raises(InputError, match="read-only"):
        ro.add([JobRecord(job_id="x", duration_s=1.0)], HashEmbedder().embed(["x"]))
    with pytest.raises(InputError, match="read-only"), ro._errors():  # a write past the guard
        ro._db.execute("INSERT INTO meta(key, value) VALUES('a', 'b')")
    ro.close()
    assert path.read_bytes() == before


def test_advise_on_a_read_only_store_writes_nothing(tmp_path: Path) -> None:
    d = code(tmp_path)
    path = tmp_path / "h.db"
    adv = Advisor(SqliteHistoryStore(path), HashEmbedder())
    adv.import_jobs([JobRecord(job_id="h1", duration_s=5.0, code_dir=str(d), command="python train.py")])
    adv.store.close()
    before = path.read_bytes()
    ro = Advisor(SqliteHistoryStore(path, read_only=True), HashEmbedder())
    a = ro.advise(JobRecord(job_id="q", code_dir=str(d), command="python train.py --epochs 3"))
    assert a.p50_s is not None and a.error is None
    ro.store.close()
    assert path.read_bytes() == before


def test_missing_read_only_store_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such history store"):
        SqliteHistoryStore(tmp_path / "none.db", read_only=True)
    assert not (tmp_path / "none.db").exists()


def test_reads_take_the_store_lock(tmp_path: Path) -> None:
    """check_same_thread=False shares one connection: a read must wait for the lock holder."""
    s = filled_store(tmp_path / "h.db")
    got: list[int] = []
    with s._lock:
        t = threading.Thread(target=lambda: got.append(s.count()))
        t.start()
        t.join(0.3)
        assert t.is_alive() and got == []  # blocked while another thread holds the lock
    t.join(5)
    assert got == [5]
    s.close()


# -- the per-item error boundary ------------------------------------------------------------------
class _Boom(Exception):
    pass


def test_one_bad_job_never_aborts_an_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = code(tmp_path, name="good")
    bad = code(tmp_path, TRAIN + "# other code\n", name="bad")
    adv = Advisor(InMemoryHistoryStore(), HashEmbedder())
    real = adv.extractor.extract

    def extract(root: Path, **kw: Any) -> Any:
        if root.name == "bad":
            raise _Boom("unexpected")
        return real(root, **kw)

    monkeypatch.setattr(adv.extractor, "extract", extract)
    jobs = [
        JobRecord(job_id=f"j{i}", duration_s=5.0, code_dir=str(bad if i % 3 == 0 else good)) for i in range(9)
    ] + [JobRecord(job_id="gone", duration_s=5.0, code_dir=str(tmp_path / "missing"))]
    rep = adv.import_jobs(jobs)
    assert rep.imported == 10  # broken jobs are stored with what the scheduler knows
    assert sorted(e.job_id for e in rep.errors) == ["gone", "j0", "j3", "j6"]  # type: ignore[union-attr]
    assert rep.error_count == 4
    assert all("_Boom: unexpected" in e.message for e in rep.errors if e.job_id != "gone")  # type: ignore[union-attr]


def test_import_of_100k_jobs_with_1pct_broken(tmp_path: Path) -> None:
    """Each broken job reported once, the rest imported; the time is printed for the report."""
    good = code(tmp_path, name="good")
    jobs = [
        JobRecord(
            job_id=f"j{i}",
            duration_s=10.0 + i % 50,
            user=f"u{i % 7}",
            code_dir=str(tmp_path / f"missing{i}") if i % 100 == 0 else str(good),
            command=f"python train.py --epochs {1 + i % 5}"
            if i % 100
            else "python " + "x" * 5000,  # and a shell string no path can be
        )
        for i in range(100_000)
    ]
    # exact search only: this tests the error boundary, not the HNSW build (measured in the report)
    adv = Advisor(SqliteHistoryStore(tmp_path / "h.db", exact_below=10**9), HashEmbedder())
    t0 = time.perf_counter()
    rep = adv.import_jobs(jobs, batch_size=2048)
    dt = time.perf_counter() - t0
    print(f"\nimport of 100,000 jobs (1% broken): {dt:.1f} s, {100_000 / dt:,.0f} jobs/s")
    assert rep.imported == 100_000 and adv.store.count() == 100_000
    assert rep.error_count == 1000
    ids = [e.job_id for e in rep.errors]  # type: ignore[union-attr]
    assert len(ids) == len(set(ids)) == 1000 and set(ids) == {f"j{i}" for i in range(0, 100_000, 100)}
    adv.store.close()


# -- stale code in a long-running process ---------------------------------------------------------
def test_changed_code_is_seen_by_a_long_running_advisor(tmp_path: Path) -> None:
    d = code(tmp_path)
    adv = Advisor(InMemoryHistoryStore(), HashEmbedder())
    rec = JobRecord(job_id="q", code_dir=str(d), command="python train.py")
    assert adv.extract(rec).metadata.epochs == 1
    time.sleep(0.01)
    (d / "train.py").write_text(TRAIN.replace("default=1)", "default=7)"))
    assert adv.extract(rec).metadata.epochs == 7


def test_digest_cache_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import schedmate.advisor.advisor as facade

    monkeypatch.setattr(facade, "_DIGEST_CACHE", 3)
    adv = Advisor(InMemoryHistoryStore(), HashEmbedder())
    for i in range(6):
        adv.extract(JobRecord(job_id=f"q{i}", code_dir=str(code(tmp_path, name=f"d{i}"))))
    assert len(adv._digests) == 3 and len(adv._memo) <= 12


# -- which past jobs count as a duration ----------------------------------------------------------
@pytest.mark.parametrize(
    "status", ["failed", "FAILED", "cancelled", "CANCELLED by 1234", "timeout", "node_fail"]
)
def test_unfinished_statuses_are_not_durations(status: str) -> None:
    assert not ended_normally(status)


@pytest.mark.parametrize("status", [None, "", "completed", "COMPLETED", "succeeded"])
def test_finished_statuses_are_durations(status: str | None) -> None:
    assert ended_normally(status)


def test_failed_jobs_stay_in_history_but_are_never_neighbours(tmp_path: Path) -> None:
    d = code(tmp_path)
    adv = Advisor(InMemoryHistoryStore(), HashEmbedder())
    hist = [
        JobRecord(
            job_id=f"ok{e}", duration_s=100.0 * e, code_dir=str(d), command=f"python train.py --epochs {e}"
        )
        for e in (1, 2, 4)
    ] + [
        JobRecord(
            job_id=f"fail-{s}",
            duration_s=3.0,
            status=s,
            code_dir=str(d),
            command=f"python train.py --epochs {e}",
        )
        for e, s in ((3, "failed"), (3, "timeout"), (3, "cancelled"))
    ]
    adv.import_jobs(hist)
    assert adv.store.count() == 6
    a = adv.advise(JobRecord(job_id="q", code_dir=str(d), command="python train.py --epochs 3"))
    assert a.neighbors and all(j.startswith("ok") for j, _, _ in a.neighbors)
    assert a.p50_s is not None and a.p50_s > 100


def test_ties_are_broken_by_job_id_whatever_the_insertion_order(tmp_path: Path) -> None:
    emb = HashEmbedder()
    recs = [JobRecord(job_id=f"t{i:02d}", duration_s=float(i + 1), user="u", name="same") for i in range(30)]
    vec = emb.embed(["identical text"])[0]
    answers = []
    for order in (recs, recs[::-1], recs[7:] + recs[:7]):
        for store in (InMemoryHistoryStore(), SqliteHistoryStore(tmp_path / f"s{len(answers)}.db")):
            store.add(order, np.vstack([vec] * len(order)))
            answers.append([n.record.job_id for n in store.search(vec, 5)])
    assert all(a == ["t00", "t01", "t02", "t03", "t04"] for a in answers), answers


def test_ranked_orders_by_similarity_then_job_id() -> None:
    ns = [
        Neighbor(JobRecord(job_id=j), s) for j, s in (("b", 0.5), ("a", 0.5), ("c", 0.9), ("d", 0.5000000001))
    ]
    assert [n.record.job_id for n in ranked(ns)] == ["c", "a", "b", "d"]


# -- the agent: only successes are cached ---------------------------------------------------------
def step(action: str, answer: dict[str, object] | None = None, **args: object) -> dict[str, object]:
    return {"thought": "look", "action": action, "args": args, "answer": answer}


def test_a_failed_agent_answer_is_not_cached(tmp_path: Path) -> None:
    d = code(tmp_path, "import torch\nfrom mylib import run\nrun()\n")
    store = SqliteHistoryStore(tmp_path / "h.db")
    rec = JobRecord(job_id="a", code_dir=str(d), command="python train.py")
    down = Advisor(
        store, HashEmbedder(), agent=MetadataAgent(ScriptedLLMBackend([BackendUnavailable("down")]))
    )
    assert down.extract(rec).metadata.max_steps is None
    back = ScriptedLLMBackend([step("final", {"max_steps": 500})])
    down.agent = MetadataAgent(back)  # the LLM is back: the same Advisor asks again
    assert down.extract(rec).metadata.max_steps == 500
    fresh = Advisor(store, HashEmbedder(), agent=MetadataAgent(ScriptedLLMBackend([])))
    assert fresh.extract(rec).metadata.max_steps == 500  # the success was cached in the store


# -- the configured embedder is the one used ------------------------------------------------------
class _Fake:
    name = "fake"
    dim = 8

    def embed(self, texts: Any) -> np.ndarray:
        return np.ones((len(texts), 8), dtype=np.float32)


def test_build_advisor_uses_an_empty_cached_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty CachedEmbedder is falsy (it has __len__): `x or HashEmbedder()` replaced it."""
    import schedmate.sdk.advising as advising

    cached = CachedEmbedder(_Fake())  # type: ignore[arg-type]
    assert len(cached) == 0 and not cached
    monkeypatch.setattr(advising, "embedder_of", lambda _s: cached)
    settings = Settings(cache_dir=str(tmp_path))
    adv = advising.build_advisor(settings, tmp_path / "h.db")
    assert adv.embedder is cached and adv.embedder.name == "fake"
    adv.import_jobs([JobRecord(job_id="a", duration_s=1.0)])
    stats = advising.history_stats(settings, tmp_path / "h.db")
    adv.store.close()
    assert stats.embedder == "fake" and json.loads(json.dumps(stats.to_json_dict()))["schema_version"] >= 1


class _Picky:
    """An embedder that refuses one text (as a server may refuse an input) and may go down."""

    name = "picky"
    dim = 8

    def __init__(self, down: bool = False) -> None:
        self.down = down

    def embed(self, texts: Any) -> np.ndarray:
        if self.down:
            raise BackendUnavailable("picky: server down")
        if any("refuse" in t for t in texts):
            raise BackendError("picky: input refused")
        return np.ones((len(texts), 8), dtype=np.float32)


def test_one_text_the_embedder_refuses_costs_only_its_job() -> None:
    adv = Advisor(InMemoryHistoryStore(), _Picky())  # type: ignore[arg-type]
    jobs = [JobRecord(job_id=f"j{i}", duration_s=1.0, name="refuse" if i == 3 else "ok") for i in range(6)]
    rep = adv.import_jobs(jobs)
    assert rep.imported == 5 and [e.job_id for e in rep.errors] == ["j3"]  # type: ignore[union-attr]
    assert adv.store.get("j3") is None and adv.store.count() == 5


def test_an_embedder_outage_stops_the_import_with_one_error() -> None:
    adv = Advisor(InMemoryHistoryStore(), _Picky(down=True))  # type: ignore[arg-type]
    with pytest.raises(BackendUnavailable, match="down"):
        adv.import_jobs([JobRecord(job_id="a", duration_s=1.0)])

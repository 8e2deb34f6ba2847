"""PgvectorHistoryStore against a real PostgreSQL + pgvector: the SQLite store's behaviour, the
HNSW index, the Advisor and the CLI through it, and one-line errors for bad URLs."""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pytest
from two_programs import two_programs
from typer.testing import CliRunner

from schedmate.advisor import Advisor, InMemoryHistoryStore, JobRecord
from schedmate.advisor.history import pg as store_pg
from schedmate.advisor.history.pg import PgvectorHistoryStore, redact_url
from schedmate.advisor.metadata import WorkloadMetadata
from schedmate.backends.embedder import HashEmbedder, MiniLMEmbedder
from schedmate.cli import app
from schedmate.core.errors import BackendError, BackendUnavailable, ConfigError, InputError

pytestmark = pytest.mark.integration

Factory = Callable[..., PgvectorHistoryStore]


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
            config_files=("conf/a.yaml",),
            command="python train.py",
        )
        for i in range(n)
    ]
    return records, rng.normal(size=(n, dim)).astype(np.float32)


def _drop_schemas(url: str, schemas: list[str]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for s in schemas:
            conn.execute(f'DROP SCHEMA IF EXISTS "{s}" CASCADE')


@pytest.fixture
def schema(postgres_url: str) -> Iterator[str]:
    """A schema of this test's own, dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    _drop_schemas(postgres_url, [name])


@pytest.fixture
def open_store(postgres_url: str, schema: str) -> Iterator[Factory]:
    """Opens stores on this test's schema; closes them all at the end."""
    opened: list[PgvectorHistoryStore] = []

    def make(**kw: object) -> PgvectorHistoryStore:
        kw.setdefault("schema", schema)
        s = PgvectorHistoryStore(postgres_url, **kw)  # type: ignore[arg-type]
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


def with_db(url: str, db: str) -> str:
    p = urlsplit(url)
    return urlunsplit((p.scheme, p.netloc, "/" + db, p.query, ""))


def test_roundtrip_and_exact_search_match_the_fake(open_store: Factory) -> None:
    records, vecs = recs(200)
    db = open_store(embedder_name="hash")
    mem = InMemoryHistoryStore()
    assert db.add(records, vecs) == 200 and mem.add(records, vecs) == 200
    assert db.count() == 200 and db.dim == 16
    q = vecs[17] + 0.01
    a = [(n.record.job_id, round(n.similarity, 4)) for n in db.search(q, 5)]
    b = [(n.record.job_id, round(n.similarity, 4)) for n in mem.search(q, 5)]
    assert a == b and a[0][0] == "j17"
    got = db.get("j17")
    assert got == records[17]  # every field survives, metadata and JSON columns included
    assert db.get("nope") is None
    assert [r.job_id for r in db.by_user("u1")] == [r.job_id for r in mem.by_user("u1")]
    assert [r.job_id for r in db.by_user("u1", limit=2)] == ["j196", "j199"]  # the latest, oldest first
    assert sorted(db.durations()) == sorted(mem.durations())
    assert db.durations(limit=3) == [200.0, 199.0, 198.0]
    assert db.search(q, 0) == []


def test_empty_store_and_zero_vectors(open_store: Factory) -> None:
    db = open_store()
    assert db.count() == 0 and db.dim is None and db.search(np.ones(8), 3) == []
    assert list(db.records()) == [] and db.durations() == [] and db.by_user("u") == []
    db.add([JobRecord(job_id="zero"), JobRecord(job_id="one")], np.array([[0.0] * 8, [1.0] + [0.0] * 7]))
    assert [n.record.job_id for n in db.search(np.ones(8), 5)] == ["one"]  # no direction, no similarity


def test_hnsw_index_is_built_once_the_store_is_large(open_store: Factory) -> None:
    records, vecs = recs(500, dim=32)
    small = open_store(exact_below=300)
    small.add(records[:200], vecs[:200])
    assert small.search(vecs[42], 1)[0].record.job_id == "j42" and not small._has_index()  # exact, no index
    small.add(records[200:], vecs[200:])
    small.build_index()  # what the Advisor calls after a large import
    assert small._has_index()
    db = open_store(exact_below=0)  # another handle on the same store: finds the index
    assert db._indexed
    # 500 rows: the planner would rightly scan; make it use the index so the HNSW path is what runs
    db._db.execute("SET enable_seqscan = off")
    assert db.search(vecs[42], 1)[0].record.job_id == "j42"
    plan = "\n".join(
        r[0]
        for r in db._db.execute(
            f'EXPLAIN SELECT id FROM "{db.schema}".jobs ORDER BY embedding <=> %s LIMIT 5', (vecs[0],)
        )
    )
    assert "jobs_embedding_hnsw" in plan  # the index, not a scan and sort
    top = db.search(vecs[7], 31)
    assert len(top) == 31 and top[0].record.job_id == "j7"  # k above the default candidate list
    assert all(a.similarity >= b.similarity for a, b in zip(top, top[1:], strict=False))
    more = [JobRecord(job_id=f"new{i}", duration_s=1.0) for i in range(10)]
    _, mvecs = recs(10, dim=32, seed=1)
    db.add(more, mvecs)
    assert db.search(mvecs[3], 1)[0].record.job_id == "new3"
    db.add([JobRecord(job_id="new3", duration_s=2.0)], vecs[100:101])  # a replaced vector moves
    assert db.search(vecs[100], 2)[0].record.job_id in ("new3", "j100")
    assert db.search(mvecs[3], 1)[0].record.job_id != "new3"
    assert db.count() == 510


def test_upsert_keeps_one_row_per_job(open_store: Factory) -> None:
    records, vecs = recs(3)
    db = open_store()
    db.add(records, vecs)
    db.add([JobRecord(job_id="j1", duration_s=99.0)], vecs[:1])
    assert db.count() == 3
    got = db.get("j1")
    assert got is not None and got.duration_s == 99.0 and got.metadata is None
    # the same job twice in one batch: the last one wins, as in SQLite
    db.add([JobRecord(job_id="j2", duration_s=1.0), JobRecord(job_id="j2", duration_s=2.0)], vecs[:2])
    got = db.get("j2")
    assert db.count() == 3 and got is not None and got.duration_s == 2.0
    assert [r.job_id for r in db.records()] == ["j0", "j1", "j2"]  # a replaced job keeps its place


def test_records_are_streamed_in_pages(open_store: Factory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_pg, "_PAGE", 7)
    records, vecs = recs(30)
    db = open_store()
    db.add(records, vecs)
    it = db.records()
    assert next(it).job_id == "j0"  # a generator: nothing more is fetched yet
    assert [r.job_id for r in it] == [f"j{i}" for i in range(1, 30)]


def test_mismatched_embedder_or_dimension_is_a_config_error(open_store: Factory) -> None:
    records, vecs = recs(3)
    db = open_store(embedder_name="minilm")
    db.add(records, vecs)
    with pytest.raises(ConfigError, match="dim"):
        db.add(records, np.ones((3, 8), dtype=np.float32))
    db.close()
    with pytest.raises(ConfigError, match="minilm"):
        open_store(embedder_name="hash")
    assert open_store(embedder_name="minilm").count() == 3


def test_meta_extraction_cache_and_format(open_store: Factory) -> None:
    db = open_store()
    assert db.get_meta("calibration") is None and db.get_extraction("k") is None
    db.set_meta("calibration", "{}")
    db.set_meta("calibration", '{"a": 1}')
    db.put_extraction("k", "{}")
    assert db.get_meta("calibration") == '{"a": 1}' and db.get_extraction("k") == "{}"
    assert db.get_meta("store_format") == str(store_pg.STORE_FORMAT)
    db.set_meta("store_format", "99")
    db.close()
    with pytest.raises(ConfigError, match="format 99"):
        open_store()


def test_schemas_keep_stores_apart_in_one_database(
    postgres_url: str, open_store: Factory, schema: str
) -> None:
    other = f"{schema}_b"
    try:
        records, vecs = recs(5)
        a = open_store()
        b = PgvectorHistoryStore(
            f"{postgres_url}?schema={other}", embedder_name="other"
        )  # schema from the URL
        a.add(records, vecs)
        b.add(records[:2], vecs[:2, :8])
        assert (a.count(), a.dim, b.count(), b.dim, b.schema) == (5, 16, 2, 8, other)
        b.close()
    finally:
        _drop_schemas(postgres_url, [other])


class _NoExtractor:
    def extract(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("extracted again: the store's extraction cache was not used")


def test_advisor_import_and_advise_through_postgres(open_store: Factory, tmp_path: Path) -> None:
    code = tmp_path / "lm"
    code.mkdir()
    (code / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--max-steps', type=int, default=100)\n"
    )
    emb = HashEmbedder()
    adv = Advisor(open_store(embedder_name=emb.name), emb)
    hist = [
        JobRecord(
            job_id=f"h{i}",
            duration_s=5.0 + s / 100,
            user="ann",
            code_dir=str(code),
            command=f"python train.py --max-steps {s}",
        )
        for i, s in enumerate((100, 200, 400, 800))
    ]
    report = adv.import_jobs(hist)
    assert report.imported == 4 and report.extracted == 4
    assert adv.store.get_meta("calibration") is not None
    # a second Advisor reads the extractions from the store's cache, not the directory
    adv2 = Advisor(open_store(embedder_name=emb.name), emb, extractor=_NoExtractor())  # type: ignore[arg-type]
    assert adv2.import_jobs(hist).imported == 4
    a = adv.advise(
        JobRecord(job_id="q", user="ann", code_dir=str(code), command="python train.py --max-steps 600")
    )
    assert a.error is None and a.method in ("knn", "knn-scaled") and a.p50_s is not None
    assert {j for j, _, _ in a.neighbors} <= {"h0", "h1", "h2", "h3"}


def test_advisor_with_real_embeddings_through_the_hnsw_index(
    open_store: Factory, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    hist, q = two_programs(tmp_path)
    store = open_store(embedder_name=minilm.name, exact_below=0)  # HNSW path
    adv = Advisor(store, minilm)
    assert adv.import_jobs(hist).imported == 7
    a = adv.advise(q)
    assert a.method == "knn-scaled" and a.error is None
    assert a.p50_s is not None and abs(a.p50_s - 15.0) < 1.5
    sims = dict((j, s) for j, s, _ in a.neighbors)
    assert all(j.startswith("lm") for j in sims) and min(sims.values()) > 0.95


def test_cli_import_stats_and_advise_with_a_postgres_url(
    runner: CliRunner, postgres_url: str, schema: str, tmp_path: Path
) -> None:
    code = tmp_path / "code" / "lm"
    code.mkdir(parents=True)
    (code / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--max-steps', type=int, default=100)\n"
    )
    hist = tmp_path / "history.jsonl"
    hist.write_text(
        "\n".join(
            json.dumps(
                {
                    "job_id": f"h{i}",
                    "duration_s": 5 + s / 100,
                    "user": "ann",
                    "code_dir": "code/lm",
                    "command": f"python train.py --max-steps {s}",
                }
            )
            for i, s in enumerate((100, 200, 400, 800))
        )
        + "\n"
    )
    url = f"{postgres_url}?schema={schema}"
    r = runner.invoke(app, ["history", "import", "--store", url, "--json", str(hist)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["imported"] == 4 and out["stored_total"] == 4 and out["store"] == redact_url(url)
    assert "schedmate:schedmate@" not in r.output  # the password is never printed
    r = runner.invoke(app, ["history", "stats", "--store", url, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["jobs"] == 4 and json.loads(r.stdout)["embedder"] == "hash"
    r = runner.invoke(
        app,
        [
            "advise",
            "--store",
            url,
            "--json",
            "--code",
            str(code),
            "--cmd",
            "python train.py --max-steps 600",
            "--user",
            "ann",
        ],
    )
    assert r.exit_code == 0, r.output
    a = json.loads(r.stdout)
    assert a["metadata"]["max_steps"] == 600 and a["error"] is None and a["neighbors"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_bad_urls_are_one_line_errors_without_the_password(postgres_url: str) -> None:
    down = f"postgresql://ann:s3cret@127.0.0.1:{_closed_port()}/db"
    with pytest.raises(BackendUnavailable) as e:
        PgvectorHistoryStore(down)
    msg = str(e.value)
    assert msg.startswith("postgresql://ann@127.0.0.1:") and "refused" in msg and "s3cret" not in msg
    assert "\n" not in msg
    with pytest.raises(ConfigError, match="port") as e2:
        PgvectorHistoryStore("postgresql://ann:s3cret@127.0.0.1:notaport/db")
    assert "s3cret" not in str(e2.value)
    with pytest.raises(ConfigError) as e3:
        PgvectorHistoryStore("postgresql://ann:s3cret@[::1/db")
    assert "s3cret" not in str(e3.value) and "\n" not in str(e3.value)
    with pytest.raises(BackendError, match="does not exist"):
        PgvectorHistoryStore(with_db(postgres_url, "schedmate_no_such_db"))
    with pytest.raises(ConfigError, match="schema"):
        PgvectorHistoryStore(postgres_url, schema="bad; drop")


def test_a_database_without_pgvector_is_a_config_error(postgres_url: str) -> None:
    import psycopg

    noext = with_db(postgres_url, urlsplit(postgres_url).path.strip("/") + "_noext")
    try:
        with psycopg.connect(noext, connect_timeout=5) as conn:
            row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    except psycopg.OperationalError as exc:
        reason = f"{redact_url(noext)}: {exc} (.ci/provision_pgvector.sh creates it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    if row and row[0]:
        pytest.skip("the test role is a superuser: it would create the extension")
    with pytest.raises(ConfigError, match="vector") as e:
        PgvectorHistoryStore(noext)
    assert "CREATE EXTENSION" in str(e.value) and "\n" not in str(e.value)


def test_cli_reports_a_bad_store_url_on_one_line(runner: CliRunner, tmp_path: Path) -> None:
    url = f"postgresql://ann:s3cret@127.0.0.1:{_closed_port()}/db"
    r = runner.invoke(app, ["advise", "--store", url, "--code", str(tmp_path)])
    assert r.exit_code == 2
    assert "cannot connect to PostgreSQL" in r.output and "s3cret" not in r.output
    assert "Traceback" not in r.output


def test_read_only_store_answers_and_never_writes(open_store: Factory) -> None:
    records, vecs = recs(20)
    open_store(embedder_name="hash").add(records, vecs)
    ro = open_store(embedder_name="hash", read_only=True)
    assert ro.count() == 20 and len(ro.search(vecs[3], 5)) == 5
    with pytest.raises(InputError, match="read-only"):
        ro.add(records[:1], vecs[:1])
    with pytest.raises(InputError, match="read-only"):
        ro.put_extraction("k", "v")
    # the session refuses writes that get past the guard, too
    with pytest.raises(BackendError, match="read-only"), ro._errors():
        ro._db.execute(f'INSERT INTO "{ro.schema}".meta (key, value) VALUES (%s, %s)', ("x", "y"))
    assert ro.count() == 20 and ro.get_extraction("k") is None


def test_ties_are_broken_by_job_id_whatever_the_insertion_order(open_store: Factory) -> None:
    records, _ = recs(30)
    same = np.ones((30, 16), dtype=np.float32)
    got = []
    for order in (records, records[::-1]):
        s = open_store(embedder_name="hash", schema=f"t_{uuid.uuid4().hex[:12]}")
        s.add(order, same)
        got.append([n.record.job_id for n in s.search(same[0], 4)])
        s.drop()
    assert got[0] == got[1] == sorted(r.job_id for r in records)[:4]

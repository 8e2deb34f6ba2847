"""Scheduling Advisor benchmark: prints one table, writes JSON.

1. Real corpus (bench/advisor_corpus/history.jsonl: small training runs measured on this
   machine): time split, earlier jobs predict later ones. The Advisor (MiniLM embeddings, no
   LLM) against Lucid's naive estimator and a gradient-boosted model on the same metadata.
   Also "online": every job of the later half predicted from all jobs before it.
2. Helios Venus slice, metadata only (user + GPUs + job class): Advisor vs Lucid naive.
3. advise latency per job (model loaded), import of 10,000 jobs sharing code directories.
4. kNN query latency and recall at 1M stored jobs (SQLite + usearch HNSW).

    python bench/advisor.py [--knn-jobs 1000000] [--import-jobs 10000] [--json out.json]
                            [--embedders minilm,hash]

With several embedders, the corpus and Helios parts run once per embedder (same split, same
settings) and a side-by-side table is printed; the other parts use the first embedder.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from schedmate.advisor import Advisor, JobRecord, SqliteHistoryStore, read_jobs  # noqa: E402
from schedmate.advisor.estimate.baselines import GBMEstimator, LucidNaiveEstimator  # noqa: E402
from schedmate.advisor.history import LineError, read_trace_jobs  # noqa: E402
from schedmate.backends.embedder import CachedEmbedder, HashEmbedder, MiniLMEmbedder  # noqa: E402
from schedmate.core.settings import AdvisorSettings, EmbedderSettings  # noqa: E402

CORPUS = ROOT / "bench" / "advisor_corpus" / "history.jsonl"
HELIOS = ROOT.parent / "shared" / "data" / "traces" / "helios-venus" / "helios_venus_2vc_sept.csv"


def vmhwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def scores(pairs: list[tuple[float, float, float | None, float | None]]) -> dict[str, float]:
    """pairs: (actual, p50, p10, p90) -> within-100%, median relative error, interval coverage."""
    if not pairs:
        return {"n": 0}
    rel = [abs(p - a) / a for a, p, _, _ in pairs]
    cov = [lo <= a <= hi for a, _, lo, hi in pairs if lo is not None and hi is not None]
    return {
        "n": len(pairs),
        "within_100pct": sum(r <= 1.0 for r in rel) / len(rel),
        "median_rel_err": statistics.median(rel),
        "mean_rel_err": statistics.fmean(rel),
        "coverage_p10_p90": (sum(cov) / len(cov)) if cov else float("nan"),
    }


def load_corpus(path: Path) -> list[JobRecord]:
    recs = [r for r in read_jobs(path, need_duration=True) if not isinstance(r, LineError)]
    recs = [r for r in recs if (r.status or "completed") == "completed"]
    recs.sort(key=lambda r: (r.submit_time or 0.0, r.job_id))
    return recs


def advisor_for(tmp: Path, name: str, embedder: object, settings: AdvisorSettings) -> Advisor:
    return Advisor(SqliteHistoryStore(tmp / f"{name}.db", embedder_name=embedder.name), embedder, settings)  # type: ignore[attr-defined]


def corpus_eval(recs: list[JobRecord], embedder: object, tmp: Path) -> dict[str, object]:
    half = len(recs) // 2
    train, test = recs[:half], recs[half:]
    settings = AdvisorSettings(use_agent=False)
    out: dict[str, object] = {
        "n_train": len(train),
        "n_test": len(test),
        "families": len({Path(r.code_dir or "").name for r in recs}),
    }
    # Advisor, fixed split
    adv = advisor_for(tmp, "split", embedder, settings)
    t0 = time.perf_counter()
    adv.import_jobs(train)
    out["import_s"] = time.perf_counter() - t0
    pairs, lat, methods, per_family = [], [], Counter(), {}
    rows = []
    for r in test:
        a = adv.advise(r)
        lat.append(a.elapsed_s)
        methods[a.method or "error"] += 1
        assert r.duration_s is not None
        if a.p50_s is not None:
            pairs.append((r.duration_s, a.p50_s, a.p10_s, a.p90_s))
            fam = Path(r.code_dir or "").name
            per_family.setdefault(fam, []).append(abs(a.p50_s - r.duration_s) / r.duration_s)
            rows.append(
                {
                    "job_id": r.job_id,
                    "family": fam,
                    "actual_s": r.duration_s,
                    "p10_s": a.p10_s,
                    "p50_s": a.p50_s,
                    "p90_s": a.p90_s,
                    "method": a.method,
                }
            )
    out["advisor"] = scores(pairs) | {"methods": dict(methods)}
    out["advise_latency_s"] = {
        "median": statistics.median(lat),
        "p95": float(np.percentile(lat, 95)),
        "max": max(lat),
    }
    out["per_family_median_rel_err"] = {k: statistics.median(v) for k, v in sorted(per_family.items())}
    out["rows"] = rows
    # baselines on the same split (the GBM sees the Advisor's extracted metadata)
    train_m = list(adv.store.records())
    test_m = []
    for r in test:
        ext = adv.extract(r)
        test_m.append(r.with_metadata(ext.metadata, dict(ext.size), ""))
    lucid = LucidNaiveEstimator().fit(train_m)
    out["lucid_naive"] = scores([(r.duration_s, lucid.predict(r), None, None) for r in test_m])  # type: ignore[misc]
    try:
        gbm = GBMEstimator().fit(train_m)
        out["gbm"] = scores([(r.duration_s, gbm.predict(r), None, None) for r in test_m])  # type: ignore[misc]
    except Exception as exc:  # noqa: BLE001 - a missing optional dependency is reported, not fatal
        out["gbm"] = {"error": str(exc)}
    # online: each later job predicted from every job before it
    online = advisor_for(tmp, "online", embedder, settings)
    online.import_jobs(train)
    out["advisor_online"] = online_eval(online, test)["scores"]
    return out


def online_eval(adv: Advisor, todo: list[JobRecord]) -> dict[str, object]:
    """Each job predicted from every job imported before it, then imported itself."""
    pairs, methods, rows = [], Counter(), []
    for r in todo:
        a = adv.advise(r)
        methods[a.method or "error"] += 1
        if a.p50_s is not None and r.duration_s:
            pairs.append((r.duration_s, a.p50_s, a.p10_s, a.p90_s))
            rows.append((r.job_id, Path(r.code_dir or "").name, r.duration_s, a.p50_s, a.detail))
        adv.import_jobs([r])
    return {"n": len(pairs), "scores": scores(pairs), "methods": dict(methods), "rows": rows}


def dev_eval(
    recs: list[JobRecord], embedder: object, tmp: Path, combine: str = "average"
) -> dict[str, object]:
    """Design decisions are made here, never on the later half: each job of the EARLIER half from
    every job before it (starting once a quarter of the corpus is known)."""
    train = recs[: len(recs) // 2]
    start = len(recs) // 4
    adv = advisor_for(tmp, f"dev-{combine}", embedder, AdvisorSettings(use_agent=False, scaling=combine))  # type: ignore[arg-type]
    adv.import_jobs(train[:start])
    return online_eval(adv, train[start:])


def helios_eval(embedder: object, tmp: Path) -> dict[str, object]:
    recs = [r for r in read_trace_jobs(HELIOS, "helios") if isinstance(r, JobRecord)]
    recs.sort(key=lambda r: (r.submit_time or 0.0, r.job_id))
    half = len(recs) // 2
    train, test = recs[:half], recs[half:]
    adv = advisor_for(tmp, "helios", embedder, AdvisorSettings(use_agent=False))
    adv.import_jobs(train)
    pairs, methods = [], Counter()
    for r in test:
        a = adv.advise(r)
        methods[a.method or "error"] += 1
        pairs.append((r.duration_s, a.p50_s, a.p10_s, a.p90_s))
    lucid = LucidNaiveEstimator().fit(train)
    return {
        "n_train": len(train),
        "n_test": len(test),
        "advisor": scores(pairs) | {"methods": dict(methods)},  # type: ignore[arg-type]
        "lucid_naive": scores([(r.duration_s, lucid.predict(r), None, None) for r in test]),  # type: ignore[misc]
    }


def import_speed(recs: list[JobRecord], n: int, embedder: object, tmp: Path) -> dict[str, float]:
    rng = random.Random(0)
    many = []
    for i in range(n):
        r = rng.choice(recs)
        many.append(
            JobRecord(
                job_id=f"imp{i}",
                duration_s=r.duration_s,
                user=r.user,
                name=r.name,
                n_gpus=r.n_gpus,
                code_dir=r.code_dir,
                command=r.command,
                config_files=r.config_files,
            )
        )
    adv = advisor_for(tmp, "import", embedder, AdvisorSettings(use_agent=False))
    t0 = time.perf_counter()
    rep = adv.import_jobs(many)
    dt = time.perf_counter() - t0
    return {
        "jobs": n,
        "seconds": dt,
        "jobs_per_s": n / dt,
        "code_extractions": rep.extracted,
        "distinct_code_dirs": len({r.code_dir for r in many}),
    }


def knn_at_scale(n: int, dim: int, tmp: Path) -> dict[str, float]:
    """n clustered unit vectors (like histories full of near-duplicate jobs) in a real store."""
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(max(1, n // 200), dim)).astype(np.float32)
    store = SqliteHistoryStore(tmp / "knn.db", exact_below=0)
    t0 = time.perf_counter()
    chunk = 50_000
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        idx = rng.integers(0, len(centers), size=m)
        vecs = centers[idx] + 0.35 * rng.normal(size=(m, dim)).astype(np.float32)
        store.add(
            [JobRecord(job_id=f"k{start + i}", duration_s=1.0 + (start + i) % 97) for i in range(m)], vecs
        )
    insert_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.build_index()
    index_s = time.perf_counter() - t0
    build_peak_mb = vmhwm_mb()  # the recall check below loads every vector once more
    qidx = rng.integers(0, len(centers), size=200)
    queries = centers[qidx] + 0.35 * rng.normal(size=(200, dim)).astype(np.float32)
    store.search(queries[0], 10)
    lat = []
    for q in queries:
        t = time.perf_counter()
        store.search(q, 10)
        lat.append(time.perf_counter() - t)
    # recall@10 against exact search over the same vectors
    keys, vecs = store._vectors()
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    recall = []
    for q in queries[:50]:
        qn = q / np.linalg.norm(q)
        exact = set(keys[np.argpartition(-(vecs @ qn), 10)[:10]].tolist())
        got = {int(k) for k in store._ensure_index().search(qn, 10).keys}
        recall.append(len(exact & got) / 10)
    size_mb = (tmp / "knn.db").stat().st_size / 1e6
    store.close()
    return {
        "jobs": n,
        "dim": dim,
        "insert_s": insert_s,
        "index_build_or_load_s": index_s,
        "query_ms_median": 1000 * statistics.median(lat),
        "query_ms_p95": 1000 * float(np.percentile(lat, 95)),
        "recall_at_10": statistics.fmean(recall),
        "store_mb": size_mb,
        "peak_rss_build_mb": build_peak_mb,
        "peak_rss_mb": vmhwm_mb(),
    }


def fmt_pct(x: object) -> str:
    return f"{100 * x:.1f}%" if isinstance(x, float) and math.isfinite(x) else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--knn-jobs", type=int, default=1_000_000)
    ap.add_argument("--import-jobs", type=int, default=10_000)
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "advisor.json")
    ap.add_argument("--only", default="corpus,helios,import,knn", help="comma-separated parts to run")
    ap.add_argument("--embedders", default="minilm,hash", help="minilm and/or hash, side by side")
    args = ap.parse_args()
    parts = set(args.only.split(","))
    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    res: dict[str, object] = {
        "machine": {"cores": __import__("os").cpu_count(), "load_avg_start": __import__("os").getloadavg()},
        "date": time.strftime("%Y-%m-%d"),
    }
    by_embedder: dict[str, dict[str, object]] = {}
    first: object = None
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        recs = load_corpus(args.corpus)
        for name in names:
            embedder = make_embedder(name)
            assert embedder.name == name, f"asked for {name}, got {embedder.name}"  # never a silent fallback
            first = first or embedder
            out: dict[str, object] = {"embedder": embedder.name}
            sub = tmp / name
            sub.mkdir()
            if "dev" in parts:
                for combine in ("best", "average"):
                    out[f"dev_{combine}"] = dev_eval(recs, embedder, sub, combine)
            if "corpus" in parts:
                out["corpus"] = corpus_eval(recs, embedder, sub)
            if "helios" in parts:
                out["helios"] = (
                    helios_eval(embedder, sub) if HELIOS.exists() else {"error": f"{HELIOS} missing"}
                )
            by_embedder[name] = out
        res.update(by_embedder[names[0]])  # the first embedder's numbers under the old keys
        res["by_embedder"] = by_embedder
        if "import" in parts and args.import_jobs:
            res["import"] = import_speed(recs, args.import_jobs, first, tmp)
        if "knn" in parts and args.knn_jobs:
            res["knn"] = knn_at_scale(args.knn_jobs, 384, tmp)
    res["machine"]["load_avg_end"] = __import__("os").getloadavg()  # type: ignore[index]
    report(res)
    if len(by_embedder) > 1:
        side_by_side(by_embedder)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1, default=float))
    print(f"wrote {args.json}")


def make_embedder(name: str) -> CachedEmbedder:
    if name == "minilm":
        emb = CachedEmbedder(MiniLMEmbedder(EmbedderSettings(backend="minilm")))
    elif name == "hash":
        emb = CachedEmbedder(HashEmbedder())
    else:
        raise SystemExit(f"--embedders: unknown embedder {name!r} (minilm, hash)")
    emb.embed(["warm up"])
    return emb


def side_by_side(by: dict[str, dict[str, object]]) -> None:
    """One row per (part, predictor), one column group per embedder."""
    names = list(by)
    print()
    print(f"{'part / predictor':<30}" + "".join(f"{n + ': w100 / med / cov':>34}" for n in names))
    rows = (
        ("corpus", "advisor", "corpus: Advisor (split)"),
        ("corpus", "advisor_online", "corpus: Advisor (online)"),
        ("helios", "advisor", "helios: Advisor"),
        ("helios", "lucid_naive", "helios: Lucid naive"),
    )
    for part, key, label in rows:
        cells = []
        for n in names:
            p = by[n].get(part)
            s = p.get(key, {}) if isinstance(p, dict) else {}
            assert isinstance(s, dict)
            cells.append(
                f"{fmt_pct(s.get('within_100pct'))} / {fmt_pct(s.get('median_rel_err'))} / "
                f"{fmt_pct(s.get('coverage_p10_p90'))}"
            )
        print(f"{label:<30}" + "".join(f"{c:>34}" for c in cells))
    for n in names:
        c = by[n].get("corpus")
        if isinstance(c, dict) and "advise_latency_s" in c:
            lat = c["advise_latency_s"]
            print(
                f"advise latency ({n}): median {lat['median'] * 1000:.1f} ms, p95 {lat['p95'] * 1000:.1f} ms"
            )  # type: ignore[index]


def report(res: dict[str, object]) -> None:
    for key in ("dev_best", "dev_average"):
        d = res.get(key)
        if isinstance(d, dict):
            sc = d["scores"]
            print(
                f"{key}: {d['n']} jobs of the earlier half, online: within 100% {fmt_pct(sc['within_100pct'])}, "  # type: ignore[index]
                f"median rel err {fmt_pct(sc['median_rel_err'])}, in [p10,p90] {fmt_pct(sc['coverage_p10_p90'])}, "  # type: ignore[index]
                f"methods {d['methods']}"
            )
    c = res.get("corpus")
    if not isinstance(c, dict):
        c = None
    if c is not None:
        corpus_table(c)
    _rest(res)


def corpus_table(c: dict[str, object]) -> None:
    print(
        f"corpus: {c['n_train']} earlier jobs -> {c['n_test']} later jobs, {c['families']} program families"
    )
    print(f"{'predictor':<28}{'within 100%':>12}{'median rel err':>16}{'in [p10,p90]':>14}")
    for key, label in (
        ("advisor", "Advisor (split)"),
        ("advisor_online", "Advisor (online)"),
        ("lucid_naive", "Lucid naive"),
        ("gbm", "GBM on metadata"),
    ):
        s = c.get(key, {})
        assert isinstance(s, dict)
        print(
            f"{label:<28}{fmt_pct(s.get('within_100pct')):>12}{fmt_pct(s.get('median_rel_err')):>16}"
            f"{fmt_pct(s.get('coverage_p10_p90')):>14}"
        )
    print(f"methods: {c['advisor']['methods']}")  # type: ignore[index]
    fam = c["per_family_median_rel_err"]
    assert isinstance(fam, dict)
    print("median rel err per family: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in fam.items()))
    lat = c["advise_latency_s"]
    print(
        f"advise latency: median {lat['median'] * 1000:.1f} ms, p95 {lat['p95'] * 1000:.1f} ms, "  # type: ignore[index]
        f"max {lat['max'] * 1000:.1f} ms"
    )  # type: ignore[index]


def _rest(res: dict[str, object]) -> None:
    h = res.get("helios")
    if isinstance(h, dict) and "advisor" in h:
        print(f"helios (metadata only): {h['n_train']} -> {h['n_test']} jobs")
        for key, label in (("advisor", "Advisor"), ("lucid_naive", "Lucid naive")):
            s = h[key]
            print(
                f"  {label:<26}{fmt_pct(s.get('within_100pct')):>12}{fmt_pct(s.get('median_rel_err')):>16}"
                f"{fmt_pct(s.get('coverage_p10_p90')):>14}"
            )
    if "import" in res:
        i = res["import"]
        print(
            f"import: {i['jobs']} jobs sharing {i['distinct_code_dirs']} code dirs in {i['seconds']:.1f} s "  # type: ignore[index]
            f"({i['code_extractions']} extractions)"
        )  # type: ignore[index]
    if "knn" in res:
        k = res["knn"]
        print(
            f"kNN at {k['jobs']:,} jobs: query median {k['query_ms_median']:.2f} ms, p95 {k['query_ms_p95']:.2f} ms, "  # type: ignore[index]
            f"recall@10 {k['recall_at_10']:.3f}, index {k['index_build_or_load_s']:.0f} s, insert {k['insert_s']:.0f} s, "  # type: ignore[index]
            f"store {k['store_mb']:.0f} MB, peak RSS {k['peak_rss_build_mb']:.0f} MB after insert + build, "  # type: ignore[index]
            f"{k['peak_rss_mb']:.0f} MB with the recall check"
        )  # type: ignore[index]


if __name__ == "__main__":
    main()

"""The Advisor with the real MiniLM embedder and the real SQLite + usearch store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from schedmate.advisor import Advisor, JobRecord, SqliteHistoryStore
from schedmate.backends.embedder import MiniLMEmbedder

pytestmark = pytest.mark.integration

LM = ("import argparse\nimport torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
      "p = argparse.ArgumentParser()\np.add_argument('--max-iters', type=int, default=100)\n"
      "p.add_argument('--batch-size', type=int, default=32)\np.add_argument('--n-layer', type=int, default=4)\n"
      "p.add_argument('--n-embd', type=int, default=256)\np.add_argument('--block-size', type=int, default=128)\n"
      "p.add_argument('--dataset', default='shakespeare_char')\nopt = torch.optim.AdamW([], lr=3e-4)\n")
CNN = ("import keras\nmodel = keras.Sequential([keras.layers.Conv2D(32, 3), keras.layers.Dense(10)])\n"
       "model.compile(optimizer='sgd')\n(x, y), _ = keras.datasets.cifar10.load_data()\n"
       "model.fit(x, y, epochs=5, batch_size=128)\n")


def test_similar_program_found_and_scaled_with_real_embeddings(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    lm, cnn = tmp_path / "lm", tmp_path / "cnn"
    for d, text in ((lm, LM), (cnn, CNN)):
        d.mkdir()
        (d / "train.py").write_text(text)
    store = SqliteHistoryStore(tmp_path / "h.db", embedder_name=minilm.name, exact_below=0)  # HNSW path
    adv = Advisor(store, minilm)
    hist = [JobRecord(job_id=f"lm{i}", duration_s=3.0 + it / 50, user="ann", code_dir=str(lm),
                      command=f"python train.py --max-iters {it}") for i, it in enumerate((100, 200, 400, 800))]
    hist += [JobRecord(job_id=f"cnn{i}", duration_s=500.0 + i, user="bob", code_dir=str(cnn), command="python train.py")
             for i in range(3)]
    assert adv.import_jobs(hist).imported == 7
    q = JobRecord(job_id="q", user="ann", code_dir=str(lm), command="python train.py --max-iters 600")
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

"""The Advisor facade: extraction cache, the agent only for what static analysis missed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedmate.advisor import Advisor, InMemoryHistoryStore, JobRecord, SqliteHistoryStore
from schedmate.advisor.agent import MetadataAgent
from schedmate.backends.embedder import HashEmbedder
from schedmate.backends.llm import ScriptedLLMBackend
from schedmate.core.errors import BackendUnavailable


def job(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "job"
    d.mkdir(exist_ok=True)
    (d / "train.py").write_text(text)
    return d


def step(action: str, answer: dict[str, object] | None = None, **args: object) -> dict[str, object]:
    return {"thought": "look", "action": action, "args": args, "answer": answer}


def test_agent_fills_what_static_analysis_missed_once_per_content(tmp_path: Path) -> None:
    d = job(tmp_path, "import torch\nfrom mylib import run\nrun(cfg=load_remote())\n")
    llm = ScriptedLLMBackend(
        [step("file_read", path="train.py"), step("final", {"max_steps": 500, "n_gpus": 64})]
    )
    store = SqliteHistoryStore(tmp_path / "h.db")
    adv = Advisor(store, HashEmbedder(), agent=MetadataAgent(llm, max_steps=3))
    rec = JobRecord(job_id="a", code_dir=str(d), command="python train.py", n_gpus=2)
    ext = adv.extract(rec)
    assert ext.metadata.max_steps == 500 and ext.sources["max_steps"] == "llm agent"
    assert ext.metadata.n_gpus == 2  # the scheduler's value is never replaced
    # same content: cached in memory, then in the store for a new Advisor; no more LLM calls
    assert adv.extract(rec) == ext
    adv2 = Advisor(store, HashEmbedder(), agent=MetadataAgent(ScriptedLLMBackend([]), max_steps=3))
    assert adv2.extract(rec).metadata == ext.metadata


def test_no_agent_call_when_the_work_is_known(tmp_path: Path) -> None:
    d = job(
        tmp_path,
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--max-steps', default=100)\n"
        "p.add_argument('--model', default='gpt2')\n",
    )
    llm = ScriptedLLMBackend([])
    adv = Advisor(InMemoryHistoryStore(), HashEmbedder(), agent=MetadataAgent(llm))
    assert adv.extract(JobRecord(job_id="a", code_dir=str(d))).metadata.max_steps == 100
    assert llm.sent == []


def test_llm_outage_keeps_static_metadata_and_notes_it(tmp_path: Path) -> None:
    d = job(tmp_path, "import torch\n")
    llm = ScriptedLLMBackend([BackendUnavailable("llm down")])
    adv = Advisor(InMemoryHistoryStore(), HashEmbedder(), agent=MetadataAgent(llm))
    a = adv.advise(JobRecord(job_id="a", code_dir=str(d), user="u"))
    assert a.metadata is not None and a.metadata.framework == "pytorch"
    assert any("agent" in n and "llm down" in n for n in a.notes)
    assert a.method == "prior" and a.p50_s is not None


def test_import_then_advise_uses_similar_jobs(tmp_path: Path) -> None:
    d = job(
        tmp_path,
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=1)\n"
        "p.add_argument('--num-samples', type=int, default=1000)\n",
    )
    adv = Advisor(InMemoryHistoryStore(), HashEmbedder())
    hist = [
        JobRecord(
            job_id=f"h{e}", duration_s=2.0 + 3.0 * e, code_dir=str(d), command=f"python train.py --epochs {e}"
        )
        for e in (1, 2, 4, 8)
    ]
    rep = adv.import_jobs(hist)
    assert rep.imported == 4 and rep.errors == []
    a = adv.advise(JobRecord(job_id="q", code_dir=str(d), command="python train.py --epochs 6"))
    assert a.method == "knn-scaled" and a.p50_s is not None and abs(a.p50_s - 20.0) < 1.0
    assert a.neighbors and all(n[0] != "q" for n in a.neighbors)


def test_a_failing_store_is_reported_as_the_store_not_the_embedder(tmp_path: Path) -> None:
    from schedmate.core.errors import BackendError
    from schedmate.core.settings import AdvisorSettings

    class DownStore(InMemoryHistoryStore):
        def search(self, vector: Any, k: int) -> list[Any]:
            raise BackendError("postgresql://db/x: PostgreSQL: server closed the connection")

        def by_user(self, user: str, limit: int = 1000) -> list[JobRecord]:
            raise BackendError("postgresql://db/x: PostgreSQL: server closed the connection")

        def durations(self, limit: int = 100_000) -> list[float]:
            raise BackendError("postgresql://db/x: PostgreSQL: server closed the connection")

    adv = Advisor(DownStore(), HashEmbedder(), AdvisorSettings(use_agent=False))
    a = adv.advise(JobRecord(job_id="q", user="ann", n_gpus=1))
    assert a.error is not None and a.error.startswith("history store:") and "server closed" in a.error
    assert a.method == "prior" and a.p50_s is not None  # still an answer

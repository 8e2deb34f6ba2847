"""Failure Handler benchmark (issues 3, 11): root cause and category on real failures; 1 GB search.

    python bench/failures.py [--data ../shared/data/logs/failures] [--embedder minilm|none]
                             [--big-gb 1] [--skip-big] [--json-out bench/results/failures.json]

Targets: root-cause line exact (whitespace-stripped) >= 90%; infrastructure-vs-application
F1 (infrastructure positive) >= 0.90 and accuracy >= 90% with no LLM (issue 11); a generated 1 GB log
with the root cause at a random place located in <= 1 s with <= 64 classifier calls and
<= 300 MB of memory; the adversarial recovery suite (hostile logs replayed as several jobs
of one user, executed against an in-memory cluster): 0 drains, 0 exclusions of nodes the
scheduler did not place the job on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from schedmate.core.settings import load_settings  # noqa: E402
from schedmate.sdk import build_failure_handler  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "logs" / "failures"


def accuracy(data: Path, embedder: str) -> dict:
    labels = [json.loads(x) for x in (data / "labels.jsonl").read_text().splitlines() if x.strip()]
    settings = load_settings(
        overrides={"embedder": {"backend": embedder}, "llm": {"base_url": ""}}, environ={}
    )
    handler = build_failure_handler(settings, plan=False)
    rows = []
    for lab in labels:
        t0 = time.perf_counter()
        r = handler.diagnose(data / lab["file"])
        dt = time.perf_counter() - t0
        want = lab["root_cause_line"].strip()
        got = (r.root_cause_line or "").strip()
        rows.append(
            {
                "file": lab["file"],
                "line_ok": got == want,
                "category_ok": r.category == lab["label"],
                "got_line": got,
                "want_line": want,
                "got_category": r.category,
                "want_category": lab["label"],
                "kind": r.kind,
                "want_kind": lab.get("root_cause_kind"),
                "confidence": r.confidence,
                "method": r.method,
                "seconds": dt,
            }
        )
    tp = sum(
        1 for r in rows if r["got_category"] == "infrastructure" and r["want_category"] == "infrastructure"
    )
    fp = sum(
        1 for r in rows if r["got_category"] == "infrastructure" and r["want_category"] != "infrastructure"
    )
    fn = sum(
        1 for r in rows if r["got_category"] != "infrastructure" and r["want_category"] == "infrastructure"
    )
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    ablation = _embedding_only(labels, settings) if embedder != "none" else None
    return {
        "n": len(rows),
        "embedding_only_accuracy": ablation,
        "root_cause_exact": sum(r["line_ok"] for r in rows) / len(rows),
        "accuracy": sum(r["category_ok"] for r in rows) / len(rows),
        "precision": prec,
        "recall": rec,
        "f1": f1,
        "rows": rows,
    }


def adversarial() -> dict:
    from schedmate.failure.adversarial import run_adversarial_suite

    return run_adversarial_suite().as_dict()


def _embedding_only(labels: list[dict], settings) -> float:  # type: ignore[no-untyped-def]
    """Ablation: category of the labelled root line from embedding similarity alone
    (no pattern may decide), a proxy for phrasings the signatures have never seen."""
    from schedmate.backends.embedder import create_embedder
    from schedmate.failure import FailureClassifier, KnowledgeBase

    clf = FailureClassifier(
        KnowledgeBase.load(), create_embedder(settings.embedder), None, min_similarity=0.0
    )
    right = 0
    for lab in labels:
        v = clf._similar(lab["root_cause_line"])
        right += v is not None and v.category == lab["label"]
    return right / len(labels)


_HEALTHY = [
    "2026-01-01 10:00:00,000 INFO trainer: step {i} loss {l:.4f} lr 3.0e-04 time 0.412s",
    "{{'loss': {l:.4f}, 'learning_rate': 2e-05, 'epoch': {e:.3f}}}",
    "[rank{k}] iter {i} | lm loss: {l:.4E} | elapsed time per iteration (ms): 412.0 |",
    "2026-01-01 10:00:00 INFO data: prefetched shard {k} ({i} samples)",
    "/usr/lib/python3.11/site-packages/torch/utils/data.py:{k}: UserWarning: worker {k} is slow",
]
_CASCADE = [
    "[rank{k}]:[E ProcessGroupNCCL.cpp:616] [Rank {k}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={i}, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.",
    "[rank{k}]: Traceback (most recent call last):",
    '[rank{k}]:   File "train.py", line 120, in <module>',
    "[rank{k}]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank {k}.",
]
ROOT_CAUSE = "RuntimeError: CUDA error: uncorrectable ECC error encountered"


_CHILD = r"""
import json, sys, time
def hwm():  # peak RSS of this process image (ru_maxrss would include the parent's at fork)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
sys.path.insert(0, {src!r})
from schedmate.core.settings import load_settings
from schedmate.sdk import build_failure_handler
s = load_settings(overrides={{"embedder": {{"backend": "none"}}, "llm": {{"base_url": ""}}}}, environ={{}})
h = build_failure_handler(s, plan=False)
t0 = time.perf_counter(); r = h.diagnose({path!r}); dt = time.perf_counter() - t0
print(json.dumps({{"seconds": dt, "calls": h.locator.calls, "line": r.root_cause_line, "line_no": r.root_cause_line_no,
                  "category": r.category, "peak_rss_mb": hwm()}}))
"""


def big(tmp: Path, gb: float, seed: int) -> dict:
    rng = random.Random(seed)
    path = tmp / "big-failure.log"
    block_lines = []
    for i in range(20_000):
        tpl = rng.choice(_HEALTHY)
        block_lines.append(tpl.format(i=i, l=rng.random() * 3, e=i / 1e5, k=i % 8))
    block = ("\n".join(block_lines) + "\n").encode()
    target = int(gb * 1024**3)
    cut = rng.randrange(target // 10, target - target // 20)
    written = 0
    line_no = 0
    with path.open("wb") as fh:
        while written + len(block) < cut:
            fh.write(block)
            written += len(block)
            line_no += block.count(b"\n")
        fh.write(ROOT_CAUSE.encode() + b"\n")
        want_no = line_no + 1
        written += len(ROOT_CAUSE) + 1
        casc = "\n".join(rng.choice(_CASCADE).format(i=i, k=i % 8) for i in range(20_000)) + "\n"
        while written < target:
            fh.write(casc.encode())
            written += len(casc)
    code = _CHILD.format(src=str(ROOT / "src"), path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    path.unlink()
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    res = json.loads(out.stdout)
    res.update(
        {
            "file_gb": written / 1024**3,
            "want_line_no": want_no,
            "found": res["line"] == ROOT_CAUSE and res["line_no"] == want_no,
            "root_offset_fraction": cut / target,
        }
    )
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", default="minilm", choices=["minilm", "hash", "none"])
    ap.add_argument("--big-gb", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=3, help="generated big logs (root cause at random places)")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--json-out", type=Path, default=ROOT / "bench" / "results" / "failures.json")
    args = ap.parse_args()
    if not (args.data / "labels.jsonl").is_file():
        print(f"data not found: {args.data}/labels.jsonl", file=sys.stderr)
        return 2
    acc = accuracy(args.data, args.embedder)
    adv = adversarial()
    bigs = []
    if not args.skip_big:
        tmp = Path(tempfile.mkdtemp(prefix="schedmate-bench-"))
        bigs = [big(tmp, args.big_gb, seed) for seed in range(args.seeds)]
    report = {
        "machine": f"{platform.node()} {os.cpu_count()} cpu",
        "date": str(date.today()),
        "embedder": args.embedder,
        "accuracy": acc,
        "adversarial": adv,
        "big": bigs,
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(report, indent=2, default=str))
    print(
        f"\nFailure Handler benchmark  ({report['date']}, {report['machine']}, embedder={args.embedder}, no LLM)"
    )
    print(f"{'metric':46} {'measured':>12} {'target':>10}  result")
    rows = [
        ("root-cause line exact", f"{acc['root_cause_exact']:.1%}", ">= 90%", acc["root_cause_exact"] >= 0.9),
        ("infra-vs-app F1 (infra positive)", f"{acc['f1']:.3f}", ">= 0.90", acc["f1"] >= 0.90),
        ("infra-vs-app accuracy", f"{acc['accuracy']:.1%}", ">= 90%", acc["accuracy"] >= 0.90),
        ("  precision / recall", f"{acc['precision']:.2f}/{acc['recall']:.2f}", "", None),
    ]
    if acc["embedding_only_accuracy"] is not None:
        rows.append(
            ("  (ablation) category by embedding only", f"{acc['embedding_only_accuracy']:.1%}", "", None)
        )
    rows += [
        ("adversarial suite: jobs / actions planned", f"{adv['jobs']} / {adv['actions_planned']}", "", None),
        ("  drains", str(adv["drains"]), "0", adv["drains"] == 0),
        (
            "  exclusions of nodes not placed by the scheduler",
            str(adv["wrong_exclusions"]),
            "0",
            adv["wrong_exclusions"] == 0,
        ),
    ]
    for b in bigs:
        if "error" in b:
            rows.append(("big log", b["error"], "", False))
            continue
        rows.append(
            (
                f"{b['file_gb']:.1f} GB log, cause at {b['root_offset_fraction']:.0%}: found",
                str(b["found"]),
                "True",
                b["found"],
            )
        )
        rows.append(("  time", f"{b['seconds']:.3f} s", "<= 1 s", b["seconds"] <= 1.0))
        rows.append(("  classifier calls", str(b["calls"]), "<= 64", b["calls"] <= 64))
        rows.append(
            ("  peak RSS (process)", f"{b['peak_rss_mb']:.0f} MB", "<= 300 MB", b["peak_rss_mb"] <= 300)
        )
    for name, val, tgt, ok in rows:
        print(f"{name:46} {val:>12} {tgt:>10}  {'' if ok is None else ('PASS' if ok else 'FAIL')}")
    misses = [r for r in acc["rows"] if not (r["line_ok"] and r["category_ok"])]
    if misses:
        print(f"\nMisses ({len(misses)}):")
        for r in misses:
            print(
                f"  {r['file']}: category {r['got_category']} (want {r['want_category']}), kind {r['kind']} "
                f"(want {r['want_kind']}), by {r['method']} conf {r['confidence']:.2f}"
            )
            if not r["line_ok"]:
                print(f"      got : {r['got_line'][:160]!r}\n      want: {r['want_line'][:160]!r}")
    print(f"\nJSON: {args.json_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

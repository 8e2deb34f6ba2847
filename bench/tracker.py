"""Metric Tracker benchmark (issue 2): accuracy on real labelled logs, latency, throughput, memory.

    python bench/tracker.py [--data ../shared/data/logs/progress] [--embedder minilm|hash|none]
                            [--big-gb 5] [--skip-big] [--json-out bench/results/tracker.json]

Prints one table and writes JSON. Targets (issue 2): success >= 90%, per-field >= 95%,
median latency <= 0.1 s (p95 <= 0.5 s), classification >= 200,000 lines/s on a
1,000,000-line log, peak memory <= 300 MB on a 5 GB log.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from schedmate.core.settings import EmbedderSettings, TrackerSettings  # noqa: E402
from schedmate.tracker import LineClassifier, MetricTracker  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "logs" / "progress"
FIELDS = ("has_progress", "step", "loss", "step_time_s")


def _rel_ok(got: float | None, want: float | None, tol: float) -> bool:
    if want is None:
        return got is None
    if got is None or not math.isfinite(got):
        return False
    if want == 0:
        return abs(got) <= tol
    return abs(got - want) / abs(want) <= tol


def field_ok(name: str, got: dict, want: dict) -> bool:
    if name == "has_progress":
        return bool(got["has_progress"]) == bool(want["has_progress"])
    if name == "step":
        return got["step"] == want["step"]
    if name == "loss":
        return _rel_ok(got["loss"], want["loss"], 0.001)
    if name == "step_time_s":
        return _rel_ok(got["step_time_s"], want["step_time_s"], 0.05)
    raise KeyError(name)


def make_classifier(kind: str) -> LineClassifier:
    if kind == "none":
        return LineClassifier(embedder=None)
    from schedmate.backends.embedder import create_embedder

    return LineClassifier(embedder=create_embedder(EmbedderSettings(backend=kind)))


def accuracy(data: Path, embedder: str, llm_url: str | None = None) -> dict:
    """Score every labelled log; with `llm_url`, unparsed progress templates go to that
    OpenAI-compatible server (one call per template, as in `schedmate --llm-url`)."""
    labels = [json.loads(line) for line in (data / "labels.jsonl").read_text().splitlines() if line.strip()]
    shared = make_classifier(embedder)
    mapper = None
    if llm_url:
        from schedmate.backends.llm import OpenAIBackend
        from schedmate.core.settings import LLMSettings
        from schedmate.tracker import FieldMapper

        mapper = FieldMapper(OpenAIBackend(LLMSettings(base_url=llm_url, timeout_s=60, max_retries=1)))
    shared.classify_batch(["warm up the model"])  # model loaded before timing
    rows, lat_cold, lat_warm = [], [], []
    for lab in labels:
        path = data / lab["file"]
        clf = LineClassifier(embedder=shared.embedder, exemplars=shared.exemplars)
        clf._ex_matrix = shared._ex_matrix  # exemplar vectors are part of the loaded model
        tracker = MetricTracker(TrackerSettings(use_llm=mapper is not None), classifier=clf, mapper=mapper)
        t0 = time.perf_counter()
        res = tracker.track_file(path).to_json_dict()
        lat_cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        tracker.track_file(path)
        lat_warm.append(time.perf_counter() - t0)
        oks = {f: field_ok(f, res, lab) for f in FIELDS}
        rows.append(
            {
                "file": lab["file"],
                "framework": lab["framework"],
                "ok": all(oks.values()),
                "fields": oks,
                "got": {f: res[f] for f in FIELDS + ("total_steps", "last_progress_line")},
                "want": {f: lab[f] for f in FIELDS + ("total_steps", "last_progress_line")},
                "latency_s": lat_cold[-1],
                "embedded_templates": clf.n_embedded,
            }
        )
    per_field = {f: sum(r["fields"][f] for r in rows) / len(rows) for f in FIELDS}
    total_ok = sum(
        1
        for r in rows
        if r["want"]["total_steps"] is not None and r["got"]["total_steps"] == r["want"]["total_steps"]
    )
    total_n = sum(1 for r in rows if r["want"]["total_steps"] is not None)
    return {
        "llm_url": llm_url,
        "llm_calls": mapper.calls if mapper is not None else 0,
        "n_logs": len(rows),
        "success_rate": sum(r["ok"] for r in rows) / len(rows),
        "per_field": per_field,
        "total_steps_acc_where_labelled": total_ok / total_n if total_n else None,
        "latency_cold_median_s": statistics.median(lat_cold),
        "latency_cold_p95_s": sorted(lat_cold)[max(0, math.ceil(0.95 * len(lat_cold)) - 1)],
        "latency_warm_median_s": statistics.median(lat_warm),
        "latency_warm_p95_s": sorted(lat_warm)[max(0, math.ceil(0.95 * len(lat_warm)) - 1)],
        "rows": rows,
    }


_TEMPLATES = [
    "2026-01-01 10:00:{s:02d},123 INFO trainer: step {i}/{n} loss {l:.4f} lr 3.0e-04 time {t:.3f}s",
    "{{'loss': {l:.4f}, 'learning_rate': 2e-05, 'epoch': {e:.2f}}}",
    " {p:2d}%|#####     | {i}/{n} [01:02<03:04,  {r:.2f}it/s, loss={l:.3f}]",
    "[rank{k}] iter {i} | lm loss: {l:.4E} | elapsed time per iteration (ms): {ms:.1f} |",
    "2026-01-01 10:00:{s:02d} INFO data: loaded shard {k} from /data/shard_{i}.bin ({m} samples)",
    "/usr/lib/python3.11/site-packages/torch/utils/data.py:{k}: UserWarning: worker {k} is slow",
    "[W socket.cpp:{m}] [c10d] The client socket has timed out after {k}s while trying to connect",
    "Saving checkpoint to /ckpt/run{k}/step_{i}.pt",
    "  Num examples = {m}",
    "RuntimeError: NCCL communicator was aborted on rank {k}",
]


def generate_log(path: Path, n_lines: int, seed: int = 0) -> int:
    """A synthetic multi-framework log (mixed kinds), written in chunks; returns bytes."""
    rng = random.Random(seed)
    weights = [30, 15, 20, 10, 8, 6, 3, 4, 3, 1]
    size = 0
    with path.open("w", encoding="utf-8") as fh:
        buf: list[str] = []
        for i in range(n_lines):
            tpl = rng.choices(_TEMPLATES, weights)[0]
            buf.append(
                tpl.format(
                    i=i,
                    n=n_lines,
                    s=i % 60,
                    l=rng.random() * 4,
                    t=rng.random(),
                    e=i / n_lines,
                    p=i * 100 // n_lines,
                    r=1 + rng.random(),
                    k=i % 8,
                    ms=400 + rng.random() * 50,
                    m=rng.randrange(10_000),
                )
            )
            if len(buf) >= 10_000:
                chunk = "\n".join(buf) + "\n"
                fh.write(chunk)
                size += len(chunk)
                buf = []
        if buf:
            chunk = "\n".join(buf) + "\n"
            fh.write(chunk)
            size += len(chunk)
    return size


def throughput(tmp: Path, embedder: str) -> dict:
    path = tmp / "gen_1m.log"
    generate_log(path, 1_000_000)
    clf = make_classifier(embedder)
    t0 = time.perf_counter()
    clf.classify_batch(["warm up the model"])  # the model's load is reported apart, not as classification
    load_s = time.perf_counter() - t0
    tracker = MetricTracker(TrackerSettings(use_llm=False), classifier=clf)
    t0 = time.perf_counter()
    counts = tracker.classify_file(path)
    dt = time.perf_counter() - t0
    n = sum(counts.values())
    path.unlink()
    # `track` on a log of millions of short lines with no progress at all (every window read):
    # session 9's break test found 115k lines/s here; each line is looked at, repeats cheaply
    short = tmp / "short_3m.log"
    short.write_text("ok\n" * 3_000_000)
    t0 = time.perf_counter()
    MetricTracker(TrackerSettings(use_llm=False), classifier=clf).track_file(short)
    short_s = time.perf_counter() - t0
    short.unlink()
    return {
        "short_lines_track_lines_per_s": 3_000_000 / short_s,
        "lines": n,
        "seconds": dt,
        "lines_per_s": n / dt,
        "model_load_s": load_s,
        "lines_per_s_including_model_load": n / (dt + load_s),
        "counts": {k.value: v for k, v in counts.items()},
        "templates": len(clf.decisions),
        "embedded_templates": clf.n_embedded,
    }


_MEM_CHILD = r"""
import sys, time, json
def hwm():  # peak RSS of THIS process image (ru_maxrss would include the parent's at fork)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
sys.path.insert(0, {src!r})
from schedmate.core.settings import TrackerSettings
from schedmate.tracker import LineClassifier, MetricTracker
base = hwm()
tr = MetricTracker(TrackerSettings(use_llm=False), classifier=LineClassifier(embedder=None))
t0 = time.perf_counter(); res = tr.track_file({path!r}); t_track = time.perf_counter() - t0
t0 = time.perf_counter(); counts = tr.classify_file({path!r}) if {full} else None; t_cls = time.perf_counter() - t0
peak = hwm()
print(json.dumps({{"baseline_rss_mb": base, "peak_rss_mb": peak, "track_s": t_track,
                  "classify_s": t_cls if {full} else None,
                  "classified_lines": sum(counts.values()) if counts else None, "step": res.step}}))
"""


def big_memory(tmp: Path, gb: float, full: bool) -> dict:
    path = tmp / "big.log"
    block = tmp / "block.log"
    generate_log(block, 200_000, seed=1)
    data = block.read_bytes()
    block.unlink()
    target = int(gb * 1024**3)
    written = 0
    with path.open("wb") as fh:
        while written < target:
            fh.write(data)
            written += len(data)
        fh.write(b"x" * (20 * 1024 * 1024) + b"\n")  # one 20 MB line without a break
        fh.write(data[-200_000:])
    code = _MEM_CHILD.format(src=str(ROOT / "src"), path=str(path), full=full)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    path.unlink()
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    res = json.loads(out.stdout)
    res["file_gb"] = written / 1024**3
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--embedder", default="minilm", choices=["minilm", "hash", "none"])
    ap.add_argument("--big-gb", type=float, default=5.0)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true", help="accuracy and latency only")
    ap.add_argument(
        "--big-full-classify", action="store_true", help="also classify every line of the big log"
    )
    ap.add_argument("--json-out", type=Path, default=ROOT / "bench" / "results" / "tracker.json")
    ap.add_argument(
        "--llm-url",
        help="also score with the LLM fallback on this OpenAI-compatible server (side by side with no LLM)",
    )
    args = ap.parse_args()
    if not (args.data / "labels.jsonl").is_file():
        print(
            f"data not found: {args.data}/labels.jsonl (the shared data sits beside the checkout)",
            file=sys.stderr,
        )
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="schedmate-bench-"))
    acc = accuracy(args.data, args.embedder)
    acc_llm = accuracy(args.data, args.embedder, args.llm_url) if args.llm_url else None
    thr = None if args.skip_throughput else throughput(tmp, args.embedder)
    mem = None if args.skip_big else big_memory(tmp, args.big_gb, args.big_full_classify)
    report = {
        "machine": f"{platform.node()} {os.cpu_count()} cpu",
        "date": str(date.today()),
        "embedder": args.embedder,
        "accuracy": acc,
        "accuracy_with_llm": acc_llm,
        "throughput": thr,
        "big_log": mem,
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(report, indent=2, default=str))

    def mark(ok: bool) -> str:
        return "PASS" if ok else "FAIL"

    print(
        f"\nMetric Tracker benchmark  ({report['date']}, {report['machine']}, embedder={args.embedder}, no LLM)"
    )
    print(f"{'metric':44} {'measured':>14} {'target':>12}  result")
    pf = acc["per_field"]
    lines = [
        (
            "success rate (all fields of a log right)",
            f"{acc['success_rate']:.1%}",
            ">= 90%",
            acc["success_rate"] >= 0.9,
        ),
        *[(f"  field accuracy: {f}", f"{pf[f]:.1%}", ">= 95%", pf[f] >= 0.95) for f in FIELDS],
        (
            "latency per log, median (cold templates)",
            f"{acc['latency_cold_median_s']:.3f} s",
            "<= 0.1 s",
            acc["latency_cold_median_s"] <= 0.1,
        ),
        (
            "latency per log, p95 (cold templates)",
            f"{acc['latency_cold_p95_s']:.3f} s",
            "<= 0.5 s",
            acc["latency_cold_p95_s"] <= 0.5,
        ),
        ("latency per log, median (warm templates)", f"{acc['latency_warm_median_s']:.3f} s", "", True),
    ]
    if thr is not None:
        lines.append(
            (
                "classification, 1M-line log",
                f"{thr['lines_per_s']:,.0f} l/s",
                ">= 200,000",
                thr["lines_per_s"] >= 200_000,
            )
        )
        lines.append(
            (
                f"  with the model's load ({thr['model_load_s']:.1f} s)",
                f"{thr['lines_per_s_including_model_load']:,.0f} l/s",
                "",
                True,
            )
        )
        lines.append(
            (
                "track, 3M short lines without progress",
                f"{thr['short_lines_track_lines_per_s']:,.0f} l/s",
                ">= 200,000",
                thr["short_lines_track_lines_per_s"] >= 200_000,
            )
        )
    if mem and "error" not in mem:
        lines.append(
            (
                f"peak RSS, {mem['file_gb']:.1f} GB log (process)",
                f"{mem['peak_rss_mb']:.0f} MB",
                "<= 300 MB",
                mem["peak_rss_mb"] <= 300,
            )
        )
        lines.append((f"  track time on {mem['file_gb']:.1f} GB log", f"{mem['track_s']:.2f} s", "", True))
        if mem.get("classify_s"):
            lines.append(
                (f"  classify all lines of {mem['file_gb']:.1f} GB", f"{mem['classify_s']:.0f} s", "", True)
            )
    elif mem:
        lines.append(("big log", mem["error"], "", False))
    if acc_llm is not None:
        lines.append(
            (
                f"with LLM fallback ({acc_llm['llm_calls']} calls): success",
                f"{acc_llm['success_rate']:.1%}",
                "",
                True,
            )
        )
        lines += [(f"  with LLM: {f}", f"{acc_llm['per_field'][f]:.1%}", "", True) for f in FIELDS]
    for name, val, tgt, ok in lines:
        print(f"{name:44} {val:>14} {tgt:>12}  {mark(ok) if tgt else ''}")
    if acc["total_steps_acc_where_labelled"] is not None:
        print(f"(info) total_steps right where labelled: {acc['total_steps_acc_where_labelled']:.1%}")
    misses = [r for r in acc["rows"] if not r["ok"]]
    if misses:
        print(f"\nMisses ({len(misses)}):")
        for r in misses:
            bad = [f for f, ok in r["fields"].items() if not ok]
            print(f"  {r['file']} [{r['framework'][:40]}]")
            for f in bad:
                print(f"      {f}: got {r['got'][f]!r}  want {r['want'][f]!r}")
    print(f"\nJSON: {args.json_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

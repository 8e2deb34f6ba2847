"""Merging samples into an answer; ETA; slowdown and stall events; LLM field mappings."""

from __future__ import annotations

from typing import Any

import pytest
from contracts import TRACK_JSON_KEYS
from pydantic import BaseModel

from schedmate.core.errors import BackendUnavailable
from schedmate.core.settings import TrackerSettings
from schedmate.core.types import LineKind, ProgressSample
from schedmate.tracker import LineClassifier, MetricTracker
from schedmate.tracker.mapper import FieldMapper, MappingReply, _reply_model
from schedmate.tracker.state import EventDetector, TableReader, sample_from_line, summarize
from schedmate.tracker.templates import mask_line, numeric_tokens


def run(lines: list[str]):
    samples = []
    table = TableReader()
    for no, text in enumerate(lines, 1):
        row = table.row(no, text)
        if row is not None:
            samples.append((row, False))
            continue
        got = sample_from_line(no, text)
        if not got:
            table.offer_header(text)
        samples.extend((s, bar) for s, bar, _ in got)
    return summarize("x.log", samples)


def test_bar_and_loss_dict_are_merged() -> None:
    r = run(
        [
            " 10%|#         | 10/100 [00:20<03:00,  2.00s/it]",
            "{'loss': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}",
            " 11%|#         | 11/100 [00:22<02:58,  2.00s/it]",
        ]
    )
    assert (r.step, r.total_steps, r.loss, r.step_time_s) == (11, 100, 1.5, 2.0)
    assert r.progress == pytest.approx(0.11)
    assert r.eta_s == pytest.approx(89 * 2.0)


def test_metrics_line_beats_bar_at_same_step() -> None:
    r = run(
        [
            "step:5 - actor/loss:0.25 - timing_s/step:10.0",
            "Training Progress:   1%|          | 5/500 [00:50<2:00:00, 14.0s/it]",
        ]
    )
    assert r.step == 5 and r.total_steps == 500
    assert r.loss == 0.25 and r.step_time_s == 10.0


def test_short_inner_loop_after_main_loop_does_not_replace_it() -> None:
    main = [f"step:{i}/2000 train_loss:{3 - i / 1000:.3f} step_avg:100.0ms" for i in range(100, 1100, 100)]
    unlabeled_eval = [f" {p}%|##| {i}/50 [00:01<00:01, 20.0it/s]" for p, i in ((20, 10), (40, 20), (60, 30))]
    r = run(main + unlabeled_eval)
    assert r.step == 1000 and r.total_steps == 2000
    assert r.step_time_s == pytest.approx(0.1)


def test_nan_loss_is_reported_as_null() -> None:
    r = run(["Step 10/100; xent: 2.0", "Step 20/100; xent: nan"])
    assert r.step == 20 and r.loss is None and r.loss_is_nan
    assert r.to_json_dict()["loss"] is None


def test_table_rows_use_the_header() -> None:
    r = run(["step\tloss", "10\t0.5", "20\t0.25"])
    assert r.step == 20 and r.loss == 0.25


def test_no_progress() -> None:
    r = run(["Traceback (most recent call last):", "ValueError: nope"])
    assert not r.has_progress and r.step is None
    assert set(r.to_json_dict()) == TRACK_JSON_KEYS


def _s(step: int, t: float | None, ts: float | None = None) -> ProgressSample:
    return ProgressSample(line_no=step, text="", step=step, step_time_s=t, timestamp=ts)


def test_slowdown_fires_once_and_recovers() -> None:
    det = EventDetector(factor=1.3, k=5)
    events = []
    for i in range(40):
        events += det.observe(_s(i, 0.5))
    for i in range(40, 60):
        events += det.observe(_s(i, 0.9))
    kinds = [e.kind for e in events]
    assert kinds == ["slowdown"]
    assert events[0].ratio == pytest.approx(1.8, rel=0.05)
    for i in range(60, 80):
        events += det.observe(_s(i, 0.5))
    assert [e.kind for e in events] == ["slowdown", "recovered"]


def test_noise_does_not_fire() -> None:
    det = EventDetector(factor=1.3, k=5)
    events = []
    for i in range(200):
        events += det.observe(_s(i, 0.5 + (0.05 if i % 7 == 0 else 0.0)))
    assert events == []


def test_stall_uses_usual_gap() -> None:
    det = EventDetector(stall_factor=10, stall_min_s=60)
    for i in range(10):
        det.observe(_s(i, None), now=1000.0 + 10 * i)
    assert det.check_stall(now=1090 + 50) is None
    ev = det.check_stall(now=1090 + 500)
    assert ev is not None and ev.kind == "stall"
    assert det.check_stall(now=1090 + 600) is None  # reported once


class FakeLLM:
    name = "fake"

    def __init__(self, replies: list[dict[str, Any] | Exception]) -> None:
        self.replies = replies
        self.calls = 0
        self.available = True

    def complete_json(self, messages: list[dict[str, str]], schema_model: type[BaseModel]) -> BaseModel:
        self.calls += 1
        r = self.replies.pop(0)
        if isinstance(r, Exception):
            raise r
        return schema_model.model_validate(r)


def test_mapper_asks_once_per_template_and_reuses_mapping() -> None:
    roles = [{"mark": 0, "role": "step"}, {"mark": 1, "role": "loss"}, {"mark": 2, "role": "step_time"}]
    llm = FakeLLM([{"roles": roles, "step_time_unit": "ms"}])
    mapper = FieldMapper(llm)
    m = mapper.mapping_for("tmpl", "<<12>> ~0.75~ [310]")
    assert m is not None
    s = m.apply(1, "<<13>> ~0.5~ [320]")
    assert s is not None and (s.step, s.loss, s.step_time_s) == (13, 0.5, pytest.approx(0.32))
    assert mapper.mapping_for("tmpl", "<<14>> ~0.4~ [300]") is m
    assert llm.calls == 1


def test_mapper_rejects_numbers_not_in_the_line() -> None:
    mapper = FieldMapper(FakeLLM([{"roles": [{"mark": 7, "role": "step"}]}]))
    assert mapper.mapping_for("t", "a 1 b 2") is None


def test_mapper_outage_is_not_cached() -> None:
    llm = FakeLLM([BackendUnavailable("down"), {"roles": [{"mark": 0, "role": "step"}]}])
    mapper = FieldMapper(llm)
    assert mapper.mapping_for("t", "x 1") is None
    assert mapper.mapping_for("t", "x 1") is not None


def test_mapper_cache_file_round_trip(tmp_path) -> None:
    f = tmp_path / "maps.json"
    FieldMapper(FakeLLM([{"roles": [{"mark": 0, "role": "step"}]}]), cache_file=f).mapping_for("t", "x 1")
    again = FieldMapper(None, cache_file=f)
    assert again.mapping_for("t", "x 5") is not None
    f.write_text("{not json")
    assert FieldMapper(None, cache_file=f).mappings == {}


class RecordingLLM(FakeLLM):
    def __init__(self, replies: list[Any]) -> None:
        super().__init__(replies)
        self.prompts: list[list[dict[str, str]]] = []

    def complete_json(self, messages: list[dict[str, str]], schema_model: type[BaseModel]) -> BaseModel:
        self.prompts.append(messages)
        return super().complete_json(messages, schema_model)


def test_mapper_shows_marked_numbers_and_takes_roles() -> None:
    roles = [{"mark": 0, "role": "step"}, {"mark": 9, "role": "loss"}, {"mark": 2, "role": "step_time"}]
    llm = RecordingLLM([{"roles": roles, "step_time_unit": "ms"}])
    mapper = FieldMapper(llm)
    m = mapper.mapping_for("tmpl", "<<12>> ~0.75~ [310]")
    assert "[#0 12]" in llm.prompts[0][-1]["content"] and "[#2 310]" in llm.prompts[0][-1]["content"]
    assert m is not None and m.indices == {"step": 0, "step_time": 2}  # mark 9 does not exist
    s = m.apply(1, "<<13>> ~0.5~ [320]")
    assert s is not None and (s.step, s.loss, s.step_time_s) == (13, None, pytest.approx(0.32))


def test_mapper_reply_has_at_most_one_role_per_mark() -> None:
    reply_model = _reply_model(len(numeric_tokens("a 1 b 2")))  # what the server is asked for
    with pytest.raises(ValueError):
        reply_model.model_validate({"roles": [{"mark": i % 2, "role": "other"} for i in range(3)]})


def test_mapper_ignores_marks_not_in_the_line_and_non_fields() -> None:
    mapper = FieldMapper(FakeLLM([{"roles": [{"mark": 5, "role": "step"}, {"mark": 1, "role": "other"}]}]))
    assert mapper.mapping_for("t", "a 1 b 2") is None


def test_mapper_reply_with_an_unknown_role_is_invalid() -> None:
    with pytest.raises(ValueError):
        MappingReply.model_validate({"roles": [{"mark": 0, "role": "rm -rf /"}]})


def _odd_tracker(llm: FakeLLM) -> MetricTracker:

    clf = LineClassifier(embedder=None)
    clf.decisions[mask_line("<<12>> ~0.75~ [310]")] = LineKind.PROGRESS  # as if the embedder had said so
    return MetricTracker(TrackerSettings(use_llm=True), classifier=clf, mapper=FieldMapper(llm))


def test_the_llm_reads_a_log_the_rules_cannot() -> None:
    roles = [{"mark": 0, "role": "step"}, {"mark": 1, "role": "loss"}]
    llm = FakeLLM([{"roles": roles}])
    r = _odd_tracker(llm).track_lines(["<<12>> ~0.75~ [310]", "<<13>> ~0.70~ [305]"])
    assert (r.step, r.loss, llm.calls) == (13, 0.70, 1)


def test_the_llm_is_not_asked_where_the_rules_read_progress() -> None:
    llm = FakeLLM([{"roles": [{"mark": 0, "role": "step"}, {"mark": 1, "role": "loss"}]}])
    r = _odd_tracker(llm).track_lines(["step 5/10 loss 1.5", "<<12>> ~0.75~ [310]"])
    assert (r.step, r.loss, llm.calls) == (5, 1.5, 0)


def test_a_mapped_zero_step_time_is_no_step_time(tmp_path) -> None:
    llm = FakeLLM([{"roles": [{"mark": 0, "role": "step"}, {"mark": 1, "role": "step_time"}]}])
    p = tmp_path / "odd.log"
    p.write_text("<<12>> ~0.75~ [310]\n<<13>> ~0~ [305]\n")
    r = _odd_tracker(llm).track_file(p, now=p.stat().st_mtime + 10_000)  # an old log: the stall check runs
    assert r.step == 13 and r.step_time_s is None


def test_a_large_slowdown_reports_the_new_step_time() -> None:
    det = EventDetector()
    events = []
    for i in range(50):
        events += det.observe(_s(i, 0.5))
    for i in range(50, 70):
        events += det.observe(_s(i, 5.0))
    assert [e.kind for e in events] == ["slowdown"]
    assert events[0].ratio == pytest.approx(10.0) and "5s is 10.00x" in events[0].message

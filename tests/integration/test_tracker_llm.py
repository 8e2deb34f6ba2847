"""The tracker's LLM fallback against a REAL OpenAI-compatible server (llama.cpp, SmolLM2).

SmolLM2-135M is too small to be right about metrics; these tests check the real path:
one call per unparsed progress template, replies validated against the line, the mapping
reused for later lines, and an answer for the log whatever the model says.
"""

from __future__ import annotations

import pytest

from schedmate.backends.llm import OpenAIBackend
from schedmate.core.settings import LLMSettings, TrackerSettings
from schedmate.core.types import LineKind
from schedmate.tracker import FieldMapper, LineClassifier, MetricTracker
from schedmate.tracker.templates import mask_line, numeric_tokens

pytestmark = pytest.mark.integration

ODD = ["<<< 12 >>> ~ 0.75 ~ [310]", "<<< 13 >>> ~ 0.70 ~ [305]", "<<< 14 >>> ~ 0.66 ~ [300]"]


def test_one_llm_call_per_template_with_real_server(llama_server: str) -> None:
    llm = OpenAIBackend(LLMSettings(base_url=llama_server, timeout_s=60, max_retries=2))
    mapper = FieldMapper(llm)
    clf = LineClassifier(embedder=None)
    clf.decisions[mask_line(ODD[0])] = LineKind.PROGRESS  # as if the embedder had said so
    tracker = MetricTracker(TrackerSettings(use_llm=True), classifier=clf, mapper=mapper)
    result = tracker.track_lines(ODD)
    assert mapper.calls == 1  # three lines, one template, one question
    mapping = mapper.mappings[mask_line(ODD[0])]
    if mapping is not None:  # a validated mapping only points at numbers of the line
        assert all(0 <= i < len(numeric_tokens(ODD[0])) for i in mapping.indices.values())
        assert result.has_progress
    tracker.track_lines(ODD)
    assert mapper.calls == 1  # cached
    assert set(result.to_json_dict()) >= {"step", "loss", "step_time_s"}


def test_llm_outage_degrades_to_rules(closed_port_url: str) -> None:
    llm = OpenAIBackend(LLMSettings(base_url=closed_port_url, timeout_s=2, breaker_failures=1))
    mapper = FieldMapper(llm)
    clf = LineClassifier(embedder=None)
    clf.decisions[mask_line(ODD[0])] = LineKind.PROGRESS
    tracker = MetricTracker(TrackerSettings(use_llm=True), classifier=clf, mapper=mapper)
    # the rules read progress: the LLM is not asked (it is for logs the rules cannot read)
    r = tracker.track_lines(["step 5/10 loss 1.5 time 0.2s", *ODD])
    assert (r.step, r.total_steps, r.loss) == (5, 10, 1.5)
    assert llm.available
    # the rules read nothing: the LLM is asked, fails, and the answer is the rules' (none)
    r = tracker.track_lines(["starting the job", *ODD])
    assert not r.has_progress and r.error is None
    assert not llm.available  # breaker open: no further calls

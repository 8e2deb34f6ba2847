"""Real embedders: all-MiniLM-L6-v2 from its PyPI package, and /v1/embeddings of the llama server."""

from __future__ import annotations

import time

import numpy as np
import pytest

from schedmate.backends.embedder import CachedEmbedder, MiniLMEmbedder, OpenAIEmbedder, create_embedder
from schedmate.core.errors import BackendUnavailable
from schedmate.core.settings import EmbedderSettings

pytestmark = pytest.mark.integration

TEXTS = ["loss 0.5 step 100", "iter 200 loss 0.3", "CUDA error: out of memory"]


def test_minilm_dim_and_normalisation(minilm: MiniLMEmbedder) -> None:
    out = minilm.embed(TEXTS)
    assert minilm.dim == 384
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


def test_minilm_progress_lines_are_closer_to_each_other_than_to_an_error(minilm: MiniLMEmbedder) -> None:
    v = minilm.embed(TEXTS)
    assert v[0] @ v[1] > v[0] @ v[2]
    assert v[0] @ v[1] > v[1] @ v[2]


def test_minilm_batches_agree_with_single_calls(minilm: MiniLMEmbedder) -> None:
    batched = minilm.embed(TEXTS)
    single = np.vstack([minilm.embed([t]) for t in TEXTS])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_create_embedder_minilm_caches(minilm: MiniLMEmbedder) -> None:
    emb = create_embedder(EmbedderSettings(backend="minilm"))
    assert isinstance(emb, CachedEmbedder)
    emb.inner = minilm  # reuse the session's loaded model
    first = emb.embed(TEXTS)
    t0 = time.monotonic()
    again = emb.embed(list(reversed(TEXTS)))
    assert time.monotonic() - t0 < 0.05  # served from the cache
    np.testing.assert_array_equal(again, first[::-1])
    assert emb.hits == 3 and emb.misses == 3


def test_openai_embedder_against_llama_server(llama_server: str) -> None:
    emb = OpenAIEmbedder(EmbedderSettings(backend="openai", base_url=llama_server, timeout_s=60))
    out = emb.embed(TEXTS)
    assert out.shape == (3, emb.dim) and emb.dim == 576  # SmolLM2-135M hidden size
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    # Per-token replies are mean-pooled one text per request, so order and batching do not matter.
    np.testing.assert_allclose(emb.embed([TEXTS[2], TEXTS[0]]), out[[2, 0]], atol=1e-5)
    assert out[0] @ out[1] > out[0] @ out[2]


def test_openai_embedder_dead_server_is_one_line_backend_error() -> None:
    emb = OpenAIEmbedder(EmbedderSettings(backend="openai", base_url="http://127.0.0.1:9/v1", timeout_s=2))
    with pytest.raises(BackendUnavailable, match="cannot connect") as info:
        emb.embed(["x"])
    assert "\n" not in str(info.value)

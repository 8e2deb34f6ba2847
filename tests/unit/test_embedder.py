"""Embedders: the hashing fake, the LRU cache in front of any embedder, the factory."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from schedmate.backends.embedder import (
    EMBEDDERS,
    CachedEmbedder,
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    create_embedder,
    normalize_rows,
)
from schedmate.core.errors import BackendError, ConfigError
from schedmate.core.settings import EmbedderSettings


class CountingEmbedder:
    """Wraps HashEmbedder and records every batch it is asked to embed."""

    name = "counting"
    dim = 16

    def __init__(self) -> None:
        self.inner = HashEmbedder(dim=16)
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return self.inner.embed(texts)

    @property
    def seen(self) -> list[str]:
        return [t for b in self.batches for t in b]


def test_hash_embedder_shape_dtype_and_unit_rows() -> None:
    emb = HashEmbedder(dim=64)
    out = emb.embed(["loss 0.5 step 100", "CUDA error: out of memory", "x"])
    assert out.shape == (3, 64)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    assert emb.dim == 64 and emb.name == "hash"


def test_hash_embedder_is_deterministic_across_instances() -> None:
    a = HashEmbedder().embed(["iter 200 loss 0.3", "NCCL timeout"])
    b = HashEmbedder().embed(["iter 200 loss 0.3", "NCCL timeout"])
    np.testing.assert_array_equal(a, b)


def test_hash_embedder_similar_texts_are_closer() -> None:
    v = HashEmbedder().embed(["step 100 loss 0.5", "step 200 loss 0.3", "CUDA error: out of memory"])
    assert v[0] @ v[1] > v[0] @ v[2]


def test_hash_embedder_empty_input_and_empty_text() -> None:
    emb = HashEmbedder(dim=8)
    assert emb.embed([]).shape == (0, 8)
    row = emb.embed([""])
    assert row.shape == (1, 8) and not row.any()


def test_normalize_rows_keeps_zero_rows() -> None:
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert out.dtype == np.float32


def test_cached_embedder_only_embeds_unseen_texts() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_size=100)
    first = cached.embed(["a b", "c d"])
    assert inner.seen == ["a b", "c d"]
    second = cached.embed(["c d", "e f", "a b"])
    assert inner.batches[-1] == ["e f"]
    assert len(inner.batches) == 2
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    cached.embed(["a b", "e f"])
    assert len(inner.batches) == 2  # all cached: the inner embedder is not called
    assert cached.hits == 4 and cached.misses == 3


def test_cached_embedder_keeps_order_and_duplicates() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_size=100)
    texts = ["x", "y", "x", "z", "y", "x"]
    out = cached.embed(texts)
    assert inner.seen == ["x", "y", "z"]  # each unique text sent once, in first-seen order
    assert out.shape == (6, 16)
    direct = HashEmbedder(dim=16).embed(texts)
    np.testing.assert_allclose(out, direct)


def test_cached_embedder_batches_misses() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_size=100, batch_size=2)
    cached.embed(["a", "b", "c", "a", "d", "e"])
    assert inner.batches == [["a", "b"], ["c", "d"], ["e"]]


def test_cached_embedder_evicts_least_recently_used() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_size=2)
    cached.embed(["a", "b"])
    cached.embed(["a"])  # a is now most recent
    cached.embed(["c"])  # evicts b
    assert len(cached) == 2
    cached.embed(["a", "c"])
    assert inner.seen == ["a", "b", "c"]
    cached.embed(["b"])
    assert inner.seen[-1] == "b"


def test_cached_embedder_larger_call_than_cache_is_still_complete() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_size=1, batch_size=2)
    out = cached.embed(["a", "b", "c", "a"])
    np.testing.assert_allclose(out, HashEmbedder(dim=16).embed(["a", "b", "c", "a"]))
    assert len(cached) == 1


def test_cached_rows_are_not_shared_with_callers() -> None:
    cached = CachedEmbedder(CountingEmbedder(), cache_size=10)
    out = cached.embed(["a"])
    out[0, :] = 0
    assert cached.embed(["a"]).any()


def test_cache_size_zero_still_dedups_within_a_call() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache_size=0)
    cached.embed(["a", "a"])
    cached.embed(["a"])
    assert inner.seen == ["a", "a"]  # once per call, nothing kept between calls
    assert len(cached) == 0


def test_cached_embedder_empty_input() -> None:
    assert CachedEmbedder(HashEmbedder(dim=4)).embed([]).shape == (0, 4)


def test_cached_embedder_rejects_wrong_inner_shape() -> None:
    class Broken:
        name, dim = "broken", 2

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.zeros((1, 2), dtype=np.float32)

    with pytest.raises(BackendError, match="broken"):
        CachedEmbedder(Broken()).embed(["a", "b"])


def test_create_embedder_hash_is_cached_and_satisfies_protocol() -> None:
    emb = create_embedder(EmbedderSettings(backend="hash", cache_size=10, batch_size=3))
    assert isinstance(emb, CachedEmbedder)
    assert isinstance(emb, Embedder) and isinstance(emb.inner, Embedder)
    assert emb.name == "hash" and emb.dim == 256
    assert emb.cache_size == 10 and emb.batch_size == 3
    assert emb.embed(["a"]).shape == (1, 256)


def test_create_embedder_none_and_registry_names() -> None:
    with pytest.raises(ConfigError, match="'none'"):
        create_embedder(EmbedderSettings(backend="none"))
    assert EMBEDDERS.names() == ["hash", "minilm", "openai"]


def test_minilm_is_lazy_and_validates_model_name() -> None:
    emb = create_embedder(EmbedderSettings(backend="minilm"))
    assert emb.dim == 384  # known without loading torch
    assert isinstance(emb, CachedEmbedder) and isinstance(emb.inner, MiniLMEmbedder)
    assert emb.inner._model is None
    with pytest.raises(ConfigError, match="embedder.model"):
        MiniLMEmbedder(EmbedderSettings(model="bge-large"))


def test_openai_embedder_requires_base_url() -> None:
    with pytest.raises(ConfigError, match="embedder.base_url"):
        OpenAIEmbedder(EmbedderSettings(backend="openai"))


class FakeServerEmbedder(OpenAIEmbedder):
    """OpenAIEmbedder with the HTTP call replaced: per-token vectors, like llama-cpp-python."""

    def __init__(self, per_token: bool) -> None:
        super().__init__(EmbedderSettings(backend="openai", base_url="http://fake/v1", batch_size=8))
        self.per_token = per_token
        self.requests: list[list[str]] = []

    def _request(self, batch: list[str]) -> list[object]:
        self.requests.append(batch)
        out: list[object] = []
        for i, text in enumerate(batch):
            tokens = [
                [float(len(text)), 1.0, float(i if self.per_token else 0)],
                [float(len(text)), 3.0, 0.0],
            ]
            out.append(tokens if self.per_token else tokens[0])
        return out


def test_openai_embedder_pooled_vectors_are_normalised() -> None:
    emb = FakeServerEmbedder(per_token=False)
    out = emb.embed(["ab", "abcd", "x"])
    assert out.shape == (3, 3) and emb.dim == 3
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    assert emb.requests == [["ab", "abcd", "x"]]


def test_openai_embedder_mean_pools_per_token_replies_one_text_per_request() -> None:
    emb = FakeServerEmbedder(per_token=True)
    out = emb.embed(["ab", "abcd"])
    # the batched reply is distrusted (llama-cpp-python offsets later sequences wrongly)
    assert emb.requests == [["ab", "abcd"], ["ab"], ["abcd"]]
    expected = normalize_rows(np.array([[2.0, 2.0, 0.0], [4.0, 2.0, 0.0]]))
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    emb.embed(["p", "q"])
    assert emb.requests[-2:] == [["p"], ["q"]]

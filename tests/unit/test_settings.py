"""Settings layering: defaults < file < environment < overrides; one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedmate.core.errors import ConfigError
from schedmate.core.settings import load_settings
from schedmate.registry import Registry


def test_layers(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text('[llm]\nbase_url = "http://file/v1"\nmodel = "m-file"\n[tracker]\nstall_factor = 5\n')
    env = {"SCHEDMATE_LLM__MODEL": "m-env", "SCHEDMATE_TRACKER__STALL_FACTOR": "7"}
    s = load_settings(cfg, {"tracker": {"stall_factor": 9}}, environ=env)
    assert s.llm.base_url == "http://file/v1" and s.llm.enabled
    assert s.llm.model == "m-env"
    assert s.tracker.stall_factor == 9
    assert not load_settings(environ={}).llm.enabled


def test_config_from_env_var(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text('[embedder]\nbackend = "hash"\n')
    assert load_settings(environ={"SCHEDMATE_CONFIG": str(cfg)}).embedder.backend == "hash"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("[tracker\n", "invalid TOML"),
        ("[tracker]\nnope = 1\n", "tracker.nope"),
        ("[embedder]\nbackend='x'\n", "embedder.backend"),
    ],
)
def test_bad_files(tmp_path: Path, content: str, needle: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(content)
    with pytest.raises(ConfigError) as ei:
        load_settings(cfg, environ={})
    assert needle in str(ei.value) and "\n" not in str(ei.value)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings("/nonexistent/x.toml", environ={})


def test_registry_lists_valid_names() -> None:
    reg: Registry[int] = Registry("widget")
    reg.register("a")(lambda: 1)
    assert reg.create("a") == 1
    with pytest.raises(ConfigError, match="valid: a"):
        reg.create("b")


def test_unrelated_env_vars_are_not_settings() -> None:
    """Variables under the prefix that name no setting (used by tests, wrappers) are ignored."""
    s = load_settings(environ={"SCHEDMATE_TEST_PG_URL": "postgresql://x@y/z", "SCHEDMATE_FOO": "1"})
    assert s.embedder.backend == "minilm"


def test_typo_inside_a_section_is_still_an_error() -> None:
    with pytest.raises(ConfigError, match="llm.base_ulr"):
        load_settings(environ={"SCHEDMATE_LLM__BASE_ULR": "http://x"})


def test_bad_value_names_the_layer_that_gave_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as ei:
        load_settings(overrides={"embedder": {"backend": "x"}}, environ={})
    assert "command line" in str(ei.value) and "SCHEDMATE_" not in str(ei.value)
    with pytest.raises(ConfigError) as ei:
        load_settings(environ={"SCHEDMATE_EMBEDDER__BACKEND": "x"})
    assert "environment SCHEDMATE_EMBEDDER__BACKEND" in str(ei.value)
    cfg = tmp_path / "c.toml"
    cfg.write_text("[embedder]\nbackend = 'x'\n")
    with pytest.raises(ConfigError) as ei:
        load_settings(cfg, environ={"SCHEDMATE_LLM__MODEL": "m"})
    assert str(cfg) in str(ei.value) and "SCHEDMATE_" not in str(ei.value)


@pytest.mark.parametrize("kind", ["fifo", "dir", "binary", "huge"])
def test_config_file_that_is_not_a_small_text_file(tmp_path: Path, kind: str) -> None:
    import os

    cfg = tmp_path / "c.toml"
    if kind == "fifo":
        os.mkfifo(cfg)
    elif kind == "dir":
        cfg.mkdir()
    elif kind == "binary":
        cfg.write_bytes(b"\xff\xfe\x00[llm]\x00\x81")
    else:
        cfg.write_bytes(b"# x\n" * (2 * 1024 * 1024))
    with pytest.raises(ConfigError) as ei:
        load_settings(cfg, environ={})
    assert str(cfg) in str(ei.value) and "\n" not in str(ei.value)

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

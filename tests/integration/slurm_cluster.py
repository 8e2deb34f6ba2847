"""Finding the real test Slurm (.ci/provision_slurm.sh) for the integration tests that need it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from schedmate.core.settings import SlurmSettings
from schedmate.integrations.slurm import SlurmBackend

PROVISIONED = Path("/var/lib/schedmate-ci/slurm/slurm.conf")
HOST = os.uname().nodename.split(".")[0]


def find_conf() -> str | None:
    """SLURM_CONF, else the provisioned test cluster's config, when the file exists."""
    conf = os.environ.get("SLURM_CONF") or (str(PROVISIONED) if PROVISIONED.exists() else None)
    if conf is None or not Path(conf).exists():
        return None
    return conf


def require_conf() -> str:
    """The config of a Slurm that answers; without one the test fails under CI=true, else skips."""
    found = find_conf()
    problem = None
    if found is None:
        problem = "no Slurm: set SLURM_CONF or run `make slurm` (.ci/provision_slurm.sh)"
    else:
        try:
            SlurmBackend(SlurmSettings(conf=found, timeout_s=10)).snapshot()
        except Exception as exc:  # noqa: BLE001  (any reason the cluster cannot be used)
            problem = f"Slurm at {found} does not answer: {exc}"
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(problem + " (CI=true: the Slurm tests must run)")
        pytest.skip(problem)
    assert found is not None
    return found

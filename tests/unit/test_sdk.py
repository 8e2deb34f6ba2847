"""The SDK package: its lazy exports resolve, and importing it does not import every capability."""

from __future__ import annotations

import subprocess
import sys

import schedmate.sdk as sdk


def test_every_export_resolves() -> None:
    assert set(sdk.__all__) == set(sdk._EXPORTS)
    for name in sdk.__all__:
        assert callable(getattr(sdk, name))


def test_importing_the_sdk_and_cli_is_lazy() -> None:
    code = (
        "import sys, schedmate.sdk, schedmate.cli; "
        "heavy = [m for m in ('torch', 'sentence_transformers', 'schedmate.sim.engine', 'usearch') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""

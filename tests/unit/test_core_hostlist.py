"""Slurm hostlist expressions: expansion, compression, bounds and hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedmate.core.errors import InputError
from schedmate.core.hostlist import compress_hostlist, expand_hostlist, is_hostname


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("", []),
        ("(null)", []),
        ("node7", ["node7"]),
        ("gpu-[01-03,07]", ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]),
        ("a[1-2],b5", ["a1", "a2", "b5"]),
        ("rack[1-2]-n[8-9]", ["rack1-n8", "rack1-n9", "rack2-n8", "rack2-n9"]),
        ("x[009-011]", ["x009", "x010", "x011"]),
        ("n1,n1,n2", ["n1", "n2"]),
    ],
)
def test_expand(expr: str, names: list[str]) -> None:
    assert expand_hostlist(expr) == names


@pytest.mark.parametrize(
    "expr", ["n[0-99999999]", "n[1-", "n]", "a b", "n[3-1]", "n[x-y]", "n[1-2]" * 0 + "$(rm)"]
)
def test_bad_expressions_are_one_line_input_errors(expr: str) -> None:
    with pytest.raises(InputError) as ei:
        expand_hostlist(expr)
    assert "\n" not in str(ei.value)


def test_hostname_check() -> None:
    assert is_hostname("gpu-06") and is_hostname("node.cluster.local")
    assert not is_hostname("failure on") and not is_hostname("-x") and not is_hostname("a" * 64)


@given(
    st.lists(st.tuples(st.sampled_from(["gpu-", "n", "cpu"]), st.integers(0, 300)), min_size=1, max_size=40)
)
def test_compress_round_trips(pairs: list[tuple[str, int]]) -> None:
    names = list(dict.fromkeys(f"{p}{i:03d}" for p, i in pairs))
    assert sorted(expand_hostlist(compress_hostlist(names))) == sorted(names)

"""The bundled failure-signature knowledge base: well-formed, self-consistent, sanely ordered."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from schedmate.failure.kb import CATEGORIES, RECOVERIES, KnowledgeBase

KB_PATH = Path(__file__).resolve().parents[2] / "src" / "schedmate" / "data" / "failure_signatures.yaml"
REQUIRED = ("kind", "category", "confidence", "recovery", "description", "patterns", "examples")
GENERIC_BELOW = 0.6  # kb.Signature.generic: catch-alls are consulted only after every specific one


def _load() -> dict[str, Any]:
    doc = yaml.safe_load(KB_PATH.read_text("utf-8"))
    assert isinstance(doc, dict), f"{KB_PATH}: expected a mapping at top level"
    return doc


DOC = _load()
SIGS: list[dict[str, Any]] = DOC.get("signatures") or []
IDS = [str(s.get("kind", f"#{i}")) for i, s in enumerate(SIGS)]
EXAMPLES = [(s["kind"], s["category"], e) for s in SIGS for e in s.get("examples") or []]


def _regexes(sig: dict[str, Any]) -> list[re.Pattern[str]]:
    return [re.compile(p, re.IGNORECASE) for p in sig["patterns"]]


COMPILED = [(s, _regexes(s)) for s in SIGS]


def test_version_and_signatures() -> None:
    assert DOC.get("version") == 1
    assert isinstance(DOC.get("signatures"), list) and SIGS


def test_kinds_are_unique() -> None:
    kinds = [s["kind"] for s in SIGS]
    assert len(kinds) == len(set(kinds)), sorted(k for k in kinds if kinds.count(k) > 1)


@pytest.mark.parametrize("sig", SIGS, ids=IDS)
def test_signature_fields(sig: dict[str, Any]) -> None:
    missing = [k for k in REQUIRED if k not in sig]
    assert not missing, f"missing keys: {missing}"
    assert re.fullmatch(r"[a-z][a-z0-9_]*", sig["kind"]), "kind must be snake_case"
    assert sig["category"] in CATEGORIES
    assert sig["recovery"] in RECOVERIES
    assert isinstance(sig["confidence"], (int, float)) and 0 < sig["confidence"] <= 1
    assert isinstance(sig["description"], str) and sig["description"].strip()
    for key in ("patterns", "examples"):
        values = sig[key]
        assert isinstance(values, list) and values, f"{key} must be a non-empty list"
        assert all(isinstance(v, str) and v.strip() for v in values), f"{key} must be non-empty strings"
    if sig["category"] == "application":
        assert sig["recovery"] == "none", "application faults are not restarted"


@pytest.mark.parametrize("sig", SIGS, ids=IDS)
def test_patterns_compile(sig: dict[str, Any]) -> None:
    for p in sig["patterns"]:
        try:
            re.compile(p, re.IGNORECASE)
        except re.error as exc:
            pytest.fail(f"{sig['kind']}: bad pattern {p!r}: {exc}")


@pytest.mark.parametrize("sig,regexes", COMPILED, ids=IDS)
def test_examples_match_own_patterns(sig: dict[str, Any], regexes: list[re.Pattern[str]]) -> None:
    unmatched = [e for e in sig["examples"] if not any(r.search(e) for r in regexes)]
    assert not unmatched, f"{sig['kind']}: examples its own patterns miss: {unmatched}"


@pytest.mark.parametrize(
    "kind,category,example", EXAMPLES, ids=[f"{k}:{i}" for i, (k, _, _) in enumerate(EXAMPLES)]
)
def test_first_match_in_file_order_has_same_category(kind: str, category: str, example: str) -> None:
    first = next((s for s, regexes in COMPILED if any(r.search(example) for r in regexes)), None)
    assert first is not None
    assert first["category"] == category, (
        f"{example!r} (from {kind}, {category}) is first matched by {first['kind']} ({first['category']}): "
        "move the more specific signature earlier or narrow the pattern"
    )


def test_catch_alls_come_last() -> None:
    """The loader tries every specific signature before any catch-all; keep file order the same."""
    generic = [i for i, s in enumerate(SIGS) if s["confidence"] < GENERIC_BELOW]
    specific = [i for i, s in enumerate(SIGS) if s["confidence"] >= GENERIC_BELOW]
    assert not generic or not specific or min(generic) > max(specific), [SIGS[i]["kind"] for i in generic]


def test_examples_are_unique() -> None:
    seen = [e for _, _, e in EXAMPLES]
    assert len(seen) == len(set(seen)), sorted({e for e in seen if seen.count(e) > 1})


def test_loader_accepts_the_file() -> None:
    kb = KnowledgeBase.from_yaml(KB_PATH.read_text("utf-8"), str(KB_PATH))
    assert len(kb.signatures) == len(SIGS)
    for kind, category, example in EXAMPLES:
        sig = kb.match(example)
        assert sig is not None and sig.category == category, (kind, example)

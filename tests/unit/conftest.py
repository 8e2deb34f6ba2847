"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest

from schedmate.advisor.extract.extractor import StaticExtractor


@pytest.fixture
def x() -> StaticExtractor:
    return StaticExtractor()

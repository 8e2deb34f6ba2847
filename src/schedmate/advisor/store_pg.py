"""Deprecated location of `schedmate.advisor.history.pg`, kept only until tests/conftest.py
imports `redact_url` from `schedmate.advisor.history`; new code imports from there."""

from schedmate.advisor.history.pg import PgvectorHistoryStore, is_postgres_url, redact_url

__all__ = ["PgvectorHistoryStore", "is_postgres_url", "redact_url"]

"""One generic registry for pluggable backends; lookup errors list the valid names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from schedmate.core.errors import ConfigError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, role: str) -> None:
        self.role = role
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            self._factories[name] = factory
            return factory

        return deco

    def names(self) -> list[str]:
        return sorted(self._factories)

    def create(self, name: str, *args: object, **kwargs: object) -> T:
        try:
            factory = self._factories[name]
        except KeyError:
            valid = ", ".join(self.names()) or "(none)"
            raise ConfigError(f"unknown {self.role} '{name}'; valid: {valid}") from None
        return factory(*args, **kwargs)

"""The cyclic garbage collector, held off while many long-lived, acyclic objects are built.

Building the Philly trace's 82 k jobs (and the engine's state for them) allocates far more
container objects than it frees, so the collector runs every 700 allocations and, as the
heap grows, traverses everything built so far again (full collections): a third of the
loader's time. Objects that hold no reference cycles are freed by reference counting alone,
so pausing the collector around their construction changes nothing but the time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused", "gc_frozen"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic collection inside the block (the collector's state is restored after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextmanager
def gc_frozen() -> Iterator[None]:
    """Everything alive on entry is left out of the collections inside the block (moved to
    the permanent generation, and back to the oldest one on exit): a long simulation does not
    re-traverse the trace and the jobs it was built from at each full collection. Nothing is
    done when something else already froze objects (a server's own `gc.freeze()` is kept)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()

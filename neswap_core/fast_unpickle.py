"""Unpickling with the cyclic garbage collector paused (issue 21: a restarted app reads 100k chunks).

Reading back a pickle of many small objects (100,990 ``Chunk`` with 380,254 ``EntitySpan``)
allocates millions of containers, and CPython's collector runs a collection every 700 of them,
each generation-2 pass walking the whole growing heap: 4.3 s of the load against 1.1 s with the
collector paused. An unpickled value holds no garbage to collect (every object it creates is
reachable from the result), so pausing the collector changes nothing but the time. The pause is
process-wide and shared: threads (Streamlit sessions) that load at once resume the collector
when the last of them is done, and only if it was running before the first.

Resuming alone would only defer the cost: the new objects would all sit in the youngest
generation and the first allocation after the pause would scan them (0.35 s for the chunks
above). So they are moved to the oldest generation first (``gc.freeze`` then ``gc.unfreeze``:
two list splices, no scan), where objects that survived collections would have ended up;
they are collected there as usual.
"""

from __future__ import annotations

import gc
import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

_LOCK = threading.Lock()
_PAUSES = 0
_WAS_ENABLED = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block (nested and concurrent blocks share one pause)."""
    global _PAUSES, _WAS_ENABLED
    with _LOCK:
        if _PAUSES == 0:
            _WAS_ENABLED = gc.isenabled()
            gc.disable()
        _PAUSES += 1
    try:
        yield
    finally:
        with _LOCK:
            _PAUSES -= 1
            if _PAUSES == 0 and _WAS_ENABLED:
                gc.freeze()  # every tracked object to the permanent generation ...
                gc.unfreeze()  # ... and back to the oldest one: not scanned as young again
                gc.enable()


def load(handle: IO[bytes]) -> Any:
    """``pickle.load(handle)`` with the collector paused."""
    with collector_paused():
        return pickle.load(handle)


def loads(data: bytes | memoryview, **kwargs: Any) -> Any:
    """``pickle.loads(data, **kwargs)`` with the collector paused."""
    with collector_paused():
        return pickle.loads(data, **kwargs)

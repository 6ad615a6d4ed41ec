"""Pickles whose arrays are read back memory-mapped, shared between processes (issue 21).

A fitted defender is almost all numpy buffers (coefficients, sparse profiles: 365 of 378 MB at
30k synthetic passages) and three processes held it whole: the release's and each of two
scoring workers (2.6 GB each at 100k). ``dump`` writes the pickle's in-band part and its
out-of-band buffers (pickle protocol 5) to one file; ``load`` maps that file read-only and hands
the buffers back to pickle, so the arrays are views of the page cache: one copy in memory
however many processes read it, none of it anonymous. The arrays come back read-only: a model
that writes into its own arrays fails loudly instead of diverging between processes.

Layout: the 8-byte magic, the 8-byte length of the header, the header (a pickle of the in-band
bytes, each buffer's offset and length, and the caller's small ``meta`` dict), then the buffers,
each at a 64-byte boundary.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import pickle
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import fast_unpickle

MAGIC = b"NSWMAP01"
_ALIGN = 64


def dump(obj: Any, path: str | Path, meta: dict | None = None) -> None:
    """Write ``obj`` to ``path`` (atomically: a temporary file, then a rename), with ``meta``
    (a small dict of plain values, e.g. an array's digest) in the header."""
    path = Path(path)
    buffers: list[pickle.PickleBuffer] = []
    inband = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    spans, pos = [], 0
    for raw in raws:
        pos += -pos % _ALIGN
        spans.append((pos, raw.nbytes))
        pos += raw.nbytes
    header = pickle.dumps((inband, spans, dict(meta or {})), protocol=5)
    start = len(MAGIC) + 8 + len(header)
    start += -start % _ALIGN
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(MAGIC + struct.pack("<Q", len(header)) + header)
        for raw, (offset, _) in zip(raws, spans, strict=True):
            fh.seek(start + offset)
            fh.write(raw)
    tmp.replace(path)


def load(path: str | Path) -> Any:
    """``obj`` as ``dump`` wrote it, its buffers mapped read-only from ``path`` (ValueError if
    ``path`` is not such a file)."""
    return load_with_meta(path)[0]


def load_with_meta(path: str | Path) -> tuple[Any, dict]:
    """(``obj``, ``meta``) as ``dump`` wrote them (``load``)."""
    with open(path, "rb") as fh:
        head = fh.read(len(MAGIC) + 8)
        if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
            raise ValueError(f"{path} is not a mapped pickle")
        (n,) = struct.unpack("<Q", head[len(MAGIC):])
        inband, spans, *rest = pickle.loads(fh.read(n))  # files before the header's meta: none
        meta = rest[0] if rest else {}
        start = len(MAGIC) + 8 + n
        start += -start % _ALIGN
        if not spans:
            return fast_unpickle.loads(inband, buffers=()), meta
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # stays valid after close
    view = memoryview(mapped)
    buffers = [view[start + o:start + o + size] for o, size in spans]
    return fast_unpickle.loads(inband, buffers=buffers), meta


@lru_cache(maxsize=1)
def _malloc_trim():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to give back this way
        return None


def give_back_freed_memory() -> None:
    """Return the C heap's wholly free pages to the system (glibc's ``malloc_trim``). A model
    fitted in this process and then replaced by its mapped copy (``load``) frees its arrays, but
    arrays under glibc's mmap threshold (up to 32 MB: a line-up model's coefficients) leave
    their pages free inside the heap, still counted as this process's memory (issue 21: a 10k
    release kept half of the 0.26 GB it handed to the page cache). A no-op elsewhere."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

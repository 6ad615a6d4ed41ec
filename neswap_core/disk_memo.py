"""Results kept on disk by a hash of their inputs, so a warm re-run recomputes nothing (issue 21).

A memo entry is a pickle named by a SHA-256 of everything the value depends on, the library's
own source included (``code_fingerprint``: any edit of ``neswap_core`` starts afresh, so a
changed algorithm never reads an old answer). Writes are atomic (a temporary file, then a
rename); an unreadable entry is recomputed and replaced; each folder keeps its
``MAX_ENTRIES`` most recently used entries. The files are pickles this library wrote into the
user's own cache folder, never loaded from elsewhere (the same rule as the attacker panels'
and embeddings' caches).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from . import fast_unpickle, mapped_pickle

T = TypeVar("T")
#: The memo folder inside the cache folder.
MEMO_FOLDER = "memo"
#: Entries kept per kind of result (the least recently used go first).
MAX_ENTRIES = 24


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of every Python source file of ``neswap_core`` (path and bytes)."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\x00")
        h.update(path.read_bytes())
    return h.hexdigest()


def content_key(*parts: Any) -> str:
    """SHA-256 of ``parts`` (strings, bytes, numbers, arrays, nested lists, tuples and dicts)
    and of the code fingerprint."""
    h = hashlib.sha256(code_fingerprint().encode())
    _feed(h, parts)
    return h.hexdigest()


def _feed(h, value: Any) -> None:
    if isinstance(value, bytes):
        h.update(b"b%d:" % len(value))
        h.update(value)
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        h.update(b"s%d:" % len(data))
        h.update(data)
    elif isinstance(value, dict):
        h.update(b"d%d:" % len(value))
        for k in sorted(value, key=repr):
            _feed(h, repr(k))
            _feed(h, value[k])
    elif isinstance(value, (list, tuple)):
        h.update(b"l%d:" % len(value))
        for item in value:
            _feed(h, item)
    elif hasattr(value, "tobytes") and hasattr(value, "dtype"):  # numpy arrays
        h.update(b"a")
        h.update(array_digest(value).encode())
    elif value is None or isinstance(value, (bool, int, float)):
        h.update(f"v{value!r};".encode())
    else:
        raise TypeError(f"content_key cannot hash a {type(value).__name__}")


#: Read-only arrays of at least this size have their digest remembered (``array_digest``),
#: the ``KNOWN_ARRAYS`` most recently used, by weak reference (the table keeps none alive).
KNOWN_ARRAY_BYTES = 1 << 20
KNOWN_ARRAYS = 16
_ARRAY_DIGESTS: OrderedDict[int, tuple[weakref.ref, str]] = OrderedDict()
_ARRAY_LOCK = threading.Lock()


def array_digest(x: Any) -> str:
    """SHA-256 of a numpy array's dtype, shape and bytes: what a key holds of it. Made once per
    read-only array object in a process, or told by whoever read the array back with it
    (``remember_array_digest``; ``DiskMemo(mapped=True)`` does): the run's key, the build's
    and the app's kept figures hash the same 155 MB of vectors at 100k passages, 0.2 s each
    time (issue 21). A writable array, or a view of one, may change in place: hashed each call."""
    frozen = _immutable(x)
    if frozen:
        with _ARRAY_LOCK:
            hit = _ARRAY_DIGESTS.get(id(x))
            if hit is not None and hit[0]() is x:
                _ARRAY_DIGESTS.move_to_end(id(x))
                return hit[1]
    h = hashlib.sha256(f"{x.dtype.str}{x.shape}:".encode())
    h.update(x if x.flags.c_contiguous and not x.dtype.hasobject else x.tobytes())
    value = h.hexdigest()
    if frozen:
        remember_array_digest(x, value)
    return value


def remember_array_digest(x: Any, value: str) -> None:
    """Record ``value`` as ``array_digest(x)`` for a read-only array whose content is known (a
    memo entry's, kept with it). Arrays that may change, and small ones, are not recorded."""
    if not _immutable(x):
        return
    try:
        ref = weakref.ref(x)  # not kept alive by this table; a dead entry's id never hits
    except TypeError:
        return
    with _ARRAY_LOCK:
        _ARRAY_DIGESTS[id(x)] = (ref, value)
        _ARRAY_DIGESTS.move_to_end(id(x))
        while len(_ARRAY_DIGESTS) > KNOWN_ARRAYS:
            _ARRAY_DIGESTS.popitem(last=False)


def _immutable(x: Any) -> bool:
    """Whether ``x`` is a big ndarray none of whose owners may write it (``KNOWN_ARRAY_BYTES``)."""
    if not hasattr(x, "flags") or getattr(x, "nbytes", 0) < KNOWN_ARRAY_BYTES or x.dtype.hasobject:
        return False
    while x is not None:
        if isinstance(x, memoryview):  # a mapped memo entry's buffer: read-only there
            return x.readonly
        if not hasattr(x, "flags"):
            return False
        if x.flags.writeable:
            return False
        x = getattr(x, "base", None)
    return True


def _is_array(value: Any) -> bool:
    return hasattr(value, "tobytes") and hasattr(value, "dtype") and hasattr(value, "flags")


def repr_digest(value: Any) -> str:
    """sha256 of ``repr(value)`` (UTF-8, surrogates passed) without ever making that text whole:
    lists and tuples are opened up two levels deep and each item's repr is fed in turn (issue
    21: the document plans' key was a repr of every passage and fill, 93 MB at 10k passages and
    ~1 GB at 100k, made to be hashed). The same digest as hashing the whole text."""
    h = hashlib.sha256()
    feed_repr(h, value)
    return h.hexdigest()


def feed_repr(h: Any, value: Any) -> None:
    """``h.update`` with ``repr(value)`` (UTF-8, surrogates passed), piece by piece (``repr_digest``)."""
    for piece in _repr_pieces(value, 2):
        h.update(piece.encode("utf-8", "surrogatepass"))


def _repr_pieces(value: Any, depth: int) -> Iterator[str]:
    kind = type(value)
    if depth == 0 or kind not in (list, tuple):  # a subclass's repr may differ: whole
        yield repr(value)
        return
    yield "[" if kind is list else "("
    for i, item in enumerate(value):
        if i:
            yield ", "
        yield from _repr_pieces(item, depth - 1)
    if kind is tuple and len(value) == 1:
        yield ","
    yield "]" if kind is list else ")"


def texts_digest(texts: Iterable[str]) -> str:
    """SHA-256 of a sequence of texts (order and boundaries included): a cheap key part."""
    h = hashlib.sha256()
    for t in texts:
        data = t.encode("utf-8", "surrogatepass")
        h.update(b"%d:" % len(data))
        h.update(data)
    return h.hexdigest()


class DiskMemo:
    """Values of one kind (``kind``: a folder name) kept under ``cache_dir``/memo, at most
    ``max_entries`` of them; ``cache_dir`` None keeps nothing (every call computes)."""

    def __init__(self, cache_dir: str | Path | None, kind: str, max_entries: int = MAX_ENTRIES,
                 mapped: bool = False) -> None:
        self.folder = None if cache_dir is None else Path(cache_dir) / MEMO_FOLDER / kind
        self.max_entries = max_entries
        #: Arrays kept out of band and read back memory-mapped, read-only (``mapped_pickle``):
        #: a large array is then read without a copy (the page cache's pages, shared by every
        #: process that reads it) instead of unpickled into fresh memory.
        self.mapped = mapped

    def get(self, key: str) -> tuple[bool, Any]:
        """(found, value) of ``key``."""
        if self.folder is None:
            return False, None
        path = self.folder / f"{key}.pkl"
        try:
            if self.mapped:
                value, meta = mapped_pickle.load_with_meta(path)
                if "array_digest" in meta:  # the array's digest, kept with it
                    remember_array_digest(value, meta["array_digest"])
            else:
                with path.open("rb") as fh:
                    value = fast_unpickle.load(fh)
        except FileNotFoundError:
            return False, None
        except Exception:  # noqa: BLE001 - a damaged entry is recomputed and replaced
            path.unlink(missing_ok=True)
            return False, None
        try:
            os.utime(path)  # most recently used
        except OSError:
            pass
        return True, value

    def has(self, key: str) -> bool:
        """Whether a value is kept under ``key`` (not read)."""
        return self.folder is not None and (self.folder / f"{key}.pkl").is_file()

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key`` (atomically); a full or read-only disk or a value that
        cannot be pickled keeps nothing (the run goes on)."""
        if self.folder is None:
            return
        tmp_name = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if self.mapped:  # written atomically by mapped_pickle itself; an array with its digest
                meta = {"array_digest": array_digest(value)} if _is_array(value) else {}
                mapped_pickle.dump(value, self.folder / f"{key}.pkl", meta)
                self._prune()
                return
            with tempfile.NamedTemporaryFile(dir=self.folder, delete=False, suffix=".tmp") as tmp:
                tmp_name = tmp.name
                pickle.dump(value, tmp, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp_name, self.folder / f"{key}.pkl")
            self._prune()
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            # a full or read-only disk, or a value that cannot be pickled: nothing is kept
            if tmp_name is not None:
                Path(tmp_name).unlink(missing_ok=True)

    def _prune(self) -> None:
        assert self.folder is not None
        entries = sorted(self.folder.glob("*.pkl"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[self.max_entries:]:
            old.unlink(missing_ok=True)

    def get_or_compute(self, key: str | None, compute: Callable[[], T]) -> T:
        """The value kept under ``key``, else ``compute()`` kept there (``key`` None: compute).
        A ``mapped`` memo hands a computed value back as a warm run reads it, its arrays mapped
        from the entry just written (the computed copy is let go: issue 21's memory at 100k)."""
        if key is not None:
            found, value = self.get(key)
            if found:
                return value
        value = compute()
        if key is not None:
            self.put(key, value)
            if self.mapped:
                found, kept = self.get(key)
                if found:
                    del value
                    mapped_pickle.give_back_freed_memory()
                    return kept
        return value

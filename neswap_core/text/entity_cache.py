"""On-disk cache of NER results, so unchanged chunk text is never tagged twice (issue 2's warm run).

Keyed by a fingerprint of the pipeline (model name and version, components, gazetteer patterns,
label map) and the SHA-256 of the text. Storage mirrors the embedding cache: append-only JSON
Lines shards, each written to a temporary file and moved into place, so a crash or a second
process never leaves a half-written shard; a shard that cannot be read is deleted with a
warning and its texts are tagged again.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import DEFAULT_NER_BATCH
from ..corpus import EntitySpan
from ..paths import resolve_cache_dir
from .entities import extract_entities, validate_label_map

MAX_SHARDS = 64
#: Per cache folder this process has read (newest last): its spans and the (size, mtime) of
#: every shard read. A streaming run makes a new ``EntityCache`` per batch; re-reading every shard
#: each time made tagging quadratic in the corpus (100k chunks: ~365 batches × 2 full reads).
_READ: OrderedDict[str, tuple[dict[str, list[list[Any]]], dict[str, tuple[int, int]]]] = OrderedDict()
_READ_FOLDERS = 4


def forget_read_spans() -> None:
    """Let go of the spans this process has read (``_READ``): what a preparation's batches
    share, held for nothing once it is done (the release's sweep tags no text; issue 21: about
    0.37 GB at 100,000 passages, the whole run long). A later cache reads its folder again."""
    _READ.clear()


class EntityCacheWarning(UserWarning):
    """A cache shard was unreadable and has been rebuilt."""


def pipeline_fingerprint(nlp: Any, label_map: Mapping[str, str]) -> str:
    """A short hash of everything that decides the spans: model, version, pipes, patterns, labels."""
    meta = getattr(nlp, "meta", {}) or {}
    patterns = []
    if "entity_ruler" in getattr(nlp, "pipe_names", []):
        patterns = [json.dumps(p, sort_keys=True) for p in nlp.get_pipe("entity_ruler").patterns]
    payload = {
        "model": f"{meta.get('lang', '')}_{meta.get('name', '')}-{meta.get('version', '')}",
        "pipes": list(getattr(nlp, "pipe_names", [])),
        "patterns": sorted(patterns),
        "labels": dict(sorted(validate_label_map(label_map).items())),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    """{shard name: (size, mtime)} of the finished shards in ``folder``."""
    out = {}
    for path in folder.glob("*.jsonl"):
        try:
            out[path.name] = _stat(path)
        except FileNotFoundError:
            continue  # merged away meanwhile
    return out


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EntityCache:
    """NER spans by text hash for one pipeline fingerprint; ``folder=None`` keeps it in memory."""

    def __init__(self, folder: str | Path | None, fingerprint: str) -> None:
        folder = resolve_cache_dir(folder)  # "" = the per-user cache folder
        self.folder = folder / "ner" / fingerprint if folder is not None else None
        self._spans: dict[str, list[list[Any]]] | None = None
        self._seen: dict[str, tuple[int, int]] | None = None
        self.n_cached_hits = 0
        self.n_tagged = 0

    def _load(self) -> dict[str, list[list[Any]]]:
        """The spans on disk. Within a process a folder is read once: later caches of the same
        folder read only shards they have not seen (another process's), unless a shard seen
        before has changed on disk, which makes them read everything again."""
        if self._spans is not None:
            return self._spans
        self._spans = {}
        if self.folder is None:
            return self._spans
        where = str(self.folder.resolve())
        listing = _listing(self.folder) if self.folder.exists() else {}
        spans, seen = _READ.get(where, (None, {}))
        if spans is None or any(seen[n] != st for n, st in listing.items() if n in seen):
            spans, seen, merge = {}, {}, len(listing) > MAX_SHARDS
        else:
            merge = False
        self._spans, self._seen = spans, seen
        for name in sorted(set(listing) - set(seen)):
            self._read_shard(self.folder / name)
            seen[name] = listing[name]
        if merge:
            self._write(self._spans, merge=[self.folder / n for n in listing])
        _READ[where] = (spans, seen)
        _READ.move_to_end(where)
        while len(_READ) > _READ_FOLDERS:
            _READ.popitem(last=False)
        return self._spans

    def _read_shard(self, shard: Path) -> None:
        try:
            with open(shard, encoding="utf-8") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
            assert self._spans is not None  # _load sets it before reading a shard
            self._spans.update({row["k"]: row["s"] for row in rows})
        except FileNotFoundError:
            pass  # merged into a new shard by another process meanwhile
        except (OSError, ValueError, KeyError, TypeError) as exc:
            warnings.warn(f"NER cache shard {shard.name} is unreadable ({exc}); it is rebuilt.",
                          EntityCacheWarning, stacklevel=4)
            shard.unlink(missing_ok=True)

    def _write(self, rows: Mapping[str, list[list[Any]]], merge: Sequence[Path] = ()) -> None:
        if self.folder is None or not rows:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        tmp = self.folder / f"{name}.part"
        with open(tmp, "w", encoding="utf-8") as handle:
            for key, spans in rows.items():
                handle.write(json.dumps({"k": key, "s": spans}, ensure_ascii=False) + "\n")
        final = self.folder / f"{name}.jsonl"
        os.replace(tmp, final)
        seen = self._seen
        if seen is not None:  # our own shard: never read back
            seen[final.name] = _stat(final)
        for old in merge:
            old.unlink(missing_ok=True)
            if seen is not None:
                seen.pop(old.name, None)

    def extract(self, texts: Sequence[str], nlp: Any, label_map: Mapping[str, str], batch_size: int = DEFAULT_NER_BATCH
                ) -> list[tuple[EntitySpan, ...]]:
        """Like ``entities.extract_entities``, but only texts not seen before go through spaCy."""
        cached = self._load()
        keys = [_key(t) for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in cached}
        if todo:
            found = extract_entities(list(todo.values()), nlp, label_map, batch_size=batch_size)
            new = {k: [[s.start, s.end, s.label, s.category, s.text] for s in spans]
                   for k, spans in zip(todo, found, strict=True)}
            cached.update(new)
            self._write(new)
            self.n_tagged += len(todo)
        self.n_cached_hits += len(keys) - len(todo)
        return [tuple(EntitySpan(*row) for row in cached[k]) for k in keys]

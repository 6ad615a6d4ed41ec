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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import DEFAULT_NER_BATCH
from ..corpus import EntitySpan
from .entities import extract_entities, validate_label_map

MAX_SHARDS = 64


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


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EntityCache:
    """NER spans by text hash for one pipeline fingerprint; ``folder=None`` keeps it in memory."""

    def __init__(self, folder: str | Path | None, fingerprint: str) -> None:
        self.folder = Path(folder) / "ner" / fingerprint if folder is not None else None
        self._spans: dict[str, list[list[Any]]] | None = None
        self.n_cached_hits = 0
        self.n_tagged = 0

    def _load(self) -> dict[str, list[list[Any]]]:
        if self._spans is not None:
            return self._spans
        self._spans = {}
        if self.folder is None or not self.folder.exists():
            return self._spans
        shards = sorted(self.folder.glob("*.jsonl"))
        for shard in shards:
            try:
                with open(shard, encoding="utf-8") as handle:
                    rows = [json.loads(line) for line in handle if line.strip()]
                self._spans.update({row["k"]: row["s"] for row in rows})
            except (OSError, ValueError, KeyError, TypeError) as exc:
                warnings.warn(f"NER cache shard {shard.name} is unreadable ({exc}); it is rebuilt.",
                              EntityCacheWarning, stacklevel=3)
                shard.unlink(missing_ok=True)
        if len(shards) > MAX_SHARDS:
            self._write(self._spans, merge=shards)
        return self._spans

    def _write(self, rows: Mapping[str, list[list[Any]]], merge: Sequence[Path] = ()) -> None:
        if self.folder is None or not rows:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        tmp = self.folder / f"{name}.part"
        with open(tmp, "w", encoding="utf-8") as handle:
            for key, spans in rows.items():
                handle.write(json.dumps({"k": key, "s": spans}, ensure_ascii=False) + "\n")
        os.replace(tmp, self.folder / f"{name}.jsonl")
        for old in merge:
            old.unlink(missing_ok=True)

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

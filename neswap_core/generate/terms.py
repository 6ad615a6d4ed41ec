"""Distinctive terms as a swappable category (SPEC §10): their spans in each chunk.

``tag_terms`` marks the occurrences of a company's distinctive terms (models/log_odds.py) in its
own chunks as spans of the category ``Term``, so a swap round can exchange them between similar
chunks of different companies (the vocabulary moves instead of being masked). Matching is
case-insensitive on whole words, longest phrase first, never over an entity span or placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..config import PLACEHOLDER_PATTERN, TERM_CATEGORY, TERM_LABEL
from ..corpus import Chunk, EntitySpan

_PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)


def _pattern(terms: Sequence[str]) -> re.Pattern | None:
    if not terms:
        return None
    words = sorted(terms, key=lambda t: (-len(t), t))
    body = "|".join(r"\s+".join(map(re.escape, t.split())) for t in words)
    return re.compile(rf"(?<![\w])(?:{body})(?![\w])", re.IGNORECASE)


def tag_terms(chunks: Sequence[Chunk], terms: Mapping[str, Sequence[str]]) -> list[Chunk]:
    """Add a ``Term`` span at each occurrence of the chunk's own protected value's terms.

    Occurrences over an entity span or placeholder are skipped; existing Term spans are
    replaced. Chunks with nothing to tag are returned as the same objects.
    """
    patterns = {label: _pattern(list(ts)) for label, ts in terms.items()}
    out: list[Chunk] = []
    for chunk in chunks:
        pattern = patterns.get(chunk.protected)
        kept = tuple(s for s in chunk.entities if s.category != TERM_CATEGORY)
        if pattern is None:
            out.append(chunk if len(kept) == len(chunk.entities) else replace(chunk, entities=kept))
            continue
        blocked = [(s.start, s.end) for s in kept]
        blocked += [m.span() for m in _PLACEHOLDER.finditer(chunk.text)]
        spans = [
            EntitySpan(m.start(), m.end(), TERM_LABEL, TERM_CATEGORY, m.group(0))
            for m in pattern.finditer(chunk.text)
            if not any(m.start() < e and s < m.end() for s, e in blocked)
        ]
        if not spans and len(kept) == len(chunk.entities):
            out.append(chunk)
            continue
        entities = tuple(sorted(kept + tuple(spans), key=lambda s: (s.start, s.end)))
        out.append(replace(chunk, entities=entities))
    return out

"""The analyst's entity corrections (SPEC §2.4): drop an entity string or add a missed one, in
one passage or everywhere, and how many passages a correction matches or changed.

Corrections are whole-word and case-sensitive (``whole_word``); an added entity replaces the NER
spans it overlaps, is labelled ``MANUAL`` and never lands inside a placeholder; ``drop`` with no
category removes the string whatever its category.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..config import CATEGORIES
from ..corpus import Chunk, EntitySpan
from ..errors import ConfigError
from .entities import MANUAL_LABEL, _overlaps, placeholder_ranges


def whole_word(text: str) -> re.Pattern[str]:
    """``text`` where no word character touches it on either side (how a correction finds it)."""
    return re.compile(r"(?<!\w)" + re.escape(text) + r"(?!\w)")


@dataclass(frozen=True)
class EntityCorrection:
    """An analyst's fix: ``drop`` an entity string or ``add`` one, in one chunk or everywhere.

    ``category=None`` with ``drop`` removes the string whatever its category.
    """

    action: str  # "drop" | "add"
    category: str | None
    text: str
    chunk_id: str | None = None  # None: every chunk

    def __post_init__(self) -> None:
        if self.action not in ("drop", "add"):
            raise ConfigError(f"A correction's action is 'drop' or 'add', not {self.action!r}.")
        if self.category is None and self.action == "add":
            raise ConfigError("Adding an entity needs a category, e.g. 'Product'.")
        if self.category is not None and self.category not in CATEGORIES:
            raise ConfigError(f"Unknown category {self.category!r}; known: {list(CATEGORIES)}.")
        if (
            not isinstance(self.text, str)
            or not self.text.strip()
            or self.text != self.text.strip()
        ):
            raise ConfigError(
                f"A correction's text must be non-empty without outer spaces, got {self.text!r}."
            )


def correction_to_dict(correction: EntityCorrection) -> dict[str, str]:
    """A correction as a RunConfig/TOML table ("" stands for None)."""
    return {"action": correction.action, "category": correction.category or "",
            "text": correction.text, "chunk_id": correction.chunk_id or ""}


def corrections_from_config(rows: Sequence[Mapping[str, str]]) -> list[EntityCorrection]:
    """The corrections of ``RunConfig.review.corrections`` (the inverse of ``correction_to_dict``)."""
    return [EntityCorrection(action=r["action"], category=r.get("category") or None,
                             text=r.get("text", ""), chunk_id=r.get("chunk_id") or None)
            for r in rows]


def apply_corrections(
    chunks: Sequence[Chunk], corrections: Sequence[EntityCorrection]
) -> list[Chunk]:
    """The chunks with the corrections applied in the given order."""
    known = {c.chunk_id for c in chunks}
    unknown = sorted({k.chunk_id for k in corrections if k.chunk_id is not None} - known)
    if unknown:
        raise ConfigError(
            f"Corrections refer to chunks not in this corpus: {unknown[:5]} (chunk ids change "
            "when the threshold changes). Remove them or make them corpus-wide."
        )
    out = []
    for chunk in chunks:
        spans = list(chunk.entities)
        for fix in corrections:
            if fix.chunk_id is not None and fix.chunk_id != chunk.chunk_id:
                continue
            spans = _drop(spans, fix) if fix.action == "drop" else _add(chunk.text, spans, fix)
        out.append(replace(chunk, entities=tuple(sorted(spans, key=lambda s: (s.start, s.end)))))
    return out


def _drop(spans: list[EntitySpan], fix: EntityCorrection) -> list[EntitySpan]:
    return [s for s in spans if not _targets(s, fix)]


def _add(text: str, spans: list[EntitySpan], fix: EntityCorrection) -> list[EntitySpan]:
    assert fix.category is not None  # EntityCorrection: an "add" always has a category
    blocked = placeholder_ranges(text)
    for m in whole_word(fix.text).finditer(text):
        if _overlaps(m.start(), m.end(), blocked):
            continue
        spans = [s for s in spans if not (s.start < m.end() and m.start() < s.end)]
        spans.append(EntitySpan(m.start(), m.end(), MANUAL_LABEL, fix.category, fix.text))
    return spans


def _targets(span: EntitySpan, fix: EntityCorrection) -> bool:
    return span.text == fix.text and fix.category in (None, span.category)


def _in_scope(chunk: Chunk, fix: EntityCorrection) -> bool:
    return fix.chunk_id is None or fix.chunk_id == chunk.chunk_id


def passages_matched(chunks: Sequence[Chunk], fix: EntityCorrection) -> int:
    """Passages a correction would touch before it is saved: where its text occurs as a whole
    word (add) or is an entity of its category (drop). 0: the correction would do nothing."""
    scope = [ch for ch in chunks if _in_scope(ch, fix)]
    if fix.action == "drop":
        return sum(any(_targets(s, fix) for s in ch.entities) for ch in scope)
    pattern = whole_word(fix.text)
    return sum(bool(pattern.search(ch.text)) for ch in scope)


def passages_changed(before: Sequence[Chunk], after: Sequence[Chunk], fix: EntityCorrection) -> int:
    """Passages a stored correction changed: ``after`` is ``before`` with the corrections applied;
    an added entity is there as ``MANUAL``, a dropped one was there and is gone."""
    count = 0
    for old, new in zip(before, after, strict=True):
        if not _in_scope(old, fix):
            continue
        if fix.action == "add":
            count += any(s.label == MANUAL_LABEL and _targets(s, fix) for s in new.entities)
        else:
            count += (any(_targets(s, fix) for s in old.entities)
                      and not any(_targets(s, fix) for s in new.entities))  # fmt: skip
    return count

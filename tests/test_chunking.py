"""Sentence splitting and the semantic breakpoint chunker (SPEC §2.2)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neswap_core.errors import ConfigError, NeswapError
from neswap_core.text.chunking import (
    breakpoints_for,
    chunk_corpus,
    chunk_spans,
    group_distances,
    semantic_chunks,
    sentence_groups,
)
from neswap_core.text.sentences import split_sentences

SAMPLE_DOCS = Path(__file__).resolve().parents[1] / "data" / "sample" / "docs"


def hashed_embed(texts: list[str]) -> np.ndarray:
    """Cheap deterministic unit vectors: hashed bag of words, 64-d (stands in for a model)."""
    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "little")
            out[i, h % 64] += 1.0 if h & 1 << 20 else -1.0
        out[i, 63] += 0.5  # never a zero vector
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


# --- sentences --------------------------------------------------------------------------------
def test_sentence_splitter_keeps_abbreviations_decimals_and_acronyms():
    text = (
        "Mr. Smith joined Apple Inc. in 2020. Revenue rose 3.5% to $1.2 billion in the U.S. and "
        "U.K. markets. Did it work? Yes! Craig A. Lampo spoke. [Company Name] grew. "
        '"Great," he said. iPhone sales rose.'
    )
    assert [s.text for s in split_sentences(text)] == [
        "Mr. Smith joined Apple Inc. in 2020.",
        "Revenue rose 3.5% to $1.2 billion in the U.S. and U.K. markets.",
        "Did it work?",
        "Yes!",
        "Craig A. Lampo spoke.",
        "[Company Name] grew.",
        '"Great," he said.',
        "iPhone sales rose.",
    ]


def test_sentence_splitter_handles_lines_paragraphs_and_wrapping():
    text = "Operator\n\nWelcome everyone.\nThis line is hard\nwrapped here.\r\nPrepared Remarks:\nOEMs. For ATMs. We"
    assert [s.text for s in split_sentences(text)] == [
        "Operator",
        "Welcome everyone.",
        "This line is hard\nwrapped here.",
        "Prepared Remarks:",
        "OEMs.",
        "For ATMs.",
        "We",
    ]


def test_sentence_splitter_one_sentence_a_line_matches_the_sample_file():
    path = SAMPLE_DOCS / "APH_q3_2021.txt"
    text = path.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    spans = split_sentences(text)
    # every line is at least one sentence and no sentence crosses a line end
    assert len(spans) >= len(lines)
    assert all("\n" not in s.text for s in spans)


def test_empty_and_blank_text_have_no_sentences():
    assert split_sentences("") == []
    assert split_sentences(" \n\n\t ") == []


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab A.!?\n '\"[]$3")), max_size=80))
def test_sentence_offsets_cover_every_visible_character_once(text):
    spans = split_sentences(text)
    assert all(
        text[s.start : s.end] == s.text and s.text == s.text.strip() and s.text for s in spans
    )
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:], strict=False))
    assert squash("".join(s.text for s in spans)) == squash(text)


# --- breakpoints ------------------------------------------------------------------------------
def test_breakpoints_follow_numpy_percentile_with_strict_comparison():
    d = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    # 75th percentile by linear interpolation = 0.4: only 0.5 exceeds it
    assert breakpoints_for(d, 75).tolist() == [4]
    assert breakpoints_for(d, 50).tolist() == [3, 4]  # median 0.3
    assert breakpoints_for(d, 0).tolist() == [1, 2, 3, 4]  # min is not strictly exceeded
    assert breakpoints_for(d, 100).tolist() == []
    assert breakpoints_for(np.zeros(0), 75).tolist() == []


def test_bad_threshold_or_buffer_raise_config_errors():
    for bad in (-1, 100.5, float("nan"), "high"):
        with pytest.raises(ConfigError, match="percentile"):
            breakpoints_for(np.ones(3), bad)
    with pytest.raises(ConfigError, match="buffer"):
        chunk_corpus([("a", "One. Two.")], hashed_embed, buffer=-1)
    with pytest.raises(ConfigError, match="buffer"):
        chunk_corpus([("a", "One. Two.")], hashed_embed, buffer=1.5)


def test_group_distances_are_one_minus_cosine():
    v = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [0.0, -2.0]])
    np.testing.assert_allclose(group_distances(v), [1.0, 2.0, 0.0])
    with pytest.raises(NeswapError, match="2-d"):
        group_distances(np.ones(3))


def test_sentence_groups_are_slices_with_buffer_neighbours():
    text = "A one. B two.\nC three. D four."
    s = split_sentences(text)
    assert sentence_groups(text, s, 1) == [
        "A one. B two.",
        "A one. B two.\nC three.",
        "B two.\nC three. D four.",
        "C three. D four.",
    ]
    assert sentence_groups(text, s, 0) == [x.text for x in s]


def test_topic_shift_is_cut_exactly_where_the_topics_change():
    """Two topics with orthogonal vectors: distances [0, 1, 0], 75th pct 0.5, one cut."""
    topic = {"A": [1.0, 0.0], "B": [0.0, 1.0]}

    def embed(texts):
        return np.array([topic[t[0]] for t in texts])

    text = "A first. A second. B third. B fourth."
    assert semantic_chunks(text, embed, threshold=75, buffer=0) == [
        "A first. A second.",
        "B third. B fourth.",
    ]


def test_single_sentence_and_empty_documents():
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return hashed_embed(texts)

    assert semantic_chunks("Only one sentence here.", embed) == ["Only one sentence here."]
    assert semantic_chunks("", embed) == []
    assert semantic_chunks("  \n ", embed) == []
    assert calls == [["Only one sentence here."]]


def test_embed_with_wrong_shape_is_reported():
    with pytest.raises(NeswapError, match="one row per text"):
        semantic_chunks("One. Two. Three.", lambda texts: np.ones((1, 4)))


sentence = st.builds(
    lambda words, end: " ".join(words).capitalize() + end,
    st.lists(
        st.sampled_from("sales grew margin cloud iPhone Paris the of in 3.5% Dr. U.S.".split()),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([".", "?", "!"]),
)
document = st.builds(
    lambda sents, seps: "".join(s + sep for s, sep in zip(sents, seps, strict=False)),
    st.lists(sentence, max_size=14),
    st.lists(st.sampled_from([" ", "\n", "\n\n", "  "]), min_size=14, max_size=14),
)


@settings(max_examples=60, deadline=None)
@given(document, st.floats(0, 100), st.floats(0, 100), st.integers(0, 2))
def test_chunker_properties(text, t1, t2, buffer):
    low, high = sorted((t1, t2))
    chunks_low = chunk_corpus([("d", text)], hashed_embed, low, buffer).documents[0]
    chunks = chunks_low.chunks(low)
    # no text lost or duplicated, chunks are slices in order
    assert squash("".join(c.text for c in chunks)) == squash(text)
    assert all(text[c.start : c.end] == c.text for c in chunks)
    assert all(
        a.end <= b.start and not text[a.end : b.start].strip()
        for a, b in zip(chunks, chunks[1:], strict=False)
    )
    # a higher threshold never gives more chunks; its cuts are a subset of the lower one's
    assert len(chunks_low.chunks(high)) <= len(chunks)
    assert set(breakpoints_for(chunks_low.distances, high)) <= set(
        breakpoints_for(chunks_low.distances, low)
    )
    # deterministic
    again = chunk_corpus([("d", text)], hashed_embed, low, buffer).documents[0].chunks(low)
    assert [c.text for c in again] == [c.text for c in chunks]
    # n chunks = 1 + breakpoints (when there is any sentence)
    n_sent = len(split_sentences(text))
    expected = 0 if n_sent == 0 else 1 + len(breakpoints_for(chunks_low.distances, low))
    assert len(chunks) == expected


def test_chunk_corpus_embeds_all_documents_in_one_call_and_rethresholds_for_free():
    docs = [
        ("a", "Sales grew. Margins fell. The cloud grew fast. Paris was strong. We expect more."),
        ("b", "One sentence only."),
        ("c", ""),
        ("d", "Alpha rose. Beta fell.\nGamma was flat. Delta grew. Epsilon shrank. Zeta held."),
    ]
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return hashed_embed(texts)

    chunked = chunk_corpus(docs, embed, threshold=50, buffer=1)
    assert calls == [5 + 1 + 0 + 6]
    for t in (0, 25, 50, 75, 90, 100):
        per_doc = [len(s) for _, s in chunked.chunks(t)]
        assert per_doc == [len(semantic_chunks(text, hashed_embed, t, 1)) for _, text in docs]
        assert chunked.with_threshold(t).n_chunks() == sum(per_doc)
    assert calls == [12]  # re-thresholding never embedded again
    assert chunked.n_sentences == 12
    assert [doc_id for doc_id, _ in chunked.chunk_texts()] == ["a", "b", "c", "d"]
    assert chunked.n_chunks(100) == 3  # one chunk per non-empty document


def test_chunk_spans_respects_given_breakpoints():
    text = "One. Two. Three. Four."
    s = split_sentences(text)
    assert [c.text for c in chunk_spans(text, s, [0, 2])] == ["One.", "Two. Three.", "Four."]
    assert [c.text for c in chunk_spans(text, s, [])] == [text]


@pytest.mark.slow
def test_real_model_on_a_sample_document():
    """MiniLM on a bundled transcript: properties hold and the chunk count is plausible."""
    from neswap_core.models.embedding import Embedder

    text = (SAMPLE_DOCS / "NYT_q3_2021.txt").read_text(encoding="utf-8")
    embedder = Embedder(cache_dir=None)
    chunked = chunk_corpus([("NYT", text)], embedder.encode, threshold=75)
    n_sent = chunked.n_sentences
    counts = [chunked.n_chunks(t) for t in (0, 50, 75, 90, 100)]
    assert counts == sorted(counts, reverse=True)
    assert counts[-1] == 1 and counts[0] <= n_sent
    # at the 75th percentile about a quarter of the gaps are cuts
    assert counts[2] == 1 + len(breakpoints_for(chunked.documents[0].distances, 75))
    assert 0.15 * n_sent <= counts[2] <= 0.35 * n_sent
    chunks = chunked.chunk_texts()[0][1]
    assert squash("".join(chunks)) == squash(text)
    assert embedder.n_embedded == n_sent  # one group per sentence, all distinct

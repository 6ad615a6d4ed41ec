"""The word n-gram counts of many texts at once against scikit-learn's own, text by text (issue 21)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from neswap_core.measure import row_memo
from neswap_core.measure import word_counts as word_counts_module
from neswap_core.measure.word_counts import plain_words, word_counts
from tests.vectorizer_texts import texts as sample_texts

DEV_DOCS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev" / "docs"



def _same(vectorizer, texts):
    expected = sparse.csr_matrix(CountVectorizer.transform(vectorizer, texts))
    expected.sort_indices()
    got = word_counts(vectorizer, texts)
    assert got is not None
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert got.indices.dtype == expected.indices.dtype
    np.testing.assert_array_equal(got.indptr, expected.indptr)
    np.testing.assert_array_equal(got.indices, expected.indices)
    np.testing.assert_array_equal(got.data, expected.data)
    assert got.has_sorted_indices


@pytest.mark.parametrize("settings", [
    {"ngram_range": (1, 2), "min_df": 1},
    {"ngram_range": (1, 1)},
    {"ngram_range": (2, 3)},
    {"ngram_range": (1, 3), "stop_words": "english"},
    {"ngram_range": (1, 2), "binary": True},
    {"ngram_range": (1, 2), "lowercase": False},
    {"ngram_range": (1, 2), "strip_accents": "unicode"},
    {"ngram_range": (1, 2), "preprocessor": lambda t: t.upper()},
])
def test_counts_equal_scikit_learn_s_for_each_setting(settings):
    vectorizer = CountVectorizer(**settings).fit(sample_texts(0, 300))
    _same(vectorizer, sample_texts(1, 400))


def test_a_tf_idf_vectorizer_s_raw_counts_keep_its_float_type():
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True).fit(sample_texts(2, 300))
    _same(vectorizer, sample_texts(3, 200))


@pytest.mark.skipif(not DEV_DOCS.is_dir(), reason="the dev corpus lives outside the project")
def test_counts_of_windows_of_the_dev_transcripts_equal_scikit_learn_s():
    lines = [ln for p in sorted(DEV_DOCS.iterdir())[:8]
             for ln in p.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=3).fit(lines)
    rng = random.Random(4)
    words = [ln.split() for ln in lines]
    windows = []
    for _ in range(2000):
        w = rng.choice(words)
        at = rng.randrange(max(1, len(w)))
        windows.append(" ".join(w[at:at + rng.randint(3, 40)]))
    _same(vectorizer, windows)


def test_a_text_holding_a_nul_is_left_to_scikit_learn_and_counted_the_same():
    vectorizer = CountVectorizer(ngram_range=(1, 2)).fit(sample_texts(5, 100))
    texts = ["revenue\x00grew margin", "revenue grew"]
    assert word_counts(vectorizer, texts) is None
    got = row_memo.counts(vectorizer, texts)
    expected = sparse.csr_matrix(CountVectorizer.transform(vectorizer, texts))
    assert (got != expected).nnz == 0


def test_only_scikit_learn_s_word_analyzer_of_the_default_pattern_is_counted_here():
    texts = sample_texts(6, 50)
    assert plain_words(CountVectorizer().fit(texts))
    assert not plain_words(CountVectorizer(analyzer="char_wb").fit(texts))
    assert not plain_words(CountVectorizer(token_pattern=r"\S+").fit(texts))
    assert not plain_words(CountVectorizer(tokenizer=str.split, token_pattern=None).fit(texts))
    assert not plain_words(CountVectorizer())  # not fitted


def test_the_row_memo_gives_the_same_rows_from_these_counts_and_from_its_views():
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=1).fit(sample_texts(7, 200))
    texts = sample_texts(8, 150)
    first = row_memo.transform(vectorizer, texts)
    again = row_memo.transform(vectorizer, list(reversed(texts)) + texts)  # every row from the memo
    expected = sparse.csr_matrix(vectorizer.transform(texts))
    for got in (first, again[len(texts):]):
        got.sort_indices()
        assert (abs(got - expected) > 0).nnz == 0
    np.testing.assert_array_equal(again[:len(texts)].toarray(), expected.toarray()[::-1])


def test_texts_counted_by_blocks_are_the_same_as_in_one(monkeypatch):
    vectorizer = CountVectorizer(ngram_range=(1, 2), min_df=1).fit(sample_texts(9, 200))
    texts = sample_texts(10, 301)
    whole = word_counts(vectorizer, texts)
    monkeypatch.setattr(word_counts_module, "BLOCK_TEXTS", 64)
    _same(vectorizer, texts)  # five blocks and a short one
    blocks = word_counts(vectorizer, texts)
    assert (blocks != whole).nnz == 0 and blocks.indices.dtype == whole.indices.dtype
    texts[200] = "a\x00b"  # a NUL in a later block: scikit-learn counts them all
    assert word_counts(vectorizer, texts) is None

"""scikit-learn's vectorizer fit with its counting in bulk against scikit-learn's own (issue 21)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from neswap_core.measure.fit_counts import count_vocab, counting_in_bulk
from neswap_core.measure.term_budget import fit_within_budget
from tests.vectorizer_texts import texts as sample_texts

DEV_DOCS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev" / "docs"


def _same_matrix(got, expected):
    got, expected = sparse.csr_matrix(got), sparse.csr_matrix(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert got.indices.dtype == expected.indices.dtype and got.indptr.dtype == expected.indptr.dtype
    np.testing.assert_array_equal(got.indptr, expected.indptr)
    np.testing.assert_array_equal(got.indices, expected.indices)
    np.testing.assert_array_equal(got.data, expected.data)  # bit for bit


SETTINGS = [
    ("word", {"ngram_range": (1, 2)}),  # left to scikit-learn: the same either way
    ("word", {"ngram_range": (1, 3), "stop_words": "english"}),
    ("char_wb", {"ngram_range": (2, 5)}),
    ("char_wb", {"ngram_range": (2, 5), "binary": True, "strip_accents": "unicode"}),
    ("char_wb", {"ngram_range": (1, 3), "min_df": 3, "max_df": 0.5}),
    ("char_wb", {"ngram_range": (2, 4), "lowercase": False, "max_features": 100}),
]


@pytest.mark.parametrize(("analyzer", "settings"), SETTINGS)
def test_the_counting_step_gives_scikit_learn_s_vocabulary_and_counts(analyzer, settings):
    texts = sample_texts(1, 300)
    reference = CountVectorizer(analyzer=analyzer, **settings)
    vocabulary, counts = reference._count_vocab(texts, False)
    got_vocabulary, got_counts = count_vocab(CountVectorizer(analyzer=analyzer, **settings), texts, False)
    assert list(got_vocabulary.items()) == list(vocabulary.items())  # same numbering, same order
    _same_matrix(got_counts, counts)


@pytest.mark.parametrize("kind", [CountVectorizer, TfidfVectorizer])
@pytest.mark.parametrize(("analyzer", "settings"), SETTINGS)
def test_a_fit_in_bulk_is_scikit_learn_s_fit(kind, analyzer, settings):
    texts = sample_texts(2, 400)
    reference = kind(analyzer=analyzer, **settings)
    expected = reference.fit_transform(texts)
    fitted = kind(analyzer=analyzer, **settings)
    with counting_in_bulk(fitted):
        got = fitted.fit_transform(texts)
    _same_matrix(got, expected)
    assert list(fitted.vocabulary_.items()) == list(reference.vocabulary_.items())
    assert "_count_vocab" not in vars(fitted)  # nothing of it left on the vectorizer
    assert pickle.dumps(fitted) == pickle.dumps(reference)
    _same_matrix(fitted.transform(texts[:50]), reference.transform(texts[:50]))


@pytest.mark.skipif(not DEV_DOCS.is_dir(), reason="the dev corpus lives outside the project")
@pytest.mark.parametrize(("analyzer", "ngrams"), [("word", (1, 2)), ("char_wb", (2, 5))])
def test_the_attackers_vectorizers_on_dev_transcripts_fit_as_scikit_learn_s(analyzer, ngrams):
    texts = [ln for p in sorted(DEV_DOCS.iterdir())[:6]
             for ln in p.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    reference = TfidfVectorizer(analyzer=analyzer, ngram_range=ngrams, min_df=3, sublinear_tf=True)
    fitted = TfidfVectorizer(analyzer=analyzer, ngram_range=ngrams, min_df=3, sublinear_tf=True)
    expected = reference.fit_transform(texts)  # far below the budget of 3 companies: no refit
    _same_matrix(fit_within_budget(fitted, texts, 3), expected)
    assert pickle.dumps(fitted) == pickle.dumps(reference)


def test_texts_it_cannot_take_are_counted_by_scikit_learn():
    texts = [b"revenue grew margin", "revenue grew"]
    reference = CountVectorizer(analyzer="char_wb", ngram_range=(2, 3))
    expected = reference.fit_transform(texts)
    fitted = CountVectorizer(analyzer="char_wb", ngram_range=(2, 3))
    with counting_in_bulk(fitted):
        _same_matrix(fitted.fit_transform(texts), expected)  # bytes: scikit-learn decodes them
    assert fitted.vocabulary_ == reference.vocabulary_
    with pytest.raises(ValueError, match="empty vocabulary"):
        count_vocab(CountVectorizer(analyzer="char_wb"), ["", "  "], False)


def test_a_budget_refit_keeps_the_most_frequent_terms_as_scikit_learn_does():
    texts = sample_texts(3, 500)
    reference = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5))
    reference.set_params(max_features=1000)
    expected = reference.fit_transform(texts)
    fitted = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5))
    got = fit_within_budget(fitted, texts, 8_000)  # 8,000,000 / 8,000 companies = 1,000 terms
    assert fitted.max_features == 1000
    _same_matrix(got, expected)
    assert pickle.dumps(fitted) == pickle.dumps(reference)

"""The log-odds z-score kept sparse (``models.log_odds.SparseLogOdds``, issue 21) against the
dense ``log_odds_z`` it replaces for the distinctive terms and the document defence's types."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse

from neswap_core.models.log_odds import DistinctiveTerms, SparseLogOdds, log_odds_z


def _counts(seed: int, shape=(7, 60), density=0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.poisson(3.0, shape) * (rng.random(shape) < density)
    m[2] = 0  # a class with no words
    m[:, 5] = 0  # a term nobody uses
    return m.astype(np.float64)


def test_every_entry_is_the_dense_z_bit_for_bit():
    for seed in range(5):
        m = _counts(seed)
        seen = m.sum(axis=0) > 0
        dense = np.zeros(m.shape)
        dense[:, seen] = log_odds_z(m[:, seen], 0.1 * m.sum())
        model = SparseLogOdds.of(sparse.csr_matrix(m), 0.1)
        cols = np.arange(m.shape[1])
        for k in range(m.shape[0]):
            assert np.array_equal(model.z(k, cols), dense[k])
            assert np.array_equal(model.z(k, cols[::-1]), dense[k][::-1])  # any order of columns
            idx, counts = model.row(k)
            assert np.array_equal(idx, np.flatnonzero(m[k])) and np.array_equal(counts, m[k][idx])


def test_a_class_s_own_word_scores_high_and_a_rival_s_low():
    m = np.array([[10.0, 1.0, 5.0], [0.0, 10.0, 5.0]])
    z = SparseLogOdds.of(sparse.csr_matrix(m), 0.1)
    assert z.z(0, np.array([0]))[0] > 2.0 > 0 > z.z(1, np.array([0]))[0]
    assert abs(z.z(0, np.array([2]))[0]) < 1.0  # used alike: not distinctive


def _dense_terms(texts, labels, **params) -> pd.DataFrame:
    """The distinctive-terms table computed the dense way (``log_odds_z`` on classes × terms)."""
    from sklearn.feature_extraction.text import CountVectorizer

    from neswap_core.models.log_odds import TOKEN_PATTERN

    model = DistinctiveTerms(**params)
    v = CountVectorizer(token_pattern=TOKEN_PATTERN, stop_words="english", ngram_range=model.ngram_range)
    X = v.fit_transform(texts)
    classes, inverse = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    member = sparse.csr_matrix((np.ones(len(inverse)), (inverse, np.arange(len(inverse)))),
                               shape=(len(classes), len(inverse)))  # fmt: skip
    counts = np.asarray((member @ X).todense())
    z = log_odds_z(counts, model.prior_share * counts.sum())
    names, rows = v.get_feature_names_out(), []
    for k, label in enumerate(classes):
        ok = np.flatnonzero((z[k] >= model.min_z) & (counts[k] >= model.min_count))
        for w in ok[np.argsort(-z[k, ok], kind="stable")][: model.top_k]:
            rows.append((str(label), names[w], float(z[k, w]), int(counts[k, w]), int(counts[:, w].sum() - counts[k, w])))
    return pd.DataFrame(rows, columns=["protected", "term", "z", "count_own", "count_rest"])


def test_distinctive_terms_are_the_dense_computation_s():
    rng = np.random.default_rng(3)
    shared = ["revenue", "margin", "growth", "orders", "pricing", "backlog", "customers"]
    own = {"A": ["broadband", "fiber", "spectrum"], "B": ["turbines", "gaskets", "torque"],
           "C": ["tidepools", "moorings", "harbor"]}  # fmt: skip
    texts, labels = [], []
    for label, words in own.items():
        for _ in range(30):
            texts.append(" ".join(rng.choice(shared + words, 12)))
            labels.append(label)
    for params in ({}, {"min_z": 0.5, "min_count": 1, "top_k": 4}, {"min_z": -5.0, "top_k": 100}):
        model = DistinctiveTerms(**params).fit(texts, labels)
        expected = _dense_terms(texts, labels, **params)
        pd.testing.assert_frame_equal(model.table_, expected)
        assert model.terms_ == {c: tuple(expected.term[expected.protected == c]) for c in own}
        w = expected.iloc[0]
        assert model.z_score(w.protected, w.term) == w.z


def test_distinctive_terms_keep_what_was_counted_not_classes_times_terms():
    """400 companies with 50 words of their own (39,600 terms with their phrases): the model that
    kept a dense classes × terms z pickled to 129 MB (and ``log_odds_z`` makes several such
    matrices while fitting); the fitted model holds the counts (issue 21)."""
    import pickle

    def letters(n: int) -> str:  # the term pattern reads letters only
        return "".join("abcdefghijklmnopqrstuvwxyz"[int(d)] for d in f"{n:03d}")

    texts = [" ".join(f"zq{letters(k)}x{letters(j)}" for j in range(50)) for k in range(400)]
    model = DistinctiveTerms(min_count=1, min_z=0.0).fit(texts, [f"c{k}" for k in range(400)])
    assert len(model.vocabulary_) >= 400 * 50
    assert len(pickle.dumps(model)) < 16e6
    assert model.terms_["c3"][0].startswith("zqaadx")

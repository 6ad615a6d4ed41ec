"""The linear models' term budget (issue 21): companies × terms stays under a bound that scipy's
L-BFGS-B can index (a 1,580-company, 100,000-passage corpus crashed the process)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from neswap_core.measure import term_budget as tb


def _texts(n_classes: int, per_class: int = 6, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(4_000)]
    texts, labels = [], []
    for c in range(n_classes):
        own = words[c * 40:(c + 1) * 40]
        for _ in range(per_class):
            texts.append(" ".join(list(rng.choice(words, 60)) + own))
            labels.append(f"company {c}")
    return texts, labels


def test_the_budget_divides_the_coefficients_among_the_companies():
    assert tb.term_budget(1_580) == tb.MAX_COEFFICIENTS // 1_580 == 5_063
    assert tb.term_budget(35) == 228_571  # the dev corpus: its ~40,000 terms are far below
    assert tb.term_budget(10**7) == 1_000  # never fewer than 1,000 terms
    assert 25 * tb.MAX_COEFFICIENTS < 2**31  # L-BFGS-B's workspace stays 32-bit indexable


def test_a_vocabulary_over_budget_keeps_its_most_frequent_terms(monkeypatch):
    texts, labels = _texts(40)
    monkeypatch.setattr(tb, "MAX_COEFFICIENTS", 40 * 1_200)
    bounded = TfidfVectorizer()
    x = tb.fit_within_budget(bounded, texts, 40)
    assert x.shape[1] == 1_200
    kept = bounded.get_feature_names_out()
    counts = CountVectorizer().fit_transform(texts).sum(axis=0).A1
    vocabulary = CountVectorizer().fit(texts).get_feature_names_out()
    inside = np.isin(vocabulary, kept)
    assert inside.sum() == 1_200 and counts[inside].min() >= counts[~inside].max()  # most frequent
    # within budget: the vectorizer is left as it was
    small = TfidfVectorizer()
    assert tb.fit_within_budget(small, texts, 2).shape[1] == len(vocabulary)
    assert small.max_features is None


@pytest.mark.parametrize("family", ["attacker", "panel"])
def test_the_attackers_fit_within_the_budget_and_still_name_companies(monkeypatch, family):
    from neswap_core.measure.attack import TextAttacker
    from neswap_core.measure.panel import LinearTextFamily

    texts, labels = _texts(40, seed=1)
    monkeypatch.setattr(tb, "MAX_COEFFICIENTS", 40 * 1_500)
    if family == "attacker":
        model = TextAttacker(min_df=1).fit(texts, labels)
        n_terms, predicted = model.n_features_, model.predict(texts)
    else:
        model = LinearTextFamily(min_df=1).fit(texts, labels)
        n_terms = len(model.vectorizer_.vocabulary_)
        predicted = model.classes_[model.chunk_scores(texts).argmax(axis=1)]
    assert n_terms == 1_500  # 4,000 words and their bigrams before the budget
    assert np.mean(np.asarray(predicted) == np.asarray(labels)) > 0.9

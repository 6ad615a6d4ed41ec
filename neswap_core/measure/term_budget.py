"""How many terms a multinomial linear model over many companies may have (issue 21, SPEC §8).

A logistic regression over k companies and v terms fits k × v coefficients; scikit-learn's
``lbfgs`` hands them to scipy's L-BFGS-B, whose workspace (about 25 doubles per coefficient)
is indexed with 32-bit integers: on a 100,000-passage corpus of 1,580 companies (about 160
million coefficients) the process died with a segmentation fault, taking the app's server
with it. ``fit_within_budget`` keeps k × v at most ``MAX_COEFFICIENTS`` by keeping the most
frequent terms (the vectorizer's own ``max_features``): 8 million coefficients is a 1.6 GB
workspace. The solver is now ``newton-cg`` (``models/logistic.py``), whose conjugate gradients
keep a few coefficient-sized vectors instead of L-BFGS-B's 25: the budget still bounds each
fit's memory and time, and keeps the models the same whichever solver. Corpora of a few dozen companies (the dev corpus: 35 × about 40,000 terms) are far
below it and unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from .fit_counts import counting_in_bulk

#: Most coefficients (companies × terms) of one linear model.
MAX_COEFFICIENTS = 8_000_000


def term_budget(n_classes: int, max_coefficients: int | None = None) -> int:
    """The most terms a model over ``n_classes`` companies may use (at least 1,000)."""
    limit = MAX_COEFFICIENTS if max_coefficients is None else max_coefficients
    return max(1_000, limit // max(int(n_classes), 1))


def fit_within_budget(vectorizer, texts: Sequence[str], n_classes: int):
    """``vectorizer.fit_transform(texts)``, refitted with ``max_features`` (the most frequent
    terms) when its vocabulary times ``n_classes`` exceeds ``MAX_COEFFICIENTS``."""
    with counting_in_bulk(vectorizer):  # scikit-learn's fit, its counting in bulk: the same result
        x = vectorizer.fit_transform(texts)
        budget = term_budget(n_classes)
        if x.shape[1] > budget:
            vectorizer.set_params(max_features=budget)
            x = vectorizer.fit_transform(texts)
    return x

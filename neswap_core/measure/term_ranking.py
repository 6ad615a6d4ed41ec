"""Term weights ranked the same on every machine: the words an attacker leans on (SPEC §8).

Apart from the attackers themselves so that the panel's word lists and the Check page need no
scikit-learn to rank kept weights (issue 21).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Decimals a term weight is compared at: weights equal to this precision are a tie. Two terms
#: that always occur together (a name and the bigram holding it) get weights equal up to the
#: BLAS summation order, whose last digits differ between CPUs.
WEIGHT_DECIMALS = 10


def ranked_weights(weights: np.ndarray, terms: np.ndarray, top: int | None = None) -> pd.Series:
    """``weights`` per term, largest first; ties (to ``WEIGHT_DECIMALS``) put the longer phrase
    first (it says more than the word inside it: "billable expenses", then "billable"), then
    term order, so the ranking is the same on every machine.

    ``top``: only the positive weights that can be among the ``top`` first positive ones (those
    at least the ``top``-th largest, rounded: ties kept), ranked as the whole ranking ranks
    them, so its first ``top`` positive terms are the whole ranking's. The attack report shows
    a document's ten words of thousands of character n-grams: sorting them all, by string, was
    a tenth of its time at 100,000 passages (issue 21)."""
    weights = np.asarray(weights, dtype=np.float64)
    if top is not None:
        keep = np.flatnonzero(weights > 0)
        if len(keep) > top:
            rounded = np.round(weights[keep], WEIGHT_DECIMALS)
            least = np.partition(rounded, len(rounded) - top)[len(rounded) - top] if top > 0 else np.inf
            keep = keep[rounded >= least]
        weights, terms = weights[keep], np.asarray(terms, dtype=object)[keep]
    terms = np.asarray(terms, dtype=object).astype(str)
    words = np.char.count(terms, " ") if len(terms) else np.zeros(0, dtype=np.int64)
    order = np.lexsort((terms, -words, -np.round(weights, WEIGHT_DECIMALS)))
    return pd.Series(weights[order], index=terms[order].astype(object))

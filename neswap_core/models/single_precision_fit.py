"""scikit-learn's logistic regression solved on float32 features, fitted as float64 (issue 21).

The library's solver (``models/logistic.py``) spends its time in the sparse products of its
conjugate gradients, which read the features and the search direction from memory; in single
precision they read half as much. The coefficients are handed back as float64, so every score
is computed from float64 features and coefficients as before.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression


class SinglePrecisionFit(LogisticRegression):
    """``LogisticRegression`` whose solver reads float32 features (about twice as fast, in the
    same Newton steps, the coefficients within the stopping rule of a float64 solve: see
    ``models/logistic.py``); ``coef_`` and ``intercept_`` are float64 as a plain fit's.
    Parameters and fitted attributes are scikit-learn's."""

    def fit(self, X, y, sample_weight=None):
        super().fit(single_precision(X), y, sample_weight)
        self.coef_ = np.asarray(self.coef_, dtype=np.float64)
        self.intercept_ = np.asarray(self.intercept_, dtype=np.float64)
        return self


def single_precision(x):
    """``x`` as float32 (sparse stays sparse; float32 input is used as given)."""
    if sparse.issparse(x):
        return x if x.dtype == np.float32 else x.astype(np.float32)
    x = np.asarray(x)
    return x if x.dtype == np.float32 else x.astype(np.float32)

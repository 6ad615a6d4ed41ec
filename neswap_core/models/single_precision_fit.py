"""scikit-learn's logistic regression solved on float32 features, fitted as float64 (issue 21).

The library's solver (``models/logistic.py``) spends its time in the sparse products of its
conjugate gradients, which read the features and the search direction from memory; in single
precision they read half as much. The coefficients are handed back as float64, so every score
is computed from float64 features and coefficients as before.

Sparse features are solved with their columns in order of how many rows use them (most first):
each non-zero of the products X·V and Xᵀ·G reads or writes the row of V or G of its term, and a
vocabulary in alphabetical order scatters the few terms nearly every passage uses across the
whole coefficient matrix (40,000 terms × 50 companies, 8 MB in float32: more than a core's
cache). Grouped at the front, the rows most read stay in cache: 13–16 % off each fit of the 100k
line-ups (``benchmarks/logistic_solvers.py``). The objective is the same under any order of the
columns (the penalty is a sum over coefficients), the same Newton steps are taken and the
coefficients differ only by float32 rounding of the products' sums (4e-6 on those line-ups,
against the stopping rule's 1e-4); they are put back in the vocabulary's order. The products
themselves run on MKL's sparse kernels (``sparse_products.MklProducts``): 40 % off each product,
a third off each of those fits with the order above.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from .sparse_products import MklProducts


class SinglePrecisionFit(LogisticRegression):
    """``LogisticRegression`` whose solver reads float32 features (about twice as fast, in the
    same Newton steps, the coefficients within the stopping rule of a float64 solve: see
    ``models/logistic.py``), sparse ones with their most used columns first and their products
    on MKL; ``coef_`` and
    ``intercept_`` are float64 as a plain fit's, in the columns' given order.
    Parameters and fitted attributes are scikit-learn's."""

    def fit(self, X, y, sample_weight=None):
        if sparse.issparse(X):
            x, rank = most_used_columns_first(X)
            x = MklProducts(x)
        else:
            x, rank = single_precision(X), None
        super().fit(x, y, sample_weight)
        coef = np.asarray(self.coef_, dtype=np.float64)
        self.coef_ = coef if rank is None else np.ascontiguousarray(coef[:, rank])
        self.intercept_ = np.asarray(self.intercept_, dtype=np.float64)
        return self


def most_used_columns_first(x) -> tuple[sparse.csr_matrix, np.ndarray]:
    """(``x`` as float32 CSR with its columns in order of decreasing number of non-zeros, ties
    in their given order; ``rank``: the new position of each given column), so that the given
    order's coefficients are ``coef[:, rank]``. Duplicate entries are summed, indices sorted."""
    x = sparse.csr_matrix(x)
    used = np.bincount(x.indices, minlength=x.shape[1])
    order = np.argsort(-used, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    out = sparse.csr_matrix((x.data.astype(np.float32), rank[x.indices].astype(x.indices.dtype),
                             x.indptr.copy()), shape=x.shape)  # fmt: skip
    out.sum_duplicates()  # sorts each row's new indices (and merges any duplicates)
    return out, rank


def single_precision(x):
    """``x`` as float32 (sparse stays sparse; float32 input is used as given)."""
    if sparse.issparse(x):
        return x if x.dtype == np.float32 else x.astype(np.float32)
    x = np.asarray(x)
    return x if x.dtype == np.float32 else x.astype(np.float32)

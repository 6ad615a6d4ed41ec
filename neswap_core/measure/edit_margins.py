"""The margin between two companies of a linear TF-IDF model, for passages and their edited
versions, from the terms an edit changes only (SPEC §12, issue 21).

The document defence asks, for every candidate type of every document, how far the margin
z_own − z_rival of each passage the type changes falls (``generate/document_budget.py``). For a
linear model on L2-normalised TF-IDF rows that margin is x·d / ‖x‖ + Δb, with x the passage's
unnormalised weights ((1 + log count) × idf with sublinear tf), d the difference of the two
companies' coefficient rows and Δb of their intercepts: it needs neither every company's score
(the log-softmax's normaliser cancels in a difference of log-probabilities) nor the edited row
whole. With S = x·d and Q = x·x of the passage before, an edit that changes the counts of terms
J gives

    S' = S + Σ_{j∈J} (x'_j − x_j) d_j,    Q' = Q + Σ_{j∈J} (x'_j² − x_j²),    margin' = S'/√Q' + Δb

(``count_delta.count_changes``: the changed counts from the words the spans touch). At 10,000
passages re-counting, re-weighting and scoring the edited rows against every company of the
line-up was half of the defence's type scoring. The figures agree with scoring the edited texts
whole to about 1e-12 (rounding: sums in another order; ``tests/test_edit_margins.py``); an edit
that leaves a passage (nearly) empty is scored from its whole row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse

from . import count_delta

#: Below this share of the squared norm before, an edited row's norm is computed from the row
#: itself (the difference Q + ΔQ would have lost its digits).
_CANCELLED = 1e-8


def supports(vectorizer) -> bool:
    """Whether the margins can be computed from changed terms: a fitted ``TfidfVectorizer``
    with L2 rows whose counts ``count_delta`` can change by windows."""
    return (count_delta.supports(vectorizer) and getattr(vectorizer, "norm", None) == "l2"
            and hasattr(vectorizer, "idf_") and getattr(vectorizer, "use_idf", False))


def _tf_idf(sublinear: bool, idf: np.ndarray, counts: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """Unnormalised TF-IDF weights of ``counts`` of ``terms`` (0 where the count is 0)."""
    tf = np.zeros_like(counts, dtype=np.float64)
    seen = counts > 0
    tf[seen] = np.log(counts[seen]) + 1.0 if sublinear else counts[seen]
    return tf * idf[terms]


def _row_weights(vectorizer, counts: sparse.csr_matrix) -> sparse.csr_matrix:
    x = sparse.csr_matrix(counts, dtype=np.float64, copy=True)
    x.data = _tf_idf(vectorizer.sublinear_tf, vectorizer.idf_, x.data, x.indices)
    return x


def _changed_sums(sublinear: bool, idf: np.ndarray, old: np.ndarray, new: np.ndarray, terms: np.ndarray,
                  owner: np.ndarray, direction: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(ΔS, ΔQ) of each of ``n`` rows whose ``terms`` go from count ``old`` to ``new``
    (``owner``: the row of each)."""
    w_old, w_new = _tf_idf(sublinear, idf, old, terms), _tf_idf(sublinear, idf, new, terms)
    return (np.bincount(owner, (w_new - w_old) * direction[terms], minlength=n),
            np.bincount(owner, w_new * w_new - w_old * w_old, minlength=n))


def summed_margins(sublinear: bool, idf: np.ndarray, direction: np.ndarray, total: np.ndarray,
                   changes: sparse.coo_matrix) -> tuple[float, np.ndarray, np.ndarray]:
    """Cosine margins of one summed count vector ``total`` (dense, one entry per term) and of
    ``total`` + each row of ``changes``: (margin before, margins after, rows whose norm
    cancelled — score those whole). The score is cos(x, ·) with x its TF-IDF weights, so the
    margin against a pair of unit profiles is x·``direction`` / ‖x‖ (whole-document retrieval)."""
    nz = np.flatnonzero(total)
    w = _tf_idf(sublinear, idf, total[nz], nz)
    s, q = float(w @ direction[nz]), float(w @ w)
    before = s / np.sqrt(q) if q > 0 else 0.0
    k, j = changes.row, changes.col
    old = total[j]
    new = old + changes.data
    if len(new) and new.min() < 0:
        raise RuntimeError("summed_margins: negative count; the windows missed a changed n-gram")
    ds, dq = _changed_sums(sublinear, idf, old, new, j, k, direction, changes.shape[0])
    s1, q1 = s + ds, q + dq
    cancelled = np.flatnonzero(q1 <= _CANCELLED * q)
    after = np.divide(s1, np.sqrt(np.maximum(q1, 0.0)), out=np.zeros_like(s1), where=q1 > 0)
    return before, after, cancelled


def linear_margins(vectorizer, direction: np.ndarray, offset: float, texts: Sequence[str],
                   edits: Sequence[tuple[int, Sequence[count_delta.Span]]]) -> tuple[np.ndarray, np.ndarray]:
    """(margins of ``texts``, margins of each edit's text) under the linear score
    x̂·``direction`` + ``offset`` of L2-normalised TF-IDF rows x̂ (``supports`` must hold)."""
    counts = count_delta.raw_counts(vectorizer, texts)
    x = _row_weights(vectorizer, counts)
    direction = np.asarray(direction, dtype=np.float64)
    s = np.asarray(x @ direction).ravel()
    q = np.asarray(x.multiply(x).sum(axis=1)).ravel()
    before = np.divide(s, np.sqrt(q), out=np.zeros_like(s), where=q > 0) + offset
    if not len(edits):
        return before, np.zeros(0)
    at = np.array([i for i, _ in edits], dtype=np.int64)
    changes = count_delta.count_changes(vectorizer, texts, edits)
    k, j = changes.row, changes.col
    old = np.asarray(counts[at[k], j], dtype=np.float64).ravel() if len(k) else np.zeros(0)
    new = old + changes.data
    if len(new) and new.min() < 0:  # a window missed an n-gram: a bug, never a wrong score
        raise RuntimeError("linear_margins: negative count; the windows missed a changed n-gram")
    ds, dq = _changed_sums(vectorizer.sublinear_tf, vectorizer.idf_, old, new, j, k, direction, len(edits))
    s1, q1 = s[at] + ds, q[at] + dq
    exact = np.flatnonzero(q1 <= _CANCELLED * q[at])
    if len(exact):  # nearly every weight removed: the edited rows themselves
        rows = _row_weights(vectorizer, count_delta.edited_counts(vectorizer, texts, counts,
                                                                  [edits[int(e)] for e in exact]))
        s1[exact] = np.asarray(rows @ direction).ravel()
        q1[exact] = np.asarray(rows.multiply(rows).sum(axis=1)).ravel()
    after = np.divide(s1, np.sqrt(np.maximum(q1, 0.0)), out=np.zeros_like(s1), where=q1 > 0) + offset
    return before, after

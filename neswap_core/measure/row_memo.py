"""A fitted vectorizer's rows remembered by text (SPEC §12, issue 21: re-score only what changed).

The panel scores every candidate's changed passages, and the candidates of one run share most
of them (a plan's rounds are cumulative, the document defence's levels nest, the attack report
scores the chosen candidate again). A vectorizer's row depends on its text alone, so each
distinct text is transformed once per fitted vectorizer and process; the matrix handed back has
exactly the rows ``transform`` gives (same values, same column order), so every score computed
from it is the same to the last bit. The memo lives beside the vectorizer, never inside it: a
pickled attacker (the panel's disk cache) carries no texts.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
from scipy import sparse

#: Distinct texts kept per vectorizer (about 1 kB each for chunk-sized texts); the memo starts
#: over when full, so memory stays bounded on any corpus.
MAX_TEXTS = 100_000

_MEMOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def transform(vectorizer, texts: Sequence[str]) -> sparse.csr_matrix:
    """``vectorizer.transform(texts)`` as CSR, each distinct text transformed once per process."""
    texts = [str(t) for t in texts]
    memo: dict[str, tuple[np.ndarray, np.ndarray]] = _MEMOS.setdefault(vectorizer, {})
    new = list(dict.fromkeys(t for t in texts if t not in memo))
    if len(memo) + len(new) > MAX_TEXTS:
        memo.clear()
        new = list(dict.fromkeys(texts))
    if new:
        fresh = sparse.csr_matrix(vectorizer.transform(new))
        fresh.sort_indices()
        for i, text in enumerate(new):
            lo, hi = fresh.indptr[i], fresh.indptr[i + 1]
            memo[text] = (fresh.data[lo:hi].copy(), fresh.indices[lo:hi].copy())
        dtype, width = fresh.dtype, fresh.shape[1]
    else:
        dtype = memo[texts[0]][0].dtype if texts else np.float64
        width = len(vectorizer.vocabulary_)
    rows = [memo[t] for t in texts]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(d) for d, _ in rows], out=indptr[1:])
    data = np.concatenate([d for d, _ in rows]) if rows else np.zeros(0, dtype)
    indices = np.concatenate([i for _, i in rows]) if rows else np.zeros(0, np.int32)
    return sparse.csr_matrix((data.astype(dtype, copy=False), indices, indptr),
                             shape=(len(rows), width))

"""Short descriptions of a fitted mixture's clusters: their most characteristic words and a
typical passage (SPEC §4; issue 13: "clusters are numbered 0–9 with no description").

Words: every word of a cluster's passages against the rest of the corpus by the log-odds ratio
with an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008; ``log_odds.log_odds_z``,
the same statistic as the distinctive-term swaps), highest z-score first. Decisions: alphabetic
words of ≥ 3 letters, lower-cased, English stop words and placeholders (``[Company Name]``) out;
a word must occur at least ``min_count`` times in the cluster and have z > 0; prior strength a
tenth of the corpus's word count, as for the terms.

Typical passage: the member whose embedding is nearest the cluster's mean direction μ_k (the
largest cosine xᵢᵀμ_k), i.e. the passage the component is centred on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..config import PLACEHOLDER_PATTERN
from .log_odds import log_odds_z

#: Words of ≥ 3 letters (shorter ones are mostly abbreviations and fragments).
WORD_PATTERN = r"(?u)\b[a-zA-Z][a-zA-Z]{2,}\b"
#: Prior strength α₀ as a share of the corpus's word count (as ``DistinctiveTerms``).
PRIOR_SHARE = 0.1


@dataclass(frozen=True)
class ClusterDescription:
    """What one cluster is about: its size, characteristic words and typical passage."""

    cluster: int
    size: int  # passages whose most likely cluster this is
    words: tuple[str, ...]  # most characteristic first
    typical: int | None  # index of the passage nearest the mean direction; None when empty


def characteristic_words(texts: Sequence[str], labels: np.ndarray, n_clusters: int, k: int = 6,
                         min_count: int = 2) -> list[tuple[str, ...]]:
    """Up to ``k`` words per cluster, most characteristic first (log-odds z against the rest)."""
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer

    labels = np.asarray(labels, dtype=int)
    cleaned = [re.sub(PLACEHOLDER_PATTERN, " ", t) for t in texts]
    try:
        counts = CountVectorizer(token_pattern=WORD_PATTERN, stop_words="english",
                                 lowercase=True)
        X = counts.fit_transform(cleaned)
    except ValueError:  # no word at all (tiny or empty corpus)
        return [() for _ in range(n_clusters)]
    member = sparse.csr_matrix((np.ones(len(labels)), (labels, np.arange(len(labels)))),
                               shape=(n_clusters, len(labels)))
    per_cluster = np.asarray((member @ X).todense(), dtype=np.float64)
    z = log_odds_z(per_cluster, PRIOR_SHARE * per_cluster.sum())
    words = counts.get_feature_names_out()
    out = []
    for c in range(n_clusters):
        ok = np.flatnonzero((per_cluster[c] >= min_count) & (z[c] > 0))
        best = ok[np.lexsort((words[ok], -z[c, ok]))][:k]
        out.append(tuple(str(words[i]) for i in best))
    return out


def typical_passages(x: np.ndarray, labels: np.ndarray, means: np.ndarray) -> list[int | None]:
    """Per cluster, the index of its member nearest the mean direction (largest xᵀμ_k)."""
    x = np.asarray(x, dtype=np.float64)
    labels = np.asarray(labels, dtype=int)
    cosine = x @ np.asarray(means, dtype=np.float64).T  # (n, K); rows of x are unit vectors
    out: list[int | None] = []
    for c in range(len(means)):
        idx = np.flatnonzero(labels == c)
        out.append(int(idx[np.argmax(cosine[idx, c])]) if len(idx) else None)
    return out


def describe_clusters(texts: Sequence[str], x: np.ndarray, labels: np.ndarray,
                      means: np.ndarray, k: int = 6) -> list[ClusterDescription]:
    """A ``ClusterDescription`` for every component of a fitted mixture (``means_``, MAP labels)."""
    n_clusters = len(means)
    if len(texts) != len(labels) or len(x) != len(labels):
        raise ValueError("texts, embeddings and labels must describe the same passages")
    words = characteristic_words(texts, labels, n_clusters, k)
    typical = typical_passages(x, labels, means)
    sizes = np.bincount(np.asarray(labels, dtype=int), minlength=n_clusters)
    return [ClusterDescription(c, int(sizes[c]), words[c], typical[c]) for c in range(n_clusters)]

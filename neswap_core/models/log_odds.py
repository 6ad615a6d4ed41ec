"""Distinctive terms of each protected value: the log-odds z-score (SPEC §10).

Much of what identifies a company is not a named entity: business lines, product words,
regional terms. ``DistinctiveTerms`` scores every word and two-word phrase of the corpus with
the log-odds ratio with an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008,
"Fightin' Words", eq. 16–22), one company against the rest of the corpus:

    δ_w = log[(y_iw + α_w) / (n_i + α₀ − y_iw − α_w)] − log[(y_rw + α_w) / (n_r + α₀ − y_rw − α_w)]
    σ²_w ≈ 1 / (y_iw + α_w) + 1 / (y_rw + α_w),     z_w = δ_w / σ_w,

with y counts of company i and of the rest r, n their totals, and the prior α_w = α₀ · y_w / n
(the corpus itself as background, Monroe's informative prior) of strength α₀ = ``prior_share``
· n pseudo-words (default 0.1: the prior adds a tenth of each word's corpus count). A term is
distinctive of i when z_w ≥ ``min_z`` and company i uses it at least ``min_count`` times; at most
``top_k`` per company, highest z first. The same statistic describes clusters
(cluster_description.py); ``generate/terms.py`` turns the terms into swappable spans.

Decisions: text inside entity spans and placeholders is not counted (entities are swapped on
their own); tokens are alphabetic words of ≥ 2 letters, lower-cased, English stop words out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from ..config import PLACEHOLDER_PATTERN
from ..corpus import Chunk
from ..errors import ConfigError, CorpusError

TOKEN_PATTERN = r"(?u)\b[a-zA-Z][a-zA-Z]+\b"
_PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)


def log_odds_z(counts: np.ndarray, prior_strength: float) -> np.ndarray:
    """z-scores of every term for each row (class) against the sum of the other rows.

    ``counts``: (classes, terms) non-negative counts; ``prior_strength``: α₀ in pseudo-words.
    Returns an array of the same shape.
    """
    y = np.asarray(counts, dtype=np.float64)
    total_w = y.sum(axis=0)
    n = total_w.sum()
    if n <= 0:
        raise CorpusError("No countable words in the corpus: the term statistics need text.")
    a0 = float(prior_strength)
    alpha = a0 * total_w / n
    n_i = y.sum(axis=1, keepdims=True)
    y_r, n_r = total_w[None, :] - y, n - n_i
    delta = np.log((y + alpha) / (n_i + a0 - y - alpha)) - np.log(
        (y_r + alpha) / (n_r + a0 - y_r - alpha)
    )
    var = 1.0 / (y + alpha) + 1.0 / (y_r + alpha)
    return delta / np.sqrt(var)


@dataclass(frozen=True, eq=False)
class SparseLogOdds:
    """``log_odds_z`` of a sparse count matrix, worked out only for the entries asked for.

    A dense classes × terms matrix grows with the companies and the vocabulary, which a real
    corpus both adds as it grows (issue 21: 1,580 companies and a million types would be 12.6 GB
    per matrix, and ``log_odds_z`` makes several). Each entry's z is ``log_odds_z``'s
    floating-point operations in the same order on the same exact integer sums, so the same
    bits (``tests/test_log_odds.py``, ``tests/test_document_defence.py``); a term the matrix
    never counts has z 0.
    """

    counts: sparse.csr_matrix  # classes × terms, duplicates summed, indices sorted
    total_w: np.ndarray  # per term: its count over every class
    n_i: np.ndarray  # per class: its count of every term
    n: float  # every count
    a0: float  # the prior's strength in pseudo-words

    @classmethod
    def of(cls, counts: sparse.spmatrix, prior_share: float) -> SparseLogOdds:
        """From (classes, terms) non-negative counts and α₀ as a share of their sum."""
        m = sparse.csr_matrix(counts, dtype=np.float64, copy=True)
        m.sum_duplicates()
        m.sort_indices()
        total_w = np.asarray(m.sum(axis=0), dtype=np.float64).ravel()
        n_i = np.asarray(m.sum(axis=1), dtype=np.float64).ravel()
        n = float(total_w.sum())
        return cls(m, total_w, n_i, n, prior_share * n)

    def row(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The terms class ``k`` counts (ascending) and their counts."""
        lo, hi = self.counts.indptr[k], self.counts.indptr[k + 1]
        return self.counts.indices[lo:hi].astype(np.int64), self.counts.data[lo:hi]

    def counts_of(self, k: int, cols: np.ndarray) -> np.ndarray:
        """Class ``k``'s counts of the terms ``cols``."""
        idx, data = self.row(k)
        if not len(idx):
            return np.zeros(len(cols))
        pos = np.minimum(np.searchsorted(idx, cols), len(idx) - 1)
        return np.where(idx[pos] == cols, data[pos], 0.0)

    def z(self, k: int, cols: np.ndarray) -> np.ndarray:
        """z of class ``k`` for the terms ``cols`` (``log_odds_z``'s entries [k, cols])."""
        cols = np.asarray(cols, dtype=np.int64)
        y, tw = self.counts_of(k, cols), self.total_w[cols]
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = self.a0 * tw / self.n
            n_i, n = self.n_i[k], self.n
            y_r, n_r = tw - y, n - n_i
            delta = np.log((y + alpha) / (n_i + self.a0 - y - alpha)) - np.log(
                (y_r + alpha) / (n_r + self.a0 - y_r - alpha)
            )
            var = 1.0 / (y + alpha) + 1.0 / (y_r + alpha)
            return np.where(tw > 0, delta / np.sqrt(var), 0.0)


def masked_text(chunk: Chunk) -> str:
    """The chunk's text with entity spans and placeholders blanked (kept length)."""
    text = list(chunk.text)
    regions = [(s.start, s.end) for s in chunk.entities]
    regions += [m.span() for m in _PLACEHOLDER.finditer(chunk.text)]
    for start, end in regions:
        text[start:end] = " " * (end - start)
    return "".join(text)


class DistinctiveTerms:
    """Words and phrases distinctive of each protected value (Monroe et al. log-odds z-score)."""

    def __init__(
        self,
        *,
        min_z: float = 3.0,
        min_count: int = 3,
        top_k: int = 60,
        ngram_range: tuple[int, int] = (1, 2),
        prior_share: float = 0.1,
    ) -> None:
        self.min_z = min_z
        self.min_count = min_count
        self.top_k = top_k
        self.ngram_range = ngram_range
        self.prior_share = prior_share

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> DistinctiveTerms:
        """Count terms per label and keep the distinctive ones (``terms_``, ``table_``)."""
        from sklearn.feature_extraction.text import CountVectorizer

        if len(texts) != len(labels) or not texts:
            raise CorpusError(f"Need one label per text, got {len(texts)} texts, {len(labels)} labels.")
        if self.prior_share <= 0 or self.top_k < 1 or self.min_count < 1:
            raise ConfigError("prior_share must be > 0, top_k and min_count >= 1.")
        vectorizer = CountVectorizer(
            token_pattern=TOKEN_PATTERN, stop_words="english", ngram_range=self.ngram_range
        )
        try:
            X = vectorizer.fit_transform(texts)
        except ValueError as exc:  # empty vocabulary
            raise CorpusError(f"No countable words for the term statistics: {exc}.") from exc
        self.classes_, inverse = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
        member = sparse.csr_matrix(
            (np.ones(len(inverse)), (inverse, np.arange(len(inverse)))),
            shape=(len(self.classes_), len(inverse)),
        )
        self.vocabulary_ = vectorizer.get_feature_names_out()
        self.log_odds_ = SparseLogOdds.of(member @ X, self.prior_share)
        rows = []
        self.terms_: dict[str, tuple[str, ...]] = {}
        for k, label in enumerate(self.classes_):
            # min_count >= 1: only the terms the class counts can qualify
            cols, counts = self.log_odds_.row(k)
            z = self.log_odds_.z(k, cols)
            ok = (z >= self.min_z) & (counts >= self.min_count)
            order = np.argsort(-z[ok], kind="stable")[: self.top_k]
            best, z_best, own = cols[ok][order], z[ok][order], counts[ok][order]
            self.terms_[str(label)] = tuple(self.vocabulary_[best])
            rest = self.log_odds_.total_w[best] - own
            rows += [(str(label), self.vocabulary_[w], float(zw), int(c), int(r))
                     for w, zw, c, r in zip(best, z_best, own, rest, strict=True)]  # fmt: skip
        self.table_ = pd.DataFrame(
            rows, columns=["protected", "term", "z", "count_own", "count_rest"]
        )
        return self

    def z_score(self, label: str, term: str) -> float:
        """The fitted z-score of ``term`` for ``label`` (KeyError for an unseen term)."""
        k = int(np.flatnonzero(self.classes_ == label)[0])
        w = int(np.flatnonzero(self.vocabulary_ == term.lower())[0])
        return float(self.log_odds_.z(k, np.array([w]))[0])


def fit_terms(chunks: Sequence[Chunk], **params) -> DistinctiveTerms:
    """Distinctive terms of each chunk's protected value, counted outside entities/placeholders."""
    return DistinctiveTerms(**params).fit([masked_text(c) for c in chunks], [c.protected for c in chunks])

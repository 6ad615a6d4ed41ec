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

import numpy as np
import pandas as pd

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
        from scipy import sparse

        member = sparse.csr_matrix(
            (np.ones(len(inverse)), (inverse, np.arange(len(inverse)))),
            shape=(len(self.classes_), len(inverse)),
        )
        counts = np.asarray((member @ X).todense())
        self.vocabulary_ = vectorizer.get_feature_names_out()
        self.z_ = log_odds_z(counts, self.prior_share * counts.sum())
        rows = []
        self.terms_: dict[str, tuple[str, ...]] = {}
        for k, label in enumerate(self.classes_):
            ok = np.flatnonzero((self.z_[k] >= self.min_z) & (counts[k] >= self.min_count))
            best = ok[np.argsort(-self.z_[k, ok], kind="stable")][: self.top_k]
            self.terms_[str(label)] = tuple(self.vocabulary_[best])
            rows += [(str(label), self.vocabulary_[w], float(self.z_[k, w]), int(counts[k, w]),
                      int(counts[:, w].sum() - counts[k, w])) for w in best]  # fmt: skip
        self.table_ = pd.DataFrame(
            rows, columns=["protected", "term", "z", "count_own", "count_rest"]
        )
        return self

    def z_score(self, label: str, term: str) -> float:
        """The fitted z-score of ``term`` for ``label`` (KeyError for an unseen term)."""
        k = int(np.flatnonzero(self.classes_ == label)[0])
        w = int(np.flatnonzero(self.vocabulary_ == term.lower())[0])
        return float(self.z_[k, w])


def fit_terms(chunks: Sequence[Chunk], **params) -> DistinctiveTerms:
    """Distinctive terms of each chunk's protected value, counted outside entities/placeholders."""
    return DistinctiveTerms(**params).fit([masked_text(c) for c in chunks], [c.protected for c in chunks])

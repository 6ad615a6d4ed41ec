"""The attacker panel's families as release scorers (SPEC §8, §12): one ``ReleaseScorer`` each.

So every family gets the measured columns of the reading attacker (chunk and document accuracy,
top 5, changed passages before/after, McNemar) from the same code, scored incrementally:

* per-chunk families (``word``, ``char``, ``embedding``, ``svm``, ``nb``, ``word_c1``): a
  ``ReleaseScorer`` over ``FamilyAttacker``, whose ``log_proba_at`` scores only the texts asked
  for (the changed chunks); the embedding family looks unchanged texts' vectors up and embeds the
  changed ones (the ``Embedder`` caches them by text);
* whole-document families (``retrieval``, ``bm25``): ``DocumentFamilyScorer``; a chunk is scored
  on its own words, a document on the sum of its chunks' word counts, which a release updates by
  the changed chunks' count deltas only (the documents holding no changed chunk keep their score).

Document ties with the true company count as named (pessimistic, as ``measure/panel.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import sparse

from . import row_memo
from .attack_scores import AttackMeasures, ReleaseScorer
from .lineups import SCORE_BLOCK, mask_rows, row_lineups
from .panel import (
    AttackerPanel,
    BM25Family,
    Family,
    LinearTextFamily,
    LineupFamily,
    RetrievalFamily,
)
from .term_ranking import ranked_weights

Embed = Callable[[list[str]], np.ndarray]


class FamilyAttacker:
    """A fitted per-chunk family with the ``log_proba_at(positions, texts)`` of the attackers."""

    def __init__(self, family: Family, pre_texts: Sequence[str], pre_vectors: np.ndarray | None = None,
                 embed: Embed | None = None) -> None:
        self.family, self.classes_ = family, family.classes_
        self.lineup_ = getattr(family, "lineup_", None)  # measure/lineups.py: the scorer masks
        self.pre_texts, self.pre_vectors, self.embed = list(pre_texts), pre_vectors, embed

    def _vectors(self, positions: np.ndarray, texts: list[str]) -> np.ndarray:
        same = np.array([self.pre_vectors is not None and self.pre_texts[p] == t
                         for p, t in zip(positions, texts, strict=True)], dtype=bool)  # fmt: skip
        new = [t for t, s in zip(texts, same, strict=True) if not s]
        fresh = None
        if new:
            if self.embed is None:
                raise ValueError("the embedding family needs an embed function for changed texts")
            fresh = np.asarray(self.embed(new), np.float64)
        known = self.pre_vectors if same.any() else None
        dim = fresh.shape[1] if fresh is not None else known.shape[1] if known is not None else 0
        out = np.empty((len(texts), dim))
        if known is not None:
            out[same] = known[positions[same]]
        if fresh is not None:
            out[~same] = fresh
        return out

    def log_proba_at(self, positions, texts, lineups=None) -> np.ndarray:
        """Scores of ``texts`` at ``positions``; ``lineups`` (each text's line-up): a line-up
        family scores each text by its own line-up's model only."""
        positions, texts = np.asarray(positions, dtype=np.int64), [str(t) for t in texts]
        if not texts:
            return np.zeros((0, len(self.classes_)))
        vectors = self._vectors(positions, texts) if self.family.needs_vectors else None
        if lineups is not None and (isinstance(self.family, LineupFamily) or self.family.whole_document):
            return np.asarray(self.family.chunk_scores(texts, vectors, lineups), dtype=np.float64)
        return np.asarray(self.family.chunk_scores(texts, vectors), dtype=np.float64)

    def term_weights(self, texts: Sequence[str], label: str, top: int | None = None) -> pd.Series:
        """The words that name ``label`` in ``texts`` (``family_term_weights``)."""
        return family_term_weights(self.family, texts, label, top)


def family_term_weights(family: Family, texts: Sequence[str], label: str, top: int | None = None) -> pd.Series:
    """Per n-gram, its weight for company ``label`` in the concatenation of ``texts`` (largest
    first): retrieval, the n-gram's share of the cosine to the company's profile (tf-idf of the
    texts × the profile's, both unit length); BM25, count × the profile's BM25 weight; LR and
    SVM, Σ tf-idf × coefficient; NB, count × (log p(word | company) − mean over companies).
    Empty for the embedding family, which reads no words."""
    if isinstance(family, LineupFamily):  # the model of the label's line-up
        part = family.part_of(label)
        return pd.Series(dtype=float) if part is None else family_term_weights(part, texts, label, top)
    classes = list(family.classes_)
    if label not in classes or not texts:
        return pd.Series(dtype=float)
    k = classes.index(label)
    if isinstance(family, RetrievalFamily):
        counts = sparse.csr_matrix(family.counts(list(texts)).sum(axis=0))
        if isinstance(family, BM25Family):
            contrib = counts.multiply(family.weights_[k])
        else:
            contrib = family._weigh(counts).multiply(family.profiles_[k])
        names = row_memo.feature_names(family.counter_)
    elif isinstance(family, LinearTextFamily):
        x = row_memo.transform(family.vectorizer_, texts)
        clf = family.clf_
        if family.model == "nb":
            row = clf.feature_log_prob_[k] - clf.feature_log_prob_.mean(axis=0)
        else:
            coef = clf.coef_
            row = coef[k] if coef.shape[0] > 1 else (coef[0] if k == 1 else -coef[0])
        contrib = sparse.csr_matrix(x.multiply(row).sum(axis=0))
        names = row_memo.feature_names(family.vectorizer_)
    else:
        return pd.Series(dtype=float)
    contrib = contrib.tocoo()
    return ranked_weights(contrib.data, names[contrib.col], top)


class DocumentFamilyScorer(ReleaseScorer):
    """A whole-document family (retrieval, BM25) as a release scorer (module docstring)."""

    ties_named = True

    def __init__(self, family: Family, texts: Sequence[str], labels: Sequence[str],
                 doc_ids: Sequence[str], *, name: str, pre: Mapping | None = None) -> None:
        self.family = family
        pre = pre or {}
        counts = pre.get("counts")
        ok = counts is not None and counts.shape[0] == len(texts)
        if counts is None or not ok:
            counts = family.counts([str(t) for t in texts])
        self.counts_ = counts.tocsr()
        super().__init__(FamilyAttacker(family, texts), texts, labels, doc_ids, name=name,
                         pre_log_proba=pre.get("log_proba") if ok else None)

    def _document_scores(self) -> None:
        """Each document scored on the sum of its passages' word counts (not of their scores),
        by blocks of documents (issue 21: documents × companies)."""
        n = len(self.texts)
        self.member_ = sparse.csr_matrix((np.ones(n), (self.doc_index_, np.arange(n))),
                                         shape=(len(self.documents_), n))  # fmt: skip
        self.doc_counts_ = (self.member_ @ self.counts_).tocsr()
        n_docs = len(self.documents_)
        blocks = np.array_split(np.arange(n_docs), -(-n_docs // SCORE_BLOCK)) if n_docs else []
        self._keep_documents([(docs, self._doc_rows(docs, self.doc_counts_[docs])) for docs in blocks])

    def _doc_rows(self, docs: np.ndarray, counts) -> np.ndarray:
        y = self.doc_y_[docs]
        return mask_rows(self.family.doc_scores(counts, lineups=row_lineups(y, self.lineup_)), y, self.lineup_)

    def _chunk_rows(self, positions: np.ndarray, counts) -> np.ndarray:
        """Scores of passages of word ``counts`` at ``positions`` (their line-ups' companies)."""
        return self.family.doc_scores(counts, lineups=row_lineups(self.y_[positions], self.lineup_))

    def _released_documents(self, positions: np.ndarray, rows: np.ndarray, counts):
        """The documents holding ``positions`` re-scored from their counts updated by the
        changed passages' count deltas (a document holding none keeps its score)."""
        if counts is None:
            raise ValueError("a whole-document family needs the changed chunks' word counts")
        docs, inverse = np.unique(self.doc_index_[positions], return_inverse=True)
        delta = sparse.csr_matrix(counts) - self.counts_[positions]
        member = sparse.csr_matrix((np.ones(len(positions)), (inverse, np.arange(len(positions)))),
                                   shape=(len(docs), len(positions)))  # fmt: skip
        return docs, self._doc_rows(docs, self.doc_counts_[docs] + member @ delta)

    def released_rows(self, positions: np.ndarray, texts: list[str]):
        """(scores, word counts) of released ``texts`` at ``positions``: a document's released
        score is made from its passages' counts (``_released_documents``)."""
        counts = self.family.counts(list(texts)).tocsr()
        return self._chunk_rows(positions, counts), counts

    def score_steps(self, steps: Sequence[Mapping[int, str]]) -> list[AttackMeasures]:
        flat_pos, flat_texts, cumulative = self.flat_steps(steps)
        if not flat_texts:
            return [self.pre_release() for _ in cumulative]
        counts = self.family.counts(flat_texts).tocsr()
        scores = self._chunk_rows(flat_pos, counts)
        return [self.measures(pos, scores[rows], counts[rows]) if len(rows) else self.pre_release()
                for pos, rows in cumulative]  # fmt: skip

    def measures(self, positions: np.ndarray, log_p: np.ndarray, counts=None) -> AttackMeasures:
        """Measures when the chunks at ``positions`` hold texts of word ``counts`` (chunk scores
        ``log_p``); the documents holding them are re-scored from their updated counts."""
        if len(positions) and counts is None:
            raise ValueError("a whole-document family needs the changed chunks' word counts")
        log_p, counts = np.asarray(log_p), None if counts is None else sparse.csr_matrix(counts)
        return self._measure(np.asarray(positions, dtype=np.int64), lambda at: (log_p[at], counts[at]))


class TieNamedScorer(ReleaseScorer):
    """A per-chunk family's scorer whose document ties count as named (module docstring)."""

    ties_named = True


def family_scorers(panel: AttackerPanel, texts: Sequence[str], labels: Sequence[str],
                   doc_ids: Sequence[str], *, vectors: np.ndarray | None = None,
                   embed: Embed | None = None, skip: Sequence[str] = (),
                   pre: Mapping[str, Mapping] | None = None) -> dict[str, ReleaseScorer]:
    """{family name: scorer of the pre-release ``texts``} for every fitted family of ``panel``
    but ``skip``. ``vectors``: the texts' embeddings (else ``embed`` computes them once);
    ``pre``: {family: ``pre_scores`` of an earlier run on the same texts} (not scored again)."""
    out: dict[str, ReleaseScorer] = {}
    pre = pre or {}
    for name, fam in panel.families_.items():
        if name in skip:
            continue
        if fam.whole_document:
            out[name] = DocumentFamilyScorer(fam, texts, labels, doc_ids, name=name, pre=pre.get(name))
            continue
        vecs = None
        if fam.needs_vectors:
            # as given (float32, often the preparation's mapped file): a float64 copy of every
            # vector was 0.3 GB at 100k (issue 21); rows are widened exactly when looked up
            if vectors is not None:
                vecs = np.asarray(vectors)
            elif embed is not None:
                vecs = np.asarray(embed(list(texts)))
            else:
                continue  # no way to embed: the embedding family is left out
        attacker = FamilyAttacker(fam, texts, vecs, embed)
        out[name] = TieNamedScorer(attacker, texts, labels, doc_ids, name=name,
                                   pre_log_proba=pre.get(name, {}).get("log_proba"))
    return out


def pre_scores(scorer: ReleaseScorer) -> dict:
    """What a scorer computed from the pre-release texts (log-probabilities; a whole-document
    family's word counts too), for ``family_scorers(pre=...)`` in a later run."""
    out = {"log_proba": scorer.pre_log_proba_}  # by line-up: ``lineups.LineupRows``
    if isinstance(scorer, DocumentFamilyScorer):
        out["counts"] = scorer.counts_
    return out

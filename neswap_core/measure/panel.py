"""The attacker panel (SPEC §8, §12): attackers of several families, scored incrementally.

Each *family* is a small estimator trained on the attacker's reading (other texts of the same
companies, cut into windows the size of the corpus's chunks) that names the company of a text:

=============  ===================================================================  ==========
name           model                                                                documents
=============  ===================================================================  ==========
``word``       TF-IDF word 1–2-grams (sublinear tf, min_df 3) + multinomial LR C=10  Σ chunk log p
               (exactly ``measure/attack.TextAttacker``)
``char``       TF-IDF ``char_wb`` 2–5-grams (sublinear, min_df 3) + LR C=10          Σ chunk log p
``embedding``  MiniLM vectors (``models/embedding.Embedder``, cached) + LR C=10      Σ chunk log p
``retrieval``  TF-IDF word 1–2-grams (sublinear) of each company's concatenated       whole document
               reading (idf over the company profiles); cosine, nearest company
=============  ===================================================================  ==========

Evaluation-only extras (families no defender models): ``bm25`` (Okapi BM25, k1 1.2, b 0.75,
word unigrams, company profiles as documents), ``svm`` (LinearSVC on the word TF-IDF, Σ
decision values), ``nb`` (multinomial NB on word 1–2-gram counts, α 0.1, Σ log p), ``word_c1``
(the word family with C=1).

*Chunk accuracy*: share of released chunks whose company is the family's first guess (a tie with
the true company counts as named: pessimistic). *Document accuracy*: share of documents named;
LR/NB/SVM families sum their chunk scores over a document's chunks (SPEC §8), retrieval families
score the whole document (the bag of its chunks' words: the sum of the chunks' count vectors).

``AttackerPanel(families).fit(texts, labels, doc_ids, embeddings)`` fits every family (fitted:
``classes_``, ``families_``). ``panel.scorer(texts, labels, doc_ids, embeddings, embed)`` scores
the pre-release corpus once; ``scorer.score(changed)`` with ``changed = {position: text}``
re-scores only the changed chunks and the documents holding them (``PanelScore``: per family
chunk and document accuracy, worst case over families). ``embed`` (texts -> unit vectors) is
only called for changed texts; the ``Embedder`` caches them by text.

``AttackerPanel(lineup=L)`` with more than L companies: **line-ups** (``measure/lineups.py``):
each per-chunk family is fitted once per line-up of at most L companies (``LineupFamily``), the
whole-document families once; every family carries ``lineup_`` and its scorers name a text
among its company's line-up only (conservative; linear fits instead of quadratic).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from ..config.defaults import PANEL_CORE_FAMILIES as CORE_FAMILIES
from ..config.defaults import PANEL_EXTRA_FAMILIES as EXTRA_FAMILIES
from ..models.blas_threads import single_blas_thread
from ..models.fit_processes import fit_processes, run_in_processes
from ..models.logistic import logistic_regression
from . import count_delta, edit_margins, row_memo
from .attack_scores import _ranks  # rank of the true class; ties count as named
from .fit_counts import counting_in_bulk
from .lineups import (
    MASKED,
    LineupModels,
    assign_lineups,
    lineup_count,
    lineup_rows,
    mask_rows,
    row_lineups,
)
from .term_budget import fit_within_budget

__all__ = ["CORE_FAMILIES", "EXTRA_FAMILIES", "AttackerPanel", "LineupFamily", "PanelScorer", "PanelScore",
           "make_family"]


def _softmax_log(scores: np.ndarray) -> np.ndarray:
    s = scores - scores.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def _l2(x):
    x = sparse.csr_matrix(x, dtype=np.float64)
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sparse.diags(1.0 / norms) @ x


def _per_class(decision: np.ndarray) -> np.ndarray:
    """One column per class: a two-class linear model gives one decision value d (for the
    second class), which is the pair (0, d) — its softmax is the model's probability."""
    return np.hstack([np.zeros_like(decision), decision]) if decision.shape[1] == 1 else decision


# --- families ----------------------------------------------------------------------------------
class Family:
    """Base of a family: ``fit``, ``chunk_scores`` (n, K) and, for whole-document families,
    ``counts`` (additive per-chunk rows) and ``doc_scores(summed counts)``."""

    whole_document = False
    needs_vectors = False
    classes_: np.ndarray
    lineup_: np.ndarray | None = None  # set with several line-ups (measure/lineups.py)

    def fit(self, texts, labels, doc_ids, vectors=None):  # pragma: no cover - interface
        raise NotImplementedError

    def chunk_scores(self, texts, vectors=None, lineups=None) -> np.ndarray:  # pragma: no cover
        """Scores (n, K) of ``texts``; ``lineups`` (each text's line-up): a family that can,
        scores each against its own line-up only (the other entries are masked anyway)."""
        raise NotImplementedError

    def edited_scores(self, texts, edits) -> np.ndarray:
        """``chunk_scores`` of ``texts[i]`` with ``spans`` replaced, for each ``(i, spans)`` of
        ``edits`` (``measure.count_delta``); text families count only the changed words."""
        return self.chunk_scores([count_delta.replaced_text(texts[i], spans) for i, spans in edits])

    def counts(self, texts):  # pragma: no cover - whole-document families only
        """Additive per-chunk rows (sparse counts) of ``texts``."""
        raise NotImplementedError(f"{type(self).__name__} scores chunks, not summed counts")

    def doc_scores(self, counts, columns=None, lineups=None) -> np.ndarray:  # pragma: no cover - whole-document families only
        """Scores (n, K) of documents given their summed ``counts``; ``columns``: only these
        classes' scores (n, len(columns)), the same numbers as those columns of all of them;
        ``lineups`` (each row's line-up, −1: every company): only the row's line-up is scored,
        every other entry ``MASKED`` (``by_lineup``)."""
        raise NotImplementedError(f"{type(self).__name__} scores chunks, not summed counts")


class LinearTextFamily(Family):
    """TF-IDF (any analyzer) + a linear classifier; scores are log-probabilities (LR, NB) or
    decision values (SVM)."""

    def __init__(self, *, analyzer="word", ngram_range=(1, 2), min_df=3, model="lr", C=10.0,
                 sublinear_tf=True, use_idf=True, random_state=0):
        self.analyzer, self.ngram_range, self.min_df = analyzer, ngram_range, min_df
        self.model, self.C, self.sublinear_tf, self.use_idf = model, C, sublinear_tf, use_idf
        self.random_state = random_state

    @single_blas_thread
    def fit(self, texts, labels, doc_ids=None, vectors=None):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
        from sklearn.naive_bayes import MultinomialNB
        from sklearn.svm import LinearSVC

        if self.model == "nb":
            self.vectorizer_ = CountVectorizer(analyzer=self.analyzer, ngram_range=self.ngram_range,
                                               min_df=self.min_df)
        else:
            self.vectorizer_ = TfidfVectorizer(analyzer=self.analyzer, ngram_range=self.ngram_range,
                                               min_df=self.min_df, sublinear_tf=self.sublinear_tf,
                                               use_idf=self.use_idf)
        x = fit_within_budget(self.vectorizer_, list(texts), len(set(map(str, labels))))
        if self.model == "lr":
            clf = logistic_regression(C=self.C, max_iter=2000, random_state=self.random_state)
        elif self.model == "svm":
            clf = LinearSVC(C=self.C, random_state=self.random_state)
        elif self.model == "nb":
            clf = MultinomialNB(alpha=self.C)
        else:
            raise ValueError(f"unknown model {self.model!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(x, np.asarray(labels, dtype=object))
        self.clf_, self.classes_ = clf, np.asarray(clf.classes_, dtype=object)
        return self

    def chunk_scores(self, texts, vectors=None, lineups=None) -> np.ndarray:
        return self._scores(row_memo.transform(self.vectorizer_, texts))

    def edited_scores(self, texts, edits) -> np.ndarray:
        counts = count_delta.edited_counts(self.vectorizer_, texts, None, edits)
        if self.model != "nb":  # what TfidfVectorizer.transform does after counting
            counts = sparse.csr_matrix(self.vectorizer_._tfidf.transform(counts, copy=False))
        return self._scores(counts)

    def edit_margins(self, texts, edits, a, b):
        """(margins z_a − z_b of ``texts``, of each edit's text) for companies ``a`` and ``b``,
        from the terms each edit changes (``measure/edit_margins.py``; equal to the difference
        of ``chunk_scores``/``edited_scores`` columns up to rounding); None when this family's
        vectorizer or model is not one it covers."""
        if self.model not in ("lr", "svm") or not edit_margins.supports(self.vectorizer_):
            return None
        classes = list(self.classes_)
        coef, intercept = self.clf_.coef_, np.asarray(self.clf_.intercept_, dtype=np.float64)
        if coef.shape[0] == 1:  # two classes: the pair (0, d), as in _per_class
            coef = np.vstack([np.zeros_like(coef[0]), coef[0]])
            intercept = np.array([0.0, intercept[0]])
        ia, ib = classes.index(a), classes.index(b)
        return edit_margins.linear_margins(self.vectorizer_, coef[ia] - coef[ib],
                                           float(intercept[ia] - intercept[ib]), texts, edits)

    def _scores(self, x) -> np.ndarray:
        if self.model == "nb":
            return self.clf_.predict_joint_log_proba(x) if hasattr(self.clf_, "predict_joint_log_proba") \
                else self.clf_.predict_log_proba(x)
        scores = _per_class(np.asarray(x @ self.clf_.coef_.T) + self.clf_.intercept_)
        return _softmax_log(scores) if self.model == "lr" else scores


class EmbeddingFamily(Family):
    """Sentence embeddings (given as ``vectors``) + multinomial LR."""

    needs_vectors = True

    def __init__(self, *, C=10.0, random_state=0):
        self.C, self.random_state = C, random_state

    @single_blas_thread
    def fit(self, texts, labels, doc_ids=None, vectors=None):
        if vectors is None:
            raise ValueError("the embedding family needs the reading's vectors")
        self.clf_ = logistic_regression(C=self.C, max_iter=3000, random_state=self.random_state)
        self.clf_.fit(np.asarray(vectors, dtype=np.float64), np.asarray(labels, dtype=object))
        self.classes_ = np.asarray(self.clf_.classes_, dtype=object)
        return self

    @single_blas_thread
    def chunk_scores(self, texts, vectors=None, lineups=None) -> np.ndarray:
        return _softmax_log(_per_class(np.asarray(vectors, np.float64) @ self.clf_.coef_.T + self.clf_.intercept_))


class RetrievalFamily(Family):
    """Whole-document TF-IDF retrieval against each company's concatenated reading."""

    whole_document = True

    def __init__(self, *, ngram_range=(1, 2), sublinear_tf=True):
        self.ngram_range, self.sublinear_tf = ngram_range, sublinear_tf

    def fit(self, texts, labels, doc_ids=None, vectors=None):
        from sklearn.feature_extraction.text import CountVectorizer

        labels = np.asarray(labels, dtype=object)
        self.classes_ = np.array(sorted(set(labels)), dtype=object)
        self.counter_ = CountVectorizer(ngram_range=self.ngram_range)
        with counting_in_bulk(self.counter_):  # the same counts, made in bulk
            c = self.counter_.fit_transform(list(texts))
        member = sparse.csr_matrix((np.ones(len(labels)), (np.searchsorted(self.classes_, labels),
                                    np.arange(len(labels)))), shape=(len(self.classes_), len(labels)))
        prof = (member @ c).tocsr()
        df = np.asarray((prof > 0).sum(axis=0)).ravel()
        n = prof.shape[0]
        self.idf_ = np.log((1.0 + n) / (1.0 + df)) + 1.0
        self.profiles_ = self._weigh(prof)
        return self

    def _weigh(self, counts):
        counts = sparse.csr_matrix(counts, dtype=np.float64)
        if self.sublinear_tf:
            counts.data = 1.0 + np.log(counts.data)
        return _l2(counts @ _idf_diagonal(self))

    def counts(self, texts):
        return row_memo.transform(self.counter_, texts).astype(np.float64)

    def edited_counts(self, texts, edits):
        """``counts`` of the texts of ``edits`` (see ``Family.edited_scores``), changed words only."""
        return count_delta.edited_counts(self.counter_, texts, None, edits).astype(np.float64)

    def doc_scores(self, counts, columns=None, lineups=None) -> np.ndarray:
        weighed = self._weigh(counts)
        if columns is None:
            return by_lineup(self, weighed, "profiles_", lineups)
        return np.asarray((weighed @ self.profiles_[columns].T).todense())

    def __getstate__(self):
        return _without_by_term(self)

    def type_margins(self, texts, edits, owners, n: int, total, a: int, b: int):
        """(margin cos_a − cos_b of the document whose passages are ``texts`` and summed counts
        ``total``, margins of it with each of ``n`` groups of ``edits`` applied, ``owners``: the
        group of each edit), from the terms the edits change (``measure/edit_margins.py``; the
        numbers of ``doc_scores`` up to rounding); None for a subclass scored otherwise."""
        if type(self) is not RetrievalFamily or not count_delta.supports(self.counter_):
            return None
        changes = count_delta.count_changes(self.counter_, texts, edits).tocsr()
        group = sparse.csr_matrix((np.ones(len(owners)), (owners, np.arange(len(owners)))),
                                  shape=(n, len(owners)))  # fmt: skip
        summed = sparse.csr_matrix(group @ changes)
        summed.sum_duplicates()
        summed.eliminate_zeros()
        pair = sparse.csr_matrix(self.profiles_[a] - self.profiles_[b])
        direction = np.zeros(self.profiles_.shape[1])
        direction[pair.indices] = pair.data
        dense = np.asarray(sparse.csr_matrix(total).todense(), dtype=np.float64).ravel()
        before, after, cancelled = edit_margins.summed_margins(self.sublinear_tf, self.idf_, direction,
                                                               dense, summed.tocoo())  # fmt: skip
        if len(cancelled):  # (nearly) every word removed: those documents scored whole
            whole = self.doc_scores(sparse.vstack([sparse.csr_matrix(total)] * len(cancelled)) + summed[cancelled],
                                    columns=[a, b])  # fmt: skip
            after[cancelled] = whole[:, 0] - whole[:, 1]
        return before, after

    def chunk_scores(self, texts, vectors=None, lineups=None) -> np.ndarray:
        return self.doc_scores(self.counts(texts), lineups=lineups)


class BM25Family(RetrievalFamily):
    """Okapi BM25 of a document (query, with its term frequencies) against company profiles."""

    def __init__(self, *, ngram_range=(1, 1), k1=1.2, b=0.75):
        super().__init__(ngram_range=ngram_range)
        self.k1, self.b = k1, b

    def fit(self, texts, labels, doc_ids=None, vectors=None):
        super().fit(texts, labels)
        c = self.counter_.transform(list(texts))
        labels = np.asarray(labels, dtype=object)
        member = sparse.csr_matrix((np.ones(len(labels)), (np.searchsorted(self.classes_, labels),
                                    np.arange(len(labels)))), shape=(len(self.classes_), len(labels)))
        tf = (member @ c).tocsr().astype(np.float64)
        n = tf.shape[0]
        df = np.asarray((tf > 0).sum(axis=0)).ravel()
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        length = np.asarray(tf.sum(axis=1)).ravel()
        norm = self.k1 * (1 - self.b + self.b * length / length.mean())
        tf = tf.tocoo()
        w = tf.data * (self.k1 + 1) / (tf.data + norm[tf.row]) * idf[tf.col]
        self.weights_ = sparse.csr_matrix((w, (tf.row, tf.col)), shape=tf.shape)
        return self

    def doc_scores(self, counts, columns=None, lineups=None) -> np.ndarray:
        if columns is None:
            return by_lineup(self, sparse.csr_matrix(counts), "weights_", lineups)
        return np.asarray((sparse.csr_matrix(counts) @ self.weights_[columns].T).todense())


def _idf_diagonal(family):
    """``sparse.diags(family.idf_)`` as the CSR matrix scipy converts it to in a product, made
    once per process and fitted ``idf_`` (the same product, bit for bit): made on every call it
    was ~16 of the document defence's CPU-seconds at 100k passages, one document at a time.
    Never pickled (``_without_by_term``)."""
    kept = family.__dict__.get("_idf_diagonal")
    if kept is None or kept[0] is not family.idf_:
        kept = family._idf_diagonal = (family.idf_, sparse.csr_matrix(sparse.diags(family.idf_)))
    return kept[1]


def _by_term(family, name: str):
    """``getattr(family, name).T`` (companies' profiles, one row per company) as CSR, made once
    per process and fitted matrix: a CSR product with the transposed (CSC) profiles converted
    them to CSR on every call — every document's score against every company, half of the
    document defence's type scoring at 100k passages (issue 21). The product is the same one,
    bit for bit (scipy converts the right operand to CSR itself). Never pickled."""
    matrix = getattr(family, name)
    kept = family.__dict__.get("_by_term")
    if kept is None or kept[0] is not matrix:
        kept = family._by_term = (matrix, matrix.T.tocsr())
    return kept[1]


def _lineup_by_term(family, name: str, g: int):
    """``_by_term`` of line-up ``g``'s companies only (terms × its companies, CSR), made once
    per process, fitted matrix and line-up. Never pickled."""
    matrix = getattr(family, name)
    kept = family.__dict__.get("_lineup_by_term")
    if kept is None or kept[0] is not matrix:
        kept = family._lineup_by_term = (matrix, {})
    if g not in kept[1]:
        kept[1][g] = matrix[np.flatnonzero(family.lineup_ == g)].T.tocsr()
    return kept[1][g]


def by_lineup(family, rows, name: str, lineups=None) -> np.ndarray:
    """``rows @ getattr(family, name).T``: each row's score against every company, or, with
    ``lineups`` (each row's line-up, −1: every company) and a family with line-ups, against
    its own line-up's companies only, every other entry ``MASKED`` — what ``mask_rows`` makes
    of them anyway. Scoring every passage and document against every company was passages ×
    companies, both proportional to the corpus (issue 21: a third of the attackers' scoring at
    100,000 passages); each entry kept is the same sum in the same order, bit for bit."""
    rows = sparse.csr_matrix(rows)
    if lineups is None or family.lineup_ is None:
        return np.asarray((rows @ _by_term(family, name)).todense())
    lineups = np.asarray(lineups, dtype=np.int64)
    out = np.full((rows.shape[0], len(family.classes_)), MASKED)
    whole = np.flatnonzero(lineups < 0)
    if len(whole):
        out[whole] = (rows[whole] @ _by_term(family, name)).toarray()
    for g in np.unique(lineups[lineups >= 0]):
        at = np.flatnonzero(lineups == g)
        out[np.ix_(at, np.flatnonzero(family.lineup_ == g))] = (rows[at] @ _lineup_by_term(family, name, g)).toarray()
    return out


#: What a fitted family makes for itself once per process (``_by_term``, ``_lineup_by_term``,
#: ``_idf_diagonal``): never pickled, never part of what a cache file holds.
PER_PROCESS = ("_by_term", "_lineup_by_term", "_idf_diagonal")


def _without_by_term(family) -> dict:
    state = family.__dict__.copy()
    for name in PER_PROCESS:
        state.pop(name, None)
    return state


class LineupFamily(LineupModels, Family):
    """A per-chunk family fitted once per line-up (``measure/lineups.py``), scored as one:
    column c of ``chunk_scores`` comes from the model of c's line-up."""

    def __init__(self, parts: list[Family], classes, lineup: np.ndarray) -> None:
        super().__init__(parts, classes, lineup)
        self.needs_vectors = bool(parts and parts[0].needs_vectors)

    def chunk_scores(self, texts, vectors=None, lineups=None) -> np.ndarray:
        """Scores of ``texts``; ``lineups`` (each text's line-up): each scored by its own only."""
        def score(part, rows):
            return part.chunk_scores([texts[i] for i in rows], None if vectors is None else np.asarray(vectors)[rows])

        return self._scores(score, len(texts), lineups)

    def edited_scores(self, texts, edits, lineups=None) -> np.ndarray:
        return self._scores(lambda part, rows: part.edited_scores(texts, [edits[i] for i in rows]), len(edits), lineups)

    def edit_margins(self, texts, edits, a, b):
        """``LinearTextFamily.edit_margins`` by the line-up model that knows both ``a`` and
        ``b`` (None when none does or it does not cover them)."""
        part = self.part_of(a)
        if part is None or b not in set(part.classes_) or not hasattr(part, "edit_margins"):
            return None
        return part.edit_margins(texts, edits, a, b)


def fit_lineup_calls(name: str, random_state: int, texts: list[str], labels: list[str], doc_ids,
                     vectors, classes: np.ndarray, lineup: np.ndarray) -> list:
    """The fits of family ``name``: one call, or one per line-up (``lineup``: the line-up of
    each of the sorted ``classes``) for a per-chunk family when there are several;
    ``assemble_family`` turns their results into one family."""
    fam = make_family(name, random_state)
    vectors = vectors if fam.needs_vectors else None
    if not split_by_lineup(fam, lineup):
        return [functools.partial(_fit_family, name, random_state, texts, labels, doc_ids, vectors)]
    calls: list = []
    for rows in lineup_rows(labels, classes, lineup):
        if len({labels[i] for i in rows}) < 2:
            continue  # a line-up of one company: nothing to tell apart (its columns stay masked)
        calls.append(functools.partial(
            _fit_family, name, random_state, [texts[i] for i in rows], [labels[i] for i in rows],
            None if doc_ids is None else [doc_ids[i] for i in rows],
            None if vectors is None else np.asarray(vectors)[rows]))
    return calls


def _chunk_scores(family: Family, texts, vectors, y: np.ndarray) -> np.ndarray:
    """``family.chunk_scores``; a line-up family scores each text by its true line-up's model,
    a whole-document family against its true line-up's companies only."""
    if isinstance(family, LineupFamily) or family.whole_document:
        return family.chunk_scores(texts, vectors, row_lineups(y, family.lineup_))
    return family.chunk_scores(texts, vectors)


def split_by_lineup(family: Family, lineup: np.ndarray) -> bool:
    """Whether ``family`` is fitted once per line-up: a per-chunk family with several line-ups
    (a whole-document family is linear in the corpus already: fitted once, masked alike)."""
    return lineup_count(lineup) > 1 and not family.whole_document


def assemble_family(fitted: list[tuple[Family, float]], classes, lineup: np.ndarray,
                    split: bool) -> tuple[Family, float]:
    """One family (and its fit seconds) from the results of ``fit_lineup_calls``'s calls
    (``split``: one per line-up); with more than one line-up it carries ``lineup_`` (even a
    whole-document family: its scores are masked to the line-up like the others')."""
    if not split:
        fam, seconds = fitted[0]
    else:
        fam = LineupFamily([f for f, _ in fitted], classes, lineup)
        seconds = float(sum(t for _, t in fitted))
    if lineup_count(lineup) > 1:
        fam.lineup_ = lineup
    return fam, seconds


def make_family(name: str, random_state: int = 0) -> Family:
    """A fresh family by name (see the module docstring)."""
    if name == "word":
        return LinearTextFamily(random_state=random_state)
    if name == "word_c1":
        return LinearTextFamily(C=1.0, random_state=random_state)
    if name == "char":
        return LinearTextFamily(analyzer="char_wb", ngram_range=(2, 5), random_state=random_state)
    if name == "svm":
        return LinearTextFamily(model="svm", C=1.0, random_state=random_state)
    if name == "nb":
        return LinearTextFamily(model="nb", C=0.1, random_state=random_state)
    if name == "embedding":
        return EmbeddingFamily(random_state=random_state)
    if name == "retrieval":
        return RetrievalFamily()
    if name == "bm25":
        return BM25Family()
    raise ValueError(f"unknown attacker family {name!r}")


# --- the panel -------------------------------------------------------------------------------
def _fit_family(name: str, random_state: int, texts, labels, doc_ids, vectors) -> tuple[Family, float]:
    """One family fitted (a worker's call: module-level, picklable), and its seconds."""
    import time

    t0 = time.perf_counter()
    fam = make_family(name, random_state).fit(texts, labels, doc_ids, vectors)
    return fam, time.perf_counter() - t0


class AttackerPanel:
    """Attackers of several families trained on one reading (module docstring).

    Parameters: ``families`` (names, see ``make_family``); ``random_state``; ``lineup``: at
    most this many companies per line-up (``measure/lineups.py``; None or 0: the whole reading
    at once). Fitted: ``families_`` {name: fitted family}, ``classes_`` (companies the reading
    holds), ``lineup_`` (the line-up of each of them), ``fit_seconds_`` {name: seconds}.
    """

    # set by measure/panel_cache.fitted_panel: read from its cache file, and the load or fit time
    loaded_from_cache_: bool
    cache_seconds_: float

    def __init__(self, families: Sequence[str] = CORE_FAMILIES, *, random_state: int = 0,
                 processes: int | None = None, lineup: int | None = None):
        self.families = tuple(families)
        self.random_state = random_state
        self.processes = processes  # fit processes (models.fit_processes; None: one per CPU)
        self.lineup = lineup

    def fit(self, texts: Sequence[str], labels: Sequence[str], doc_ids: Sequence[str] | None = None,
            vectors: np.ndarray | None = None) -> AttackerPanel:
        """Fit every family on the reading; independent fits, so on every core from
        ``models.fit_processes.MIN_TEXTS`` texts (the same bits as one after the other)."""
        texts, labels = [str(t) for t in texts], [str(v) for v in labels]
        if len(texts) != len(labels) or len(set(labels)) < 2:
            raise ValueError("the panel needs one label per text and at least two companies")
        names = [n for n in self.families  # no vectors given: the embedding family is left out
                 if vectors is not None or not make_family(n, self.random_state).needs_vectors]
        self.classes_ = np.array(sorted(set(labels)), dtype=object)
        self.lineup_ = lineup = assign_lineups(self.classes_, self.lineup)
        calls: list = []
        spans: list[tuple[str, int, int]] = []
        for n in names:  # one call per family, or per family and line-up
            mine = fit_lineup_calls(n, self.random_state, texts, labels, doc_ids, vectors, self.classes_, lineup)
            spans.append((n, len(calls), len(calls) + len(mine)))
            calls.extend(mine)
        fitted = run_in_processes(calls, fit_processes(len(texts), len(calls), self.processes))
        self.families_: dict[str, Family] = {}
        self.fit_seconds_: dict[str, float] = {}
        for n, a, b in spans:
            split = split_by_lineup(make_family(n, self.random_state), lineup)
            self.families_[n], self.fit_seconds_[n] = assemble_family(fitted[a:b], self.classes_, lineup, split)
        return self

    def scorer(self, texts, labels, doc_ids, vectors=None, embed=None) -> PanelScorer:
        return PanelScorer(self, texts, labels, doc_ids, vectors, embed)


@dataclass
class FamilyScore:
    chunk_accuracy: float
    document_accuracy: float
    named_documents: tuple = field(default=(), repr=False)
    chunk_named: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)  # per chunk
    doc_named: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)  # per scorer.documents_


@dataclass
class PanelScore:
    families: dict[str, FamilyScore]

    def worst(self, names: Sequence[str] | None = None) -> tuple[float, float]:
        """(max chunk accuracy, max document accuracy) over ``names`` (default: all families)."""
        names = list(names or self.families)
        return (max(self.families[n].chunk_accuracy for n in names),
                max(self.families[n].document_accuracy for n in names))

    def row(self, prefix: str = "") -> dict:
        out = {}
        for n, s in self.families.items():
            out[f"{prefix}{n}_chunk"] = s.chunk_accuracy
            out[f"{prefix}{n}_doc"] = s.document_accuracy
        return out


class PanelScorer:
    """Pre-release scores of a corpus under every family, ready to score releases fast."""

    def __init__(self, panel: AttackerPanel, texts, labels, doc_ids, vectors=None,
                 embed: Callable[[list[str]], np.ndarray] | None = None):
        self.panel, self.embed = panel, embed
        self.texts = [str(t) for t in texts]
        self.labels = np.asarray([str(v) for v in labels], dtype=object)
        self.doc_ids = np.asarray([str(d) for d in doc_ids], dtype=object)
        self.documents_, first, self.doc_index_ = np.unique(self.doc_ids, return_index=True,
                                                            return_inverse=True)  # fmt: skip
        self.vectors = None if vectors is None else np.asarray(vectors, np.float32)
        self.doc_labels_ = self.labels[first]
        self.pre_: dict[str, dict] = {}
        for name, fam in panel.families_.items():
            where = {c: i for i, c in enumerate(fam.classes_)}
            y = np.array([where.get(v, -1) for v in self.labels], dtype=np.int64)
            lineup = getattr(fam, "lineup_", None)
            state: dict = {"y": y, "doc_y": y[first], "lineup": lineup,
                     "chunk": mask_rows(_chunk_scores(fam, self.texts, self.vectors, y), y, lineup)}
            if fam.whole_document:
                member = sparse.csr_matrix((np.ones(len(self.texts)), (self.doc_index_, np.arange(len(self.texts)))),
                                           shape=(len(self.documents_), len(self.texts)))
                state["counts"] = fam.counts(self.texts).tocsr()
                state["doc_counts"] = (member @ state["counts"]).tocsr()
                state["doc"] = mask_rows(fam.doc_scores(state["doc_counts"], lineups=row_lineups(y[first], lineup)),
                                         y[first], lineup)  # fmt: skip
            else:
                doc = np.zeros((len(self.documents_), len(fam.classes_)))
                np.add.at(doc, self.doc_index_, state["chunk"])
                state["doc"] = doc
            self.pre_[name] = state

    def _vectors(self, texts: list[str]) -> np.ndarray:
        if self.embed is None:
            raise ValueError("the embedding family needs an embed function for changed texts")
        return np.asarray(self.embed(texts), np.float32)

    def score(self, changed: Mapping[int, str] | None = None,
              names: Sequence[str] | None = None) -> PanelScore:
        """Accuracies of the release that replaces the texts at the given positions."""
        changed = {int(p): str(t) for p, t in (changed or {}).items() if str(t) != self.texts[int(p)]}
        pos = np.fromiter(changed.keys(), dtype=np.int64, count=len(changed))
        new_texts = list(changed.values())
        names = [n for n in (names or self.panel.families_) if n in self.panel.families_]
        vec = None
        if pos.size and any(self.panel.families_[n].needs_vectors for n in names):
            vec = self._vectors(new_texts)
        out = {}
        for name in names:
            out[name] = self._score_family(name, pos, new_texts, vec)
        return PanelScore(out)

    def _score_family(self, name, pos, new_texts, vec) -> FamilyScore:
        fam, st = self.panel.families_[name], self.pre_[name]
        chunk = st["chunk"].copy()
        doc = st["doc"].copy()
        if pos.size:
            new = mask_rows(_chunk_scores(fam, new_texts, vec, st["y"][pos]), st["y"][pos], st["lineup"])
            if fam.whole_document:
                touched = np.unique(self.doc_index_[pos])
                new_counts = fam.counts(new_texts).tocsr()
                delta = new_counts - st["counts"][pos]
                member = sparse.csr_matrix((np.ones(len(pos)), (self.doc_index_[pos], np.arange(len(pos)))),
                                           shape=(len(self.documents_), len(pos)))
                doc_counts = (st["doc_counts"] + member @ delta)[touched]
                doc[touched] = mask_rows(fam.doc_scores(doc_counts, lineups=row_lineups(st["doc_y"][touched], st["lineup"])),
                                         st["doc_y"][touched], st["lineup"])  # fmt: skip
            else:
                np.add.at(doc, self.doc_index_[pos], new - chunk[pos])
            chunk[pos] = new
        rank = _ranks(chunk, st["y"])
        drank = _ranks(doc, st["doc_y"])
        named = drank == 0
        return FamilyScore(float(np.mean(rank == 0)), float(np.mean(named)),
                           tuple(self.documents_[named]), rank == 0, named)

    def subset(self, score: PanelScore, companies: set) -> PanelScore:
        """The same release's accuracies over the chunks/documents of ``companies`` only."""
        cm = np.isin(self.labels, list(companies))
        dm = np.isin(self.doc_labels_, list(companies))
        return PanelScore({n: FamilyScore(float(s.chunk_named[cm].mean()), float(s.doc_named[dm].mean()),
                                          (), s.chunk_named[cm], s.doc_named[dm])
                           for n, s in score.families.items()})

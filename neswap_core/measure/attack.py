"""Re-identification attackers (SPEC §8): TF-IDF word 1–2-grams + multinomial logistic regression.

An attacker names the protected metadata (the company) of a text. Two trained attackers:

* ``TextAttacker`` — the *reading attacker* when fitted on other texts of the same companies
  (the corpus's ``attacker/`` folder, see ``measure/reading.py``); it scores any text the same way
  wherever it sits in the corpus (``log_proba_at`` ignores the position).
* ``CrossFittedAttacker`` — the *in-corpus attacker*: each document's chunks are split into
  ``n_folds`` folds and a chunk is scored by the model trained on every other fold (other folds
  of the same document included). It has read the rest of the very document it attacks, so it is
  stronger (more pessimistic) than an outside reader; ``cross_fitted_proba`` is its functional
  form. A released chunk at position i is scored by the model that did not see chunk i.

With ``lineup`` (``text_attacker(lineup=L)``, ``CrossFittedAttacker(lineup=L)``) and more than
L companies, one model is fitted per line-up of at most L companies (``measure/lineups.py``) and
the scorers name a text among its company's line-up.

Both expose ``classes_`` and ``log_proba_at(positions, texts)``, the one call
``measures.ReleaseScorer`` needs, and ``term_weights`` (coefficient × tf-idf of a class) for the
"words that weighed most" view.

Decisions where SPEC is silent: scikit-learn's default tokeniser (lower-cased words of 2+
characters), so placeholders such as ``[Company Name]`` become the tokens "company name", the
same in every document and therefore worthless to the attacker; ``min_df=3`` (a term must occur
in three training texts: on the dev reading this keeps 28k of 121k 1–2-grams, trains several
times faster than ``min_df=1`` and names as many chunks, 0.767 vs 0.755); ``C=10`` (weak
regularisation: with ~35 classes and a few thousand short passages the default C=1 underfits
and reports a gentler attacker than a real reader would be); the multinomial model solved by
``newton-cg`` (``models/logistic.py``: the same objective and stopping rule as lbfgs, several
times faster on word features). Log-probabilities come from a log-softmax, so they stay finite without clipping; only a
class unseen by one fold model of the in-corpus attacker gets ``LOG_FLOOR`` (log 1e-300).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.feature_extraction.text import TfidfVectorizer

from ..errors import FitError
from ..models.blas_threads import single_blas_thread
from ..models.fit_processes import fit_processes, run_in_processes
from ..models.logistic import logistic_regression
from . import row_memo
from .lineups import (
    MASKED,
    SCORE_BLOCK,
    LineupRows,
    LineupTextAttacker,
    assign_lineups,
    lineup_count,
    lineup_rows,
    row_lineups,
    stack_rows,
    take_rows,
)
from .term_budget import fit_within_budget
from .term_ranking import ranked_weights

#: log(1e-300): the log-probability of a class a fold model never saw (keeps sums finite).
LOG_FLOOR = float(np.log(1e-300))
DEFAULT_C = 10.0
DEFAULT_FOLDS = 5


def _as_texts(texts: Sequence[str], what: str = "texts") -> list[str]:
    out = [str(t) for t in texts]
    if not out:
        raise FitError(f"No {what} given: the attacker needs at least one text.")
    return out


class TextAttacker(BaseEstimator):
    """TF-IDF (word n-grams, sublinear tf) + multinomial logistic regression (SPEC §8).

    Parameters: ``ngram_range`` word n-gram sizes (default 1–2); ``min_df`` minimum document
    frequency of a term (count); ``C`` inverse regularisation strength (> 0); ``max_iter`` of
    the solver (``models/logistic.py``); ``random_state`` for reproducibility. Fitted: ``classes_``, ``vectorizer_``,
    ``model_``, ``n_features_``.
    """

    def __init__(
        self,
        *,
        ngram_range: tuple[int, int] = (1, 2),
        min_df: int = 3,
        C: float = DEFAULT_C,
        max_iter: int = 2000,
        random_state: int | None = 0,
    ) -> None:
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.C = C
        self.max_iter = max_iter
        self.random_state = random_state

    @single_blas_thread
    def fit(self, texts: Sequence[str], labels: Sequence[str] | np.ndarray) -> TextAttacker:
        """Learn the vocabulary, idf and class weights from ``texts`` labelled by company."""
        import warnings

        texts = _as_texts(texts)
        y = np.asarray([str(v) for v in labels], dtype=object)
        if len(y) != len(texts):
            raise FitError(f"{len(texts)} texts but {len(y)} labels: give one label per text.")
        if len(set(y)) < 2:
            raise FitError(
                "The attacker needs texts of at least 2 companies to learn to tell them apart; "
                f"got only {sorted(set(y))}."
            )
        self.vectorizer_ = TfidfVectorizer(
            ngram_range=tuple(self.ngram_range), min_df=self.min_df, sublinear_tf=True
        )
        try:
            X = fit_within_budget(self.vectorizer_, texts, len(set(y)))
        except ValueError as exc:  # empty vocabulary: only placeholders / one-letter words
            raise FitError(f"The attacker found no words to learn from ({exc}).") from None
        self.model_ = logistic_regression(C=self.C, max_iter=self.max_iter, random_state=self.random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.model_.fit(X, y)
        self.classes_ = self.model_.classes_
        self.n_features_ = X.shape[1]
        return self

    def _check(self) -> None:
        if not hasattr(self, "model_"):
            raise NotFittedError("This TextAttacker is not fitted yet: call fit(texts, labels).")

    def transform(self, texts: Sequence[str]):
        """Sparse tf-idf rows of ``texts`` in the fitted vocabulary."""
        self._check()
        return row_memo.transform(self.vectorizer_, texts)  # each distinct text once

    def log_proba_from_features(self, X) -> np.ndarray:
        """Log-probabilities (n, n_classes) from tf-idf rows: one sparse product and a
        log-softmax, so they are finite and never clipped (a floor would change which company
        a document's sum names)."""
        scores = np.asarray(X @ self.model_.coef_.T) + self.model_.intercept_
        if scores.shape[1] == 1:  # binary: sklearn stores one row of coefficients
            scores = np.hstack([-scores, scores]) / 2.0
        scores -= scores.max(axis=1, keepdims=True)
        return scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))

    def predict_log_proba(self, texts: Sequence[str]) -> np.ndarray:
        return self.log_proba_from_features(self.transform(texts))

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Probability of each class (columns in ``classes_`` order) for each text."""
        return np.exp(self.predict_log_proba(texts))

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.classes_[self.predict_log_proba(texts).argmax(axis=1)]

    def log_proba_at(self, positions: Sequence[int], texts: Sequence[str], lineups=None) -> np.ndarray:
        """An outside reader scores a text the same wherever it sits: positions are ignored
        (and ``lineups``: one model knows every company)."""
        return self.predict_log_proba(texts)

    def term_weights(self, texts: Sequence[str], label: str, top: int | None = None) -> pd.Series:
        """Σ over ``texts`` of tf-idf × coefficient of class ``label``, per term (largest first;
        ``top``: as ``ranked_weights`` trims them)."""
        self._check()
        if label not in set(self.classes_):
            return pd.Series(dtype=float)
        k = int(np.flatnonzero(self.classes_ == label)[0])
        coef = self.model_.coef_
        row = coef[k] if coef.shape[0] > 1 else (coef[0] if k == 1 else -coef[0]) / 2.0
        X = self.transform(texts).tocsc()
        totals = np.asarray(X.multiply(row).sum(axis=0)).ravel()
        used = np.flatnonzero(X.getnnz(axis=0))
        names = row_memo.feature_names(self.vectorizer_)[used]
        return ranked_weights(totals[used], names, top)


def fold_assignment(
    groups: Sequence[str] | np.ndarray, n_folds: int = DEFAULT_FOLDS, random_state: int | None = 0
) -> np.ndarray:
    """Fold (0..n_folds−1) of every item: each group's items are shuffled and dealt round-robin
    from a random starting fold, so every document spreads over the folds and fold sizes balance."""
    if n_folds < 2:
        raise FitError(f"Cross-fitting needs at least 2 folds, got {n_folds}.")
    rng = np.random.default_rng(random_state)
    first: dict[str, int] = {}  # each group's number, in order of first appearance
    code = np.fromiter((first.setdefault(str(g), len(first)) for g in groups), dtype=np.int64)
    folds = np.empty(len(code), dtype=np.int64)
    order = np.argsort(code, kind="stable")  # a scan per group was groups × items (issue 21)
    for idx in np.split(order, np.cumsum(np.bincount(code, minlength=len(first)))[:-1]) if len(code) else []:
        start = int(rng.integers(n_folds))
        folds[idx[rng.permutation(len(idx))]] = (start + np.arange(len(idx))) % n_folds
    return folds


def _aligned(log_p: np.ndarray, model_classes: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Columns of ``log_p`` (in ``model_classes`` order) placed in ``classes`` order."""
    out = np.full((log_p.shape[0], len(classes)), LOG_FLOOR)
    where = {c: i for i, c in enumerate(classes)}
    out[:, [where[c] for c in model_classes]] = log_p
    return out


def share_terms(vectorizers) -> None:
    """Make each term that several fitted vectorizers know one string object (issue 21). The
    in-corpus attacker's five folds of each line-up learn mostly the same terms, each fitted in
    its own process: at 10k passages its 20 vocabularies held 403,220 strings for 44,232
    distinct terms. Shared, pickle writes each once and reads it back once (its in-memory
    objects 45 → 24 MB at 10k); the dicts map the same terms to the same columns."""
    pool: dict[str, str] = {}
    for vectorizer in vectorizers:
        vectorizer.vocabulary_ = {pool.setdefault(t, t): i for t, i in vectorizer.vocabulary_.items()}


def _fit_attacker(params: dict, texts: list[str], labels: np.ndarray) -> TextAttacker:
    """One fold's (or line-up's) attacker (a worker's call: module-level, picklable)."""
    return TextAttacker(**params).fit(texts, labels)


def _fit_scoring_attacker(params: dict, texts: list[str], labels: np.ndarray,
                          held: list[str]) -> tuple[TextAttacker, np.ndarray]:
    """A fold's (and line-up's) attacker and its log-probabilities of the ``held`` texts it
    was blind to (a worker's call: module-level, picklable)."""
    model = _fit_attacker(params, texts, labels)
    return model, model.predict_log_proba(held) if held else np.zeros((0, len(model.classes_)))


def lineup_attacker(parts: list[TextAttacker], where: dict | None = None) -> TextAttacker | LineupTextAttacker:
    """One model of several line-up attackers (``measure/lineups.py``; ``where``: the line-up
    of each company, default the part's index), or the only one."""
    if len(parts) == 1 and where is None:
        return parts[0]
    classes = np.array(sorted(c for p in parts for c in p.classes_), dtype=object)
    where = where or {c: g for g, p in enumerate(parts) for c in p.classes_}
    return LineupTextAttacker(parts, classes, np.array([where[c] for c in classes], dtype=np.int64))


def text_attacker(texts: Sequence[str], labels: Sequence[str], *, lineup: int | None = None,
                  C: float = DEFAULT_C, random_state: int | None = 0):
    """A ``TextAttacker`` fitted on ``texts``, or with more companies than ``lineup`` one per
    line-up (``measure/lineups.py``; on every core from ``models.fit_processes.MIN_TEXTS``)."""
    texts = _as_texts(texts)
    y = np.asarray([str(v) for v in labels], dtype=object)
    classes = np.array(sorted(set(y)), dtype=object)
    lineup_of = assign_lineups(classes, lineup)
    params = {"C": C, "random_state": random_state}
    if lineup_count(lineup_of) == 1:
        return TextAttacker(C=C, random_state=random_state).fit(texts, y)
    calls = [functools.partial(_fit_attacker, params, [texts[i] for i in rows], y[rows])
             for rows in lineup_rows(y, classes, lineup_of)
             if len(set(y[rows])) > 1]  # a line-up of one company: nothing to tell apart  # fmt: skip
    where = dict(zip(classes, lineup_of, strict=True))
    out = lineup_attacker(run_in_processes(calls, fit_processes(len(texts), len(calls))), where)
    out.classes_, out.lineup_ = classes, lineup_of  # every company, its columns masked if unfitted
    return out


class CrossFittedAttacker(BaseEstimator):
    """The in-corpus attacker: ``n_folds`` TextAttackers, each blind to one fold (SPEC §8).

    ``fit(texts, labels, groups)`` with ``groups`` the document id of each chunk (default: the
    label). ``lineup``: at most this many companies per line-up (``measure/lineups.py``: one
    model per fold and line-up; None: all companies at once). Fitted: ``classes_``, ``folds_``
    (fold of each position), ``models_`` (one per fold), ``lineup_`` (line-up of each class),
    ``row_lineup_`` (line-up of each position), ``oof_`` (out-of-fold log-probabilities of the
    fitted texts, kept by line-up: ``lineups.LineupRows``; with line-ups, other line-ups' columns
    at ``lineups.MASKED``) and ``oof_log_proba_``, the same made whole.
    """

    #: Its scores and term weights take each text's corpus position (the fold blind to it).
    positional = True

    def __init__(
        self,
        *,
        n_folds: int = DEFAULT_FOLDS,
        ngram_range: tuple[int, int] = (1, 2),
        min_df: int = 3,
        C: float = DEFAULT_C,
        random_state: int | None = 0,
        lineup: int | None = None,
    ) -> None:
        self.n_folds = n_folds
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.C = C
        self.random_state = random_state
        self.lineup = lineup

    def fit(
        self, texts: Sequence[str], labels: Sequence[str], groups: Sequence[str] | None = None
    ) -> CrossFittedAttacker:
        texts = _as_texts(texts)
        y = np.asarray([str(v) for v in labels], dtype=object)
        if len(y) != len(texts):
            raise FitError(f"{len(texts)} texts but {len(y)} labels: give one label per text.")
        self.folds_ = fold_assignment(y if groups is None else groups, self.n_folds,
                                      self.random_state)  # fmt: skip
        self.classes_ = np.array(sorted(set(y)), dtype=object)
        folds = [f for f in range(self.n_folds) if (self.folds_ == f).any()]
        params = {"ngram_range": self.ngram_range, "min_df": self.min_df, "C": self.C,
                  "random_state": self.random_state}
        self.lineup_ = assign_lineups(self.classes_, self.lineup)
        calls, jobs, held = [], [], []
        for f in folds:  # one model per fold (and line-up: measure/lineups.py)
            for rows in lineup_rows(y, self.classes_, self.lineup_):
                train = rows[self.folds_[rows] != f]
                if lineup_count(self.lineup_) > 1 and len(set(y[train])) < 2:
                    continue  # a line-up of one company in this fold: its columns stay LOG_FLOOR
                jobs.append(f)
                held.append(rows[self.folds_[rows] == f])
                calls.append(functools.partial(_fit_scoring_attacker, params, [texts[i] for i in train], y[train],
                                               [texts[i] for i in held[-1]]))  # fmt: skip
        done = run_in_processes(calls, fit_processes(len(texts), len(calls)))
        split = lineup_count(self.lineup_) > 1
        where = dict(zip(self.classes_, self.lineup_, strict=True)) if split else None
        fitted = {f: lineup_attacker([m for g, (m, _) in zip(jobs, done, strict=True) if g == f], where)
                  for f in dict.fromkeys(jobs)}  # fmt: skip
        self.models_: list[TextAttacker | LineupTextAttacker | None] = [fitted.get(f) for f in range(self.n_folds)]
        share_terms(part.vectorizer_ for model in fitted.values() for part in getattr(model, "parts_", [model]))
        # each position's line-up (its true company's): scored by that line-up's model only
        y_index = np.searchsorted(self.classes_, y)
        self.row_lineup_ = row_lineups(y_index, self.lineup_)
        self.oof_ = self._out_of_fold(fitted, y_index, [(at, m, p) for at, (m, p) in zip(held, done, strict=True)])
        return self

    def _out_of_fold(self, fitted: dict, y_index: np.ndarray, held: list[tuple]):
        """Each position's scores by the fold model blind to it, kept by line-up
        (``lineups.LineupRows``; dense with one line-up). ``held``: per fitted call, the
        positions it held out, its model and their scores by it, made by the call itself (in
        the fit workers: scored here, after the fits, they were half a minute of one process at
        100,000 passages, issue 21): each row as ``_fold_scores`` gives it, placed in its fold
        model's columns. Made in blocks of ``SCORE_BLOCK`` positions: a whole passages ×
        companies matrix grew as the corpus squared (1.3 GB at 100,000 passages and 1,587
        companies)."""
        n, k = len(y_index), len(self.classes_)
        call = np.full(n, -1, dtype=np.int64)
        row = np.zeros(n, dtype=np.int64)
        for i, (at, _, _) in enumerate(held):
            call[at], row[at] = i, np.arange(len(at))
        kept = []
        for at in np.array_split(np.arange(n), -(-n // SCORE_BLOCK)) if n else []:
            block = np.full((len(at), k), LOG_FLOOR)
            for f, model in fitted.items():
                local = np.flatnonzero(self.folds_[at] == f)
                if not len(local):
                    continue
                scores = np.full((len(local), len(model.classes_)), MASKED)  # a line-up no call fitted
                for i in np.unique(call[at[local]]):
                    if i < 0:
                        continue
                    mine = np.flatnonzero(call[at[local]] == i)
                    _, part, part_scores = held[i]
                    cols = np.searchsorted(model.classes_, part.classes_)
                    scores[np.ix_(mine, cols)] = part_scores[row[at[local[mine]]]]
                block[local] = _aligned(scores, model.classes_, self.classes_)
            kept.append(LineupRows.of(block, y_index[at], self.lineup_))
        return stack_rows(kept, k)

    @property
    def oof_log_proba_(self) -> np.ndarray:
        """Out-of-fold log-probabilities of the fitted texts, (n, classes)."""
        return take_rows(self.oof_, np.arange(self.oof_.shape[0]))

    def _check(self) -> None:
        if not hasattr(self, "models_"):
            raise NotFittedError("This CrossFittedAttacker is not fitted yet: call fit().")

    def _fold_scores(self, model, positions: np.ndarray, texts: list[str]) -> np.ndarray:
        """A fold model's log-probabilities of ``texts`` at ``positions``; with line-ups each
        text is scored by its position's line-up model only (the rest is masked anyway)."""
        if isinstance(model, LineupTextAttacker):
            rows = getattr(self, "row_lineup_", None)
            return model.predict_log_proba(texts, None if rows is None else rows[positions])
        return model.predict_log_proba(texts)

    def log_proba_at(self, positions: Sequence[int], texts: Sequence[str], lineups=None) -> np.ndarray:
        """Log-probabilities of ``texts`` released at ``positions``, each scored by the fold
        model that never saw the original chunk at that position (``lineups`` is not needed:
        the attacker knows each position's line-up)."""
        self._check()
        strings = [str(t) for t in texts]
        out = np.full((len(strings), len(self.classes_)), LOG_FLOOR)
        if len(strings) == 0:
            return out
        at = np.asarray(positions, dtype=np.int64)
        folds = self.folds_[at]
        for f in np.unique(folds):
            rows = np.flatnonzero(folds == f)
            model = self._fold_model(int(f))
            out[rows] = _aligned(self._fold_scores(model, at[rows], [strings[i] for i in rows]),
                                 model.classes_, self.classes_)  # fmt: skip
        return out

    def _fold_model(self, fold: int) -> TextAttacker | LineupTextAttacker:
        """The model blind to ``fold`` (a fold that holds a position always has one)."""
        model = self.models_[fold]
        if model is None:
            raise NotFittedError(f"Fold {fold} held no chunk when the attacker was fitted.")
        return model

    def term_weights(
        self, texts: Sequence[str], label: str, positions: Sequence[int] | np.ndarray | None = None,
        top: int | None = None,
    ) -> pd.Series:
        """Per term, Σ of tf-idf × coefficient of ``label`` under each position's fold model
        (``top``: as ``ranked_weights`` trims them)."""
        self._check()
        at = np.asarray(positions if positions is not None else [], dtype=np.int64)
        if len(at) != len(texts):
            raise FitError("term_weights of the in-corpus attacker needs one position per text.")
        parts = []
        for f in np.unique(self.folds_[at]):
            rows = np.flatnonzero(self.folds_[at] == f)
            parts.append(self._fold_model(int(f)).term_weights([texts[i] for i in rows.tolist()], label))
        if not parts:
            return pd.Series(dtype=float)
        total = pd.concat(parts).groupby(level=0).sum()
        return ranked_weights(total.to_numpy(), total.index.to_numpy(), top)


def cross_fitted_proba(
    texts: Sequence[str],
    labels: Sequence[str],
    n_folds: int = DEFAULT_FOLDS,
    random_state: int | None = 0,
    *,
    groups: Sequence[str] | None = None,
    C: float = DEFAULT_C,
) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probabilities of the in-corpus attacker and its classes (SPEC §8).

    ``groups`` are the document ids of the texts: each document's chunks are split over the folds.
    """
    model = CrossFittedAttacker(n_folds=n_folds, C=C, random_state=random_state)
    model.fit(texts, labels, groups)
    return np.exp(model.oof_log_proba_), model.classes_

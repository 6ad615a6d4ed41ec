"""The attackers' logistic regression (``models/logistic.py``, issue 21): newton-cg solves
scikit-learn's objective as well as lbfgs does, in a handful of Newton steps.

The reference is the exact optimum, approached by lbfgs run to a gradient below 1e-6 (the
library stops at 1e-4): the objective is strictly convex (an L2 penalty), so its optimum is
unique; on the bundled sample newton-cg's objective is within 1e-6 of it (lbfgs's, at the
library's tolerance, 2e-4 above it) and names every passage as the optimum does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from neswap_core.models.logistic import SOLVER, logistic_regression

SAMPLE = Path(__file__).resolve().parent.parent / "neswap_core" / "data" / "sample"


@pytest.fixture(scope="module")
def problem():
    """Word tf-idf rows of the bundled sample's two-sentence windows, labelled by company."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from neswap_core.measure.reading import sentence_windows
    from neswap_core.text.loading import load_corpus

    corpus = load_corpus(SAMPLE)
    texts, labels = [], []
    for doc in corpus.documents:
        for window in sentence_windows(doc.text, 2):
            texts.append(window)
            labels.append(corpus.protected_value(doc))
    x = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True).fit_transform(texts)
    return x, np.asarray(labels, dtype=object)


def _objective(model, x, y) -> tuple[float, float]:
    """scikit-learn's objective of a fitted model and its largest gradient element."""
    from sklearn._loss.loss import HalfMultinomialLoss
    from sklearn.linear_model._linear_loss import LinearModelLoss

    loss = LinearModelLoss(base_loss=HalfMultinomialLoss(n_classes=len(model.classes_)), fit_intercept=True)
    w = np.hstack([model.coef_, model.intercept_[:, None]]).ravel(order="F")
    target = np.searchsorted(model.classes_, y).astype(np.float64)
    value, grad = loss.loss_gradient(w, x, target, None, 1.0 / (model.C * x.shape[0]))
    return float(value), float(np.abs(grad).max())


def test_the_library_solver_reaches_the_optimum_in_a_few_newton_steps(problem):
    from sklearn.linear_model import LogisticRegression

    x, y = problem
    assert len(set(y)) == 10 and x.shape[0] > 500
    ours = logistic_regression(C=10.0, max_iter=2000).fit(x, y)
    lbfgs = LogisticRegression(C=10.0, max_iter=2000, solver="lbfgs").fit(x, y)
    exact = LogisticRegression(C=10.0, max_iter=20000, tol=1e-10, solver="lbfgs").fit(x, y)
    f_ours, g_ours = _objective(ours, x, y)
    f_lbfgs, _ = _objective(lbfgs, x, y)
    f_exact, g_exact = _objective(exact, x, y)
    assert g_exact < 1e-6
    assert g_ours <= 1e-4  # scikit-learn's stopping rule (tol)
    assert f_exact <= f_ours <= f_exact + 1e-6 * abs(f_exact)
    assert f_ours <= f_lbfgs  # at least as near the optimum as lbfgs at the same tolerance
    assert (ours.predict(x) == exact.predict(x)).mean() == 1.0
    # the reason for the change: a handful of Newton steps where lbfgs iterates tens of times
    assert SOLVER == "newton-cg" and ours.solver == "newton-cg"
    assert ours.n_iter_[0] <= 15 < lbfgs.n_iter_[0]


def test_every_attacker_and_defender_fits_with_the_library_solver(problem):
    """One place for the solver: the reading and in-corpus attackers, the panel's linear and
    embedding families, and both redaction defenders."""
    from neswap_core.generate.redaction import SmarterRedactor
    from neswap_core.generate.targeted import TargetedRedactor
    from neswap_core.measure.attack import TextAttacker
    from neswap_core.measure.panel import EmbeddingFamily, LinearTextFamily
    from neswap_core.measure.reading import sentence_windows
    from neswap_core.text.loading import load_corpus

    corpus = load_corpus(SAMPLE)
    texts, labels = [], []
    for doc in corpus.documents[:3]:
        for window in sentence_windows(doc.text, 3)[:20]:
            texts.append(window)
            labels.append(corpus.protected_value(doc))
    vectors = np.random.default_rng(0).normal(size=(len(texts), 8))
    solvers = [
        TextAttacker(min_df=1).fit(texts, labels).model_.solver,
        LinearTextFamily(min_df=1).fit(texts, labels).clf_.solver,
        EmbeddingFamily().fit(texts, labels, vectors=vectors).clf_.solver,
        SmarterRedactor().fit(texts, labels).model_.solver,
    ]
    targeted = TargetedRedactor(n_folds=1)
    fitted = []
    import neswap_core.generate.targeted as targeted_module

    real = targeted_module.logistic_regression
    targeted_module.logistic_regression = lambda **kw: fitted.append(real(**kw)) or fitted[-1]
    try:
        targeted.fit(texts, labels)
    finally:
        targeted_module.logistic_regression = real
    solvers += [m.solver for m in fitted]
    assert len(solvers) == 5 and set(solvers) == {SOLVER}


def test_the_solve_reads_single_precision_features_and_hands_back_a_float64_model(problem):
    """``SinglePrecisionFit``: the solver's arithmetic is float32 (each coefficient is a float32
    value; a float64 solve's are not), the fitted model is float64, and it is the float64
    solve's model within the stopping rule: the same Newton steps, coefficients within 1e-3
    (the objective's optimum is unique), every passage named alike."""
    from sklearn.linear_model import LogisticRegression

    x, y = problem
    ours = logistic_regression(C=10.0, max_iter=2000).fit(x, y)
    double = LogisticRegression(C=10.0, max_iter=2000, solver=SOLVER).fit(x, y)
    assert ours.coef_.dtype == ours.intercept_.dtype == np.float64
    assert np.array_equal(ours.coef_.astype(np.float32), ours.coef_)
    assert not np.array_equal(double.coef_.astype(np.float32), double.coef_)
    assert list(ours.n_iter_) == list(double.n_iter_)
    assert np.abs(ours.coef_ - double.coef_).max() < 1e-3
    assert (ours.predict(x) == double.predict(x)).all()
    np.testing.assert_allclose(ours.predict_log_proba(x), double.predict_log_proba(x), atol=1e-2)
    # float32 features are used as given (the embedding family's vectors)
    dense = np.random.default_rng(0).normal(size=(60, 5)).astype(np.float32)
    labels = np.array(["a", "b", "c"] * 20, dtype=object)
    assert logistic_regression(C=1.0, max_iter=100).fit(dense, labels).coef_.dtype == np.float64


def test_sparse_features_are_solved_most_used_columns_first_and_the_model_handed_back_in_their_order(problem, monkeypatch):
    """``most_used_columns_first``: a permutation of the columns (most non-zeros first, ties in
    their order) that the coefficients are put back from; the solver sees it, and the model is
    the one solved in the vocabulary's order: the same objective under any column order, the
    same Newton steps, the coefficients within float32 rounding of the products' sums."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    from neswap_core.models.single_precision_fit import most_used_columns_first, single_precision

    small = sparse.csr_matrix(np.array([[0, 1.5, 0, 2], [3, 0.5, 0, 0], [0, 4, 0, 1], [0, 0, 0, 7]]))
    moved, rank = most_used_columns_first(small)
    assert list(rank) == [2, 0, 3, 1]  # counts 1, 3, 0, 3: the two of 3 in their order, then 1, then 0
    assert moved.dtype == np.float32 and moved.has_canonical_format
    np.testing.assert_array_equal(moved.toarray()[:, rank], small.toarray().astype(np.float32))

    x, y = problem
    seen = []
    real_fit = LogisticRegression.fit
    monkeypatch.setattr(LogisticRegression, "fit", lambda self, X, *a, **k: seen.append(X) or real_fit(self, X, *a, **k))
    ours = logistic_regression(C=10.0, max_iter=2000).fit(x, y)
    used = np.diff(seen[0].tocsc().indptr)
    assert np.all(np.diff(used) <= 0) and not np.all(np.diff(np.diff(x.tocsc().indptr)) <= 0)
    given = LogisticRegression(C=10.0, max_iter=2000, solver=SOLVER).fit(single_precision(x), y)
    assert list(ours.n_iter_) == list(given.n_iter_)
    assert np.abs(ours.coef_ - given.coef_).max() < 1e-4
    np.testing.assert_allclose(ours.intercept_, given.intercept_, atol=1e-4)
    assert (ours.predict(x) == given.predict(x)).all()


def test_float32_products_run_on_mkl_within_rounding_of_scipys_and_the_solver_is_handed_them(problem, monkeypatch):
    """``MklProducts``: X·V and Gᵀ·X (float32) are scipy's sums within float32 rounding, other
    operands are scipy's own (bit for bit), torch's thread count is left as it was, and the
    library's fit hands newton-cg's products the MKL matrix."""
    import torch
    from sklearn.linear_model import LogisticRegression
    from sklearn.linear_model._linear_loss import LinearModelLoss

    from neswap_core.models.single_precision_fit import most_used_columns_first
    from neswap_core.models.sparse_products import MklProducts

    x, y = problem
    plain, _ = most_used_columns_first(x)
    fast = MklProducts(plain)
    rng = np.random.default_rng(0)
    v = rng.standard_normal((x.shape[1], 7)).astype(np.float32)
    g = rng.standard_normal((x.shape[0], 7)).astype(np.float32)
    threads = torch.get_num_threads()
    for ours, theirs in ((fast @ v, plain @ v), (g.T @ fast, g.T @ plain), (fast @ v[:, :1], plain @ v[:, :1])):
        assert ours.shape == theirs.shape and ours.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    assert torch.get_num_threads() == threads
    v64, g64 = v.astype(np.float64), g.astype(np.float64)  # not float32: scipy's products themselves
    assert np.array_equal(fast @ v64, plain @ v64) and np.array_equal(g64.T @ fast, g64.T @ plain)
    assert np.array_equal((fast @ v[:, 0]), plain @ v[:, 0])  # a vector: scipy's

    seen = []
    real = LinearModelLoss.gradient_hessian_product
    monkeypatch.setattr(LinearModelLoss, "gradient_hessian_product",
                        lambda self, w, X, *a, **k: seen.append(type(X)) or real(self, w, X, *a, **k))
    ours = logistic_regression(C=10.0, max_iter=2000).fit(x, y)
    assert seen and set(seen) == {MklProducts}
    given = LogisticRegression(C=10.0, max_iter=2000, solver=SOLVER).fit(plain, y)  # scipy's products
    assert list(ours.n_iter_) == list(given.n_iter_)
    assert (ours.predict(x) == given.predict(plain)).all()


def test_an_mkl_product_sets_torchs_one_thread_under_the_fits_lock_and_restores_it(problem, monkeypatch):
    """torch's thread count is one setting per process: a product toggles it to one thread only
    while holding ``blas_threads``' lock (the one every fit's BLAS limit takes), so another
    thread's fit never sees it restored mid-product; afterwards it is what it was."""
    import torch

    from neswap_core.models import blas_threads
    from neswap_core.models.single_precision_fit import most_used_columns_first
    from neswap_core.models.sparse_products import MklProducts

    x, _ = problem
    fast = MklProducts(most_used_columns_first(x)[0])
    v = np.ones((x.shape[1], 3), dtype=np.float32)
    seen = []
    real_mm = torch.mm
    monkeypatch.setattr(torch, "mm", lambda *a: seen.append((blas_threads._LOCK._is_owned(), torch.get_num_threads()))
                        or real_mm(*a))  # fmt: skip
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        fast @ v
        np.ones((3, x.shape[0]), dtype=np.float32) @ fast
        assert seen == [(True, 1), (True, 1)]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)

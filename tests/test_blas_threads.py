"""Fitted attackers do not depend on the BLAS thread count (models/blas_threads.py, issue 21).

A logistic regression fitted with two OpenBLAS threads differed in its last bits from one
fitted with one, so attack figures (and what the document defence chose from them) depended on
the machine's cores and OMP_NUM_THREADS. Each fit below runs once under a one-thread and once
under a two-thread limit set by the caller; the fitted coefficients must be the same bits.
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from neswap_core.measure.attack import TextAttacker
from neswap_core.measure.panel import make_family
from neswap_core.models.blas_threads import one_blas_thread


def _blas_threads() -> int:
    with threadpool_limits(limits=2, user_api="blas"):
        return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=0)


needs_two_threads = pytest.mark.skipif(
    _blas_threads() < 2, reason="BLAS cannot run two threads here: the thread count cannot differ")


def _corpus(n: int = 3000, classes: int = 24, seed: int = 0):
    """Texts whose words lean towards their company: a learnable, non-trivial problem."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(3000)])
    labels = rng.integers(0, classes, n)
    texts = []
    for y in labels:
        own = rng.integers(y * 100, y * 100 + 100, 12)
        shared = rng.integers(0, len(vocab), 28)
        texts.append(" ".join(vocab[np.concatenate([own, shared])]))
    return texts, [f"c{y}" for y in labels], [f"d{i // 10}" for i in range(n)], rng.normal(size=(n, 96)) + labels[:, None] * 0.02


def _fitted_under(limit: int, fit):
    with threadpool_limits(limits=limit, user_api="blas"):
        return fit()


@needs_two_threads
def test_a_text_attacker_is_the_same_with_one_or_two_blas_threads():
    texts, labels, _, _ = _corpus()
    one = _fitted_under(1, lambda: TextAttacker().fit(texts, labels))
    two = _fitted_under(2, lambda: TextAttacker().fit(texts, labels))
    assert one.model_.coef_.tobytes() == two.model_.coef_.tobytes()
    assert np.array_equal(one.predict_log_proba(texts[:50]), two.predict_log_proba(texts[:50]))


@needs_two_threads
@pytest.mark.parametrize("family", ["word", "embedding"])
def test_a_panel_family_is_the_same_with_one_or_two_blas_threads(family):
    texts, labels, docs, vectors = _corpus()
    one = _fitted_under(1, lambda: make_family(family, 0).fit(texts, labels, docs, vectors))
    two = _fitted_under(2, lambda: make_family(family, 0).fit(texts, labels, docs, vectors))
    assert one.clf_.coef_.tobytes() == two.clf_.coef_.tobytes()
    with threadpool_limits(limits=2, user_api="blas"):  # scoring, too
        scored = two.chunk_scores(texts[:200], vectors[:200])
    assert np.array_equal(one.chunk_scores(texts[:200], vectors[:200]), scored)


def test_the_limit_is_restored_after_the_block():
    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    with one_blas_thread():
        assert all(i["num_threads"] == 1 for i in threadpool_info() if i["user_api"] == "blas")
    assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before


def test_two_threads_take_turns_inside_the_limit():
    """The limit is one setting for the process: a second thread waits until the first leaves
    (else its exit would restore two threads under the other's fit)."""
    import threading

    inside, release, entered = threading.Event(), threading.Event(), []

    def first():
        with one_blas_thread():
            inside.set()
            release.wait(30)
            entered.append("first leaves")

    def second():
        inside.wait(30)
        with one_blas_thread():
            entered.append("second enters")

    a, b = threading.Thread(target=first), threading.Thread(target=second)
    a.start(), b.start()
    inside.wait(30)
    b.join(0.5)  # the second thread is still waiting for the first
    assert b.is_alive() and entered == []
    release.set()
    a.join(30), b.join(30)
    assert entered == ["first leaves", "second enters"]
    with one_blas_thread(), one_blas_thread():  # re-entrant: a fit inside a fit
        pass


@needs_two_threads
def test_the_spherical_mixture_is_the_same_with_one_or_two_threads():
    """Its float32 products run on torch (MKL) and its densities on BLAS: a process that had
    loaded the bf16 encoder (torch on one thread) fitted other bits than one that had not, and
    the disk memo shared them between processes (an app export and its CLI re-run disagreed)."""
    torch = pytest.importorskip("torch")
    from neswap_core.config import RunConfig
    from neswap_core.generate.context import fit_mixture

    rng = np.random.default_rng(0)
    centers = rng.normal(size=(12, 384))
    x = centers[rng.integers(0, 12, 1500)] + rng.normal(scale=2.0, size=(1500, 384))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    before = torch.get_num_threads()
    fitted = {}
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            with threadpool_limits(limits=threads, user_api="blas"):
                mixture = fit_mixture(x, RunConfig.of(corpus="."))
                fitted[threads] = (mixture.means_.tobytes(), mixture.component_log_density(x).tobytes())
            assert torch.get_num_threads() == threads  # torch's own count is given back
    finally:
        torch.set_num_threads(before)
    assert fitted[1] == fitted[2]


@needs_two_threads
def test_a_spawned_worker_fits_on_one_blas_thread_whatever_it_imported_first():
    """threadpoolctl limits the libraries loaded when it looks: a fresh worker that had not yet
    imported SciPy when its first fit started ran SciPy's BLAS on two threads, and its attackers
    differed in their last bits from the same fits in the parent (found when the app's modules
    began to import SciPy where they use it). NumPy's and SciPy's BLAS are loaded first now."""
    from neswap_core.models.fit_processes import run_in_processes
    from tests.blas_probe import blas_threads_seen

    for seen in run_in_processes([blas_threads_seen, blas_threads_seen], processes=2):
        assert len(seen) >= 2 and set(seen) == {1}, seen

"""One BLAS thread for every fitted attacker and defender: the same bits on any core count
(issue 21, SPEC §8).

OpenBLAS splits a dense product between its threads and adds the partial sums in an order that
depends on how many there are, so a logistic regression fitted with two threads differs in its
last bits from one fitted with one (the panel's word family on 4,450 dev reading passages: the
coefficients' absolute sum 0x1.e6643a5590f44p+15 with one thread, ...5592bdcp+15 with two).
Attack figures, the document defence's plans and so the written release then depended on the
machine's cores and ``OMP_NUM_THREADS``, and a disk memo filled under one setting served figures
a cold run under the other could not reproduce. ``one_blas_thread`` pins BLAS to one thread
for the duration of a fit or a dense scoring: the numbers no longer depend on the thread count
(tests/test_blas_threads.py), and the fits are faster on a shared 2-core machine (TF-IDF products
are sparse and never reach BLAS; the dense ones are small enough that a second thread only
waits: the word family 3.2 s instead of 7.4, char 9.1 instead of 15.9, beside a busy process).

The limit is BLAS's only (``user_api="blas"``): OpenMP users such as the bf16 MiniLM keep theirs.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_CONTROLLER: Any = None


def _controller():
    """threadpoolctl's view of the loaded BLAS libraries, made once (a scan of the process's
    shared libraries: about a millisecond, too slow for every scoring call).

    NumPy's and SciPy's BLAS are loaded before the scan: threadpoolctl limits only the libraries
    loaded when it looks, and a spawned fit worker that had not yet imported SciPy (its modules
    import it where used, issue 21) fitted on two BLAS threads while the parent fitted on one,
    so the same attacker differed in its last bits between a process and a worker."""
    global _CONTROLLER
    if _CONTROLLER is None:
        import numpy  # noqa: F401  (its BLAS)
        import scipy.linalg  # noqa: F401  (SciPy's own BLAS)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


#: BLAS's thread count is one setting for the whole process: two threads (two sessions of the
#: app) entering and leaving the limit in interleaved order would restore two threads under a
#: fit still running. One block at a time; re-entrant, for a fit inside a fit.
_LOCK = threading.RLock()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with every loaded BLAS library on one thread (module docstring)."""
    with _LOCK, _controller().limit(limits=1, user_api="blas"):
        yield


@contextmanager
def one_thread() -> Iterator[None]:
    """``one_blas_thread`` and, when PyTorch is loaded, its intra-op pool on one thread too: the
    spherical mixture's float32 products run on torch's MKL (``models.mixture_em``), whose sums
    also depend on the thread count. The mixture fitted by a process that had loaded the bf16
    encoder (which sets torch to one thread) differed in its last bits from one fitted before,
    and the disk memo shared the two between processes (an app export and its CLI re-run wrote
    different DU digits). torch's own count is restored afterwards."""
    torch = sys.modules.get("torch")
    with one_blas_thread():
        if torch is None:
            yield
            return
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


@contextmanager
def torch_one_thread() -> Iterator[None]:
    """PyTorch's intra-op pool (and so MKL's) on one thread for the block, under the same lock
    as ``one_blas_thread``: the fits' sparse products on MKL (``models.sparse_products``) run
    there, and two threads toggling torch's one process-wide count in interleaved order would
    leave a product on two threads (other sums) or the count at one for good. torch must be
    loaded; its count is restored afterwards."""
    torch = sys.modules["torch"]
    with _LOCK:
        before = torch.get_num_threads()
        if before != 1:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if before != 1:
                torch.set_num_threads(before)


def single_thread(fn: F) -> F:
    """``fn`` run inside ``one_thread`` (BLAS and torch on one thread: the mixture's fit)."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with one_thread():
            return fn(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def single_blas_thread(fn: F) -> F:
    """``fn`` run inside ``one_blas_thread`` (a decorator for fits and dense scorings)."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with one_blas_thread():
            return fn(*args, **kwargs)

    return wrapped  # type: ignore[return-value]

"""Independent model fits on every core, each the bits of the serial fit (issue 21, SPEC §8).

An attacker panel fits its families one after the other, the in-corpus attacker its folds, the
document defence's defender its members on two halves of the reading: independent fits, run on
one core while the other waits (at 10,000 passages the in-corpus attacker's five folds alone
took minutes). ``run_in_processes`` runs such calls in spawned worker processes. Every fit runs
with one BLAS thread (``models.blas_threads``) wherever it runs, so a fit in a worker is the
serial fit bit for bit (tests/test_fit_processes.py).

Below ``min_texts`` training texts (a test's corpus, the bundled sample) the workers' start-up
(importing scikit-learn, a few seconds) would cost more than the fits, and the calls run here.
They run here too when the workers cannot start (a script without a ``__main__`` guard).

``side_by_side`` runs two such batches at once in **one pool** of workers: a release's attacker
panel is one fit that cannot be split (its char_wb model: four minutes of one core at 10,000
passages) while the other core waits, and the in-corpus attacker's five folds can fill that
core. The second batch is submitted only once the first is queued, so the long fit starts first
and has a core to itself (longest first: each batch lists its biggest calls first); two pools,
one per batch, would share the cores evenly among four workers and make the long fit the last
to finish.
"""

from __future__ import annotations

import contextvars
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from .blas_threads import one_blas_thread

T = TypeVar("T")
U = TypeVar("U")

#: Fewer training texts than this: the fits run in this process (module docstring).
MIN_TEXTS = 2000


def _call(fn: Callable[[], Any]) -> Any:
    with one_blas_thread():
        return fn()


def fit_processes(n_texts: int, n_calls: int, processes: int | None = None,
                  min_texts: int | None = None) -> int:
    """Worker processes for ``n_calls`` fits on ``n_texts`` texts: 0 (run here) when there is
    one call, one CPU, or fewer texts than ``min_texts`` (default ``MIN_TEXTS``)."""
    n = (os.cpu_count() or 1) if processes is None else processes
    if n_calls < 2 or n < 2 or n_texts < (MIN_TEXTS if min_texts is None else min_texts):
        return 0
    if multiprocessing.current_process().daemon:
        return 0  # a daemonic worker may not start processes of its own
    return min(n, n_calls)


class FitsCancelled(Exception):
    """The gated fits were let go before their gate opened (``FitGate.cancel``)."""


class FitGate:
    """Holds ``side_by_side``'s fits at their first submission to the workers: everything
    before it (keys, cache reads, the calls made) runs at once, the fits once ``open()``
    (issue 21: at 100k passages the document defence's scoring leaves this process idle for
    minutes, and the fits' preparation, made after it beside the defence's levels, kept the
    cores waiting ~25 s). ``cancel()``: a held submission raises ``FitsCancelled``."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._cancelled = False

    def open(self) -> None:
        self._event.set()

    def cancel(self) -> None:
        self._cancelled = True
        self._event.set()

    @property
    def is_open(self) -> bool:
        return self._event.is_set() and not self._cancelled

    def wait(self) -> None:
        self._event.wait()
        if self._cancelled:
            raise FitsCancelled("the fits were let go before they started")


class _SharedPool:
    """The worker processes ``side_by_side``'s two batches submit to (module docstring);
    ``on_submit`` runs once the first batch's calls are queued. With a ``gate`` a submission
    waits for it (the other batch is started meanwhile, so it prepares too) and the second
    batch's calls are queued after the first's, as without a gate."""

    def __init__(self, processes: int, on_submit: Callable[[], None], gate: FitGate | None = None,
                 first: threading.Thread | None = None):
        self.processes, self.on_submit = processes, on_submit
        self.pool: ProcessPoolExecutor | None = None
        self.lock = threading.Lock()
        self.gate, self.first = gate, first
        self.first_queued = threading.Event()

    def submit_all(self, calls: Sequence[Callable[[], T]]) -> list[Future]:
        if self.gate is not None:
            first = threading.current_thread() is self.first
            if first:
                self.on_submit()  # the second batch prepares while this one waits
            self.gate.wait()
            if not first:
                self.first_queued.wait()  # the long fits first (module docstring)
        try:
            return self._submit(calls)
        finally:
            if threading.current_thread() is self.first:
                self.first_queued.set()

    def _submit(self, calls: Sequence[Callable[[], T]]) -> list[Future]:
        with self.lock:
            if self.pool is None:
                context = multiprocessing.get_context("spawn")  # never fork a process holding a model
                self.pool = ProcessPoolExecutor(self.processes, mp_context=context)
            return [self.pool.submit(_call, fn) for fn in calls]

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)


_SHARED: contextvars.ContextVar[_SharedPool | None] = contextvars.ContextVar("fit_pool", default=None)


def run_in_processes(calls: Sequence[Callable[[], T]], processes: int = 0) -> list[T]:
    """Each call's result, in order: computed in ``processes`` spawned workers (0 or 1: here),
    the biggest first as listed by the caller; each call under one BLAS thread. Calls must be
    picklable (``functools.partial`` of module-level functions). Inside ``side_by_side`` the
    workers are the ones both batches share."""
    shared = _SHARED.get()
    if processes >= 2 and shared is not None:
        try:
            futures = shared.submit_all(calls)
        except (BrokenProcessPool, OSError, RuntimeError):
            futures = None  # the workers could not start: run here
        finally:
            shared.on_submit()
        if futures is not None:
            try:
                return [f.result() for f in futures]
            except (BrokenProcessPool, OSError, RuntimeError):
                pass
    elif processes >= 2:
        context = multiprocessing.get_context("spawn")  # never fork a process holding a model
        try:
            with ProcessPoolExecutor(processes, mp_context=context) as pool:
                futures = [pool.submit(_call, fn) for fn in calls]
                return [f.result() for f in futures]
        except (BrokenProcessPool, OSError, RuntimeError):
            pass  # the workers could not start: run here
    return [_call(fn) for fn in calls]


def side_by_side(first: Callable[[], T] | None, second: Callable[[], U] | None,
                 gate: FitGate | None = None) -> tuple[T | None, U | None]:
    """``(first(), second())``, the two running at once when both are given (module
    docstring): ``first`` here, ``second`` in a thread started as soon as ``first`` has queued
    its fits (or has finished, when it fits here or reads a cache), both batches in one pool
    of one worker per CPU. Below ``MIN_TEXTS`` a batch fits here under one BLAS thread
    (``blas_threads.one_blas_thread`` lets one such block run at a time): the same results as
    one after the other. An error of ``first`` before ``second`` started is raised at once;
    otherwise an error of either is raised once both have stopped. ``gate``: the pool's
    submissions wait for it (``FitGate``), both batches prepared meanwhile."""
    if (first is None or second is None) and gate is None:
        return (None if first is None else first()), (None if second is None else second())
    later: list[Future] = []
    with ThreadPoolExecutor(1, thread_name_prefix="side-fit") as side:

        def start_second() -> None:
            if not later and second is not None:
                later.append(side.submit(context.run, second))

        shared = _SharedPool(os.cpu_count() or 1, start_second, gate, threading.current_thread())
        token = _SHARED.set(shared)
        context = contextvars.copy_context()  # the second batch's thread sees the shared pool
        try:
            try:
                out = None if first is None else first()
            except BaseException:
                if gate is not None and not gate.is_open:
                    gate.cancel()  # the second batch may be held at the gate: let it go
                raise
            finally:
                shared.first_queued.set()  # ``first`` queued nothing more (or failed)
            start_second()  # ``first`` never queued fits in the pool
            return out, (later[0].result() if later else None)
        finally:
            _SHARED.reset(token)
            if later:
                later[0].exception()  # wait for the second batch before closing the pool
            shared.shutdown()


def _lower_priority(niceness: int) -> None:
    if niceness > 0 and hasattr(os, "nice"):
        os.nice(niceness)


def _plain(fn: Callable[[], T]) -> T:
    return fn()


class InBackground:
    """``fn()`` computed in one spawned worker process while this one goes on (issue 21).

    The release's writer starts the adaptive attacker so (its defended reading, its fits and
    its scoring: most of the write at 10,000 passages) and meanwhile leak-scans, audits and
    writes the attack report here. The worker is not daemonic, so ``fn`` may start fit workers
    of its own. ``fn`` runs as it would here (BLAS threads as in this process): the same
    result. ``start=False``, or workers that cannot start (a script without a ``__main__``
    guard), compute it here when ``result()`` is asked for. ``fn`` must be picklable.
    ``niceness``: the worker's priority lowered by that much (``os.nice``), so it takes the
    cores the other work leaves idle (the writer's audit); computed here, ``fn`` keeps this
    process's priority."""

    def __init__(self, fn: Callable[[], Any], start: bool = True, niceness: int = 0):
        self.fn = fn
        self.pool: ProcessPoolExecutor | None = None
        self.future: Future | None = None
        if start:
            try:
                self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                                initializer=_lower_priority, initargs=(niceness,))  # fmt: skip
                self.future = self.pool.submit(_plain, fn)
            except (BrokenProcessPool, OSError, RuntimeError):
                self.close()

    @property
    def started(self) -> bool:
        return self.future is not None

    def result(self) -> Any:
        """``fn()``'s value (its error raised here); the worker is then closed."""
        try:
            if self.future is not None:
                try:
                    return self.future.result()
                except BrokenProcessPool:
                    pass  # the worker died or could not start: compute here
            return self.fn()
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker; a computation still running is abandoned (its process ended)."""
        pool, future = self.pool, self.future
        self.pool = self.future = None
        if pool is None:
            return
        if future is not None and not future.done():
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)

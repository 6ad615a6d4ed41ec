"""Local preprocessing in several processes that share the documents (issue 14, item 2).

Every process — this one and ``processes - 1`` forked workers — runs the same loop: take the
next documents from a shared counter, run the per-document chain on them (clean, chunk, tag:
``pipeline.prepare_batch``) and keep the result; after its last batch it embeds all its chunks
in one call (``finish``). Batches shrink towards the end
(guided scheduling, ``batch_size``) so the processes finish together. The results are put back
in corpus order; since a text's vector and its entities depend on the text alone, the output
is the same for any number of processes and any batch size (tested).

Why processes: on this 2-core machine the bf16 embedding model runs best on one intra-op thread
(two OpenMP threads spin-wait for each other, ``models/torch_minilm.py``), while two processes
each embedding half of the sentence groups run side by side at full speed (8.0 and 8.3 s for
1,700 groups each, alone 8.0 s). The earlier layout — one forked process for NER only — left
the second core idle three quarters of the time (NER is 10 of 50 CPU-seconds on the dev corpus).

Workers are forked before this process loads any model: each process loads its own spaCy
(``text.lazy_ner``: only if a text must be tagged) and MiniLM, because a forked PyTorch/OpenMP
thread pool can hang. Pass an embedder whose model is not loaded yet (``Embedder`` loads it on
first use).
Only on platforms with ``fork``; elsewhere the work runs in this process alone.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from ..errors import NeswapError

#: Processes used by default: one per CPU this process may run on, at most this many (each
#: holds its own spaCy and MiniLM, ~0.5 GB).
MAX_DEFAULT_PROCESSES = 4

#: The loop every forked worker runs; set just before the fork, inherited, never pickled.
_LANE: Any = None


def default_processes() -> int:
    """One process per usable CPU, at most ``MAX_DEFAULT_PROCESSES``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DEFAULT_PROCESSES))


def batch_size(remaining: int, batch_documents: int, processes: int) -> int:
    """Documents to take next: ``batch_documents``, shrinking to a ``1 / (2 × processes)`` share
    of what is left once that is smaller (guided scheduling), never below one."""
    if processes <= 1:
        return max(1, min(batch_documents, remaining))
    return max(1, min(batch_documents, -(-remaining // (2 * processes))))


@dataclass
class _Lane:
    """What every process needs: the work, the shared counters and the schedule."""

    run_batch: Callable[[int, int], Any]
    n_items: int
    taken: Any  # multiprocessing.Value: next item to take
    done: Any  # multiprocessing.Value: items finished, for progress
    batch_documents: int
    processes: int
    finish: Callable[[list[Any]], None] | None = None

    def take(self) -> tuple[int, int] | None:
        with self.taken.get_lock():
            lo = self.taken.value
            if lo >= self.n_items:
                return None
            hi = lo + batch_size(self.n_items - lo, self.batch_documents, self.processes)
            self.taken.value = hi
        return lo, hi

    def stop(self) -> None:
        """No further batch is taken (after a failure)."""
        with self.taken.get_lock():
            self.taken.value = self.n_items

    def run(self, after_batch: Callable[[int], None] | None = None) -> list[tuple[int, Any]]:
        results = []
        while (span := self.take()) is not None:
            results.append((span[0], self.run_batch(*span)))
            with self.done.get_lock():
                self.done.value += span[1] - span[0]
                finished = self.done.value
            if after_batch is not None:
                after_batch(finished)
        if self.finish is not None and results:
            self.finish([result for _, result in results])
        return results


def _worker() -> tuple[list[tuple[int, Any]], float]:
    start = time.process_time()
    try:
        results = _LANE.run()
    except BaseException:
        _LANE.stop()  # the counter is shared: the main process takes no further batch either
        raise
    return results, time.process_time() - start


def run_in_lanes(
    run_batch: Callable[[int, int], Any],
    n_items: int,
    processes: int = 1,
    batch_documents: int = 8,
    progress: Callable[[float], None] | None = None,
    finish: Callable[[list[Any]], None] | None = None,
) -> tuple[list[Any], float]:
    """``run_batch(lo, hi)`` over ``range(n_items)`` in ``processes`` processes.

    ``finish(results)``, when given, is called once by every process on the results of the
    batches it ran, after the last one (to do work that is cheaper in one call, in place).
    Returns every batch's result in item order and the CPU-seconds the workers spent (0 when
    everything ran here). ``progress(share_done)`` is called here after each batch this process
    finishes. An error in any process stops the others taking batches and is raised here.
    """
    global _LANE
    processes = max(1, int(processes))
    if "fork" not in multiprocessing.get_all_start_methods() or n_items < 2:
        processes = 1
    context = multiprocessing.get_context("fork" if processes > 1 else None)
    lane = _Lane(run_batch, n_items, context.Value("l", 0), context.Value("l", 0),
                 max(1, int(batch_documents)), processes, finish)
    report = (lambda finished: progress(finished / max(n_items, 1))) if progress else None
    if processes == 1:
        return [result for _, result in lane.run(report)], 0.0
    _LANE = lane
    pool = ProcessPoolExecutor(processes - 1, mp_context=context)
    try:
        futures = [pool.submit(_worker) for _ in range(processes - 1)]  # forks now
        _LANE = None
        try:
            results = lane.run(report)
        except BaseException:
            lane.stop()
            raise
        worker_cpu = 0.0
        for future in futures:
            try:
                theirs, cpu = future.result()
            except BrokenProcessPool as exc:
                raise NeswapError(
                    "A preprocessing worker process died (out of memory?). Run again with "
                    "one process (`prepare --processes 1`) or a smaller corpus."
                ) from exc
            results += theirs
            worker_cpu += cpu
    finally:
        _LANE = None
        pool.shutdown(wait=True, cancel_futures=True)
    results.sort(key=lambda item: item[0])
    return [result for _, result in results], worker_cpu

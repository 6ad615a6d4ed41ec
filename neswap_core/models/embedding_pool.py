"""Embed a known sequence of ``Embedder.encode`` calls in parallel processes, vector for vector.

A release's sweep embeds the changed passages of one candidate after the other, each call
sending the model only the texts the cache does not hold yet (SPEC §6: never embed a text
twice). Those calls are serial, so on a 2-core machine one core waits. When the sequence of
calls is known beforehand (``RecordingEncoder`` replays the sweep without the model:
which texts each call would miss, given the cache and the calls before it), each call's missing
texts are one independent job: ``embed_in_processes`` runs the jobs in worker processes and adds
the vectors to the cache in the serial order. A vector depends on the texts embedded with it
(padding to the batch's longest text moves the last bits), so every job is exactly the list
the serial call would have sent (``Embedder._embed_missing``): the vectors, the cache and
every number computed from them are bit for bit the serial run's (the thread count of ONNX
Runtime and of the bf16 path does not change a vector; tests/test_embedding_pool.py).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeGuard

import numpy as np

from .embedding import Embedder, text_key

#: Backends whose vectors do not depend on the thread count (the only ones run in processes).
POOLED_BACKENDS = ("onnx", "onnx-int8", "bf16")
#: Fewer texts to embed than this: the serial path (starting workers costs a few seconds).
MIN_TEXTS = 200


class RecordingEncoder:
    """A stand-in for ``Embedder.encode`` that records, call by call, the texts the real
    embedder would send to its model, and returns placeholder unit vectors (``fill``)."""

    def __init__(self, embedder: Embedder, fill: np.ndarray) -> None:
        self.embedder = embedder
        self.fill = np.asarray(fill, dtype=np.float32)
        self.jobs: list[list[str]] = []
        self._seen: set[bytes] = set()
        self.asked: set[bytes] = set()  # every text's key, cached or not

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        keys = [text_key(t) for t in texts]
        self.asked.update(keys)
        found = set(self.embedder.cache.lookup(keys))
        missing = {k: t for k, t in zip(keys, texts, strict=True)
                   if k not in found and k not in self._seen}  # fmt: skip
        if missing:
            self.jobs.append(list(missing.values()))
            self._seen.update(missing)
        return np.broadcast_to(self.fill, (len(texts), len(self.fill))).copy()

    def n_texts(self) -> int:
        return sum(len(job) for job in self.jobs)


#: The encoders ``load_encoder`` makes for the pooled backends (a worker loads the same).
_OWN_ENCODERS = ("OnnxSentenceEncoder", "Bf16SentenceEncoder")
_WORKER: Embedder | None = None


def worker_embedder(model_name: str, backend: str, cache_dir: str | None, batch_size: int) -> Embedder:
    """The embedder a worker (a process, a Ray actor) embeds jobs with: the same model and batch
    size as the driver's, no vector cache of its own (the driver's cache receives the vectors)."""
    from .embedding import load_encoder

    return Embedder(model_name, None, model=load_encoder(model_name, backend, cache_dir or None),
                    batch_size=batch_size, backend=backend)  # fmt: skip


def worker_args(embedder: Embedder) -> tuple:
    """``worker_embedder``'s arguments for ``embedder``'s model."""
    cache_dir = str(embedder.cache_dir) if embedder.cache_dir else ""
    return embedder.model_name, embedder.backend, cache_dir, embedder.batch_size


def embed_job(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """One job's vectors, exactly as the serial ``Embedder.encode`` call would embed them."""
    return embedder._embed_missing(list(texts), None, None)


def _start_worker(*args) -> None:
    global _WORKER
    _WORKER = worker_embedder(*args)


def _embed_job(texts: list[str]) -> np.ndarray:
    if _WORKER is None:
        raise RuntimeError("embedding worker process started without _start_worker")
    return embed_job(_WORKER, texts)


def job_pieces(embedder: Embedder, jobs: Sequence[list[str]]) -> list[tuple[int, list[int]]]:
    """(job, indices of its texts) for every model call the jobs make (``Embedder.slices``):
    a job bigger than one call (the attacker reading: thousands of passages in one ``encode``)
    is shared between the workers instead of occupying one, with the same vectors."""
    return [(j, idx) for j, job in enumerate(jobs) for idx in embedder.slices(job)]


def embed_jobs_in_processes(embedder: Embedder, jobs: Sequence[list[str]],
                            processes: int) -> list[np.ndarray]:
    """Each job's vectors, its model calls (``job_pieces``) computed in ``processes`` spawned
    workers, biggest first. A piece is one call, already longest first: the worker's
    ``_embed_missing`` sends it to the model as it is, exactly as the serial call would."""
    pieces = job_pieces(embedder, jobs)
    context = multiprocessing.get_context("spawn")  # a loaded ONNX/torch model is not fork-safe
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_start_worker,
                             initargs=worker_args(embedder)) as pool:  # fmt: skip
        order = sorted(range(len(pieces)), key=lambda k: -sum(len(jobs[pieces[k][0]][i]) for i in pieces[k][1]))
        futures = {k: pool.submit(_embed_job, [jobs[pieces[k][0]][i] for i in pieces[k][1]]) for k in order}
        return assemble_pieces(embedder, jobs, pieces, [futures[k].result() for k in range(len(pieces))])


def assemble_pieces(embedder: Embedder, jobs: Sequence[list[str]], pieces: list[tuple[int, list[int]]],
                    blocks: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each job's vectors from its pieces' (``job_pieces``) vectors, in the job's own order."""
    out: list[np.ndarray | None] = [None] * len(jobs)
    for (j, idx), block in zip(pieces, blocks, strict=True):
        if out[j] is None:
            out[j] = np.empty((len(jobs[j]), block.shape[1]), dtype=np.float32)
        out[j][idx] = block  # type: ignore[index]
    return [o if o is not None else np.zeros((0, embedder.dimension), np.float32) for o in out]


def store_jobs(embedder: Embedder, jobs: Sequence[list[str]], vectors: Sequence[np.ndarray]) -> int:
    """Add each job's vectors to ``embedder``'s cache in the jobs' (the serial) order."""
    for job, block in zip(jobs, vectors, strict=True):
        embedder.cache.add([text_key(t) for t in job], block)
        embedder.n_embedded += len(job)
    return sum(len(job) for job in jobs)


def embed_in_processes(embedder: Embedder, jobs: Sequence[list[str]], processes: int) -> int:
    """Embed each job (a list of texts missing from ``embedder``'s cache, as ``RecordingEncoder``
    listed them) in ``processes`` spawned workers and add the vectors to the cache in the jobs'
    order. Returns the number of texts embedded."""
    jobs = [job for job in jobs if job]
    if not jobs:
        return 0
    return store_jobs(embedder, jobs, embed_jobs_in_processes(embedder, jobs, processes))


def poolable(embedder: object) -> TypeGuard[Embedder]:
    """``embedder`` is an ``Embedder`` whose model a worker can load and whose vectors do not
    depend on the thread count (module docstring)."""
    if not isinstance(embedder, Embedder) or embedder.backend not in POOLED_BACKENDS:
        return False
    return embedder._model is None or type(embedder._model).__name__ in _OWN_ENCODERS


def pool_processes(embedder, requested: int | None = None) -> int:
    """Worker processes for ``embed_in_processes``: 0 (embed serially) unless ``embedder`` is an
    ``Embedder`` whose backend's vectors are thread-count independent and there are 2+ CPUs."""
    if not poolable(embedder):
        return 0  # e.g. a model handed in (a test's, a caller's): the workers could not load it
    n = requested if requested is not None else (os.cpu_count() or 1)
    return n if n > 1 else 0


def encode_in_processes(embed: Callable[[list[str]], np.ndarray], texts: Sequence[str],
                        processes: int | None = None, min_texts: int | None = None) -> np.ndarray:
    """``embed(texts)``, where ``embed`` may be a poolable ``Embedder.encode``: the texts its
    cache lacks are first embedded in worker processes, call by call (``job_pieces``: the one
    call serial ``encode`` would make, cut where ``_embed_missing`` cuts it), so the vectors and
    the cache are the serial call's, bit for bit (the attacker reading's few thousand passages
    on 2 cores instead of one). Otherwise, or when the workers cannot start, ``embed`` alone."""
    texts = list(texts)
    cache_in_processes(embed, texts, processes, min_texts)
    return embed(texts)


def cache_in_processes(embed: Callable[[list[str]], np.ndarray], texts: Sequence[str],
                       processes: int | None = None, min_texts: int | None = None) -> int:
    """Put into ``embed``'s cache, from worker processes, the ``texts`` it lacks, when ``embed``
    is a poolable ``Embedder.encode`` and at least ``min_texts`` are missing (nothing else is
    embedded: a later ``embed`` call makes the same vectors from the cache). The number added."""
    embedder = getattr(embed, "__self__", None)
    n = pool_processes(embedder, processes)
    if n < 2 or not poolable(embedder):
        return 0
    keys = [text_key(t) for t in texts]
    found = embedder.cache.lookup(keys)
    missing = list({k: t for k, t in zip(keys, texts, strict=True) if k not in found}.values())
    if len(missing) < (MIN_TEXTS if min_texts is None else min_texts):
        return 0
    try:
        return embed_in_processes(embedder, [missing], n)
    except (BrokenProcessPool, OSError, RuntimeError):
        return 0  # a script without a __main__ guard cannot spawn workers: embed serially

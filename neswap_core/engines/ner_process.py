"""NER in a second process while this one embeds (issue 14: one core embeds, the other tags).

On a 2-core machine the embedding model runs best on one thread (two OpenMP threads spin-wait
for each other when other jobs share the cores), so the local engine gets its parallelism from a
forked worker process that holds the already-loaded spaCy pipeline and tags each batch of chunks
while the main process embeds the next documents' sentence groups and then the chunk vectors.
The worker calls the same ``pipeline.tag_entities`` (same cache, same filter) as the inline
path, so the chunks and entities are identical; only where the CPU-seconds are spent changes.

The worker is forked before the embedding model is loaded (no OpenMP threads to inherit) and
only on platforms with ``fork``; elsewhere, or with ``background=False``, tagging runs inline.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from ..corpus import Chunk

_WORKER_NLP: Any = None  # the spaCy pipeline the forked worker inherits


def _warm() -> int:
    return 0


def _tag(
    chunks: Sequence[Chunk], label_map: dict, cache_dir: str | None, entity_filter: Any
) -> tuple[list[Chunk], float]:
    """Tagged chunks and the CPU-seconds the worker spent on them."""
    from ..pipeline import tag_entities

    start = time.process_time()
    tagged = tag_entities(chunks, _WORKER_NLP, label_map, cache_dir, entity_filter)
    return tagged, time.process_time() - start


class NerLane:
    """Tags batches of chunks, in a forked worker process when ``background`` (else inline).

    ``submit(chunks)`` returns at once in the background mode; ``results()`` gives every
    batch's tagged chunks in submission order and the worker's CPU-seconds, and stops the worker.
    """

    def __init__(
        self,
        nlp: Any,
        label_map: dict,
        cache_dir: str | Path | None,
        entity_filter: Any,
        background: bool = True,
    ) -> None:
        global _WORKER_NLP
        self.args = (dict(label_map), str(cache_dir) if cache_dir is not None else None,
                     entity_filter)
        self.nlp = nlp
        self._pending: list[Future | list[Chunk]] = []
        self._pool: ProcessPoolExecutor | None = None
        self.cpu_seconds = 0.0  # the worker's, on the batches tagged so far
        self.background = background and "fork" in multiprocessing.get_all_start_methods()
        if self.background:
            _WORKER_NLP = nlp
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
            self._pool.submit(_warm).result()  # fork now, before any embedding model is loaded
            _WORKER_NLP = None

    def submit(self, chunks: Sequence[Chunk]) -> None:
        """Tag ``chunks`` (in the worker, or now when inline)."""
        if self._pool is not None:
            self._pending.append(self._pool.submit(_tag, list(chunks), *self.args))
        else:
            from ..pipeline import tag_entities

            self._pending.append(tag_entities(chunks, self.nlp, *self.args))

    def results(self) -> list[Chunk]:
        """Every submitted chunk, tagged, in submission order (waits for the worker)."""
        tagged: list[Chunk] = []
        try:
            for item in self._pending:
                if isinstance(item, Future):
                    chunks, cpu = item.result()
                    self.cpu_seconds += cpu
                    tagged += chunks
                else:
                    tagged += item
        finally:
            self._pending = []
            self.close()
        return tagged

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

"""The sweep's embeddings computed ahead, in parallel processes, bit for bit (issue 21, SPEC §6).

Measuring every candidate (the paper's draws, every plan stage) embeds each candidate's
changed passages, one serial call after the other. ``prefetch_candidates`` first walks the
same sweep and candidate table with a recording stand-in for the embedder (no model: apply the
swaps and plans, note which texts each call would send to the model), then embeds those calls'
texts in worker processes (``models.embedding_pool``) into the cache. The real sweep that
follows finds every vector in the cache, each one the vector the serial run would have made,
so the candidates, the choice and every written byte are unchanged. The walk costs the swaps
and the word counts a second time (a few percent of the embedding it spreads over the cores);
below ``MIN_TEXTS`` texts the workers' start-up is not worth it and nothing is done.

The walk builds the document defence with the reading's defender, as the real pass does (without
the reading units it built the corpus-only fallback, whose texts the real pass never asks for).
Its list of texts is kept beside the embedding cache under a hash of what decides it (the
pre-swap chunks and vectors, the settings, the reading): a re-run whose texts are all cached
skips the walk (on dev: 29 s of a 2-minute warm re-run).
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

from ..disk_memo import feed_repr
from ..errors import NeswapError
from ..generate.releases import ReleaseContext, sweep_for_config
from ..models.embedding_pool import (  # MIN_TEXTS: fewer, and the serial path is used
    MIN_TEXTS,
    RecordingEncoder,
    embed_in_processes,
    pool_processes,
    poolable,
    store_jobs,
)
from .candidates import build_candidates
from .memo_keys import candidate_settings


def prefetch_candidates(ctx: ReleaseContext, config, processes: int | None = None,
                        min_texts: int | None = None, runner: Callable | None = None,
                        reading_units: tuple | None = None,
                        timings: dict[str, float] | None = None,
                        after_scoring: Callable[[], None] | None = None) -> int:
    """Embed, in parallel, every text the sweep and candidate table of ``config`` will embed;
    the number of texts embedded (0 when serial is better, the embedder cannot be pooled or
    every text is already cached).

    ``runner(embedder, jobs) -> one array per job`` embeds elsewhere (the Ray engine:
    ``prepare.ray_engine.embed_jobs_ray``); by default ``processes`` local workers do.
    ``reading_units``: the reading the real pass's document defence is fitted on; ``timings``,
    when given, receives the walk's and the embedding's wall seconds (``walk``, ``embedding``);
    ``after_scoring()`` is called when the walk's document defence has scored its types
    (``build_candidates``), if the walk runs."""
    timings = {} if timings is None else timings
    embedder = getattr(ctx.embed, "__self__", None)
    n = pool_processes(embedder, processes)
    if (n < 2 and runner is None) or not poolable(embedder):
        return 0
    record = _record_file(embedder, ctx, config, reading_units)
    if record is not None and _all_cached(embedder, record):
        return 0
    start = time.perf_counter()
    recorder = RecordingEncoder(embedder, ctx.embeddings[0])
    dry = copy.copy(ctx)
    dry.embed = recorder
    try:
        with np.errstate(all="ignore"):
            build_candidates(sweep_for_config(dry, config), config, reading_units=reading_units,
                             after_scoring=after_scoring, walk=True)  # fmt: skip
    except NeswapError:
        return 0  # the real sweep raises it, with its message
    finally:
        timings["walk"] = time.perf_counter() - start
    if record is not None:
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_suffix(f".{id(recorder)}.tmp")
        tmp.write_text(json.dumps(sorted(k.hex() for k in recorder.asked)))
        tmp.replace(record)
    if recorder.n_texts() < (MIN_TEXTS if min_texts is None else min_texts):
        return 0
    jobs = [job for job in recorder.jobs if job]
    start = time.perf_counter()
    try:
        if runner is not None:
            return store_jobs(embedder, jobs, runner(embedder, jobs))
        return embed_in_processes(embedder, jobs, n)
    except (BrokenProcessPool, OSError, RuntimeError):
        # spawned workers re-import the caller's main module: a script without an
        # ``if __name__ == "__main__":`` guard cannot start them. Nothing was stored, so the
        # real sweep embeds serially and its results are the same.
        return 0
    finally:
        timings["embedding"] = time.perf_counter() - start


def _record_file(embedder, ctx: ReleaseContext, config, reading_units: tuple | None) -> Path | None:
    """Where the walk's texts are listed, under a hash of everything that decides them (module
    docstring); None when the embedder keeps no cache on disk."""
    folder = getattr(embedder.cache, "directory", None)
    if folder is None:
        return None
    settings = candidate_settings(config)
    h = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for chunk in ctx.chunks:
        h.update(repr((chunk.chunk_id, chunk.doc_id, chunk.text, chunk.protected,
                       [(e.start, e.end, e.category) for e in chunk.entities])).encode())  # fmt: skip
    h.update(np.ascontiguousarray(ctx.embeddings).tobytes())
    feed_repr(h, reading_units)  # the reading's texts, never as one repr (issue 21)
    sample = getattr(ctx, "sample", None)  # a large corpus's measurement sample: other texts
    h.update(b"whole" if sample is None else np.asarray(sample.positions, np.int64).tobytes())
    return Path(folder) / "prefetch" / f"texts_{h.hexdigest()[:24]}.json"


def _all_cached(embedder, record: Path) -> bool:
    """Whether every text listed in ``record`` is in the embedding cache."""
    try:
        keys = [bytes.fromhex(k) for k in json.loads(record.read_text())]
    except (OSError, ValueError):
        return False
    return len(set(embedder.cache.lookup(keys))) == len(set(keys))

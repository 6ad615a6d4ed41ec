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
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from ..errors import NeswapError
from ..generate.releases import ReleaseContext, sweep_for_config
from ..models.embedding_pool import (
    RecordingEncoder,
    embed_in_processes,
    pool_processes,
    poolable,
    store_jobs,
)
from .candidates import build_candidates

#: Fewer texts to embed than this: the serial path (starting workers costs a few seconds).
MIN_TEXTS = 200


def prefetch_candidates(ctx: ReleaseContext, config, processes: int | None = None,
                        min_texts: int | None = None, runner: Callable | None = None) -> int:
    """Embed, in parallel, every text the sweep and candidate table of ``config`` will embed;
    the number of texts embedded (0 when serial is better or the embedder cannot be pooled).

    ``runner(embedder, jobs) -> one array per job`` embeds elsewhere (the Ray engine:
    ``prepare.ray_engine.embed_jobs_ray``); by default ``processes`` local workers do."""
    embedder = getattr(ctx.embed, "__self__", None)
    n = pool_processes(embedder, processes)
    if (n < 2 and runner is None) or not poolable(embedder):
        return 0
    recorder = RecordingEncoder(embedder, ctx.embeddings[0])
    dry = copy.copy(ctx)
    dry.embed = recorder
    try:
        with np.errstate(all="ignore"):
            build_candidates(sweep_for_config(dry, config), config)
    except NeswapError:
        return 0  # the real sweep raises it, with its message
    if recorder.n_texts() < (MIN_TEXTS if min_texts is None else min_texts):
        return 0
    jobs = [job for job in recorder.jobs if job]
    if runner is not None:
        return store_jobs(embedder, jobs, runner(embedder, jobs))
    try:
        return embed_in_processes(embedder, jobs, n)
    except (BrokenProcessPool, OSError, RuntimeError):
        # spawned workers re-import the caller's main module: a script without an
        # ``if __name__ == "__main__":`` guard cannot start them. Nothing was stored, so the
        # real sweep embeds serially and its results are the same.
        return 0

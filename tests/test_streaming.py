"""Streaming preprocessing (issue 14): batches of documents change no output; vectors memory-mapped."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from neswap_core.config import RunConfig
from neswap_core.models.embedding import Embedder
from neswap_core.prepare.lanes import batch_size, run_in_lanes
from neswap_core.prepare.pipeline import embed_chunks, prepare
from neswap_core.text.loading import load_corpus

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


class HashModel:
    """Deterministic pseudo-embeddings from the text's hash (no model needed)."""

    def encode(self, texts):
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:16].astype(float)
            - 127.5
            for t in texts
        ]
        return np.array(rows, dtype=np.float32)


@pytest.fixture(scope="module")
def corpus():
    full = load_corpus(SAMPLE)
    return replace(full, documents=full.documents[:3])


def test_batch_size_shrinks_towards_the_end_so_processes_finish_together():
    # one process: always the configured batch (the last one is what is left)
    assert [batch_size(r, 8, 1) for r in (35, 8, 3)] == [8, 8, 3]
    # two processes: a quarter of what is left once that is below 8, never below one
    sizes, left = [], 35
    while left:
        sizes.append(batch_size(left, 8, 2))
        left -= sizes[-1]
    assert sizes == [8, 7, 5, 4, 3, 2, 2, 1, 1, 1, 1]


def _square_sum(lo, hi):
    time.sleep(0.01)  # long enough for the worker to take batches too
    return lo, hi, os.getpid(), sum(i * i for i in range(lo, hi))


def test_lanes_return_every_batch_once_in_order_from_both_processes():
    results, worker_cpu = run_in_lanes(_square_sum, 40, processes=2, batch_documents=3)
    spans = [(lo, hi) for lo, hi, _, _ in results]
    assert spans[0][0] == 0 and spans[-1][1] == 40
    assert all(a[1] == b[0] for a, b in pairwise(spans))  # contiguous, in order
    assert sum(r[3] for r in results) == sum(i * i for i in range(40))
    assert len({pid for _, _, pid, _ in results}) == 2  # both processes took batches
    assert worker_cpu > 0


def _fail_at_seven(lo, hi):
    time.sleep(0.01)
    if lo <= 7 < hi:
        raise ValueError("document 7 is broken")
    return lo


_PARENT = os.getpid()


def _worker_dies(lo, hi):
    time.sleep(0.01)
    if os.getpid() != _PARENT:
        os._exit(1)  # as the kernel's out-of-memory killer would end it
    return lo


_RAN_HERE: list[int] = []


def _worker_fails(lo, hi):
    if os.getpid() != _PARENT:
        raise ValueError("document broken in the worker")
    _RAN_HERE.append(lo)
    time.sleep(0.02)
    return lo


def test_an_error_in_the_worker_stops_this_process_taking_batches():
    """Without the stop, this process went on through all 200 batches before raising."""
    _RAN_HERE.clear()
    with pytest.raises(ValueError, match="broken in the worker"):
        run_in_lanes(_worker_fails, 200, processes=2, batch_documents=1)
    assert len(_RAN_HERE) < 50


def test_a_worker_that_dies_is_a_clear_error_not_a_hang():
    from neswap_core.errors import NeswapError

    with pytest.raises(NeswapError, match="worker process died"):
        run_in_lanes(_worker_dies, 20, processes=2, batch_documents=2)


@pytest.mark.parametrize("processes", [1, 2])
def test_an_error_in_any_process_is_raised_to_the_caller(processes):
    with pytest.raises(ValueError, match="document 7"):
        run_in_lanes(_fail_at_seven, 20, processes=processes, batch_documents=2)


def test_embed_chunks_in_batches_equals_one_call_and_writes_a_memmap(tmp_path, corpus):
    from neswap_core.corpus import Chunk

    chunks = [Chunk(f"d#{i:04d}", "d", i, f"text number {i}", "c") for i in range(10)]
    emb = Embedder("hash", None, model=HashModel())
    whole = embed_chunks(chunks, emb, batch_chunks=100)
    mapped = embed_chunks(chunks, emb, tmp_path / "x.npy", batch_chunks=3)
    assert isinstance(mapped, np.memmap)
    np.testing.assert_array_equal(whole, mapped)
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), whole)


@pytest.mark.slow
def test_streaming_changes_no_output(tmp_path, corpus):
    from neswap_core.text.entities import load_ner

    nlp = load_ner()
    outputs = []
    for batch, path in ((100, None), (2, tmp_path / "e.npy")):
        cfg = RunConfig.of(cache_dir=str(tmp_path / f"cache{batch}"))
        embedder = Embedder("hash", cfg.prepare.cache_dir, model=HashModel())
        outputs.append(
            prepare(corpus, cfg, embedder=embedder, nlp=nlp, batch_documents=batch,
                    embeddings_path=path)
        )
    one, streamed = outputs
    assert [(c.chunk_id, c.text, c.protected, c.entities) for c in one.chunks] == [
        (c.chunk_id, c.text, c.protected, c.entities) for c in streamed.chunks
    ]
    assert one.z.equals(streamed.z)
    np.testing.assert_array_equal(one.embeddings, streamed.embeddings)
    np.testing.assert_array_equal(np.load(tmp_path / "e.npy"), one.embeddings)
    assert len(one.chunks) > len(corpus)


@pytest.mark.slow
def test_two_processes_change_no_output(tmp_path, corpus):
    """prepare(processes=2): the documents shared with a forked worker; same chunks, entities,
    z, vectors, presentation and identifier tables as one process."""
    from neswap_core.text.entities import load_ner

    nlp = load_ner()
    outputs = []
    for batch, processes in ((100, 1), (1, 2)):
        cfg = RunConfig.of(cache_dir=str(tmp_path / f"cache{processes}"))
        embedder = Embedder("hash", cfg.prepare.cache_dir, model=HashModel())
        outputs.append(prepare(corpus, cfg, embedder=embedder, nlp=nlp, batch_documents=batch,
                               processes=processes))
    one, two = outputs
    assert [(c.chunk_id, c.text, c.entities) for c in one.chunks] == [
        (c.chunk_id, c.text, c.entities) for c in two.chunks
    ]
    assert any(c.entities for c in two.chunks)
    assert one.z.equals(two.z)
    np.testing.assert_array_equal(one.embeddings, two.embeddings)
    assert one.clean.corpus.documents == two.clean.corpus.documents
    assert one.clean.identifiers.equals(two.clean.identifiers)
    assert one.clean.presentation.equals(two.clean.presentation)
    assert "workers" not in one.cpu_seconds
    assert two.cpu_seconds["workers"] > 0  # a worker really prepared documents

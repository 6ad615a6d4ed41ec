"""Streaming preprocessing (issue 14): batches of documents change no output; vectors memory-mapped."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from neswap_core.config import RunConfig
from neswap_core.models.embedding import Embedder
from neswap_core.pipeline import document_batches, embed_chunks, prepare
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


def test_document_batches_cover_the_corpus_in_order(corpus):
    batches = list(document_batches(corpus, 2))
    assert [len(b) for b in batches] == [2, 1]
    assert [d.doc_id for b in batches for d in b.documents] == corpus.doc_ids
    assert all(b.protect == corpus.protect for b in batches)


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
        cfg = RunConfig(cache_dir=str(tmp_path / f"cache{batch}"))
        embedder = Embedder("hash", cfg.cache_dir, model=HashModel())
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
def test_ner_in_a_second_process_changes_no_output(tmp_path, corpus):
    """prepare(parallel_ner=True) tags in a forked worker: same chunks, entities, z, vectors."""
    from neswap_core.text.entities import load_ner

    nlp = load_ner()
    outputs = []
    for batch, parallel in ((100, False), (1, True)):
        cfg = RunConfig(cache_dir=str(tmp_path / f"cache{parallel}"))
        embedder = Embedder("hash", cfg.cache_dir, model=HashModel())
        outputs.append(prepare(corpus, cfg, embedder=embedder, nlp=nlp, batch_documents=batch,
                               parallel_ner=parallel))
    inline, forked = outputs
    assert [(c.chunk_id, c.text, c.entities) for c in inline.chunks] == [
        (c.chunk_id, c.text, c.entities) for c in forked.chunks
    ]
    assert any(c.entities for c in forked.chunks)
    assert inline.z.equals(forked.z)
    np.testing.assert_array_equal(inline.embeddings, forked.embeddings)
    assert "ner_worker" not in inline.cpu_seconds
    assert forked.cpu_seconds["ner_worker"] > 0  # the tagging really ran in the worker

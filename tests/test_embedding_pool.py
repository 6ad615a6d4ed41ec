"""The sweep's embeddings in parallel processes (issue 21): the same vectors, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from neswap_core.models.embedding import Embedder, text_key
from neswap_core.models.embedding_pool import RecordingEncoder, pool_processes
from tests.conftest import sample_subset, shared_onnx_export

ROOT = Path(__file__).resolve().parents[1]


class Unit:
    """A fake encoder: a fixed unit vector per text length."""

    def encode(self, texts):
        x = np.zeros((len(texts), 4), dtype=np.float32)
        x[np.arange(len(texts)), [len(t) % 4 for t in texts]] = 1.0
        return x


def test_recorder_lists_what_each_call_would_send_to_the_model(tmp_path):
    embedder = Embedder("m", tmp_path, model=Unit(), backend="onnx")
    embedder.encode(["cached"])
    recorder = RecordingEncoder(embedder, np.array([1.0, 0, 0, 0]))
    out = recorder(["a", "cached", "b", "a"])
    assert out.shape == (4, 4) and out.dtype == np.float32
    recorder(["b", "c", "cached"])
    recorder(["a"])
    assert recorder.jobs == [["a", "b"], ["c"]] and recorder.n_texts() == 3
    assert embedder.n_embedded == 1  # the model was never called by the recorder


def test_a_handed_in_model_is_never_pooled(tmp_path):
    assert pool_processes(Embedder("m", tmp_path, model=Unit(), backend="onnx"), 2) == 0
    assert pool_processes(Embedder("m", tmp_path, model=Unit(), backend="torch"), 2) == 0
    assert pool_processes(lambda texts: None, 2) == 0
    assert pool_processes(Embedder(cache_dir=tmp_path, backend="onnx"), 1) == 0
    assert pool_processes(Embedder(cache_dir=tmp_path, backend="onnx"), 2) == 2


@pytest.mark.slow
def test_pooled_sweep_embeds_every_vector_the_serial_sweep_does(tmp_path, monkeypatch):
    """Serial and pooled sweeps from empty caches: the same candidate table to the last bit,
    the same vectors for every text, and after the prefetch the real sweep embeds nothing — the
    document defence's texts included, which the walk builds with the reading's defender as the
    real pass does, and keeps for it: the defence is built once (it needs no vector). A second
    prefetch of the same release finds its texts cached and skips the walk."""
    import neswap_core.choose.document_candidates as document_module
    import neswap_core.choose.prefetch as prefetch_module
    from neswap_core.choose.candidates import build_candidates
    from neswap_core.choose.prefetch import prefetch_candidates
    from neswap_core.config import RunConfig
    from neswap_core.generate.context import release_context
    from neswap_core.generate.releases import sweep_for_config
    from neswap_core.prepare.pipeline import prepare_path

    # four of the sample's transcripts (the property does not depend on the corpus's size; all
    # ten took three minutes) and one level of the document defence (the default grid has six:
    # 3x the test's time, no more kinds of text to embed)
    corpus = str(sample_subset(tmp_path / "corpus", 4))
    config = RunConfig.of(corpus=corpus, n_components=5, n_init=1, max_swaps=4,
                          plan_rounds=1, plan_terms=[True], plan_redaction_levels=[0.0, 0.05],
                          document_levels=[0.1])
    prepared = prepare_path(corpus, config)
    # a reading: each call's passages as two documents of its company (the defender needs two
    # halves of the reading per company)
    units = ([c.text for c in prepared.chunks], [c.protected for c in prepared.chunks],
             [f"{c.doc_id}_{c.index % 2}" for c in prepared.chunks])
    builds = []
    real_levels = document_module._defence_levels

    def counted_levels(*args, **kwargs):
        builds.append(1)
        return real_levels(*args, **kwargs)

    monkeypatch.setattr(document_module, "_defence_levels", counted_levels)
    import neswap_core.choose.candidates as candidates_module

    tones = []  # the walk needs only the calls that embed: no tone, no level read back
    real_tone = candidates_module.ToneScorer
    monkeypatch.setattr(candidates_module, "ToneScorer", lambda *a: tones.append(1) or real_tone(*a))
    tables, embedders = [], []
    prepare_config = config
    for name, processes in (("serial", 1), ("pooled", 2)):
        shared_onnx_export(tmp_path / name, backend="onnx")  # the one-time export is shared
        embedder = Embedder(cache_dir=tmp_path / name, backend="onnx")
        config = prepare_config.replace(cache_dir=str(tmp_path / name))  # memos of its own
        builds.clear()
        ctx, _ = release_context(prepared.chunks, prepared.embeddings, embedder.encode, config)
        parts: dict = {}
        sent = prefetch_candidates(ctx, config, processes, min_texts=0, reading_units=units,
                                   timings=parts)  # fmt: skip
        # where the prefetch's time goes, for the scale benchmarks: the walk, then the embedding
        assert set(parts) == ({"walk", "embedding"} if processes > 1 else set())
        assert all(seconds > 0 for seconds in parts.values())
        assert tones == []
        before = embedder.n_embedded
        table = build_candidates(sweep_for_config(ctx, config), config, reading_units=units).table
        assert tones == [1]
        tones.clear()
        assert (sent > 0) == (processes > 1)
        if processes > 1:
            assert embedder.n_embedded == before  # every vector came from the prefetch
        assert len(builds) == 1  # the real pass found the walk's build (it built it again before)
        tables.append(table)
        embedders.append(embedder)
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=True)

    def walk(*args, **kwargs):
        raise AssertionError("the walk ran again although every text is cached")

    monkeypatch.setattr(prefetch_module, "build_candidates", walk)
    assert prefetch_candidates(ctx, config, 2, min_texts=0, reading_units=units) == 0
    with pytest.raises(AssertionError, match="walk ran again"):  # another setting: another walk
        prefetch_candidates(ctx, config.replace(document_levels=[0.2]), 2, min_texts=0,
                            reading_units=units)
    serial, pooled = embedders
    keys = list(serial.cache._ensure_loaded())
    assert len(keys) > 50 and set(keys) == set(pooled.cache._ensure_loaded())
    a, b = serial.cache.lookup(keys), pooled.cache.lookup(keys)
    assert all(np.array_equal(a[k], b[k]) for k in keys)


def test_a_job_is_cut_where_the_serial_call_cuts_it(tmp_path):
    """Every text of every job in exactly one piece; a piece is one model call of the serial
    ``encode``: longest first, four batches at most, in the serial call's order."""
    from neswap_core.models.embedding_pool import job_pieces

    embedder = Embedder("m", tmp_path, model=Unit(), backend="onnx", batch_size=2)
    rng = np.random.default_rng(0)
    jobs = [["x" * int(n) for n in rng.integers(1, 40, size)] for size in (3, 8, 9, 30)]
    pieces = job_pieces(embedder, jobs)
    for j, job in enumerate(jobs):
        mine = [idx for k, idx in pieces if k == j]
        assert sorted(i for idx in mine for i in idx) == list(range(len(job)))
        assert all(len(idx) <= 8 for idx in mine) and len(mine) == -(-len(job) // 8)
        flat = [i for idx in mine for i in idx]
        assert flat == sorted(range(len(job)), key=lambda i: -len(job[i]))  # stable, longest first


@pytest.mark.slow
def test_a_big_encode_in_processes_gives_the_serial_vectors(tmp_path):
    """The reading's one big ``encode`` cut into its model calls and shared between two workers:
    the same vectors to the last bit, and the serial call finds every one cached."""
    from neswap_core.models.embedding_pool import encode_in_processes, job_pieces

    texts = []
    for path in sorted((ROOT / "neswap_core" / "data" / "sample" / "docs").glob("*.txt"))[:3]:
        words = path.read_text(encoding="utf-8").split()
        texts += [" ".join(words[i:i + 40 + i % 37]) for i in range(0, 4000, 50)]
    texts += texts[:5]  # repeats are embedded once
    out = {}
    for name, processes in (("serial", 1), ("pooled", 2)):
        shared_onnx_export(tmp_path / name, backend="onnx")
        embedder = Embedder(cache_dir=tmp_path / name, backend="onnx", batch_size=8)
        out[name] = encode_in_processes(embedder.encode, texts, processes, min_texts=0)
        if processes > 1:
            assert len(job_pieces(embedder, [list(dict.fromkeys(texts))])) > 4
            assert embedder.n_cached_hits == len(texts)  # the final encode embedded nothing
    assert out["serial"].tobytes() == out["pooled"].tobytes()


@pytest.mark.slow
def test_the_release_s_changed_passages_are_cached_from_workers_and_nothing_else_embeds(tmp_path):
    """``publish.protection.embed_ahead``: the written release's changed passages, which the
    sweep's prefetch never saw past the candidate sample, go into the cache from two workers
    (at 100k passages the attack report embedded them one call at a time); the report's own
    ``encode`` then finds them, the serial vectors to the last bit. An embed function that is
    not a poolable embedder is never called (its vectors could depend on their batch)."""
    from neswap_core.models.embedding_pool import cache_in_processes
    from neswap_core.publish.protection import embed_ahead

    words = (ROOT / "neswap_core" / "data" / "sample" / "docs").glob("*.txt")
    words = next(iter(sorted(words))).read_text(encoding="utf-8").split()
    texts = [" ".join(words[i:i + 30 + i % 11]) for i in range(0, 2400, 40)]
    shared_onnx_export(tmp_path / "serial", backend="onnx")
    serial = Embedder(cache_dir=tmp_path / "serial", backend="onnx", batch_size=8).encode(texts)
    shared_onnx_export(tmp_path / "ahead", backend="onnx")
    embedder = Embedder(cache_dir=tmp_path / "ahead", backend="onnx", batch_size=8)
    assert cache_in_processes(embedder.encode, texts, 2, min_texts=10**6) == 0  # too few: here
    embed_ahead(embedder.encode, {})  # nothing changed: nothing to do
    assert cache_in_processes(embedder.encode, texts, 2, min_texts=0) == len(set(texts))
    assert embedder.cache.lookup([text_key(t) for t in texts]).keys() >= {text_key(t) for t in texts}
    assert embedder.encode(texts).tobytes() == serial.tobytes()
    assert embedder.n_cached_hits == len(texts)

    def not_pooled(batch):
        raise AssertionError("embedded outside the embedder")

    assert cache_in_processes(not_pooled, texts, 2, min_texts=0) == 0
    embed_ahead(not_pooled, dict(enumerate(texts)))


@pytest.mark.parametrize("n_chunks, walked", [(999, False), (1_000, True)])
def test_the_apps_candidates_walk_for_the_prefetch_only_on_a_big_corpus(tmp_path, monkeypatch,
                                                                       n_chunks, walked):
    """``build_candidates(processes=2)`` (the app's path) walks the candidates for the prefetch
    from ``PREFETCH_MIN_CHUNKS`` chunks on, never below: on the sample the walk doubled every
    build of the app's tests (CI past 30 minutes) for vectors mostly cached already."""
    from types import SimpleNamespace

    import neswap_core.choose.candidates as candidates_module
    import neswap_core.choose.prefetch as prefetch_module
    from neswap_core.config import RunConfig

    assert candidates_module.PREFETCH_MIN_CHUNKS == 1_000
    walks = []

    class Stop(Exception):
        pass

    def walk(ctx, config, processes, **kwargs):
        walks.append(processes)

    def plans(*args, **kwargs):  # where the build goes on after the prefetch: stop there
        raise Stop

    monkeypatch.setattr(prefetch_module, "prefetch_candidates", walk)
    monkeypatch.setattr(candidates_module, "plan_candidates", plans)
    sweep = SimpleNamespace(ctx=SimpleNamespace(chunks=[None] * n_chunks))
    config = RunConfig.of(cache_dir=str(tmp_path), plan_rounds=1)
    with pytest.raises(Stop):
        candidates_module.build_candidates(sweep, config, processes=2)
    assert walks == ([2] if walked else [])

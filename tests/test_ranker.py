"""Learned ranker (SPEC §9, paper 002): KL estimate, soft mask, training on a toy pair."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from neswap_core.config import MASK_PLACEHOLDER  # noqa: E402
from neswap_core.corpus import Chunk  # noqa: E402
from neswap_core.errors import FitError  # noqa: E402
from neswap_core.generate.ranker import (  # noqa: E402
    LearnedRanker,
    knn_kl_divergence,
    soft_keep,
)
from neswap_core.generate.redaction import (  # noqa: E402
    WordScore,
    masked_count,
    redact_chunks,
    word_spans,
)
from neswap_core.models.word_vectors import MiniLMWordEmbedder  # noqa: E402

DIM = 8


class ToyEmbedder:
    """Context-free word vectors from a fixed table; [MASK] has its own vector."""

    def __init__(self, words: list[str], seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        # distinctive words ("d..") stand out: they carry what tells the documents apart
        self.table = {
            w: (rng.normal(size=DIM) * (4.0 if w.startswith("d") else 1.0)).astype(np.float32)
            for w in words
        }
        self.table[MASK_PLACEHOLDER] = rng.normal(size=DIM).astype(np.float32)

    def word_vectors(self, texts):
        return [
            np.array([self.table[w] for _, _, w in word_spans(t)], np.float32).reshape(-1, DIM)
            for t in texts
        ]

    def sentence(self, text: str) -> np.ndarray:
        tokens = text.replace(".", "").split()
        v = np.mean([self.table[t] for t in tokens], axis=0)
        return v / np.linalg.norm(v)


def _toy_corpus(n_docs: int = 4, per_doc: int = 40, seed: int = 2) -> tuple[list[Chunk], list[str]]:
    """Each document: 8 shared words + 1 of its own two distinctive words per chunk."""
    rng = np.random.default_rng(seed)
    common = [f"c{i}" for i in range(20)]
    chunks = []
    for d in range(n_docs):
        own = [f"d{d}x", f"d{d}y"]
        for i in range(per_doc):
            words = list(rng.choice(common, size=8)) + [str(rng.choice(own))]
            rng.shuffle(words)
            chunks.append(Chunk(f"doc{d}#{i:04d}", f"doc{d}", i, " ".join(words) + ".", f"co{d}"))
    vocab = common + [f"d{d}{s}" for d in range(n_docs) for s in "xy"]
    return chunks, vocab


def _mean_divergence(chunks: list[Chunk], embedder: ToyEmbedder) -> float:
    x = torch.from_numpy(np.stack([embedder.sentence(c.text) for c in chunks]))
    docs = np.array([c.doc_id for c in chunks])
    values = [float(knn_kl_divergence(x[docs == d], x[docs != d], 5)) for d in sorted(set(docs))]
    return float(np.mean(values))


def test_knn_kl_matches_the_gaussian_closed_form() -> None:
    rng = np.random.default_rng(0)
    x0 = torch.from_numpy(rng.normal(size=(1500, 2)))
    x1 = torch.from_numpy(rng.normal(size=(1500, 2)) + np.array([2.0, 0.0]))
    # KL(N(0, I) || N(mu, I)) = |mu|^2 / 2 = 2
    assert float(knn_kl_divergence(x0, x1, 5)) == pytest.approx(2.0, abs=0.3)
    same = torch.from_numpy(rng.normal(size=(1500, 2)))
    assert abs(float(knn_kl_divergence(x0, same, 5))) < 0.15


def test_soft_keep_drops_exactly_the_masked_count_per_row() -> None:
    rng = np.random.default_rng(3)
    ranks = torch.from_numpy(rng.random((6, 12)))
    lengths = [12, 9, 5, 1, 3, 10]
    valid = torch.from_numpy(np.arange(12)[None, :] < np.array(lengths)[:, None])
    for level in (0.1, 0.3, 0.5, 1.0):
        keep = soft_keep(ranks, valid, level, temperature=1e4)
        dropped = ((keep < 0.5) & valid).sum(1).tolist()
        assert dropped == [masked_count(n, level) for n in lengths]
        assert float(keep[~valid].abs().max()) == 0.0


def test_ranker_loss_decreases_and_its_masking_beats_random_masking() -> None:
    chunks, vocab = _toy_corpus()
    embedder = ToyEmbedder(vocab)
    ranker = LearnedRanker(
        level=1 / 9,
        batch_size=16,
        n_neighbors=3,
        max_epochs=40,
        learning_rate=3e-3,
        hidden=(32, 16, 8),
        random_state=0,
        embedder=embedder,
    )
    ranker.fit([c.text for c in chunks], [c.doc_id for c in chunks])
    first, last = np.mean(ranker.loss_history_[:5]), np.mean(ranker.loss_history_[-5:])
    assert ranker.n_iter_ == 40 and last < first - 0.5
    learned, records = redact_chunks(chunks, ranker, 1 / 9)
    assert len(records) == len(chunks)  # one word of nine per chunk
    rng = np.random.default_rng(0)

    class RandomScorer:
        def word_scores(self, text, label):
            return [WordScore(s, e, w, float(rng.random())) for s, e, w in word_spans(text)]

    random, _ = redact_chunks(chunks, RandomScorer(), 1 / 9)
    before = _mean_divergence(chunks, embedder)
    after_learned = _mean_divergence(learned, embedder)
    after_random = _mean_divergence(random, embedder)
    assert after_learned < after_random - 2.0 < before - 2.0
    # it learned what tells documents apart: mostly the distinctive words are masked
    distinctive = sum(r.word.startswith("d") for r in records) / len(records)
    assert distinctive > 0.8


def test_ranker_is_deterministic_and_validates() -> None:
    chunks, vocab = _toy_corpus(n_docs=2, per_doc=8)
    texts, groups = [c.text for c in chunks], [c.doc_id for c in chunks]
    fits = [
        LearnedRanker(max_epochs=2, batch_size=4, embedder=ToyEmbedder(vocab)).fit(texts, groups)
        for _ in range(2)
    ]
    assert fits[0].loss_history_ == fits[1].loss_history_
    np.testing.assert_array_equal(fits[0].ranks(texts[:3])[2], fits[1].ranks(texts[:3])[2])
    with pytest.raises(FitError, match="two documents"):
        LearnedRanker(embedder=ToyEmbedder(vocab)).fit(texts[:3], ["a"] * 3)
    with pytest.raises(FitError, match="before ranking"):
        LearnedRanker(embedder=ToyEmbedder(vocab)).word_scores("c1 c2")


@pytest.mark.slow
def test_minilm_word_vectors_are_contextual_cover_every_word_and_are_cached(tmp_path) -> None:
    embedder = MiniLMWordEmbedder(max_words=6, cache_dir=tmp_path)
    texts = [
        "Our cloud revenue grew 12% year-over-year, [Company Name] said.",
        "The bank by the river bank closed.",
    ]
    vectors = embedder.word_vectors(texts)
    assert [len(v) for v in vectors] == [len(word_spans(t)) for t in texts]
    assert vectors[0].shape[1] == 384 and np.isfinite(vectors[0]).all()
    bank_a, bank_b = vectors[1][1], vectors[1][5]
    assert not np.allclose(bank_a, bank_b)  # same word, different context
    again = embedder.word_vectors(texts[:1])
    assert embedder.n_embedded == 2 and again[0] is vectors[0]
    # a second embedder (another run) reads the same vectors from disk, embedding nothing
    warm = MiniLMWordEmbedder(max_words=6, cache_dir=tmp_path, model=object())
    for cold, hot in zip(vectors, warm.word_vectors(texts), strict=True):
        np.testing.assert_array_equal(cold, hot)
    assert warm.n_embedded == 0


def test_rankers_without_an_embedder_share_one_default_embedder() -> None:
    first, second = LearnedRanker(level=0.1), LearnedRanker(level=0.3)
    assert first._embedder() is second._embedder()  # the corpus is embedded once per process

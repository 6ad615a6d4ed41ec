"""The word-level differential-privacy baseline of paper 001 §6 (Feyisetan et al. 2020, "Madlib").

Each word w of a chunk is replaced by the vocabulary word nearest (Euclidean) to φ(w) + z, where
φ is a word embedding and z has density ∝ exp(−ε‖z‖) on R^d — the multivariate Laplace
mechanism, sampled as a direction uniform on the sphere times a norm ~ Gamma(d, scale 1/ε). It is
ε·d-metric private for each word on its own (d_χ-privacy): the guarantee ignores the correlation
between the words of a text, which is why the paper finds documents still identifiable "at any
useful ε". Here it is a candidate like the others, so the attacker panel, the audit and the goals
measure exactly that on the analyst's corpus.

Decisions where the paper is silent (no download, two cores):
* **Embedding**: the input word-piece embedding table of the project's MiniLM (read from its
  installed package, ``models/embedding.embedding_model_path``), projected by PCA to
  ``DEFAULT_DP_DIMENSIONS`` = 64 dimensions: the nearest-word search over every word of a corpus
  (≈ 300k on the dev corpus) against the vocabulary costs minutes per ε at 384 dimensions. The
  mechanism's metric is the projected one, and so is its guarantee.
* **Vocabulary**: MiniLM's whole-word tokens of at least two letters (no ``##`` pieces, no
  special tokens) and every word of the texts treated, a word outside MiniLM's table embedded
  as the mean of its word pieces' vectors: the mechanism's output space holds every input word,
  so ε → ∞ is the identity.
* **Words treated**: alphabetic runs; numbers, punctuation and placeholders (``[Company Name]``…)
  stay. A capitalised word's replacement is capitalised.
* **Exact shortcut**: a word whose noise norm is below half the distance to its nearest other
  vocabulary word maps to itself (triangle inequality), so only the others are searched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ..config.defaults import PLACEHOLDER_PATTERN
from ..corpus import Chunk

DEFAULT_DP_DIMENSIONS = 64
_WORD = re.compile(r"[A-Za-z]+")
_PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)
_BATCH = 4096


def laplace_noise(n: int, d: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """n draws of the d-dimensional multivariate Laplace with density ∝ exp(−ε‖z‖)."""
    if epsilon <= 0:
        raise ValueError(f"ε must be positive, got {epsilon}")
    direction = rng.standard_normal((n, d))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    return direction * rng.gamma(shape=d, scale=1.0 / epsilon, size=n)[:, None]


@dataclass
class WordVocabulary:
    """Vocabulary words and their (projected) vectors; ``vector_of`` embeds any word."""

    words: np.ndarray  # (V,) str, lower case
    vectors: np.ndarray  # (V, d) float32
    pieces: dict[str, np.ndarray] = field(repr=False, default_factory=dict)  # word piece -> projected vector
    index_: dict = field(init=False, repr=False)
    nearest_other_: np.ndarray = field(init=False, repr=False)  # distance to the nearest other word

    def __post_init__(self) -> None:
        self.index_ = {w: i for i, w in enumerate(self.words)}
        sq = np.einsum("ij,ij->i", self.vectors, self.vectors)
        best = np.full(len(self.words), np.inf)
        for lo in range(0, len(self.words), _BATCH):
            d2 = sq[lo:lo + _BATCH, None] - 2 * self.vectors[lo:lo + _BATCH] @ self.vectors.T + sq[None, :]
            d2[np.arange(d2.shape[0]), np.arange(lo, lo + d2.shape[0])] = np.inf
            best[lo:lo + _BATCH] = d2.min(axis=1)
        self.nearest_other_ = np.sqrt(np.maximum(best, 0.0))
        self._sq = sq

    def vector_of(self, word: str) -> np.ndarray:
        """The word's vector; a word outside the vocabulary: the mean of its word pieces'."""
        w = word.lower()
        if w in self.index_:
            return self.vectors[self.index_[w]]
        parts: list[np.ndarray] = []
        rest = w
        while rest:  # greedy longest-match word pieces (WordPiece)
            for end in range(len(rest), 0, -1):
                piece = rest[:end] if len(parts) == 0 else "##" + rest[:end]
                if piece in self.pieces:
                    parts.append(self.pieces[piece])
                    rest = rest[end:]
                    break
            else:
                rest = rest[1:]
        return np.mean(parts, axis=0) if parts else np.zeros(self.vectors.shape[1], np.float32)

    def with_words(self, words: Sequence[str]) -> WordVocabulary:
        """This vocabulary and ``words`` (lower-cased) not yet in it, embedded by ``vector_of``:
        the output space of the mechanism must hold every input word (ε → ∞ is the identity)."""
        new = sorted({w.lower() for w in words} - set(self.index_))
        if not new:
            return self
        extra = np.array([self.vector_of(w) for w in new], dtype=np.float32)
        out = object.__new__(WordVocabulary)
        out.words = np.concatenate([self.words, np.asarray(new, dtype=object)])
        out.vectors = np.concatenate([self.vectors, extra])
        out.pieces = self.pieces
        out.index_ = {w: i for i, w in enumerate(out.words)}
        out._sq = np.einsum("ij,ij->i", out.vectors, out.vectors)
        d2 = out._sq[len(self.words):, None] - 2 * extra @ out.vectors.T + out._sq[None, :]
        d2[np.arange(len(new)), len(self.words) + np.arange(len(new))] = np.inf
        to_old = np.sqrt(np.maximum(d2[:, : len(self.words)].min(axis=0), 0.0))
        out.nearest_other_ = np.concatenate([np.minimum(self.nearest_other_, to_old),
                                             np.sqrt(np.maximum(d2.min(axis=1), 0.0))])
        return out

    def nearest(self, points: np.ndarray) -> np.ndarray:
        """Row index of the nearest vocabulary word of each point (Euclidean)."""
        out = np.empty(len(points), dtype=np.int64)
        for lo in range(0, len(points), _BATCH):
            p = points[lo:lo + _BATCH].astype(np.float32)
            out[lo:lo + _BATCH] = (self._sq[None, :] - 2 * p @ self.vectors.T).argmin(axis=1)
        return out


@lru_cache(maxsize=2)
def minilm_vocabulary(dimensions: int = DEFAULT_DP_DIMENSIONS) -> WordVocabulary:
    """The MiniLM word-piece table projected by PCA (module docstring), whole words only."""
    from safetensors import safe_open

    from ..models.embedding import embedding_model_path

    folder = embedding_model_path()
    with safe_open(str(folder / "model.safetensors"), "np") as fh:
        table = fh.get_tensor("embeddings.word_embeddings.weight").astype(np.float64)
    tokens = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    centred = table - table.mean(axis=0)
    _, _, vt = np.linalg.svd(centred[:: 3], full_matrices=False)  # PCA axes from a third
    projected = (centred @ vt[:dimensions].T).astype(np.float32)
    keep = np.array([t.isalpha() and t.isascii() and len(t) >= 2 for t in tokens])
    pieces = {t: projected[i] for i, t in enumerate(tokens) if t.startswith("##") or t.isalpha()}
    return WordVocabulary(np.asarray(tokens, dtype=object)[keep], projected[keep], pieces)


def _spans(text: str) -> list[tuple[int, int]]:
    """Alphabetic words of ``text`` outside placeholders."""
    hidden = [(m.start(), m.end()) for m in _PLACEHOLDER.finditer(text)]
    return [(m.start(), m.end()) for m in _WORD.finditer(text)
            if not any(a <= m.start() < b for a, b in hidden)]


def privatise_texts(texts: Sequence[str], epsilon: float, rng: np.random.Generator,
                    vocabulary: WordVocabulary | None = None) -> tuple[list[str], int, int]:
    """(texts with every word through the mechanism, words treated, words changed)."""
    vocab = vocabulary or minilm_vocabulary()
    spans = [_spans(t) for t in texts]
    words = [t[a:b] for t, s in zip(texts, spans, strict=True) for a, b in s]
    if not words:
        return list(texts), 0, 0
    if np.isinf(epsilon):
        return list(texts), len(words), 0
    vocab = vocab.with_words(words)
    rows = np.array([vocab.index_[w.lower()] for w in words])
    base = vocab.vectors[rows]
    noise = laplace_noise(len(words), base.shape[1], epsilon, rng)
    stays = np.linalg.norm(noise, axis=1) < vocab.nearest_other_[rows] / 2
    out = rows.copy()
    search = np.flatnonzero(~stays)
    out[search] = vocab.nearest(base[search] + noise[search])
    new_words, changed = [], 0
    for w, r in zip(words, out, strict=True):
        new = str(vocab.words[r])
        if new == w.lower():
            new_words.append(w)
            continue
        changed += 1
        new_words.append(new.capitalize() if w[:1].isupper() else new)
    released, k = [], 0
    for text, s in zip(texts, spans, strict=True):
        parts, last = [], 0
        for a, b in s:
            parts += [text[last:a], new_words[k]]
            last, k = b, k + 1
        released.append("".join(parts) + text[last:])
    return released, len(words), changed


def privatise_chunks(chunks: Sequence[Chunk], epsilon: float, seed: int = 0, k: int = 0
                     ) -> tuple[tuple[Chunk, ...], int]:
    """(the chunks with every word through the mechanism at ``epsilon``, words changed); the
    generator is seeded by (``seed``, ``k``) so each ε of a list gets its own draw."""
    rng = np.random.default_rng([seed, k, 1_000_003])
    released, _, changed = privatise_texts([c.text for c in chunks], float(epsilon), rng)
    out = tuple(c if t == c.text else replace(c, text=t, entities=())
                for c, t in zip(chunks, released, strict=True))
    return out, changed

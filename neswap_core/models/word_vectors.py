"""Contextual word vectors (SPEC §9, paper 002): MiniLM token embeddings averaged per word.

The learned ranker (generate/ranker.py) scores each maskable word of a chunk
(``text/words.py``) from its vector. A word's vector is the mean of the last hidden states
of its word pieces; chunks longer than ``max_words`` words are read in windows of that many
words (MiniLM reads at most 256 word pieces), and a word cut off by truncation gets the mean of
its window. The model is loaded offline like ``embedding.load_embedding_model``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import DEFAULT_EMBEDDING_MODEL
from ..paths import resolve_cache_dir
from ..text.words import word_spans


class MiniLMWordEmbedder:
    """Contextual word embeddings from MiniLM token embeddings, never computed twice.

    Vectors are kept in memory and, with ``cache_dir``, on disk: one ``.npy`` per text (float16,
    keyed by sha256 of model, window size and text, written atomically), so a second run or
    another process reuses them. Fresh vectors are rounded to float16 too, so a cold and a warm
    run train the ranker on identical inputs.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_EMBEDDING_MODEL,
        *,
        max_words: int = 128,
        batch_size: int = 16,
        cache_dir: str | Path | None = None,
        model: Any = None,
    ) -> None:
        self.model_name = model_name
        self.max_words = max_words
        self.batch_size = batch_size
        self.cache_dir = resolve_cache_dir(cache_dir)  # "" = the per-user cache folder
        self._model = model
        self._cache: dict[str, np.ndarray] = {}
        self.n_embedded = 0

    def _load(self) -> Any:
        if self._model is None:
            from .embedding import load_embedding_model

            self._model = load_embedding_model(self.model_name)
        return self._model

    def _key(self, text: str) -> str:
        head = f"{self.model_name}\x00{self.max_words}\x00".encode()
        return hashlib.sha256(head + text.encode("utf-8", "surrogatepass")).hexdigest()

    def _folder(self) -> Path | None:
        if self.cache_dir is None:
            return None
        slug = "".join(c if c.isalnum() else "_" for c in self.model_name)[-40:]
        return Path(self.cache_dir) / f"word-vectors-{slug}"

    def word_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """(n_words, 384) float32 per text; texts already seen are not embedded again."""
        keys = [self._key(t) for t in texts]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if not self._recall(k, t)}
        if missing:
            windows = [(k, w) for k, t in missing.items() for w in self._windows(t)]
            vectors = self._embed_windows([w for _, w in windows])
            parts: dict[str, list[np.ndarray]] = {k: [] for k in missing}
            for (k, _), v in zip(windows, vectors, strict=True):
                parts[k].append(v)
            dim = self._dimension()
            for k, arrays in parts.items():
                joined = np.concatenate(arrays) if arrays else np.zeros((0, dim), np.float32)
                self._remember(k, joined.astype(np.float16))
            self.n_embedded += len(missing)
        return [self._cache[k] for k in keys]

    def _recall(self, key: str, text: str) -> bool:
        if key in self._cache:
            return True
        folder = self._folder()
        if folder is None:
            return False
        try:
            stored = np.load(folder / f"{key}.npy", allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return False
        if stored.ndim != 2 or stored.dtype != np.float16 or len(stored) != len(word_spans(text)):
            return False  # damaged or stale: embedded again and overwritten
        self._cache[key] = stored.astype(np.float32)
        return True

    def _remember(self, key: str, vectors: np.ndarray) -> None:
        self._cache[key] = vectors.astype(np.float32)
        folder = self._folder()
        if folder is None:
            return
        tmp = folder / f".tmp-{os.getpid()}-{key}.npy"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            np.save(tmp, vectors, allow_pickle=False)
            os.replace(tmp, folder / f"{key}.npy")
        except OSError:
            tmp.unlink(missing_ok=True)  # a read-only cache only costs time

    def _windows(self, text: str) -> list[tuple[str, list[tuple[int, int]]]]:
        """Pieces of at most ``max_words`` words: (window text, word offsets in the window)."""
        spans = word_spans(text)
        out = []
        for lo in range(0, len(spans), self.max_words):
            part = spans[lo : lo + self.max_words]
            base = part[0][0]
            out.append((text[base : part[-1][1]], [(s - base, e - base) for s, e, _ in part]))
        return out

    def _dimension(self) -> int:
        return int(self._load()[0].auto_model.config.hidden_size)

    def _embed_windows(self, windows: list[tuple[str, list[tuple[int, int]]]]) -> list[np.ndarray]:
        import torch

        model = self._load()
        tokenizer, encoder = model.tokenizer, model[0].auto_model
        out: list[np.ndarray] = [np.empty(0)] * len(windows)
        order = sorted(range(len(windows)), key=lambda i: -len(windows[i][0]))
        for lo in range(0, len(order), self.batch_size):
            idx = order[lo : lo + self.batch_size]
            batch = tokenizer(
                [windows[i][0] for i in idx],
                return_offsets_mapping=True,
                truncation=True,
                max_length=256,
                padding=True,
                return_tensors="pt",
            )
            offsets = batch.pop("offset_mapping").numpy()
            with torch.no_grad():
                hidden = encoder(**batch).last_hidden_state.numpy()
            for row, i in enumerate(idx):
                out[i] = _pool_words(hidden[row], offsets[row], windows[i][1])
        return out


def _pool_words(
    hidden: np.ndarray, offsets: np.ndarray, words: list[tuple[int, int]]
) -> np.ndarray:
    """Average each word's word-piece vectors; a word cut off by truncation gets the text mean."""
    starts = np.array([s for s, _ in words])
    ends = np.array([e for _, e in words])
    real = offsets[:, 1] > offsets[:, 0]  # special and padding tokens have empty offsets
    token_start = offsets[:, 0]
    word = np.searchsorted(starts, token_start, side="right") - 1
    ok = real & (word >= 0)
    ok[ok] &= token_start[ok] < ends[word[ok]]
    sums = np.zeros((len(words), hidden.shape[1]), np.float64)
    np.add.at(sums, word[ok], hidden[ok])
    counts = np.bincount(word[ok], minlength=len(words)).astype(np.float64)
    fallback = hidden[real].mean(axis=0) if real.any() else np.zeros(hidden.shape[1])
    pooled = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], fallback)
    return pooled.astype(np.float32)

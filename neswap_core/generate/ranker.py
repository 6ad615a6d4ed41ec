"""Learned word ranker (SPEC §9, paper 002): an MLP trained with a differentiable kNN KL loss.

Each word gets a contextual embedding (MiniLM's last hidden states averaged over the word's
word pieces); an MLP (4 linear layers: tanh, tanh, tanh, sigmoid) gives it a rank r in (0, 1).
Training soft-masks the lowest K % of each chunk, keep = sigmoid(T·(r − r_K)), T = 100, and
minimises a kNN estimate of KL(P0‖P1) between the masked mean-pooled sentence embeddings of a
batch of one document's chunks (P0) and a batch of other documents' chunks (P1), cycling over
the documents. At release the K % lowest-ranked words become ``[MASK]``: ``word_scores`` returns
the priority 1 − r, so ``redaction.redact_chunks`` masks exactly as for smarter redaction.

Decisions: the soft threshold r_K is the midpoint between the k-th and (k+1)-th smallest rank
(k = ``masked_count``), so exactly the k words of the release are pushed below 0.5, and it is
held constant in the gradient; the pooled embedding is L2-normalised like MiniLM's sentence
embeddings; the KL estimate is Wang–Kulkarni–Verdú's, (d/n)·Σ log(ν_k/ρ_k) + log(m/(n−1)).
The word vectors come from ``models/word_vectors.py`` (any ``WordEmbedder`` can stand in, e.g.
in tests). Torch runs on CPU with an explicit thread count.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import FitError
from ..models.word_vectors import MiniLMWordEmbedder
from .redaction import WordScore, masked_count, validate_level, word_spans


class WordEmbedder(Protocol):
    """Gives each maskable word of each text (``word_spans`` order) a vector: (n_words, d)."""

    def word_vectors(self, texts: Sequence[str]) -> list[np.ndarray]: ...


# --- the differentiable pieces (torch) -----------------------------------------------------------
def knn_kl_divergence(x0: Any, x1: Any, n_neighbors: int = 5) -> Any:
    """kNN estimate of KL(P0‖P1) from samples (Wang, Kulkarni & Verdú 2009); differentiable.

    (d/n)·Σ_i log(ν_k(i)/ρ_k(i)) + log(m/(n−1)), ρ_k the k-th neighbour distance of x0[i] among
    the other x0, ν_k among x1. Distances are floored at 1e-6 so exact duplicates stay finite.
    """
    import torch

    n, m, d = x0.shape[0], x1.shape[0], x0.shape[1]
    k = min(n_neighbors, n - 1, m)
    if k < 1:
        raise FitError(
            f"The kNN KL estimate needs at least 2 points in P0 and 1 in P1; got {n}, {m}."
        )
    d00 = _distances(x0, x0) + torch.diag(torch.full((n,), float("inf"), dtype=x0.dtype))
    rho = torch.topk(d00, k, dim=1, largest=False).values[:, -1]
    nu = torch.topk(_distances(x0, x1), k, dim=1, largest=False).values[:, -1]
    return d * torch.mean(torch.log(nu) - torch.log(rho)) + float(np.log(m / (n - 1)))


def _distances(a: Any, b: Any) -> Any:
    squared = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return squared.clamp_min(1e-12).sqrt()


def soft_keep(ranks: Any, valid: Any, level: float, temperature: float) -> Any:
    """keep = sigmoid(T·(r − r_K)) per row: ≈0 for the lowest ``masked_count`` valid words."""
    import torch

    n_valid = valid.sum(1)
    k = torch.tensor([masked_count(int(n), level) for n in n_valid.tolist()], dtype=torch.long)
    padded = torch.where(valid, ranks, torch.full_like(ranks, float("inf")))
    ordered = torch.sort(padded.detach(), dim=1).values
    width = ranks.shape[1]
    below = torch.gather(ordered, 1, (k - 1).clamp(0, width - 1)[:, None])[:, 0]
    above = torch.gather(ordered, 1, k.clamp(0, width - 1)[:, None])[:, 0]
    threshold = torch.where(k >= n_valid, below + 1.0, (below + above) / 2)
    threshold = torch.where(k == 0, torch.full_like(threshold, -1.0), threshold)
    return torch.sigmoid(temperature * (ranks - threshold[:, None])) * valid


def pooled_embeddings(vectors: Any, valid: Any, keep: Any) -> Any:
    """Mean over the words of keep·e, L2-normalised: the masked sentence embeddings."""
    import torch

    summed = (vectors * keep[..., None]).sum(1) / valid.sum(1).clamp_min(1)[:, None]
    return torch.nn.functional.normalize(summed, dim=1, eps=1e-8)


def _padded(arrays: list[np.ndarray]) -> tuple[Any, Any]:
    import torch

    width = max(1, max(len(a) for a in arrays))
    dim = arrays[0].shape[1]
    out = np.zeros((len(arrays), width, dim), np.float32)
    valid = np.zeros((len(arrays), width), bool)
    for i, a in enumerate(arrays):
        out[i, : len(a)] = a
        valid[i, : len(a)] = True
    return torch.from_numpy(out), torch.from_numpy(valid)


# --- the estimator -------------------------------------------------------------------------------
class LearnedRanker:
    """Paper 002's ranker, scikit-learn style: ``fit(texts, groups)``, then ``word_scores``.

    Parameters: ``level`` K, the proportion masked in training (paper: 0.1); ``temperature``
    T (paper: 100); ``hidden`` the three hidden widths; ``batch_size`` chunks per side of a
    step; ``n_neighbors`` k of the KL estimate; ``max_epochs`` passes over the documents (one
    step per document and epoch); ``learning_rate`` of Adam; ``n_threads`` torch CPU threads;
    ``random_state`` seeds the weights and the batches. ``embedder`` gives the word vectors
    (default MiniLM). Fitted: ``network_``, ``loss_history_`` (mean loss per epoch),
    ``n_iter_`` (epochs), ``n_steps_``, ``fit_seconds_``, ``groups_``.
    """

    def __init__(
        self,
        *,
        level: float = 0.1,
        temperature: float = 100.0,
        hidden: tuple[int, int, int] = (256, 64, 16),
        batch_size: int = 32,
        n_neighbors: int = 5,
        max_epochs: int = 20,
        learning_rate: float = 1e-3,
        n_threads: int = 1,
        random_state: int = 0,
        embedder: WordEmbedder | None = None,
    ) -> None:
        self.level = level
        self.temperature = temperature
        self.hidden = hidden
        self.batch_size = batch_size
        self.n_neighbors = n_neighbors
        self.max_epochs = max_epochs
        self.learning_rate = learning_rate
        self.n_threads = n_threads
        self.random_state = random_state
        self.embedder = embedder

    def _embedder(self) -> WordEmbedder:
        if self.embedder is None:
            self.embedder = shared_word_embedder()
        return self.embedder

    def fit(self, texts: Sequence[str], groups: Sequence[str]) -> LearnedRanker:
        """Train on texts grouped by document (P0 = one group's texts, P1 = the others')."""
        import torch

        level = validate_level(self.level)
        texts, groups = list(texts), [str(g) for g in groups]
        if len(texts) != len(groups):
            raise FitError(
                f"LearnedRanker.fit needs one group per text; got {len(texts)} texts "
                f"and {len(groups)} groups."
            )
        vectors = self._embedder().word_vectors(texts)
        keep = [i for i, v in enumerate(vectors) if len(v)]
        members = _group_members([groups[i] for i in keep])
        if len(members) < 2 or max(len(m) for m in members.values()) < 2:
            raise FitError(
                "The learned ranker needs at least two documents, one of them with two "
                "or more chunks, to compare a document with the rest."
            )
        arrays = [vectors[i] for i in keep]
        rng = np.random.default_rng(self.random_state)
        previous = torch.get_num_threads()
        torch.set_num_threads(self.n_threads)
        start = time.perf_counter()
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.random_state)
                self.network_ = _network(arrays[0].shape[1], self.hidden)
            self._train(arrays, members, level, rng)
        finally:
            torch.set_num_threads(previous)
        self.fit_seconds_ = time.perf_counter() - start
        self.groups_ = sorted(members)
        return self

    def _train(
        self, arrays: list[np.ndarray], members: dict[str, np.ndarray], level: float, rng
    ) -> None:
        import torch

        optimiser = torch.optim.Adam(self.network_.parameters(), lr=self.learning_rate)
        names = [g for g, idx in members.items() if len(idx) >= 2]
        everyone = np.arange(len(arrays))
        self.loss_history_, self.n_steps_ = [], 0
        for _ in range(self.max_epochs):
            losses = []
            for g in rng.permutation(names):
                own = members[g]
                others = np.setdiff1d(everyone, own, assume_unique=True)
                p0 = rng.choice(own, size=min(self.batch_size, len(own)), replace=False)
                p1 = rng.choice(others, size=min(self.batch_size, len(others)), replace=False)
                loss = self.batch_loss([arrays[i] for i in p0], [arrays[i] for i in p1], level)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                losses.append(float(loss.detach()))
                self.n_steps_ += 1
            self.loss_history_.append(float(np.mean(losses)))
        self.n_iter_ = len(self.loss_history_)

    def batch_loss(
        self, batch0: list[np.ndarray], batch1: list[np.ndarray], level: float | None = None
    ) -> Any:
        """The training loss of one step: kNN KL between the soft-masked pooled batches."""
        level = self.level if level is None else level
        pooled = []
        for batch in (batch0, batch1):
            vectors, valid = _padded(batch)
            ranks = self.network_(vectors)[..., 0]
            keep = soft_keep(ranks, valid, level, self.temperature)
            pooled.append(pooled_embeddings(vectors, valid, keep))
        return knn_kl_divergence(pooled[0], pooled[1], self.n_neighbors)

    def ranks(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The rank r in (0, 1) of each maskable word of each text (lowest masked first)."""
        import torch

        if not hasattr(self, "network_"):
            raise FitError("Call LearnedRanker.fit(texts, groups) before ranking words.")
        vectors = self._embedder().word_vectors(list(texts))
        sizes = [len(v) for v in vectors]
        if not sum(sizes):
            return [np.zeros(0) for _ in vectors]
        stacked = torch.from_numpy(np.concatenate([v for v in vectors if len(v)]))
        with torch.no_grad():
            flat = self.network_(stacked)[:, 0].numpy().astype(np.float64)
        return np.split(flat, np.cumsum(sizes)[:-1])

    def word_scores(self, text: str, label: str = "") -> list[WordScore]:
        """(start, end, word, 1 − r): the priority ``redact_chunks`` masks highest first."""
        return self.word_scores_batch([text], [label])[0]

    def word_scores_batch(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> list[list[WordScore]]:
        """``word_scores`` for many texts in one forward pass (labels are not needed)."""
        out = []
        for text, r in zip(texts, self.ranks(texts), strict=True):
            spans = word_spans(text)
            out.append(
                [WordScore(s, e, w, 1.0 - float(v)) for (s, e, w), v in zip(spans, r, strict=True)]
            )
        return out


def _network(dim: int, hidden: tuple[int, int, int]) -> Any:
    from torch import nn

    h1, h2, h3 = hidden
    return nn.Sequential(
        nn.Linear(dim, h1),
        nn.Tanh(),
        nn.Linear(h1, h2),
        nn.Tanh(),
        nn.Linear(h2, h3),
        nn.Tanh(),
        nn.Linear(h3, 1),
        nn.Sigmoid(),
    )


def _group_members(groups: list[str]) -> dict[str, np.ndarray]:
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    return {g: np.array(idx) for g, idx in members.items()}


@functools.cache
def shared_word_embedder() -> MiniLMWordEmbedder:
    """One MiniLM word embedder per process: rankers fitted for several levels (a plan grid)
    share its model and its in-memory vectors instead of embedding the corpus again."""
    return MiniLMWordEmbedder()


def fit_ranker(
    texts: Sequence[str],
    groups: Sequence[str],
    cache_dir: str | Path | None = None,
    **params: Any,
) -> LearnedRanker:
    """A ``LearnedRanker`` on MiniLM word vectors (cached in ``cache_dir``), fitted by group.

    ``groups`` are the documents (or the protected values: one per company in a corpus of one
    call per company); ``params`` override the defaults (``level``, ``max_epochs``, ...).
    """
    embedder = params.pop("embedder", None) or MiniLMWordEmbedder(cache_dir=cache_dir)
    return LearnedRanker(embedder=embedder, **params).fit(texts, groups)

"""Semantic breakpoint chunker (SPEC §2.2), after LangChain's ``SemanticChunker``.

Each sentence is embedded together with its ``buffer`` neighbours on each side; the cosine
distance between consecutive sentence groups is computed, and a document breaks after
sentence i where that distance exceeds the ``threshold`` percentile (0–100) of the distances
of the same document. Higher thresholds give fewer, bigger chunks.

Decisions where the spec is silent:
- chunks (and sentence groups) are slices of the document text, so ``text == doc[start:end]``
  and the original layout (one sentence a line, paragraphs) survives inside a chunk; the
  whitespace between chunks is dropped. A chunk of exactly the sentences of a group has the
  same text as that group, so the embedding cache serves it for free;
- a document with fewer than two sentences is one chunk (no distance to cut at); an empty
  one has no chunk;
- ``chunk_corpus`` embeds every sentence group of every document in one batched call and keeps
  the distances, so a new threshold costs no embedding at all (``ChunkedCorpus.with_threshold``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..config import DEFAULT_BUFFER, DEFAULT_THRESHOLD
from ..errors import ConfigError, NeswapError
from .sentences import Span, split_sentences

#: Any function mapping a list of texts to an (n, d) array of unit vectors.
EmbedFn = Callable[[list[str]], np.ndarray]


def validate_threshold(threshold: float) -> float:
    """Return ``threshold`` as a float, or raise ``ConfigError`` unless it is a percentile."""
    try:
        value = float(threshold)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"threshold must be a percentile in 0-100, got {threshold!r}.") from exc
    if math.isnan(value) or not 0 <= value <= 100:
        raise ConfigError(f"threshold must be a percentile in 0-100, got {threshold!r}.")
    return value


def _validate_buffer(buffer: int) -> int:
    if isinstance(buffer, bool) or not isinstance(buffer, int | np.integer) or buffer < 0:
        raise ConfigError(f"buffer must be a whole number of sentences >= 0, got {buffer!r}.")
    return int(buffer)


def sentence_groups(
    text: str, sentences: Sequence[Span], buffer: int = DEFAULT_BUFFER
) -> list[str]:
    """Per sentence i, the slice of ``text`` from sentence i-buffer to sentence i+buffer."""
    buffer = _validate_buffer(buffer)
    last = len(sentences) - 1
    return [
        text[sentences[max(0, i - buffer)].start : sentences[min(last, i + buffer)].end]
        for i in range(len(sentences))
    ]


def group_distances(vectors: np.ndarray) -> np.ndarray:
    """Cosine distances 1 - cos(v_i, v_{i+1}) between consecutive rows (length n - 1)."""
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2:
        raise NeswapError(f"Embeddings must be a 2-d array (n, d); got shape {v.shape}.")
    if len(v) < 2:
        return np.zeros(0)
    norms = np.linalg.norm(v, axis=1)
    v = v / np.where(norms > 0, norms, 1.0)[:, None]
    return np.clip(1.0 - np.einsum("ij,ij->i", v[:-1], v[1:]), 0.0, 2.0)


def breakpoints_for(distances: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """Indices i (break after sentence i) whose distance exceeds the ``threshold`` percentile.

    The comparison is strict, as in LangChain: a higher threshold never adds a breakpoint, and
    threshold 100 gives none.
    """
    threshold = validate_threshold(threshold)
    d = np.asarray(distances, dtype=np.float64)
    if d.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(d > np.percentile(d, threshold))


def chunk_spans(
    text: str, sentences: Sequence[Span], breakpoints: Sequence[int] | np.ndarray
) -> list[Span]:
    """Cut the sentences after each breakpoint; each chunk is a slice of ``text``."""
    chunks: list[Span] = []
    first = 0
    for cut in [*sorted(int(b) for b in breakpoints), len(sentences) - 1]:
        if cut < first:
            continue
        start, end = sentences[first].start, sentences[cut].end
        chunks.append(Span(start, end, text[start:end]))
        first = cut + 1
    return chunks


@dataclass(frozen=True, eq=False)
class ChunkedDocument:
    """A document's sentences and the distances between consecutive sentence groups."""

    doc_id: str
    text: str
    sentences: tuple[Span, ...]
    distances: np.ndarray  # length max(len(sentences) - 1, 0)

    def chunks(self, threshold: float = DEFAULT_THRESHOLD) -> list[Span]:
        """The chunks of this document at ``threshold`` (no embedding involved)."""
        if not self.sentences:
            return []
        return chunk_spans(self.text, self.sentences, breakpoints_for(self.distances, threshold))


@dataclass(frozen=True, eq=False)
class ChunkedCorpus:
    """Every document's sentence distances plus the threshold currently chosen."""

    documents: tuple[ChunkedDocument, ...]
    threshold: float = DEFAULT_THRESHOLD
    buffer: int = DEFAULT_BUFFER

    def with_threshold(self, threshold: float) -> ChunkedCorpus:
        """The same corpus cut at another percentile; instant, nothing is re-embedded."""
        return replace(self, threshold=validate_threshold(threshold))

    def chunks(self, threshold: float | None = None) -> list[tuple[str, list[Span]]]:
        """(doc_id, chunks) per document, at ``threshold`` or the stored one."""
        t = self.threshold if threshold is None else threshold
        return [(d.doc_id, d.chunks(t)) for d in self.documents]

    def chunk_texts(self, threshold: float | None = None) -> list[tuple[str, list[str]]]:
        """(doc_id, chunk texts) per document."""
        return [(doc_id, [c.text for c in spans]) for doc_id, spans in self.chunks(threshold)]

    def n_chunks(self, threshold: float | None = None) -> int:
        """Total number of chunks n at ``threshold`` (or the stored one)."""
        return sum(len(spans) for _, spans in self.chunks(threshold))

    @property
    def n_sentences(self) -> int:
        return sum(len(d.sentences) for d in self.documents)


def chunk_corpus(
    docs: Sequence[tuple[str, str]],
    embed: EmbedFn,
    threshold: float = DEFAULT_THRESHOLD,
    buffer: int = DEFAULT_BUFFER,
) -> ChunkedCorpus:
    """Split every (doc_id, text) into sentences and embed all sentence groups in one call.

    ``embed`` gets the groups of all documents at once (route it through
    ``embedding.Embedder.encode`` so unchanged groups are never embedded twice).
    """
    threshold = validate_threshold(threshold)
    buffer = _validate_buffer(buffer)
    sentences = [tuple(split_sentences(text)) for _, text in docs]
    groups = [
        sentence_groups(text, s, buffer) for (_, text), s in zip(docs, sentences, strict=True)
    ]
    flat = [g for doc_groups in groups for g in doc_groups]
    vectors = _embed_checked(embed, flat)
    documents = []
    offset = 0
    for (doc_id, text), sents in zip(docs, sentences, strict=True):
        block = vectors[offset : offset + len(sents)]
        offset += len(sents)
        documents.append(ChunkedDocument(doc_id, text, sents, group_distances(block)))
    return ChunkedCorpus(tuple(documents), threshold, buffer)


def semantic_chunks(
    text: str,
    embed: EmbedFn,
    threshold: float = DEFAULT_THRESHOLD,
    buffer: int = DEFAULT_BUFFER,
) -> list[str]:
    """The chunk texts of one document (SPEC §2.2)."""
    corpus = chunk_corpus([("doc", text)], embed, threshold, buffer)
    return [c.text for c in corpus.documents[0].chunks(threshold)]


def _embed_checked(embed: EmbedFn, texts: list[str]) -> np.ndarray:
    """Call ``embed`` once (skipped when there is nothing to embed) and check the shape."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    vectors = np.asarray(embed(texts))
    if vectors.ndim != 2 or len(vectors) != len(texts):
        raise NeswapError(
            f"The embedding function returned shape {vectors.shape} for {len(texts)} texts; "
            "it must return one row per text."
        )
    return vectors

"""The preprocessing pipeline, stage by stage (SPEC §1–§2), and the inputs of a release sweep.

corpus → presentation → direct identifiers → semantic chunks → entities → z, embeddings.
Each stage is a function of the stages before it, so the app can cache each one on its inputs
and the CLI runs them in sequence; ``prepare`` is the whole chain with timings.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..config import CATEGORIES, DEFAULT_BATCH_CHUNKS, DEFAULT_BATCH_DOCUMENTS, RunConfig
from ..corpus import Chunk, Corpus, chunk_id, corpus_digest
from ..disk_memo import DiskMemo, content_key
from ..paths import resolve_cache_dir
from ..text.contingency import contingency_table
from ..text.entity_cache import pipeline_fingerprint
from ..text.identifiers import suppress_corpus
from ..text.loading import load_corpus
from ..text.presentation import extract_presentations

Progress = Callable[[float, str], None]


@dataclass
class CleanCorpus:
    """Documents after presentation extraction and direct-identifier suppression (SPEC §2.1, §2.3)."""

    corpus: Corpus
    presentation: pd.DataFrame  # per document: layout, status, marker, characters kept, message
    identifiers: pd.DataFrame  # per document: company / url / executive replacements
    people: pd.DataFrame | None = None  # per document: executives listed and detected


def clean_corpus(
    corpus: Corpus, nlp=None, cache_dir: str | Path | None = None, detect_people: bool = True
) -> CleanCorpus:
    """Keep the prepared remarks, find the executives, replace direct identifiers by placeholders.

    With ``detect_people`` (default) executives are also detected in the text by spaCy PERSON
    entities in title context (``text.people``), so ``executives.csv`` is optional; ``nlp``
    defaults to ``load_ner()`` and ``cache_dir`` caches its results.
    """
    if detect_people and nlp is None:
        from ..text.entities import load_ner

        nlp = load_ner()
    key, folder = None, resolve_cache_dir(cache_dir)
    if folder is not None:  # kept by its inputs: a warm run cleans nothing (about 1 s on dev)
        key = content_key("clean_corpus", corpus_digest(corpus), detect_people,
                          pipeline_fingerprint(nlp, {}) if detect_people else None)  # fmt: skip
    return DiskMemo(folder, "clean_corpus", CLEAN_MEMO_ENTRIES).get_or_compute(
        key, lambda: _cleaned(corpus, nlp, cache_dir, detect_people))


#: Cleaned batches kept on disk (a batch is a few documents: ``DEFAULT_BATCH_DOCUMENTS``).
CLEAN_MEMO_ENTRIES = 256


def _cleaned(corpus: Corpus, nlp, cache_dir, detect_people: bool) -> CleanCorpus:
    from ..text.people import add_detected_people

    presented, presentation = extract_presentations(corpus)
    people = None
    if detect_people:
        presented, people = add_detected_people(presented, nlp, cache_dir)
    suppressed, identifiers = suppress_corpus(presented)
    return CleanCorpus(suppressed, presentation, identifiers, people)


def is_cleaned(corpus: Corpus, nlp, cache_dir: str | Path | None, detect_people: bool = True) -> bool:
    """Whether ``clean_corpus(corpus, nlp, cache_dir)`` would be read from its memo."""
    folder = resolve_cache_dir(cache_dir)
    if folder is None:
        return False
    key = content_key("clean_corpus", corpus_digest(corpus), detect_people,
                      pipeline_fingerprint(nlp, {}) if detect_people else None)  # fmt: skip
    return DiskMemo(folder, "clean_corpus", CLEAN_MEMO_ENTRIES).has(key)


def tag_people_ahead(corpus: Corpus, nlp, cache_dir: str | Path | None) -> None:
    """Run the NER that ``clean_corpus(corpus, nlp, cache_dir)`` needs (the people detection in
    its presented texts) and keep only its cache (``text.entity_cache``): a later cleaning of
    these documents, in any grouping, then tags nothing (issue 21: the reading attacker's)."""
    from ..text.people import detect_names

    if resolve_cache_dir(cache_dir) is None or not corpus.documents:
        return
    presented, _ = extract_presentations(corpus)
    detect_names([d.text for d in presented.documents], nlp, cache_dir)


def sentence_distances(corpus: Corpus, embedder, buffer: int):
    """Sentences and breakpoint distances of every document (one batched, cached embedding call).

    The result answers "how many chunks at threshold t" for any t without embedding again.
    """
    from ..text.chunking import chunk_corpus

    docs = [(d.doc_id, d.text) for d in corpus.documents]
    return chunk_corpus(docs, embedder.encode, buffer=buffer)


def chunks_at(corpus: Corpus, chunked, threshold: float) -> list[Chunk]:
    """The corpus's chunks (no entities yet) at a breakpoint percentile (SPEC §2.2)."""
    chunks: list[Chunk] = []
    for doc, (doc_id, texts) in zip(corpus.documents, chunked.chunk_texts(threshold), strict=True):
        value = corpus.protected_value(doc)
        chunks.extend(Chunk(chunk_id(doc_id, i), doc_id, i, t, value) for i, t in enumerate(texts))
    return chunks


def chunk_documents(corpus: Corpus, embedder, threshold: float, buffer: int) -> list[Chunk]:
    """Semantic chunks of every document (no entities yet)."""
    return chunks_at(corpus, sentence_distances(corpus, embedder, buffer), threshold)


def tag_entities(
    chunks: Sequence[Chunk],
    nlp,
    label_map: dict[str, str],
    cache_dir: str | Path | None = None,
    entity_filter=None,
) -> list[Chunk]:
    """Attach entity spans found by spaCy (``nlp.pipe``) to every chunk (SPEC §2.4).

    With ``cache_dir`` the spans are cached on disk by (pipeline, text hash): unchanged text is
    never tagged twice. ``entity_filter`` (default: ``EntityFilter()``, the defaults of
    ``config.DEFAULT_NOT_ENTITIES``) then drops strings that are never entities (issue 10).
    """
    from dataclasses import replace

    from ..text.entities import EntityFilter
    from ..text.entity_cache import EntityCache, pipeline_fingerprint

    cache = EntityCache(cache_dir, pipeline_fingerprint(nlp, label_map))
    spans = cache.extract([c.text for c in chunks], nlp, label_map)
    tagged = [replace(c, entities=tuple(s)) for c, s in zip(chunks, spans, strict=True)]
    return (entity_filter or EntityFilter()).apply(tagged)


def embed_chunks(
    chunks: Sequence[Chunk],
    embedder,
    out_path: str | Path | None = None,
    batch_chunks: int = DEFAULT_BATCH_CHUNKS,
) -> np.ndarray:
    """Unit-norm float32 embeddings of the chunk texts, through the content-hash cache.

    Embedded ``batch_chunks`` at a time into one array; with ``out_path`` that array is a
    memory-mapped ``.npy`` file written in place, so the vectors are never held twice.
    """
    if not chunks:
        return np.zeros((0, 0), dtype=np.float32)
    out: np.ndarray | None = None
    for lo in range(0, len(chunks), batch_chunks):
        vectors = embedder.encode([c.text for c in chunks[lo : lo + batch_chunks]])
        if out is None:
            shape = (len(chunks), vectors.shape[1])
            out = (
                np.lib.format.open_memmap(out_path, mode="w+", dtype=np.float32, shape=shape)
                if out_path is not None
                else np.empty(shape, dtype=np.float32)
            )
        out[lo : lo + len(vectors)] = vectors
    assert out is not None  # chunks is not empty
    if isinstance(out, np.memmap):
        out.flush()
    return out


@dataclass
class Prepared:
    """Everything preprocessing produces, plus the seconds each stage took."""

    config: RunConfig
    raw: Corpus
    clean: CleanCorpus
    chunks: list[Chunk]
    z: pd.DataFrame
    embeddings: np.ndarray
    timings: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # per stage, this process

    def summary(self) -> dict:
        """The JSON summary of ``prepare``: documents, chunks, entities, identifiers, seconds."""
        ents = {
            c: int(sum(1 for ch in self.chunks for s in ch.entities if s.category == c))
            for c in CATEGORIES
        }
        with_ent = {c: int((self.z[c] != "").sum()) for c in CATEGORIES} if len(self.z) else {}
        ident = self.clean.identifiers
        return {
            "corpus": self.config.corpus,
            "protect": self.config.protect,
            "documents": len(self.raw),
            "chunks": len(self.chunks),
            "threshold": self.config.prepare.threshold,
            "entities_per_category": ents,
            "chunks_with_entity_per_category": with_ent,
            "share_chunks_with_entity": {
                c: (v / len(self.chunks) if self.chunks else 0.0) for c, v in with_ent.items()
            },
            "identifiers_suppressed": {
                col: int(ident[col].sum())
                for col in ident.columns
                if pd.api.types.is_numeric_dtype(ident[col])
            },
            "presentation_marker_found": int(self.clean.presentation["found"].sum()),
            "presentation_status": {
                str(k): int(v) for k, v in self.clean.presentation["status"].value_counts().items()
            },
            "presentation_warnings": {
                row["doc_id"]: row["message"]
                for row in self.clean.presentation.to_dict("records")
                if row["status"] in ("whole_text", "unknown_layout")
            },
            "embedding_dim": int(self.embeddings.shape[1]) if self.embeddings.ndim == 2 else 0,
            "seconds": {k: round(v, 3) for k, v in self.timings.items()},
        }


@contextmanager
def _timed(
    timings: dict[str, float], stage: str, cpu: dict[str, float] | None = None
) -> Iterator[None]:
    """Add the wall seconds of the block to ``timings[stage]`` (CPU seconds to ``cpu[stage]``)."""
    start, start_cpu = time.perf_counter(), time.process_time()
    yield
    timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start
    if cpu is not None:
        cpu[stage] = cpu.get(stage, 0.0) + time.process_time() - start_cpu


@dataclass
class BatchOutput:
    """What ``prepare_batch`` makes of some documents, with the seconds each stage took."""

    clean: CleanCorpus
    chunks: list[Chunk]  # tagged
    vectors: np.ndarray | None  # one row per chunk; None when there is no chunk
    timings: dict[str, float]
    cpu_seconds: dict[str, float]


def prepare_batch(docs: Corpus, config: RunConfig, nlp, embedder, entity_filter=None
                  ) -> BatchOutput:
    """The per-document chain on a few documents: clean, chunk, tag (SPEC §2.1–§2.4).

    Every step depends on each document (or text) alone, so batches can run in any process and
    any order (``lanes``) and be concatenated. The chunk vectors are left to
    ``embed_outputs``: one call for all of a process's batches has fewer part-filled model
    batches than one call per batch (chunk vectors cost 9.5 CPU-s per batch, 6.8 in one call).
    """
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    with _timed(timings, "clean", cpu):
        clean = clean_corpus(docs, nlp=nlp, cache_dir=config.prepare.cache_dir)
    with _timed(timings, "chunking", cpu):
        chunks = chunk_documents(clean.corpus, embedder, config.prepare.threshold, config.prepare.buffer)
    with _timed(timings, "ner", cpu):
        chunks = tag_entities(chunks, nlp, config.prepare.label_map, config.prepare.cache_dir, entity_filter)
    return BatchOutput(clean, chunks, None, timings, cpu)


@dataclass
class TaggedAhead:
    """A batch of ``prepare``'s ``tag_ahead`` documents: only the seconds of their NER."""

    timings: dict[str, float]
    cpu_seconds: dict[str, float]


def embed_outputs(outputs: list[BatchOutput], embedder) -> None:
    """Fill in the chunk vectors of ``outputs`` with one embedding call (in place)."""
    texts = [c.text for o in outputs for c in o.chunks]
    if not texts:
        return
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    with _timed(timings, "embedding", cpu):
        vectors = np.asarray(embedder.encode(texts), dtype=np.float32)
    row = 0
    for o in outputs:
        o.vectors, row = vectors[row : row + len(o.chunks)], row + len(o.chunks)
    first = outputs[0]
    for stage in timings:  # the call's seconds are booked on the first batch
        first.timings[stage] = first.timings.get(stage, 0.0) + timings[stage]
        first.cpu_seconds[stage] = first.cpu_seconds.get(stage, 0.0) + cpu[stage]


def _batches(results: Sequence) -> list[BatchOutput]:
    """The corpus's batches among ``prepare``'s lane results (not the tag-ahead ones)."""
    return [r for r in results if isinstance(r, BatchOutput)]


def merge_clean(corpus: Corpus, documents: Sequence, frames: Sequence[tuple]) -> CleanCorpus:
    """One ``CleanCorpus`` from cleaned parts in any order: documents and the per-document
    frames (presentation, identifiers, people; each may be None) sorted into corpus order."""
    order = {d.doc_id: i for i, d in enumerate(corpus.documents)}
    docs = tuple(sorted(documents, key=lambda d: order[d.doc_id]))
    merged = []
    for j in range(3):
        parts = [f[j] for f in frames if f[j] is not None]
        frame = pd.concat(parts, ignore_index=True) if parts else None
        if frame is not None and "doc_id" in frame:
            frame = (frame.sort_values("doc_id", key=lambda col: col.map(order), kind="stable")
                     .reset_index(drop=True))
        merged.append(frame)
    return CleanCorpus(corpus.with_documents(docs), *merged)


def stack_vectors(blocks: list[np.ndarray], out_path: str | Path | None = None) -> np.ndarray:
    """The blocks' rows in order in one float32 array (a memory-mapped ``.npy`` at ``out_path``);
    each block is released once copied, so the vectors are never held twice."""
    n = sum(len(b) for b in blocks)
    dim = blocks[0].shape[1] if blocks else 0
    out = (np.lib.format.open_memmap(out_path, mode="w+", dtype=np.float32, shape=(n, dim))
           if out_path is not None else np.empty((n, dim), dtype=np.float32))
    row = 0
    for i, block in enumerate(blocks):
        out[row : row + len(block)] = block
        row += len(block)
        blocks[i] = out[:0]  # the caller's list lets go of it too
    if isinstance(out, np.memmap):
        out.flush()
    return out


def prepare(
    corpus: Corpus,
    config: RunConfig | None = None,
    *,
    embedder=None,
    nlp=None,
    corrections: Sequence = (),
    progress: Progress | None = None,
    embeddings_path: str | Path | None = None,
    batch_documents: int = DEFAULT_BATCH_DOCUMENTS,
    processes: int = 1,
    tag_ahead: Corpus | None = None,
) -> Prepared:
    """Run the whole preprocessing chain on a loaded corpus (SPEC §1–§2).

    Streaming (issue 14): documents go through ``prepare_batch`` at most ``batch_documents`` at
    a time, in ``processes`` processes sharing the documents (``lanes``); chunk vectors
    are gathered into ``embeddings_path`` (memory-mapped) when given. The output is the same
    whatever the batch size or number of processes. ``timings``/``cpu_seconds`` per stage are
    summed over the processes (``cpu_seconds["workers"]``: the forked workers' total), and
    ``timings["lanes"]`` is the wall time of the shared part. With ``processes > 1`` an
    ``embedder`` passed in must not have loaded its model yet: every process loads its own (a
    forked PyTorch or ONNX Runtime thread pool can hang); ``Embedder`` loads on first use.

    ``tag_ahead``: documents of another corpus whose people detection runs first in the same
    processes (``tag_people_ahead``, time ``timings["tag ahead"]``): the reading attacker's, so
    that its cleaning after ``prepare`` reads its NER from the cache instead of tagging ~5k
    sentences on one core (issue 21). Nothing else of them is kept or returned.
    """
    from ..models.embedding import Embedder, export_model_files
    from ..text.corrections import apply_corrections
    from ..text.entities import EntityFilter
    from ..text.lazy_ner import LazyNer
    from .lanes import run_in_lanes

    config = config or RunConfig()
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    say = progress or (lambda f, m: None)
    with _timed(timings, "load_models", cpu):
        say(0.0, "Loading models")
        nlp = nlp or LazyNer(config.prepare.spacy_model)  # spaCy imported only if a text needs tagging
        embedder = embedder or Embedder(  # loads its model on first use, in each process
            config.prepare.embedding_model, config.prepare.cache_dir, backend=config.prepare.embedding_backend
        )
    entity_filter = EntityFilter.from_config(config)
    documents = corpus.documents
    message = "Cleaning, chunking, tagging and embedding the documents"

    ahead = tag_ahead.documents if tag_ahead is not None else ()
    n_ahead = len(ahead)

    def run_batch(lo: int, hi: int) -> BatchOutput | TaggedAhead:
        timings: dict[str, float] = {}
        cpu: dict[str, float] = {}
        if lo < n_ahead:  # the first items are the tag-ahead documents
            assert tag_ahead is not None
            with _timed(timings, "tag ahead", cpu):
                tag_people_ahead(tag_ahead.with_documents(ahead[lo:min(hi, n_ahead)]), nlp,
                                 config.prepare.cache_dir)
        if hi <= n_ahead:
            return TaggedAhead(timings, cpu)
        out = prepare_batch(corpus.with_documents(documents[max(lo - n_ahead, 0):hi - n_ahead]),
                            config, nlp, embedder, entity_filter)
        for stage, seconds in timings.items():
            out.timings[stage] = out.timings.get(stage, 0.0) + seconds
            out.cpu_seconds[stage] = out.cpu_seconds.get(stage, 0.0) + cpu[stage]
        return out

    say(0.02, message)
    if processes > 1:  # the processes are the parallelism: one intra-op thread each (ONNX
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # would take every core per process)
        if isinstance(embedder, Embedder) and embedder._model is None:
            # the ONNX export traces the model with torch: here, never in a forked worker
            # (one segfaulted in CI, inside torch, exporting on its first batch)
            export_model_files(embedder.model_name, embedder.backend, embedder.cache_dir)
    start = time.perf_counter()
    results, worker_cpu = run_in_lanes(
        run_batch, n_ahead + len(documents), processes, batch_documents,
        lambda share: say(0.02 + 0.9 * share, message),
        finish=lambda lane_outputs: embed_outputs(_batches(lane_outputs), embedder),
    )
    timings["lanes"] = time.perf_counter() - start
    for result in results:
        for stage, seconds in result.timings.items():
            timings[stage] = timings.get(stage, 0.0) + seconds
        for stage, seconds in result.cpu_seconds.items():
            cpu[stage] = cpu.get(stage, 0.0) + seconds
    outputs = _batches(results)
    del results
    if worker_cpu:
        cpu["workers"] = worker_cpu
    clean = (merge_clean(corpus, [d for o in outputs for d in o.clean.corpus.documents],
                         [(o.clean.presentation, o.clean.identifiers, o.clean.people)
                          for o in outputs])
             if outputs else clean_corpus(corpus, nlp=nlp, cache_dir=config.prepare.cache_dir))
    chunks = [c for o in outputs for c in o.chunks]
    blocks = [o.vectors for o in outputs if o.vectors is not None]
    del outputs
    embeddings = stack_vectors(blocks, embeddings_path) if chunks else np.zeros((0, 0), np.float32)
    with _timed(timings, "ner", cpu):
        if not corrections and config.review.corrections:  # a run.toml exported by the app
            from ..text.corrections import corrections_from_config

            corrections = corrections_from_config(config.review.corrections)
        if corrections:
            chunks = apply_corrections(chunks, list(corrections))
    with _timed(timings, "contingency", cpu):
        z = contingency_table(chunks)
    say(1.0, "Done")
    return Prepared(config, corpus, clean, chunks, z, embeddings, timings, cpu)


def prepare_path(path: str | Path, config: RunConfig | None = None, **kwargs) -> Prepared:
    """Load a corpus from disk and prepare it (the CLI's and the benchmarks' entry point).

    Runs in ``lanes.default_processes()`` processes unless ``processes`` is passed
    (see ``prepare``).
    """
    from .lanes import default_processes

    kwargs.setdefault("processes", default_processes())
    config = config or RunConfig.of(corpus=str(path))
    corpus = load_corpus(path, protect=config.protect, text_column=config.prepare.text_column)
    return prepare(corpus, config, **kwargs)

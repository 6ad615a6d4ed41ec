"""Preprocessing on a Ray cluster with Ray Data (issue 14, item 4).

The driver loads the corpus; four ``map_batches`` stages do the rest, each with one model per
actor: cleaning (presentations, executives, identifiers — spaCy, CPU actors), chunking
(MiniLM sentence groups, CPU or GPU actors), NER (spaCy, CPU actors) and chunk embeddings
(MiniLM, CPU or GPU actors). Rows carry pickled documents and chunks, so every stage calls the
same functions as the local engine (``pipeline``) and the result is the same ``Prepared``: the
driver sorts the chunks back into corpus order. The mixture fit, swapping and risk stay on the
driver (they need the whole corpus and are fast).

Start a cluster with ``ray start --head`` (and ``ray start --address=HEAD:6379`` on the other
machines), then ``python -m neswap_core prepare --engine ray --address HEAD:6379 ...``.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import RunConfig
from ..corpus import Chunk, Corpus
from ..errors import ConfigError, ModelMissingError


@dataclass(frozen=True)
class RayOptions:
    """Cluster address (None: start a local Ray), actors per stage, GPUs per MiniLM actor."""

    address: str | None = None
    spacy_actors: int = 1
    minilm_actors: int = 1
    gpus_per_minilm_actor: float = 0.0
    documents_per_batch: int = 8
    chunks_per_batch: int = 256
    num_cpus: int | None = None  # only when starting a local Ray
    cpus_per_actor: float = 1.0  # below 1 lets all four actor pools share a small machine


class CleanWorker:
    """Presentation extraction, executive detection and identifier suppression (spaCy actor)."""

    def __init__(self, config: RunConfig) -> None:
        from ..text.entities import load_ner

        self.config = config
        self.nlp = load_ner(config.prepare.spacy_model)

    def __call__(self, batch: dict) -> dict:
        from .pipeline import clean_corpus

        docs = [pickle.loads(b) for b in batch["document"]]
        corpus = Corpus(tuple(docs), self.config.protect, "batch")
        clean = clean_corpus(corpus, nlp=self.nlp, cache_dir=self.config.prepare.cache_dir)
        frames = (clean.presentation, clean.identifiers, clean.people)
        return {
            "position": batch["position"],
            "document": [pickle.dumps(d) for d in clean.corpus.documents],
            "reports": [pickle.dumps(frames)] + [b""] * (len(docs) - 1),
        }


class ChunkWorker:
    """Semantic chunks of each document (MiniLM actor: embeds sentence groups)."""

    def __init__(self, config: RunConfig, device: str) -> None:
        from ..models.embedding import Embedder, load_encoder

        model = load_encoder(config.prepare.embedding_model, config.prepare.embedding_backend, config.prepare.cache_dir,
                             device=device)
        self.config = config
        self.embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir, model=model,
                                 backend=config.prepare.embedding_backend)

    def __call__(self, batch: dict) -> dict:
        from .pipeline import chunk_documents

        docs = [pickle.loads(b) for b in batch["document"]]
        corpus = Corpus(tuple(docs), self.config.protect, "batch")
        chunks = chunk_documents(corpus, self.embedder, self.config.prepare.threshold, self.config.prepare.buffer)
        where = {d.doc_id: int(p) for d, p in zip(docs, batch["position"], strict=True)}
        return {
            "position": np.array([where[c.doc_id] for c in chunks], dtype=np.int64),
            "index": np.array([c.index for c in chunks], dtype=np.int64),
            "chunk": [pickle.dumps(c) for c in chunks],
        }


class NerWorker:
    """Entity spans of each chunk (spaCy actor)."""

    def __init__(self, config: RunConfig) -> None:
        from ..text.entities import EntityFilter, load_ner

        self.config = config
        self.nlp = load_ner(config.prepare.spacy_model)
        self.not_entities = EntityFilter.from_config(config)

    def __call__(self, batch: dict) -> dict:
        from .pipeline import tag_entities

        chunks = [pickle.loads(b) for b in batch["chunk"]]
        tagged = tag_entities(chunks, self.nlp, self.config.prepare.label_map, self.config.prepare.cache_dir,
                              self.not_entities)
        return {**batch, "chunk": [pickle.dumps(c) for c in tagged]}


class EmbedWorker(ChunkWorker):
    """Unit vectors of the chunk texts (MiniLM actor)."""

    def __call__(self, batch: dict) -> dict:
        texts = [pickle.loads(b).text for b in batch["chunk"]]
        return {**batch, "vector": list(self.embedder.encode(texts))}


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise ModelMissingError(
            "Ray is not installed: run `pip install -r requirements.txt` (ray[data]), or use "
            "--engine local."
        ) from exc
    return ray


def connect(options: RayOptions) -> None:
    """Join the cluster at ``options.address``, or start a local Ray when it is None."""
    ray = _ray()
    if ray.is_initialized():
        return
    try:
        if options.address:
            ray.init(address=options.address, include_dashboard=False, log_to_driver=False)
        else:
            # Ray starts its workers at nice 15: beside any other busy process the actors, where
            # all of the work runs, got a few per cent of a core (CI beside two CPU-bound loops:
            # the Ray tests 8-11x slower, the rest of the suite 2x). The local engine's workers
            # run at the caller's niceness; a local Ray's do too.
            ray.init(num_cpus=options.num_cpus, include_dashboard=False, log_to_driver=False,
                     _system_config={"worker_niceness": os.nice(0)})
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(
            f"Could not connect to the Ray cluster at {options.address!r}: {exc}. Start one "
            "with `ray start --head` and pass the address it prints (HOST:6379)."
        ) from exc


def actor_cpus(options: RayOptions) -> float:
    """CPUs per actor: ``options.cpus_per_actor``, or less on a local Ray too small for the three
    actor pools that run at once (chunking, NER, embedding; cleaning finishes first), so that
    all three can hold an actor together on a 2-core machine.
    """
    if options.address:
        return options.cpus_per_actor
    total = options.num_cpus or os.cpu_count() or 1
    at_once = options.spacy_actors + 2 * options.minilm_actors
    return min(options.cpus_per_actor, total / at_once)


def run_stages(corpus: Corpus, config: RunConfig, options: RayOptions) -> Iterator[dict]:
    """The four Ray Data stages; yields the result batches (any order)."""
    ray = _ray()
    from ray.data import ActorPoolStrategy

    connect(options)
    rows = [{"position": i, "document": pickle.dumps(d)} for i, d in enumerate(corpus.documents)]
    device = "cuda" if options.gpus_per_minilm_actor > 0 else "cpu"
    ds = ray.data.from_items(rows)
    cpus = actor_cpus(options)
    spacy = {"compute": ActorPoolStrategy(size=options.spacy_actors), "num_cpus": cpus}
    minilm = {"compute": ActorPoolStrategy(size=options.minilm_actors), "num_cpus": cpus,
              "num_gpus": options.gpus_per_minilm_actor}
    ds = ds.map_batches(CleanWorker, fn_constructor_args=(config,),
                        batch_size=options.documents_per_batch, **spacy)
    clean = ds.materialize()
    chunked = clean.map_batches(ChunkWorker, fn_constructor_args=(config, device),
                                batch_size=options.documents_per_batch, **minilm)
    tagged = chunked.map_batches(NerWorker, fn_constructor_args=(config,),
                                 batch_size=options.chunks_per_batch, **spacy)
    embedded = tagged.map_batches(EmbedWorker, fn_constructor_args=(config, device),
                                  batch_size=options.chunks_per_batch, **minilm)
    yield from clean.iter_batches(batch_size=None, batch_format="numpy")
    yield from embedded.iter_batches(batch_size=None, batch_format="numpy")


def prepare_ray(
    corpus: Corpus,
    config: RunConfig,
    options: RayOptions | None = None,
    embeddings_path: str | Path | None = None,
):
    """Like ``pipeline.prepare`` but on Ray; returns the same ``Prepared``."""
    from ..text.contingency import contingency_table
    from .pipeline import Prepared, merge_clean, stack_vectors

    options = options or RayOptions()
    start = time.perf_counter()
    docs: dict[int, object] = {}
    reports: list[tuple] = []
    chunk_rows: list[tuple[int, int, Chunk, np.ndarray]] = []
    for batch in run_stages(corpus, config, options):
        if "document" in batch:
            docs.update((int(p), pickle.loads(b)) for p, b in zip(batch["position"],
                                                                  batch["document"], strict=True))
            reports += [pickle.loads(r) for r in batch["reports"] if len(r)]
        else:
            chunk_rows += [(int(p), int(i), pickle.loads(c), np.asarray(v, dtype=np.float32))
                           for p, i, c, v in zip(batch["position"], batch["index"],
                                                 batch["chunk"], batch["vector"], strict=True)]
    chunk_rows.sort(key=lambda row: (row[0], row[1]))
    chunks = [row[2] for row in chunk_rows]
    embeddings = stack_vectors([row[3][None, :] for row in chunk_rows], embeddings_path)
    clean = merge_clean(corpus, list(docs.values()), reports)
    timings = {"ray_total": time.perf_counter() - start}
    return Prepared(config, corpus, clean, chunks, contingency_table(chunks), embeddings, timings)


class JobWorker:
    """MiniLM actor of the release's sweep: embeds jobs of texts exactly as the driver's
    ``Embedder`` would (``models.embedding_pool``), so Ray's vectors are the local ones."""

    def __init__(self, *args) -> None:
        from ..models.embedding_pool import worker_embedder

        self.embedder = worker_embedder(*args)

    def embed(self, texts: list[str]) -> np.ndarray:
        from ..models.embedding_pool import embed_job

        return embed_job(self.embedder, texts)


def embed_jobs_ray(embedder, jobs: list[list[str]], options: RayOptions | None = None) -> list[np.ndarray]:
    """Each job's vectors (``choose.prefetch``'s jobs), computed by MiniLM actors on the cluster:
    one per CPU the cluster has (``options.minilm_actors`` at least); each job cut into the
    model calls the serial ``encode`` makes (``embedding_pool.job_pieces``), biggest first."""
    from ..models.embedding_pool import assemble_pieces, job_pieces, worker_args

    options = options or RayOptions()
    ray = _ray()
    connect(options)
    from ray.util import ActorPool

    n = max(options.minilm_actors, int(ray.cluster_resources().get("CPU", 1)))
    actor = ray.remote(num_cpus=1, num_gpus=options.gpus_per_minilm_actor)(JobWorker)
    pool = ActorPool([actor.remote(*worker_args(embedder)) for _ in range(n)])
    pieces = job_pieces(embedder, jobs)
    texts = [[jobs[j][i] for i in idx] for j, idx in pieces]
    order = sorted(range(len(pieces)), key=lambda k: -sum(map(len, texts[k])))
    vectors = pool.map(lambda a, k: a.embed.remote(texts[k]), order)
    out: dict[int, np.ndarray] = dict(zip(order, vectors, strict=True))
    return assemble_pieces(embedder, jobs, pieces, [out[k] for k in range(len(pieces))])

"""Cached calls into neswap_core for the pages, each keyed by exactly the inputs it depends on.

Models: ``st.cache_resource``. The corpus, its chunks and their embeddings: process memos
(``process_cached``, ``_Memo``: one object per server process, never copied); small tables:
``st.cache_data`` with string/tuple keys; large objects are passed as ``_underscored``
arguments so that they are not hashed. Fitted mixtures and sweeps hold numpy state plus an embedding
function, so they are kept with ``st.cache_resource`` (keyed by their settings) and the
mixture is also saved in the workspace, so a restart does not refit.
Changing the trade-off line or N only calls ``Sweep.table`` / ``choose_release``: no refit,
no re-embedding.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
import json
import os
import pickle
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from neswap_core import Candidates, Chunk, Corpus, build_candidates
from neswap_core.choose.memo_keys import chunk_field_digests, remember_field_digests
from neswap_core.config import (
    DEFAULT_EMBEDDING_BACKEND,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_SPACY_MODEL,
    RunConfig,
)
from neswap_core.generate.releases import ReleaseContext, Sweep, SweepState, sweep_for_config
from neswap_core.prepare.pipeline import (
    CleanCorpus,
    chunks_at,
    clean_corpus,
    embed_chunks,
    sentence_distances,
    tag_entities,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = ROOT / "data" / "sample"
#: Embedding and entity caches: ``$NESWAP_CACHE_DIR`` or ``.neswap-cache`` beside the app.
CACHE_DIR = Path(os.environ.get("NESWAP_CACHE_DIR") or ROOT / ".neswap-cache")


def digest(value: Any) -> str:
    """A short stable hash of any JSON-able value (used as a cache and workspace key)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


class _Memo:
    """A process-wide cache by key, like ``st.cache_resource`` but without replaying elements.

    The sweep and the plan candidates draw a progress bar that lives outside them; Streamlit's
    caches record elements drawn inside a cached call and fail to replay ones whose block was
    made outside (``CacheReplayClosureError`` on the next session's cache hit).
    """

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.values: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str, make: Callable[[], Any]) -> Any:
        with self.lock:
            if key in self.values:
                self.values.move_to_end(key)
                return self.values[key]
        value = make()
        with self.lock:
            self.values[key] = value
            while len(self.values) > self.max_entries:
                self.values.popitem(last=False)
        return value

    def has(self, key: str) -> bool:
        with self.lock:
            return key in self.values

    def clear(self) -> None:
        with self.lock:
            self.values.clear()


def process_cached(max_entries: int):
    """``st.cache_data`` for the corpus and its chunks, without the copies: keyed the same way
    (the arguments whose names do not start with ``_``), but the value is kept once per server
    process and every call gets that same object (issue 21). A ``st.cache_data`` hit unpickles
    the value: the chunks of 10,000 passages cost 0.4–1 s per call, several calls per page run,
    ten times that at 100,000. Callers never change these values in place. ``.clear()`` empties it."""
    def wrap(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        memo = _Memo(max_entries)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            key = repr([(n, v) for n, v in bound.arguments.items() if not n.startswith("_")])
            return memo.get(key, lambda: fn(*args, **kwargs))

        def has(*args, **kwargs) -> bool:
            """Whether a call with these keyed arguments (the ``_`` ones left out) is in memory."""
            bound = signature.bind_partial(*args, **kwargs)
            for name, parameter in signature.parameters.items():
                if name not in bound.arguments and not name.startswith("_"):
                    bound.arguments[name] = parameter.default
            key = repr([(n, bound.arguments[n]) for n in signature.parameters if not n.startswith("_")])
            return memo.has(key)

        call.clear = memo.clear  # type: ignore[attr-defined]
        call.has = has  # type: ignore[attr-defined]
        return call

    return wrap


# --- models ---------------------------------------------------------------------------------------
def embedder(backend: str = DEFAULT_EMBEDDING_BACKEND):
    """The sentence encoder of the run's ``embedding_backend`` ("auto" resolved on this machine:
    bf16 or ONNX), one per backend and process, as the CLI's (``RunConfig.prepare``)."""
    from neswap_core.models.embedding import resolve_backend

    return _embedder(resolve_backend(backend))


@st.cache_resource(show_spinner=False)  # announced by Stage.load's progress display
def _embedder(backend: str):
    from neswap_core import Embedder

    return Embedder(DEFAULT_EMBEDDING_MODEL, CACHE_DIR, backend=backend)


@st.cache_resource(show_spinner=False)
def ner_model():
    """The NER pipeline, imported and loaded only when a text must be tagged (LazyNer): a
    server restarted on warm disk caches never imports spaCy."""
    from neswap_core.text.lazy_ner import LazyNer

    return LazyNer(DEFAULT_SPACY_MODEL)


# --- corpus -----------------------------------------------------------------------------------------
def pack_uploads(files: list[tuple[str, bytes]]) -> tuple[str, bytes]:
    """Uploaded files as one zip payload and its content key ``upload:<sha>``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in sorted(files):
            zf.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
    payload = buf.getvalue()
    return "upload:" + hashlib.sha256(payload).hexdigest()[:16], payload


def unpack_uploads(payload: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        return [(n, zf.read(n)) for n in zf.namelist()]


#: Kinds of ``kept`` values that are a release's figures (a few kB each): kept for the core's
#: usual count of entries (``disk_memo.MAX_ENTRIES``, 24), not 4 like the corpus-sized ones
#: (chunks, vectors, the sweep: megabytes at 10k passages). An analyst browses more than four
#: releases; a restarted server then read the one in use back only if it was among the last
#: four, else loaded every attacker to measure it again (issue 21).
FIGURE_KINDS = frozenset({"attack_measures", "release_measures", "panel_measures", "naming_terms",
                          "document_views", "scorer_names", "adaptive_applies"})
BIG_ENTRIES = 4


def kept(kind: str, parts: list, compute: Callable[[], Any], *, backend: str | None = None,
         mapped: bool = False) -> Any:
    """``compute()``, kept on disk as well (``CACHE_DIR``/memo/app_<kind>) under ``parts``, the
    models that made it (the NER pipeline's fingerprint; the encoder of ``backend``) and the
    core's code: a restarted server reads the corpus and its chunks back instead of parsing,
    looking up and tagging every passage again (issue 21: at 10k chunks about 4 s of each
    page's first draw after a restart, ten times that at 100k). ``parts`` must name the value's
    inputs by content (an upload's content key, ``corpus_digest``), never by a path. ``mapped``:
    its arrays are read back memory-mapped and read-only (``DiskMemo``), without a copy."""
    from neswap_core.disk_memo import MAX_ENTRIES, DiskMemo, content_key

    key = content_key("app", kind, parts, _models(backend))
    entries = MAX_ENTRIES if kind in FIGURE_KINDS else BIG_ENTRIES
    return DiskMemo(CACHE_DIR, f"app_{kind}", max_entries=entries, mapped=mapped).get_or_compute(key, compute)


def _models(backend: str | None) -> list[str]:
    """The fingerprints of the models a kept value was made with (``kept``)."""
    from neswap_core.text.entity_cache import pipeline_fingerprint

    models = [pipeline_fingerprint(ner_model(), {})]
    if backend is not None:
        encoder = embedder(backend)
        models += [str(getattr(encoder, "model_name", "")), str(getattr(encoder, "backend", ""))]
    return models


def array_digest(x: np.ndarray) -> str:
    """A content digest of an array (the chunks' or pre-swap vectors), keying ``kept`` values:
    the core's, made once per read-only array and process (several kept values of a page are
    keyed by the same 155 MB at 100k) or read back with a mapped memo entry."""
    from neswap_core.disk_memo import content_key

    return content_key("array", x)


_DIGEST_LOCK = threading.Lock()


_CHUNK_DIGESTS: OrderedDict[int, tuple[Sequence[Chunk], str]] = OrderedDict()


def chunks_digest(chunks: Sequence[Chunk]) -> str:
    """A content digest of a list of chunks (ids, documents and texts), once per list object and
    process: a page's ``kept`` values are keyed by the same 100,990 passages (0.1–0.2 s each at
    100k). The lists given are the process memos' own, which nobody changes in place
    (``process_cached``)."""
    with _DIGEST_LOCK:
        hit = _CHUNK_DIGESTS.get(id(chunks))
        if hit is not None and hit[0] is chunks:
            _CHUNK_DIGESTS.move_to_end(id(chunks))
            return hit[1]
    value = _content_digest(chunks)
    with _DIGEST_LOCK:
        _CHUNK_DIGESTS[id(chunks)] = (chunks, value)  # holding the list keeps its id from being reused
        while len(_CHUNK_DIGESTS) > 8:
            _CHUNK_DIGESTS.popitem(last=False)
    return value


def _content_digest(chunks: Sequence[Chunk]) -> str:
    from neswap_core.disk_memo import texts_digest

    return texts_digest(part for ch in chunks for part in (ch.chunk_id, ch.doc_id, ch.text))


def _known_digest(chunks: Sequence[Chunk], value: str) -> None:
    """Record ``value`` as ``chunks_digest(chunks)``: a list made from chunks of known content by
    a keyed step (the roles) is named by their digest and that key, not hashed again (0.2 s at
    100k for each page's first draw)."""
    with _DIGEST_LOCK:
        _CHUNK_DIGESTS[id(chunks)] = (chunks, value)
        while len(_CHUNK_DIGESTS) > 8:
            _CHUNK_DIGESTS.popitem(last=False)


def corpus_digest(corpus: Corpus) -> str:
    """A digest of everything a corpus holds: the content key of everything computed from it
    (``kept``); the core's, once per corpus object."""
    from neswap_core.corpus import corpus_digest as digest_of

    return digest_of(corpus)


@process_cached(max_entries=8)
def load_source(source: str, protect: str,
                _payload: bytes | Callable[[], bytes | None] | None = None) -> Corpus:
    """The corpus named by ``source`` ("sample" or "upload:<sha>" with its payload, or a function
    reading it: read only when the corpus is not in memory, since an upload of 100,000 passages
    is 50 MB read from the workspace on every page run; an upload's parsed corpus is ``kept`` on
    disk by its content key)."""
    from neswap_core.text.loading import load_corpus, load_uploaded

    if source == "sample":
        return load_corpus(SAMPLE_DIR, protect=protect)
    payload = _payload() if callable(_payload) else _payload
    if payload is None:
        raise ValueError("uploaded corpus without its files")

    def parse() -> Corpus:  # announced by Stage.load's progress display ("reading the corpus")
        return load_uploaded(unpack_uploads(payload), protect=protect)

    return kept("corpus", [source, protect], parse)


@process_cached(max_entries=8)
def clean(source: str, protect: str, _corpus: Corpus, _progress: Callable | None = None
          ) -> CleanCorpus:
    nlp = _ReportingNer(ner_model(), _progress, "sentences read for executives' names")
    return clean_corpus(_corpus, nlp=nlp, cache_dir=CACHE_DIR)


class _ReportingNer:
    """The NER pipeline, reporting ``progress(fraction, message)`` as ``pipe`` tags texts (only
    texts missing from the cache reach it); everything else is the pipeline's own, so the
    cache fingerprint is the same."""

    def __init__(self, nlp, progress: Callable | None, what: str) -> None:
        self.nlp, self.progress, self.what = nlp, progress, what

    def pipe(self, texts, *args, **kwargs):
        texts = list(texts)
        for done, doc in enumerate(self.nlp.pipe(texts, *args, **kwargs), start=1):
            if self.progress is not None and (done % 16 == 0 or done == len(texts)):
                self.progress(done / len(texts), f"{self.what} ({done:,} of {len(texts):,} not in the cache yet)")
            yield doc

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.nlp, name)


class _Reporting:
    """An embedder whose ``encode`` reports ``progress(fraction, message)`` as it embeds."""

    def __init__(self, model, progress: Callable | None, what: str) -> None:
        self.model, self.progress, self.what = model, progress, what

    def encode(self, texts, *args, **kwargs):
        if self.progress is None:
            return self.model.encode(texts, *args, **kwargs)

        def tick(done: int, total: int) -> None:
            self.progress(done / max(total, 1), f"{self.what} ({done:,} of {total:,} not in the cache yet)")

        return self.model.encode(texts, *args, progress=tick, **kwargs)


@process_cached(max_entries=8)
def distances(source: str, protect: str, buffer: int, backend: str, _clean: CleanCorpus,
              _progress: Callable | None = None):
    model = _Reporting(embedder(backend), _progress, "sentence groups embedded")
    return kept("distances", [corpus_digest(_clean.corpus), buffer],
                lambda: sentence_distances(_clean.corpus, model, buffer), backend=backend)


@process_cached(max_entries=4)
def tagged_chunks(chunks_key: str, threshold: float, backend: str, _clean: CleanCorpus, _chunked,
                  _label_map: dict, _progress: Callable | None = None) -> list[Chunk]:
    """The chunks cut at ``threshold`` from the sentence distances (``_chunked``: a function
    giving them, called only when the chunks are not kept) with NER entities, cached by
    ``Stage.chunks_key``: it names everything the cut depends on, the sentence distances'
    backend and buffer included (a run on another backend used to get these chunks)."""
    def tag() -> list[Chunk]:
        chunks = chunks_at(_clean.corpus, _chunked(), threshold)
        nlp = _ReportingNer(ner_model(), _progress, "passages tagged")
        return tag_entities(chunks, nlp, _label_map, CACHE_DIR)

    def tag_and_digest() -> tuple[list[Chunk], str]:
        chunks = tag()
        return chunks, _content_digest(chunks)

    # kept with their content digest: a restarted server reads it back instead of hashing
    # every passage again (0.3 s of each page's first draw at 100k)
    chunks, content = kept("chunks", _chunk_parts(chunks_key, _clean, threshold, _label_map),
                           tag_and_digest, backend=backend)
    _known_digest(chunks, content)
    return chunks


def _chunk_parts(chunks_key: str, clean: CleanCorpus, threshold: float, label_map: dict) -> list:
    # "with digest": the kept value is (chunks, their content digest)
    return [chunks_key, corpus_digest(clean.corpus), threshold, sorted(label_map.items()), "with digest"]


def kept_ready(kind: str, parts: list, *, backend: str | None = None) -> bool:
    """Whether ``kept(kind, parts, ...)`` would read its value back (no computation)."""
    from neswap_core.disk_memo import MEMO_FOLDER, content_key

    key = content_key("app", kind, parts, _models(backend))
    return (CACHE_DIR / MEMO_FOLDER / f"app_{kind}" / f"{key}.pkl").is_file()


@process_cached(max_entries=4)  # no model: fast
def corrected_chunks(chunks_key: str, corrections_key: str, _chunks: list[Chunk], _corrections: list) -> list[Chunk]:
    from neswap_core.text.corrections import apply_corrections

    # Without corrections, the tagged list itself: nobody changes these lists in place, and its
    # content digest (``chunks_digest``) is then made once for both.
    return apply_corrections(_chunks, _corrections) if _corrections else _chunks


def _read_only(x: np.ndarray) -> np.ndarray:
    x.setflags(write=False)  # shared by every session: nobody may change it in place
    return x


def chunk_embeddings(chunks_key: str, backend: str, _chunks: list[Chunk],
                     _progress: Callable | None = None) -> np.ndarray:
    """The chunks' vectors: one read-only array per process (issue 14: one copy of the embeddings).

    Not ``st.cache_data``: it pickles the array and hands every call a fresh copy (at 100k chunks
    150 MB each, plus the pickled bytes, up to ``max_entries`` times); a process memo returns the
    same object to every page and session.
    """

    def embed() -> np.ndarray:
        return embed_chunks(_chunks, _Reporting(embedder(backend), _progress, "passages embedded"))

    return _EMBEDDINGS.get(chunks_key, lambda: _read_only(kept(
        "embeddings", [chunks_key, chunks_digest(_chunks)], embed, backend=backend, mapped=True)))


def role_inputs(key: str, backend: str, _chunks: list[Chunk], _x: np.ndarray, _roles: dict,
                _progress: Callable | None = None) -> tuple[list[Chunk], np.ndarray]:
    """Pre-swap chunks and vectors (C/U operators applied); the vectors are ``_x`` itself when the
    roles change no text, else one read-only array with the changed rows re-embedded (progress
    announced by Stage.load). Kept on disk as the rows the roles changed (``role_changes``)."""
    def apply() -> RoleChanges:
        from neswap_core.generate.context import release_inputs  # scikit-learn: only to compute

        model = _Reporting(embedder(backend), _progress, "passages re-embedded with placeholders")
        return role_changes(_chunks, _x, *release_inputs(_chunks, _x, _roles, model.encode))

    def make():
        content = chunks_digest(_chunks)
        changes = kept("pre_swap_rows", [key, content], apply, backend=backend)
        chunks = changes.chunks_applied_to(_chunks)
        # the vectors whole, read back mapped: applying the changed rows to a copy of every
        # vector took 0.36 s of each page's first draw after a restart at 100k passages
        x = _x if changes.rows is None else _read_only(kept(
            "pre_swap_vectors", [key, content], lambda: changes.vectors_applied_to(_x),
            backend=backend, mapped=True))
        _known_digest(chunks, hashlib.sha256(f"{content}/{key}".encode()).hexdigest())
        # the digests behind the core's run and build keys, kept with them: each page's first
        # draw after a restart hashed every passage and its entities again (0.5 s at 100k)
        fields = kept("pre_swap_fields", [key, content], lambda: chunk_field_digests(chunks),
                      backend=backend)
        remember_field_digests(chunks, fields)
        return chunks, x

    return _PRE_SWAP.get(key, make)


@dataclass(frozen=True)
class RoleChanges:
    """What the roles changed in the chunks and their vectors: the positions, the new chunks
    there, and the vectors' changed rows (None: the same array). Issue 21: the roles change a
    few passages (2,418 of 100,990 on the synthetic 100k corpus), and keeping every chunk and
    the whole 155 MB array made a restarted server read 230 MB back for each page's first draw."""

    positions: np.ndarray
    chunks: list[Chunk]
    rows: np.ndarray | None
    row_positions: np.ndarray

    def applied_to(self, chunks: list[Chunk], x: np.ndarray) -> tuple[list[Chunk], np.ndarray]:
        return self.chunks_applied_to(chunks), self.vectors_applied_to(x)

    def chunks_applied_to(self, chunks: list[Chunk]) -> list[Chunk]:
        out = list(chunks)
        for i, chunk in zip(self.positions.tolist(), self.chunks, strict=True):
            out[i] = chunk
        return out

    def vectors_applied_to(self, x: np.ndarray) -> np.ndarray:
        if self.rows is None:
            return x
        y = np.array(x, copy=True)
        y[self.row_positions] = self.rows
        return y


def role_changes(before: list[Chunk], x: np.ndarray, after: list[Chunk], y: np.ndarray) -> RoleChanges:
    """``RoleChanges`` that turn (``before``, ``x``) into (``after``, ``y``) exactly."""
    positions = np.array([i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b],
                         dtype=np.int64)
    if y is x:
        return RoleChanges(positions, [after[i] for i in positions.tolist()], None, positions[:0])
    rows = np.flatnonzero((np.asarray(y) != np.asarray(x)).any(axis=1))
    return RoleChanges(positions, [after[i] for i in positions.tolist()], np.array(y[rows]), rows)


def mixture(key: str, _x: np.ndarray, _config: RunConfig, _progress: Callable | None = None):
    """Fit the SphericalMixture for these embeddings and settings (progress per EM step).

    Not a Streamlit cache: the progress display lives outside it and a cache would replay it.
    The result is kept in the workspace and read back through ``_stored_mixture`` (cached).
    """
    from neswap_core.generate.context import fit_mixture  # scikit-learn: pages 1-2 never need it

    return fit_mixture(_x, _config, _progress)


#: Setting that marks the trade-off line's offset as the default (never moved by the analyst):
#: such a line follows a change of N, so it stays reached (issue 13).
AUTO_LINE = "trade_off_c_auto"

#: Sweep keys computed in this server process: the sidebar shows release numbers only for
#: these, so it never starts a long computation itself.
SWEEPS_READY: set[str] = set()


_SWEEPS = _Memo(16)
_CANDIDATES = _Memo(8)
_EMBEDDINGS = _Memo(2)  # chunk vectors, by chunks key (two thresholds at most)
_PRE_SWAP = _Memo(4)  # pre-swap chunks and vectors, by roles key


def sweep(key: str, _chunks: list[Chunk], _x: np.ndarray, _mixture, _config: RunConfig,
          _progress: Callable | None = None, _content: str | None = None) -> Sweep:
    """The candidate sweep of these settings, computed once per process (progress outside) and
    kept on disk by ``key`` (it names the corpus's content, the roles, corrections, mixture and
    sweep settings: ``Stage.sweep_key``) as a ``SweepState``: a restarted server reads the draws
    back instead of swapping and embedding again. ``_content``: a digest of the chunks before
    the roles (``key`` names the roles), made once for every page's kept values (0.2 s at 100k)."""
    def make() -> Sweep:

        backend = _config.prepare.embedding_backend
        encode = embedder(backend).encode

        def compute() -> SweepState:
            return SweepState.of(sweep_for_config(ReleaseContext(list(_chunks), _x, _mixture, encode),
                                                  _config, _progress))

        state = kept("sweep", [key, _content or chunks_digest(_chunks)], compute, backend=backend)
        own = list(_chunks)  # the same chunks: their digest is known (0.27 s at 100k, the Frontier)
        _known_digest(own, chunks_digest(_chunks))
        result = state.restore(own, _x, _mixture, encode)
        SWEEPS_READY.add(key)
        return result

    return _SWEEPS.get(key, make)


def candidates(key: str, _sweep: Sweep, _config: RunConfig, _progress: Callable | None = None,
               _reading_units: tuple | None = None) -> Candidates:
    """Every candidate of the config, the paper's and the plans' (``build_candidates``, as the
    CLI), without the attackers' columns (``measured`` adds them for the export). Kept on disk
    as well (``memo``: the core's run key), so a restarted server does not measure them again.
    ``_reading_units``: the attacker reading's passages, which the document defence's defender
    is cross-fitted on, as in the CLI (``key`` names the reading: ``Stage.plans_key``). On a
    big corpus their changed passages are embedded on every core first, as the CLI's
    ``run_release`` does (``PREFETCH_MIN_CHUNKS``: the app's first Frontier visit at 10k chunks
    embedded them one call after the other, on one core)."""

    def make() -> Candidates:
        from neswap_core.prepare.lanes import default_processes

        return build_candidates(_sweep, _config, progress=_progress, memo=True,
                                reading_units=_reading_units, processes=default_processes())

    made = _CANDIDATES.get(key, make)
    return at_population(key, made, _config.sweep.population)


def measured(key: str, _candidates: Candidates, _config: RunConfig, _scorers: dict,
             _progress: Callable | None = None) -> Candidates:
    """The same candidates with every attacker's measured columns (the plans are not applied
    again): the table the CLI writes to key/candidates.csv. Kept on disk under the candidates'
    run key and ``key`` (which names the attackers: their reading, seed and families)."""
    from neswap_core.choose.memo_keys import derived_key

    def make() -> Candidates:
        out = build_candidates(_candidates.sweep, _config, _scorers, plans=_candidates.plans,
                               documents=_candidates.documents, progress=_progress,
                               table_key=derived_key(_candidates.key, "app measured", key))
        if _progress is not None:  # the core's last report may be below 100 %: clear the bar
            _progress(1.0, "done")
        return out

    return at_population(key, _CANDIDATES.get(key, make), _config.sweep.population)


_AT_POPULATION = _Memo(8)


def at_population(key: str, found: Candidates, population: float) -> Candidates:
    """``found`` (kept under ``key``, which leaves N out: N changes only DR) with its DR at the
    population size N, made once per process: a change of N on the Frontier page measured every
    candidate again (22 s on the dev corpus)."""
    return _AT_POPULATION.get(digest([key, id(found), float(population)]),
                              lambda: found.at_population(population))


@st.cache_data(show_spinner=False, max_entries=64)
def release_table(key: str, population: float, _sweep: Sweep) -> pd.DataFrame:
    return _sweep.table(population)


@st.cache_data(show_spinner=False, max_entries=64)
def pitman_table(key: str, population: float, _sweep: Sweep) -> pd.DataFrame:
    return _sweep.pitman_table(population)


# --- the whole chain for the current settings ------------------------------------------------------
@dataclass
class Stage:
    """What the pages need, computed lazily in order; every attribute is cached upstream."""

    settings: dict
    workspace: Any

    # keys ------------------------------------------------------------------------------------
    @property
    def source(self) -> str:
        return self.settings["corpus_source"]

    @property
    def protect(self) -> str:
        return self.settings["protect"]

    @property
    def config(self) -> RunConfig:
        """The run config of the settings, built once per settings' config object: every key
        and step reads it, and rebuilding (validating every section) cost 0.7 s of a page run
        (issue 21). The settings replace their config object when they change."""
        from .state import run_config

        base = getattr(self.settings, "config", None)
        made = self.__dict__.get("_config")
        if made is not None and base is not None and made[0] is base:
            return made[1]
        config = run_config(self.settings)
        if base is not None:
            self.__dict__["_config"] = (base, config)
        return config

    def _payload(self) -> bytes | None:
        if self.source == "sample":
            return None
        return self.workspace.get_artifact("upload", self.source)

    # stages ----------------------------------------------------------------------------------
    def corpus(self) -> Corpus:
        return load_source(self.source, self.protect, self._payload)

    def clean(self, progress: Callable | None = None) -> CleanCorpus:
        return clean(self.source, self.protect, self.corpus(), progress)

    @property
    def backend(self) -> str:
        """The embedding backend that runs ("auto" resolved on this machine): part of every key
        of embedded data, since bf16 and ONNX vectors differ (and move sentence breakpoints)."""
        from neswap_core.models.embedding import resolve_backend

        return resolve_backend(self.config.prepare.embedding_backend)

    def chunked(self, progress: Callable | None = None):
        return distances(self.source, self.protect, self.config.prepare.buffer, self.backend,
                         self.clean(), progress)

    @property
    def chunks_key(self) -> str:
        """Key of the chunks and their vectors: the corpus, the sentence distances (buffer,
        backend), the threshold and the label map."""
        cfg = self.config.prepare
        return digest([self.source, self.protect, self.settings["threshold"], cfg.label_map,
                       self.backend, cfg.buffer])

    def raw_chunks(self, progress: Callable | None = None) -> list[Chunk]:
        """Chunks with NER entities, before the analyst's corrections."""
        return tagged_chunks(self.chunks_key, float(self.settings["threshold"]), self.backend, self.clean(),
                             self.chunked, self.config.prepare.label_map, progress)

    def chunked_unless_cut(self, progress: Callable | None = None) -> None:
        """The sentence distances, unless the chunks cut from them are in memory or kept: a
        restarted server read them back (0.6 s at 100k passages) for pages that only show
        the chunks. ``LOAD_STEPS``' third step when a later one follows; ``chunked`` gives them
        whenever asked."""
        threshold = float(self.settings["threshold"])
        label_map = self.config.prepare.label_map
        if tagged_chunks.has(self.chunks_key, threshold, self.backend) or kept_ready(
                "chunks", _chunk_parts(self.chunks_key, self.clean(), threshold, label_map),
                backend=self.backend):
            return
        self.chunked(progress)

    def corrections(self) -> list:
        from neswap_core.text.corrections import EntityCorrection

        return [EntityCorrection(action=c["action"], category=c["category"], text=c["text"],
                                 chunk_id=c["chunk_id"]) for c in self.workspace.corrections()]

    @property
    def corrections_key(self) -> str:
        return digest([[c["action"], c["category"], c["text"], c["chunk_id"]] for c in self.workspace.corrections()])

    def chunks(self) -> list[Chunk]:
        """Chunks with entities after the analyst's corrections (what every later step uses)."""
        return corrected_chunks(self.chunks_key, self.corrections_key, self.raw_chunks(), self.corrections())

    def embeddings(self, progress: Callable | None = None) -> np.ndarray:
        return chunk_embeddings(self.chunks_key, self.backend, self.raw_chunks(), progress)

    @property
    def roles_key(self) -> str:
        return digest([self.chunks_key, self.corrections_key, self.settings["roles"]])

    def pre_swap(self, progress: Callable | None = None) -> tuple[list[Chunk], np.ndarray]:
        """Chunks and embeddings after the C/U operators: the pre-swap data of every release."""
        return role_inputs(self.roles_key, self.backend, self.chunks(), self.embeddings(),
                           self.settings["roles"], progress)

    @property
    def mixture_key(self) -> str:
        s = self.settings
        return digest([self.roles_key, s["family"], s["n_components"], s["min_weight"],
                       s["mixture_seed"], s["n_init"], s["max_iter"]])

    def mixture(self, progress: Callable | None = None):
        """The fitted mixture; also persisted in the workspace so a restart does not refit, and
        read back as its attributes (``mixture_state.StoredMixture``: no scikit-learn import
        until a method is called)."""
        from .mixture_state import mixture_state

        key = self.mixture_key
        state = self.workspace.get_artifact("mixture_state", key)
        if state is None:
            stored = self.workspace.get_artifact("mixture", key)
            if stored is None:
                _, x = self.pre_swap()
                fitted = mixture(key, x, self.config, progress)
                self.workspace.put_artifact("mixture", key, pickle.dumps(fitted))
            else:  # a workspace of an earlier version: its pickled estimator
                fitted = pickle.loads(stored)
            state = mixture_state(fitted)
            self.workspace.put_artifact("mixture_state", key, state)
        return _stored_mixture(key, state)

    @property
    def sweep_key(self) -> str:
        """The mixture's key and every sweep setting the paper's sweep reads (N aside: the
        population slider re-reads the same sweep's tables, ``release_table``)."""
        sw = self.config.sweep
        return digest([self.mixture_key, sw.combination_size, sw.max_swaps, sw.draws, sw.require,
                       sw.seed, sw.suppress_leftovers])

    def sweep(self, progress: Callable | None = None) -> Sweep:
        chunks, x = self.pre_swap()
        fitted = self.mixture(progress)
        return sweep(self.sweep_key, chunks, x, fitted, self.config, progress, chunks_digest(self.chunks()))

    @property
    def plans_key(self) -> str:
        """Key of the candidates: the sweep's key plus every setting ``build_candidates`` reads
        (the plans, the document defence, the DP baseline's epsilons). The document section
        was missing: a session's candidates served a run with other document levels. N is left
        out: it changes only DR, which ``at_population`` gives the candidates at any N."""
        from .reading import has_reading, reading_key_of

        cfg = self.config
        sections = cfg.to_dict()
        reading = reading_key_of(self) if has_reading(self) else None  # the defence's defender
        return digest([self.sweep_key, sections["plans"], sections["document"],
                       cfg.sweep.dp_epsilons, reading])

    @property
    def review_key(self) -> str:
        """Workspace key of the content-keyed review decisions: the pre-swap data's key.

        A change's key is its content (chunk ids and strings), so one namespace per pre-swap
        data lets a decision follow the change into any release that contains it.
        """
        return f"content/{self.roles_key}"

    def candidates(self, progress: Callable | None = None) -> Candidates:
        """Every candidate of the current settings (``Candidates``: the table, and the applied
        plans in ``.plans`` when plans are on)."""
        from .reading import reading_units_of

        return candidates(self.plans_key, self.sweep(), self.config, progress,
                          reading_units_of(self))

    def table(self, population: float | None = None) -> pd.DataFrame:
        n = float(population if population is not None else self.settings["population"])
        return release_table(self.sweep_key, n, self.sweep())

    def __post_init__(self) -> None:
        if hasattr(self.settings, "resolve"):
            self.settings.resolve = self.default_offset

    def default_offset(self) -> float:
        """Offset c of the default line, until the analyst moves it: ``frontier.default_offset``
        (always reached: half of the largest risk reduction), stored so that every page, tab
        and run.toml use the same c from the first time any page asks for it."""
        from neswap_core import NeswapError
        from neswap_core.choose.frontier import default_offset

        from .state import DEFAULT_SETTINGS
        from .widgets import progress_display

        try:
            sweep = self.sweep(progress_display("Building candidate releases"))
        except NeswapError:
            # No sweep for this corpus (e.g. too few distinct chunks): the page says why when it
            # asks for the sweep inside ``user_errors``; reading a setting must never raise.
            return float(DEFAULT_SETTINGS["trade_off_c"])
        table = release_table(self.sweep_key, float(self.settings["population"]), sweep)
        c = default_offset(table)
        if len(table):
            self.workspace.update_settings({"trade_off_c": c, AUTO_LINE: True})
        return c

    def load(self, upto: str = "pre_swap", progress: Callable | None = None) -> None:
        """Run the preprocessing chain up to step ``upto`` (a name of ``LOAD_STEPS``) with one
        progress display: stage, percent and time left (issue 13: the first load took 78 s
        behind two spinners). Steps already cached take no share of the bar."""
        from .widgets import progress_display

        names = [name for _, name, _ in LOAD_STEPS]
        steps = LOAD_STEPS[: names.index(upto) + 1]
        report = progress or progress_display("Preparing the corpus", quiet_for=0.5)
        load_steps(self, steps, report)

    def pitman(self, population: float | None = None) -> pd.DataFrame:
        n = float(population if population is not None else self.settings["population"])
        return pitman_table(self.sweep_key, n, self.sweep())


#: The preprocessing chain in order: (what the analyst reads, Stage method, estimated seconds on
#: a cold start of the bundled sample; only their ratios matter). The models load inside the
#: first step that needs them (spaCy in "clean", MiniLM in "chunked"), and not at all when
#: every text is in the disk caches.
LOAD_STEPS: tuple[tuple[str, str, float], ...] = (
    ("reading the corpus", "corpus", 1.0),
    ("extracting the prepared remarks, finding executives, suppressing names and web addresses",
     "clean", 13.0),
    ("embedding sentence groups to find where the topic changes", "chunked", 38.0),
    ("finding named entities", "raw_chunks", 8.0),
    ("embedding the passages", "embeddings", 10.0),
    ("applying your corrections and the roles", "pre_swap", 2.0),
)
#: A step that returns faster than this was cached: it takes no share of the bar.
CACHED_S = 0.25


def load_steps(stage: Stage, steps, report: Callable[[float, str], None]) -> None:
    """Run ``steps`` of ``LOAD_STEPS`` in order, reporting one fraction over all of them."""
    import time

    total = sum(w for _, _, w in steps)
    done = skipped = 0.0
    for i, (label, name, weight) in enumerate(steps):
        head = f"step {i + 1} of {len(steps)}, {label}"

        def sub(fraction: float, detail: str = "", head=head, weight=weight, done=done,
                skipped=skipped) -> None:
            share = (done + min(max(fraction, 0.0), 1.0) * weight) / max(total - skipped, 1e-9)
            report(min(share, 0.99), f"{head}" + (f": {detail}" if detail else ""))

        sub(0.0)
        start = time.perf_counter()
        if name == "corpus":
            stage.corpus()
        elif name == "chunked" and i < len(steps) - 1:  # the later steps need only the chunks
            stage.chunked_unless_cut(sub)
        else:  # every other step reports its own progress within the step
            getattr(stage, name)(sub)
        if time.perf_counter() - start < CACHED_S:
            skipped += weight
        else:
            done += weight
    report(1.0, "ready")


_MIXTURES = _Memo(16)


def _stored_mixture(key: str, _state: bytes):
    """The mixture of ``key``, once per server process. A process memo, not
    ``st.cache_resource``: Streamlit's checks of a cached value's class made the estimator (and
    imported scikit-learn) that ``StoredMixture`` exists to avoid."""
    from .mixture_state import StoredMixture

    return _MIXTURES.get(key, lambda: StoredMixture(_state))

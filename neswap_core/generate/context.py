"""The pre-swap data every release starts from: roles applied, mixture fitted (SPEC §3–§4).

1. ``release_inputs``: C categories become placeholders in every chunk (and U ones are
   suppressed when asked); only the chunks whose text changed are embedded again (the cache);
2. ``fit_mixture``: the spherical mixture on those embeddings (MAP labels = clusters);
3. ``release_context``: both, as the ``ReleaseContext`` the sweeps and plans work on, with the
   fit's warnings as sentences.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..config import RunConfig
from ..corpus import Chunk
from ..disk_memo import DiskMemo, content_key
from ..errors import FitError
from ..models.mixture import SphericalMixture
from ..models.mixture_init import count_distinct_rows
from ..paths import resolve_cache_dir
from ..text.duplicates import cluster_count_advice, duplicates_message
from .releases import ReleaseContext, check_swap_entities
from .rewrite import apply_roles

Progress = Callable[[float, str], None]


def release_inputs(
    chunks: Sequence[Chunk],
    embeddings: np.ndarray,
    roles: Mapping[str, str],
    embed,
    suppress_untouched: bool = False,
) -> tuple[list[Chunk], np.ndarray]:
    """Apply the C (and optional U) operators and re-embed only the chunks whose text changed."""
    applied = apply_roles(list(chunks), dict(roles), suppress_untouched=suppress_untouched)
    changed = [i for i, (a, b) in enumerate(zip(chunks, applied, strict=True)) if a.text != b.text]
    if not changed:
        return applied, embeddings
    out = np.array(embeddings, copy=True)
    out[changed] = embed([applied[i].text for i in changed])
    return applied, out


def fit_mixture(embeddings: np.ndarray, config: RunConfig,
                progress: Progress | None = None) -> SphericalMixture:
    """Fit the spherical mixture of the config; K larger than the data is a clear error.

    ``progress(fraction, message)`` is told after each EM iteration."""
    n = len(embeddings)
    if n < 2:
        raise FitError(f"Only {n} chunk(s): a mixture needs at least 2. Load more text.")
    if config.mixture.n_components > n:
        raise FitError(
            f"K = {config.mixture.n_components} clusters but only {n} chunks: choose K of at most {n}."
        )
    distinct = count_distinct_rows(np.asarray(embeddings, dtype=np.float64))
    if config.mixture.n_components > distinct:
        raise FitError(
            f"K = {config.mixture.n_components} clusters but the {n} chunks hold only {distinct} distinct "
            f"texts: {cluster_count_advice(n, distinct, config.mixture.n_components)}."
        )
    params = config.mixture.as_params(renamed={"mixture_seed": "random_state"})
    return SphericalMixture(**params).fit(embeddings, progress=progress)


def fit_mixture_naming_copies(chunks: Sequence[Chunk], x: np.ndarray, config: RunConfig,
                              progress: Progress | None = None) -> SphericalMixture:
    """``fit_mixture``; when it fails and documents repeat each other, the error names them
    and says what to do (``text.duplicates``) instead of the mixture's own sentence."""
    try:
        return fit_mixture(x, config, progress)
    except FitError as exc:
        passages: dict[str, list[str]] = {}
        for ch in chunks:
            passages.setdefault(ch.doc_id, []).append(ch.text)
        raise FitError(duplicates_message(passages, config.mixture.n_components) or str(exc)) from exc


def release_context(
    chunks: Sequence[Chunk], embeddings: np.ndarray, embed, config: RunConfig,
    progress: Progress | None = None,
) -> tuple[ReleaseContext, list[str]]:
    """(pre-swap data, the mixture fit's warnings as sentences) for a prepared corpus.

    Checks that some chunk holds an entity of an S category before fitting anything."""
    pre_chunks, pre_x = release_inputs(chunks, embeddings, config.roles, embed)
    check_swap_entities(pre_chunks, config.swap_categories)

    def fit() -> tuple[SphericalMixture, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mixture = fit_mixture_naming_copies(pre_chunks, pre_x, config, progress)
        return mixture, [str(w.message) for w in caught]

    # kept by the vectors and the mixture's settings (disk_memo): a warm re-run fits nothing
    key = content_key("mixture", np.asarray(pre_x), config.mixture.as_params())
    mixture, messages = DiskMemo(resolve_cache_dir(config.prepare.cache_dir), "mixtures").get_or_compute(key, fit)
    return ReleaseContext(pre_chunks, pre_x, mixture, embed), list(messages)

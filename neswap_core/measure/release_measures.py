"""Readable measures of one candidate release against the pre-swap data (SPEC §6, §10).

Beside DU (the mixture log-likelihood ratio) an analyst reads: the share of words unchanged,
the mean cosine between each chunk's embedding before and after (unchanged chunks count 1),
the share of chunks whose MAP cluster is unchanged, and the share of chunks changed. Only the
changed chunks are re-embedded (through the embedding cache, so repeated text is free).

Words: tokens are ``\\w+`` runs; a chunk's unchanged words are the matching blocks of the token
sequences before and after (difflib without its junk heuristic, linear on long chunks:
``text.token_diff``), so a swapped two-word name counts two changed words and a ``[MASK]`` one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..corpus import Chunk
from ..text.token_diff import matching_blocks
from .utility import UtilityBaseline, data_utility, utility_deltas

_WORD = re.compile(r"\w+")


#: Pairs of texts whose ``word_counts`` a process remembers (by a 16-byte digest of the pair;
#: about 0.1 kB each): the candidates of a run share most of their changed passages (the
#: document defence's levels nest, a plan's stages accumulate), so on the 10k synthetic corpus
#: 108,182 diffs were 35,036 distinct pairs (issue 21). Past the bound the memo starts over.
WORD_COUNT_MEMO = 200_000
_WORD_COUNTS: dict[bytes, tuple[int, int]] = {}


def word_counts(before: str, after: str) -> tuple[int, int]:
    """(words of ``before`` kept unchanged in ``after``, words of ``before``)."""
    first = before.encode("utf-8", "surrogatepass")
    pair = hashlib.blake2b(len(first).to_bytes(8, "little"), digest_size=16)
    pair.update(first)
    pair.update(after.encode("utf-8", "surrogatepass"))
    key = pair.digest()
    known = _WORD_COUNTS.get(key)
    if known is not None:
        return known
    a, b = _WORD.findall(before), _WORD.findall(after)
    counted = (len(a), len(a)) if a == b else (sum(size for _, _, size in matching_blocks(a, b)), len(a))
    if len(_WORD_COUNTS) >= WORD_COUNT_MEMO:
        _WORD_COUNTS.clear()
    _WORD_COUNTS[key] = counted
    return counted


@dataclass(frozen=True)
class ReleaseMeasures:
    """Utility of one release (proportions in [0, 1] except DU, which may exceed 1)."""

    du: float
    words_unchanged: float
    mean_cosine: float
    clusters_unchanged: float
    chunks_changed: float
    n_changed: int


def release_measures(ctx, changed: Mapping[int, Chunk], total_words: int | None = None) -> ReleaseMeasures:
    """Measures of the release ``ctx.chunks`` with ``changed`` = {position: released chunk}.

    When ``ctx.measured`` names a sample of whole documents (a large corpus,
    ``measure.candidate_sample``), DU, mean cosine and clusters are estimated on its passages
    (only those are embedded); words and passages changed are always counted whole."""
    base = ctx.chunks
    positions = sorted(p for p, c in changed.items() if c.text != base[p].text)
    n = len(base)
    if total_words is None:
        total_words = sum(len(_WORD.findall(c.text)) for c in base)
    if not positions:
        return ReleaseMeasures(1.0, 1.0, 1.0, 1.0, 0.0, 0)
    measured = getattr(ctx, "measured", None)
    embedded = positions if measured is None else np.intersect1d(positions, measured).tolist()
    new_x = np.asarray(ctx.embed([changed[p].text for p in embedded]), dtype=np.float64)
    new_x = new_x.reshape(len(embedded), -1) if len(embedded) else np.zeros((0, ctx.embeddings.shape[1]))
    # the changed rows only: converting the whole corpus's vectors first cost 0.3 GB and ~0.1 s
    # per candidate at 100,000 passages (issue 21)
    old_x = np.asarray(np.asarray(ctx.embeddings)[np.asarray(embedded, dtype=np.int64)], dtype=np.float64)
    delta = float(utility_deltas(ctx.mixture, ctx.baseline, embedded, new_x).sum())
    if measured is None:
        du, n_measured = data_utility(ctx.baseline, delta), n
    else:  # the ratio estimator of 1 + Δ / |L0| on the sample (module docstring)
        du = data_utility(UtilityBaseline(ctx.baseline.labels[measured],
                                          ctx.baseline.log_density[measured]), delta)
        n_measured = len(measured)
    cos = np.sum(old_x * new_x, axis=1) / np.maximum(
        np.linalg.norm(old_x, axis=1) * np.linalg.norm(new_x, axis=1), 1e-12
    )
    moved = (np.asarray(ctx.mixture.predict(new_x.astype(np.float32))) != ctx.labels[embedded]
             if len(embedded) else np.zeros(0, dtype=bool))  # fmt: skip
    lost = 0
    for p in positions:
        kept, words = word_counts(base[p].text, changed[p].text)
        lost += words - kept
    return ReleaseMeasures(
        du=float(du),
        words_unchanged=1.0 - lost / max(total_words, 1),
        mean_cosine=float((n_measured - len(embedded) + cos.sum()) / n_measured),
        clusters_unchanged=1.0 - float(moved.sum()) / n_measured,
        chunks_changed=len(positions) / n,
        n_changed=len(positions),
    )

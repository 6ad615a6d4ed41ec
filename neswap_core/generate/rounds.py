"""Valid pairs of one swap round with floors, and the one-vs-many move of leftovers (SPEC §10).

A round of a plan enumerates its valid pairs explicitly, per cluster, instead of counting them
by inclusion–exclusion (pairs.py): plans add two pair-level constraints that group counts
cannot express — a pair-similarity floor (cosine of the two chunks' pre-plan embeddings) and
"never the same pair twice" across rounds — and a cluster-concentration floor (clusters whose
fitted ρ is below it give no pair). Cost O(Σ cluster size²) per round, in row blocks.

Drawing pairs one at a time uniformly among the currently valid ones (SPEC §3) is done as a
uniform random order of all valid pairs scanned greedily: the first pair of a random order
whose chunks are both still free is uniform among the free valid pairs, so the two procedures
have the same law (the random sequential adsorption identity), at O(P) for the whole round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..corpus import Chunk
from ..errors import ConfigError
from .pairs import PairCodes, pair_codes
from .rewrite import rewrite_chunk

BLOCK_ROWS = 512  # rows of the pairwise block computed at once (memory ~ BLOCK_ROWS × cluster)


@dataclass(frozen=True)
class Floors:
    """Plausibility floors of a round: pair cosine in [-1, 1], cluster ρ in [0, 1)."""

    similarity: float = -1.0
    concentration: float = 0.0

    def __post_init__(self) -> None:
        if not -1.0 <= self.similarity <= 1.0:
            raise ConfigError(f"similarity floor is a cosine in [-1, 1], got {self.similarity}.")
        if not 0.0 <= self.concentration < 1.0:
            raise ConfigError(
                f"concentration floor is a ρ in [0, 1), got {self.concentration}."
            )


def _block_valid(codes: PairCodes, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(len(rows), len(cols)) mask of SPEC §3 constraints 1, 3 and 4 (cluster shared by design)."""
    sw_r, sw_c = codes.swap[rows][:, None, :], codes.swap[cols][None, :, :]
    both = (sw_r >= 0) & (sw_c >= 0)
    if codes.require == "all":
        differ = ((sw_r != sw_c) & both).all(axis=2)
    else:
        differ = ((sw_r != sw_c) & both).any(axis=2)
    return (
        differ
        & (codes.protected[rows][:, None] != codes.protected[cols][None, :])
        & (codes.other[rows][:, None] != codes.other[cols][None, :])
    )


def round_pairs(
    codes: PairCodes,
    embeddings: np.ndarray,
    floors: Floors,
    cluster_rho: np.ndarray | None = None,
    used: frozenset[tuple[int, int]] = frozenset(),
) -> np.ndarray:
    """All valid pairs (i < j) of a round as an (P, 2) array, after floors and used pairs.

    ``cluster_rho``: fitted ρ of each original cluster label (index = label); clusters below
    the concentration floor give no pair. ``used``: pairs of earlier rounds, never repeated.
    """
    x = np.asarray(embeddings, dtype=np.float32)
    eligible = codes.eligible
    found: list[np.ndarray] = []
    for dense, label in enumerate(codes.clusters):
        if cluster_rho is not None and cluster_rho[int(label)] < floors.concentration:
            continue
        members = np.flatnonzero((codes.cluster == dense) & eligible)
        for start in range(0, members.size, BLOCK_ROWS):
            rows = members[start : start + BLOCK_ROWS]
            cols = members[start:]
            ok = _block_valid(codes, rows, cols)
            ok &= np.arange(rows.size)[:, None] < np.arange(cols.size)[None, :]  # i < j
            if floors.similarity > -1.0:
                ok &= (x[rows] @ x[cols].T) >= floors.similarity
            r, c = np.nonzero(ok)
            found.append(np.column_stack([rows[r], cols[c]]))
    pairs = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
    if used and len(pairs):
        keep = np.array([(int(i), int(j)) not in used for i, j in pairs], dtype=bool)
        pairs = pairs[keep]
    return pairs.astype(np.int64)


def round_codes(
    chunks: Sequence[Chunk], labels: np.ndarray, categories: Sequence[str], require: str
) -> PairCodes:
    """Pair codes of the current chunks: z is recomputed from their current entity spans."""
    return pair_codes(chunks, labels, tuple(categories), require)


# --- one-vs-many --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Leftover:
    """A value of chunk ``position`` in ``category`` that its round partner could not take."""

    position: int
    category: str
    value: str


def exchange_one(a: Chunk, b: Chunk, category: str, value_a: str, value_b: str) -> tuple[Chunk, Chunk]:
    """Exchange one value of ``category`` between two chunks (every mention, offsets recomputed)."""
    return (
        rewrite_chunk(a, {(category, value_a): value_b}),
        rewrite_chunk(b, {(category, value_b): value_a}),
    )

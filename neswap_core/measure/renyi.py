"""kNN Rényi divergence with exact duplicates as atoms, entirely in log space (SPEC §9, paper 001 §4.1).

The vectors of both samples are rounded (5 decimals) and pooled into unique rows, the *atoms*;
a sample is then just a count per atom (its multiplicities). For a query atom y and a reference
sample with counts c, the k nearest atoms of the reference other than y itself give the radius
ρ(y) (the k-th Euclidean distance) and n(y) = c(y) + Σ counts of those k atoms, so

    log P̂(y) = log n(y) − log N′ − d·log ρ(y),   N′ = Σ over the reference's atoms u of n(u),
    D̂_α(P0‖P1) = 1/(α−1) · logsumexp_y [log(c0(y)/N0) + (α−1)(log P̂0(y) − log P̂1(y))],
    D̂_1 = Σ_y (c0(y)/N0)(log P̂0(y) − log P̂1(y))      (KL).

Nothing is exponentiated before the log-sum-exp, so d·log ρ ~ 10³ at d = 384 cannot overflow.
Distinct atoms differ by at least 10⁻⁵ in one coordinate, so ρ > 0 and every log is finite.
Resampling (bootstrap, permutation) only changes the counts, so the pooled atoms, their
distances and sorted neighbour lists are computed once (``Atoms``) and reused.

Degenerate references, where the estimator of paper 001 is silent: with fewer than k other
atoms the available ones are used (k_eff < k); a reference with *no* other atom (a single
repeated vector, e.g. a fully masked document) has no radius, and then the other sample's radius
at that query is used for both densities (the d·log ρ terms cancel and the ratio of the two
masses remains); if neither has one, both radii are 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..errors import FitError

#: Rows are rounded to this many decimals before identical rows merge into one atom.
DECIMALS = 5
#: Nearest other atoms kept per atom (large references are searched in this list first).
NEIGHBOURS = 48
#: Pooled atoms beyond which the M × M distance matrix (8·M² bytes) is refused.
MAX_ATOMS = 20_000


@dataclass(frozen=True)
class Atoms:
    """The unique rounded rows of pooled samples, their distances and nearest-neighbour lists."""

    points: np.ndarray  # (M, d) float64, unique rows after rounding
    inverse: np.ndarray  # (N,) atom of every input row
    distances: np.ndarray  # (M, M) Euclidean distances between atoms
    order: np.ndarray  # (M, L) nearest other atoms of each atom, closest first (self excluded)

    @property
    def n_atoms(self) -> int:
        return len(self.points)

    @property
    def dim(self) -> int:
        return self.points.shape[1]

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Multiplicity of every atom among the input rows ``rows`` (indices, repeats allowed)."""
        return np.bincount(self.inverse[rows], minlength=self.n_atoms).astype(np.float64)


def pool_atoms(x: np.ndarray, decimals: int = DECIMALS, neighbours: int = NEIGHBOURS) -> Atoms:
    """Round the rows of ``x`` (N, d), merge identical ones and index their neighbours."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise FitError(
            f"The divergence audit needs at least 2 vectors of dimension ≥ 1; got shape {x.shape}."
        )
    if not np.isfinite(x).all():
        raise FitError("The embeddings contain NaN or infinite values: re-embed the corpus.")
    points, inverse = np.unique(np.round(x, decimals), axis=0, return_inverse=True)
    if len(points) > MAX_ATOMS:
        raise FitError(
            f"{len(points)} distinct vectors: the audit holds all pairwise distances and is "
            f"limited to {MAX_ATOMS}; audit a sample of the corpus instead."
        )
    dist = _distances(points)
    m = len(points)
    width = min(neighbours, m - 1)
    order = np.zeros((m, max(width, 0)), dtype=np.int64)
    if width > 0:
        diagonal = dist.diagonal().copy()
        np.fill_diagonal(dist, -1.0)  # self first, then dropped (the matrix itself, given back)
        try:
            for lo in range(0, m, ROW_BLOCK):  # an M × M index matrix, M × M copy: issue 21
                ranked = dist[lo : lo + ROW_BLOCK]
                part = np.argpartition(ranked, width, axis=1)[:, : width + 1]
                part = np.take_along_axis(part, np.argsort(np.take_along_axis(ranked, part, 1), axis=1), 1)
                order[lo : lo + ROW_BLOCK] = part[:, 1:]
        finally:
            np.fill_diagonal(dist, diagonal)
    return Atoms(points, inverse.reshape(-1), dist, order)


#: Rows of the M × M distance work done at once: the matrix is the audit's one M × M array
#: (8·M² bytes, 0.5 GB at 8,000 atoms); its temporaries are ``ROW_BLOCK`` rows (issue 21).
ROW_BLOCK = 512


def _distances(points: np.ndarray, block: int = 200_000) -> np.ndarray:
    """All pairwise Euclidean distances: Gram products, and exact differences for close pairs.

    ‖a‖² + ‖b‖² − 2a·b loses about log₁₀((‖a‖² + ‖b‖²)/‖a − b‖²) digits, so pairs closer than
    3 % of their norms (near-duplicates) are recomputed from the coordinates. Made in place in
    the Gram matrix, ``ROW_BLOCK`` rows at a time (the same numbers as whole-matrix algebra).
    """
    sq = np.einsum("ij,ij->i", points, points)
    d2 = (2.0 * points) @ points.T  # (2a)·b: one general product, as the whole-matrix algebra
    for lo in range(0, len(points), ROW_BLOCK):
        rows = d2[lo : lo + ROW_BLOCK]
        scale = sq[lo : lo + ROW_BLOCK, None] + sq[None, :]
        np.subtract(scale, rows, out=rows)
        np.maximum(rows, 0.0, out=rows)
        close_i, close_j = np.nonzero(rows < 1e-3 * scale)
        close_i += lo
        for start in range(0, close_i.size, block):
            i, j = close_i[start : start + block], close_j[start : start + block]
            diff = points[i] - points[j]
            d2[i, j] = np.einsum("ij,ij->i", diff, diff)
    return np.sqrt(d2, out=d2)


def _from_lists(atoms: Atoms, queries: np.ndarray, counts: np.ndarray, k: int):
    """n and k-th neighbour from the truncated sorted lists; ``found`` is False where too short."""
    order = atoms.order[queries]
    mass = counts[order]
    valid = mass > 0
    rank = np.cumsum(valid, axis=1)
    found = rank[:, -1] >= k if order.shape[1] else np.zeros(len(queries), bool)
    pos = np.argmax(rank >= k, axis=1)
    n = (mass * (valid & (rank <= k))).sum(axis=1)
    kth = (
        order[np.arange(len(queries)), pos] if order.shape[1] else np.zeros(len(queries), np.int64)
    )
    return n, kth, found


def _from_matrix(atoms: Atoms, queries: np.ndarray, counts: np.ndarray, k: int):
    """n, k-th neighbour and k_eff by sorting the distances to the reference's atoms."""
    support = np.flatnonzero(counts > 0)
    sub = atoms.distances[np.ix_(support, queries)].T  # the same entries, no |support| × M copy
    at = np.minimum(np.searchsorted(support, queries), len(support) - 1)
    own = support[at] == queries
    sub[np.flatnonzero(own), at[own]] = np.inf  # never y itself
    width = min(k, len(support))
    if width == 0:
        return (
            np.zeros(len(queries)),
            np.zeros(len(queries), np.int64),
            np.zeros(len(queries), np.int64),
        )
    if width < len(support):
        part = np.argpartition(sub, width - 1, axis=1)[:, :width]
        idx = np.take_along_axis(part, np.argsort(np.take_along_axis(sub, part, 1), axis=1), 1)
    else:
        idx = np.argsort(sub, axis=1)
    finite = np.isfinite(np.take_along_axis(sub, idx, 1))
    k_eff = finite.sum(axis=1)
    n = (counts[support[idx]] * finite).sum(axis=1)
    kth = support[idx[np.arange(len(queries)), np.maximum(k_eff - 1, 0)]]
    return n, kth, k_eff


def neighbours(
    atoms: Atoms, queries: np.ndarray, counts: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """(n(y), log ρ(y)) of each query atom in the reference sample given by ``counts`` per atom.

    n(y) includes y's own multiplicity in the reference; log ρ is NaN where the reference has no
    atom other than y (see the module docstring for how that case is resolved).
    """
    queries = np.asarray(queries, dtype=np.int64)
    n = np.zeros(len(queries))
    kth = np.zeros(len(queries), dtype=np.int64)
    k_eff = np.full(len(queries), k, dtype=np.int64)
    todo = np.ones(len(queries), dtype=bool)
    if (
        atoms.order.shape[1] and np.count_nonzero(counts) * 4 >= atoms.n_atoms
    ):  # large: sorted lists suffice
        n, kth, found = _from_lists(atoms, queries, counts, k)
        todo = ~found
    if todo.any():
        n[todo], kth[todo], k_eff[todo] = _from_matrix(atoms, queries[todo], counts, k)
    log_rho = np.full(len(queries), np.nan)
    has = k_eff > 0
    log_rho[has] = np.log(atoms.distances[queries[has], kth[has]])
    return n + counts[queries], log_rho


def _log_mass(n: np.ndarray, n_prime: float) -> np.ndarray:
    return np.log(n) - np.log(n_prime)


def _log_ratio(mass0, rho0, mass1, rho1, dim: int) -> np.ndarray:
    """log P̂0 − log P̂1 with the shared-radius rule for references without a radius."""
    r0 = np.where(np.isnan(rho0), rho1, rho0)
    r1 = np.where(np.isnan(rho1), rho0, rho1)
    r0, r1 = np.nan_to_num(r0, nan=0.0), np.nan_to_num(r1, nan=0.0)
    return (mass0 - dim * r0) - (mass1 - dim * r1)


def divergence_curve(
    log_ratio: np.ndarray, weights: np.ndarray, alphas: Sequence[float]
) -> np.ndarray:
    """D̂_α for every α from log P̂0 − log P̂1 at P0's atoms and their weights c0(y)/N0."""
    a = np.asarray(alphas, dtype=float)
    order = np.where(a == 1.0, 1.0, a - 1.0)
    terms = np.log(weights)[None, :] + order[:, None] * log_ratio[None, :]
    out = logsumexp(terms, axis=1) / order
    return np.where(a == 1.0, weights @ log_ratio, out)


def renyi_pair(
    atoms: Atoms, c0: np.ndarray, c1: np.ndarray, alphas: Sequence[float], k: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """(D̂_α(P0‖P1), D̂_α(P1‖P0)) over ``alphas`` for the samples with atom counts c0 and c1."""
    s0, s1 = np.flatnonzero(c0 > 0), np.flatnonzero(c1 > 0)
    if len(s0) == 0 or len(s1) == 0:
        raise FitError("Both samples of the divergence audit need at least one vector.")
    n00, r00 = neighbours(atoms, s0, c0, k)  # P̂0 at P0's atoms (and N0′)
    n11, r11 = neighbours(atoms, s1, c1, k)  # P̂1 at P1's atoms (and N1′)
    n01, r01 = neighbours(atoms, s0, c1, k)  # P̂1 at P0's atoms
    n10, r10 = neighbours(atoms, s1, c0, k)  # P̂0 at P1's atoms
    n0p, n1p = n00.sum(), n11.sum()
    d = atoms.dim
    fwd = _log_ratio(_log_mass(n00, n0p), r00, _log_mass(n01, n1p), r01, d)
    rev = _log_ratio(_log_mass(n11, n1p), r11, _log_mass(n10, n0p), r10, d)
    return (
        divergence_curve(fwd, c0[s0] / c0.sum(), alphas),
        divergence_curve(rev, c1[s1] / c1.sum(), alphas),
    )


def renyi_divergence(
    x0: np.ndarray, x1: np.ndarray, alphas: Sequence[float], k: int = 5, decimals: int = DECIMALS
) -> tuple[np.ndarray, np.ndarray]:
    """(D̂_α(P0‖P1), D̂_α(P1‖P0)) of two samples of vectors (rows), in nats."""
    x0, x1 = np.asarray(x0, dtype=np.float64), np.asarray(x1, dtype=np.float64)
    if x0.ndim != 2 or x1.ndim != 2 or x0.shape[1] != x1.shape[1]:
        raise FitError(
            f"Both samples must be matrices with the same number of columns; got {x0.shape} and {x1.shape}."
        )
    atoms = pool_atoms(np.vstack([x0, x1]), decimals)
    rows = np.arange(len(x0) + len(x1))
    return renyi_pair(
        atoms, atoms.counts(rows[: len(x0)]), atoms.counts(rows[len(x0) :]), alphas, k
    )
